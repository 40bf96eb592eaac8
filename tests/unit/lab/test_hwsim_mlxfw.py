"""lab/hwsim mlxfwmanager stand-in and the per-HCA ``firmware`` fault: the real query layout (mstflint mlxfwupdate,
a real mlxup capture of a ConnectX-7), the same PSID and firmware as ibv_devinfo, and an update from a lab image file
that runs after the next (simulated) boot."""
import json
import os
import sys

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.ibv_devinfo import parse_ibv_devinfo  # noqa: E402
from hwsim import profile as profiles  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402
from hwsim.tools import mlxfw  # noqa: E402

# gpu01's mlx5_0 on hgx-h100-ib, laid out as the real capture (MFT 4.x, ConnectX-7, MCX75310AAS-NEAT)
FIRST_BLOCK = '''Querying Mellanox devices firmware ...

Device #1:
----------

  Device Type:      ConnectX7
  Part Number:      MCX75310AAS-NEA_Ax
  Description:      NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); Single-port OSFP; PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled;
  PSID:             MT_0000000838
  PCI Device Name:  0000:18:00.0
  Base GUID:        946dae0300000100
  Versions:         Current        Available     |
     FW             28.39.1002     N/A           |
     PXE            3.7.0201       N/A           |
     UEFI           14.32.0012     N/A           |

  Status:           No matching image found

'''.replace('|\n', '\n')  # '|' marks where the real tool's padding ends a line

UPDATE_TAIL = '''  Status:           Update required

---------
Found 1 device(s) requiring firmware update...

Device #1: Updating FW ...     |
\rFSMST_INITIALIZE -   OK          |
\rWriting Boot image component -   OK          |
\b\b\b\bDone

Restart needed for updates to take effect.
'''.replace('|\n', '\n')


def _blocks(text):
    """{PCI Device Name: {key: value}} of mlxfwmanager's query blocks (the versions as (current, available))."""
    blocks, block = {}, None
    for line in text.splitlines():
        if line.startswith('Device #'):
            block = {}
        elif block is not None and line.startswith('  PCI Device Name:'):
            blocks[line.split(':', 1)[1].strip()] = block
        elif block is not None and line.startswith('     '):
            parts = line.split()
            name = ' '.join(parts[:-2])
            block[name] = tuple(parts[-2:])
        elif block is not None and ':' in line:
            key, value = line.split(':', 1)
            block[key.strip()] = value.strip()
    return blocks


def _empty_cwd(tmp_path, monkeypatch):
    """mlxfwmanager looks for images in the current directory too: run it from an empty one."""
    (tmp_path / 'cwd').mkdir()
    monkeypatch.chdir(tmp_path / 'cwd')


def _image(tmp_path, psid, version, name='fw.txt'):
    path = tmp_path / name
    path.write_text('# hwsim firmware image (lab only)\nPSID=%s\nFW=%s\n' % (psid, version))
    return str(path)


