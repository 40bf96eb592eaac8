"""A minimal ELF64 shared object with chosen dynamic symbols, for tests of the SPANK plugin reader
(module_utils/containers.py, the spank_plugin_info module): no compiler needed."""
import struct


def elf_bytes(symbols):
    """A minimal ELF64 shared object with a .dynsym/.dynstr and a .rodata holding the symbols' bytes."""
    rodata = b''
    entries = []
    for name, value in symbols.items():
        entries.append((name, len(rodata), len(value)))
        rodata += value + b'\0' * (-len(value) % 8)
    dynstr = b'\0'
    name_offsets = {}
    for name, _off, _size in entries:
        name_offsets[name] = len(dynstr)
        dynstr += name.encode() + b'\0'
    shstr = b'\0.rodata\0.dynsym\0.dynstr\0.shstrtab\0'
    rodata_off = 64
    dynsym_off = rodata_off + len(rodata)
    dynsym = b'\0' * 24 + b''.join(struct.pack('<IBBHQQ', name_offsets[name], 0x11, 0, 1, 0x1000 + off, size)
                                   for name, off, size in entries)
    dynstr_off = dynsym_off + len(dynsym)
    shstr_off = dynstr_off + len(dynstr)
    sh_off = (shstr_off + len(shstr) + 7) // 8 * 8
    sections = [struct.pack('<IIQQQQIIQQ', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                struct.pack('<IIQQQQIIQQ', 1, 1, 2, 0x1000, rodata_off, len(rodata), 0, 0, 8, 0),
                struct.pack('<IIQQQQIIQQ', 9, 11, 2, 0, dynsym_off, len(dynsym), 3, 1, 8, 24),
                struct.pack('<IIQQQQIIQQ', 17, 3, 2, 0, dynstr_off, len(dynstr), 0, 0, 1, 0),
                struct.pack('<IIQQQQIIQQ', 25, 3, 0, 0, shstr_off, len(shstr), 0, 0, 1, 0)]
    ident = b'\x7fELF' + bytes([2, 1, 1, 0]) + b'\0' * 8
    header = struct.pack('<16sHHIQQQIHHHHHH', ident, 3, 62, 1, 0, 0, sh_off, 0, 64, 56, 0, 64, len(sections), 4)
    body = header + rodata + dynsym + dynstr + shstr
    return body + b'\0' * (sh_off - len(body)) + b''.join(sections)


def plugin_bytes(version_number, kind=b'spank'):
    return elf_bytes({'plugin_name': b'pyxis\0', 'plugin_type': kind + b'\0',
                      'plugin_version': struct.pack('<I', version_number)})