def test_query_layout_is_the_real_one(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    status, out, err = lab.run('gpu01', ['mlxfwmanager', '--query'])
    assert (status, err) == (0, '')
    assert out.startswith(FIRST_BLOCK)
    blocks = _blocks(out)
    # one device per adapter: eight ConnectX-7 and the two-port ConnectX-6 Dx once (its first function)
    assert len(blocks) == 9 and out.count('Device #') == 9
    cx6 = blocks['0000:0c:00.0'] if '0000:0c:00.0' in blocks else [block for block in blocks.values() if block['Device Type'] == 'ConnectX6DX'][0]
    assert cx6['Part Number'] == 'MCX623106AN-CDA_Ax' and cx6['PSID'] == 'MT_0000000359'
    assert 'Base GUID' in cx6 and 'Base MAC' in cx6  # an Ethernet-only card: port type unknown, both printed
    assert lab.ok('gpu01', ['mlxfwmanager']) == out  # no option: the same query


def test_query_agrees_with_ibv_devinfo(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    for profile in ('hgx-h100-ib', 'hgx-h100-roce', 'hgx-a100-ib'):
        lab = make_lab(tmp_path / profile, profile, compute=1)
        prof = profiles.load(profile)
        devinfo = dict((hca['name'], hca) for hca in parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo'])))
        for hca in prof['hcas']:
            block = _blocks(lab.ok('gpu01', ['mlxfwmanager', '--query', '-d', hca['name']]))[hca['name']]
            assert block['PSID'] == devinfo[hca['name']]['board_id'] == hca['board_id']
            assert block['FW'] == (devinfo[hca['name']]['fw_ver'], 'N/A')
            assert ('Base MAC' in block) == (hca['ports'][0]['link_layer'] == 'Ethernet')


def test_device_names(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    for name in ('0000:18:00.0', '18:00.0', 'mlx5_0', '/dev/mst/mt4129_pciconf0'):
        out = lab.ok('gpu01', ['mlxfwmanager', '--query', '-d', name])
        assert _blocks(out)[name]['Base GUID'] == '946dae0300000100', name
    status, out, _err = lab.run('gpu01', ['mlxfwmanager', '--query', '-d', '0000:99:00.0'])
    assert status == 1 and 'Status:           Failed to open device' in out and 'Device Type:      N/A' in out
    assert lab.run('ctl01', ['mlxfwmanager', '--query']) == (
        20, '', "-E- No devices found or specified, mst might be stopped, run 'mst start' to load MST modules\n")
    assert lab.run('gpu01', ['mlxfwmanager', '--bogus'])[0] == 3
    assert lab.ok('gpu01', ['mlxfwmanager', '--version']).startswith('mlxfwmanager, mft ')


def test_per_hca_firmware_fault_in_ibv_devinfo_and_mlxfwmanager(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['hwsim', 'fault', 'firmware', 'mlx5_3', '28.40.1000'])[0] == 0
    devinfo = dict((hca['name'], hca['fw_ver']) for hca in parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo'])))
    assert devinfo['mlx5_3'] == '28.40.1000' and devinfo['mlx5_0'] == '28.39.1002'
    assert _blocks(lab.ok('gpu01', ['mlxfwmanager', '--query', '-d', 'mlx5_3']))['mlx5_3']['FW'] == ('28.40.1000', 'N/A')
    # a port of a two-port card: the card has one firmware
    assert lab.run('gpu01', ['hwsim', 'fault', 'firmware', 'mlx5_1', '22.40.1000'])[0] == 0
    devinfo = dict((hca['name'], hca['fw_ver']) for hca in parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo'])))
    assert devinfo['mlx5_1'] == devinfo['mlx5_2'] == '22.40.1000'
    # the host-wide form still works and, injected later, wins
    assert lab.run('gpu01', ['hwsim', 'fault', 'firmware', '28.41.1000'])[0] == 0
    assert set(hca['fw_ver'] for hca in parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo']))) == {'28.41.1000'}
    assert lab.run('gpu01', ['hwsim', 'clear', 'firmware', '*'])[0] == 0
    devinfo = dict((hca['name'], hca['fw_ver']) for hca in parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo'])))
    assert devinfo['mlx5_3'] == '28.40.1000' and devinfo['mlx5_0'] == '28.39.1002'
    assert lab.run('gpu01', ['hwsim', 'clear', 'firmware', 'mlx5_3'])[0] == 0
    assert parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo', '-d', 'mlx5_3']))[0]['fw_ver'] == '28.39.1002'
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'firmware', 'mlx5_99', '28.40.1000'])
    assert status == 2 and 'unknown HCA' in err
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'firmware'])
    assert status == 2 and 'firmware VERSION | firmware HCA VERSION' in err


def test_update_from_an_image_runs_after_the_boot(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    image = _image(tmp_path, 'MT_0000000838', '28.43.2026')
    status, out, err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', image, '-d', 'mlx5_3', '-y'])
    assert (status, err) == (0, '')
    assert out.endswith(UPDATE_TAIL)
    assert _blocks(out)['mlx5_3']['FW'] == ('28.39.1002', '28.43.2026')
    # the flash holds it, the adapter still runs the old one until it boots
    block = _blocks(lab.ok('gpu01', ['mlxfwmanager', '--query', '-d', 'mlx5_3']))['mlx5_3']
    assert block['FW'] == ('28.43.2026', 'N/A') and block['FW (Running)'] == ('28.39.1002', 'N/A')
    assert parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo', '-d', 'mlx5_3']))[0]['fw_ver'] == '28.39.1002'
    # the same image again: up to date (the flash is compared), nothing burnt
    status, out, _err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', image, '-d', 'mlx5_3', '-y'])
    assert status == 0 and 'Status:           Up to date' in out and 'Updating' not in out
    assert 'firmware mlx5_3 28.43.2026 now running\n' in lab.ok('gpu01', ['hwsim', 'boot'])
    assert parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo', '-d', 'mlx5_3']))[0]['fw_ver'] == '28.43.2026'
    block = _blocks(lab.ok('gpu01', ['mlxfwmanager', '--query', '-d', 'mlx5_3']))['mlx5_3']
    assert block['FW'] == ('28.43.2026', 'N/A') and 'FW (Running)' not in block
    shown = json.loads(lab.ok('gpu01', ['hwsim', 'show']))
    assert {'kind': 'firmware', 'args': {'hca': 'mlx5_3', 'version': '28.43.2026'}} in shown['faults']
    assert not shown['firmware_flash']


def test_update_refuses_an_image_for_another_psid(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    image = _image(tmp_path, 'MT_0000000359', '22.43.2026')
    status, out, err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', image, '-d', 'mlx5_3', '-y'])
    assert (status, err) == (9, '')
    assert out.endswith('  Status:           No matching image found\n\n\n') and 'Updating' not in out
    assert _blocks(out)['mlx5_3']['FW'] == ('28.39.1002', 'N/A')
    assert 'firmware_flash' not in json.loads(lab.ok('gpu01', ['hwsim', 'show']))
    # every device at once: the ConnectX-6 Dx is burnt, the ConnectX-7s have no image: 254 (some burnt, some failed)
    status, out, err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', image, '-y'])
    assert status == 254 and err == '-E- One or more errors were encountered.\n'
    assert out.count('Error - no matching image found') == 8 and out.count('Updating FW') == 1


def test_update_without_yes_or_with_force(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    image = _image(tmp_path, 'MT_0000000838', '28.43.2026')
    status, out, _err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', image, '-d', 'mlx5_3'])
    assert status == 0 and out.endswith('Perform FW update? [y/N]: No updates performed\n')
    assert lab.ok('gpu01', ['mlxfwmanager', '-u', '-i', image, '-d', 'mlx5_3', '--no']).endswith('\nNo updates performed\n')
    same = _image(tmp_path, 'MT_0000000838', '28.39.1002', 'same.txt')
    status, out, _err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', same, '-d', 'mlx5_3', '-y', '-f', '--no-progress'])
    assert status == 0 and 'Status:           Forced update required' in out
    assert out.endswith('Device #1: Updating FW ...     \n\b\b\b\bDone\n\nRestart needed for updates to take effect.\n')
    # a query with the image: what needs an update, and the devices without a matching image
    status, out, err = lab.run('gpu01', ['mlxfwmanager', '-i', image])
    assert status == 9 and 'Found 8 device(s) requiring firmware update. Please use -u flag to perform the update.\n' in out
    assert err == '-E- Could not find matching firmware images for 1 device(s).\n'


def test_image_errors_and_clear(tmp_path, monkeypatch):
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    missing = str(tmp_path / 'nope.bin')
    assert lab.run('gpu01', ['mlxfwmanager', '-u', '-i', missing, '-y']) == (3, '', "-E- Can't find file %s\n" % missing)
    assert lab.run('gpu01', ['mlxfwmanager', '-u', '-D', missing, '-y']) == (3, '', "-E- Can't find directory %s\n" % missing)
    junk = tmp_path / 'junk.bin'
    junk.write_bytes(b'\x00\x01 not an image')
    status, out, _err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', str(junk), '-d', 'mlx5_0', '-y'])
    assert status == 9 and 'No matching image found' in out
    images = tmp_path / 'images'
    images.mkdir()
    _image(images, 'MT_0000000838', '28.43.2026')
    assert lab.run('gpu01', ['mlxfwmanager', '-u', '-D', str(images), '-d', 'mlx5_0', '-y'])[0] == 0
    assert json.loads(lab.ok('gpu01', ['hwsim', 'show']))['firmware_flash'] == {'mlx5_0': '28.43.2026'}
    assert lab.run('gpu01', ['hwsim', 'clear', 'firmware', 'mlx5_4'])[0] == 0  # another adapter's: kept
    assert json.loads(lab.ok('gpu01', ['hwsim', 'show']))['firmware_flash'] == {'mlx5_0': '28.43.2026'}
    assert lab.run('gpu01', ['hwsim', 'clear'])[0] == 0
    assert json.loads(lab.ok('gpu01', ['hwsim', 'show']))['firmware_flash'] == {}


def test_read_image_and_part_numbers(tmp_path):
    assert mlxfw.read_image(_image(tmp_path, 'MT_0000000838', '28.43.2026')) == {'PSID': 'MT_0000000838', 'FW': '28.43.2026'}
    bad = tmp_path / 'bad.txt'
    for text in ('PSID=MT_1\n', 'FW=28.43.2026\n', 'PSID=MT_1\nFW=latest\n', 'no equals sign\n'):
        bad.write_text(text)
        try:
            mlxfw.read_image(str(bad))
        except mlxfw.ImageError:
            continue
        raise AssertionError(text)
    assert mlxfw.image_part_number('MCX75310AAS-NEAT') == 'MCX75310AAS-NEA_Ax'
    assert mlxfw.image_part_number('MCX623106AN-CDAT') == 'MCX623106AN-CDA_Ax'
    assert mlxfw.image_part_number('900-9X81E-00EX-STB') == '900-9X81E-00EX-STB'
    assert mlxfw.roms('28.39.1002') == ('3.7.0201', '14.32.0012') and mlxfw.roms('28.46.3048') == ('3.8.0100', '14.39.0014')


def test_images_in_the_current_directory(tmp_path, monkeypatch):
    """As mlxfwmanager, the stand-in looks for images in the current directory when given none."""
    _empty_cwd(tmp_path, monkeypatch)
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    _image(tmp_path / 'cwd', 'MT_0000000838', '28.43.2026')
    block = _blocks(lab.ok('gpu01', ['mlxfwmanager', '--query', '-d', 'mlx5_0']))['mlx5_0']
    assert block['FW'] == ('28.39.1002', '28.43.2026') and block['Status'] == 'Update required'
