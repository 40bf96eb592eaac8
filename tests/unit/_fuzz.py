"""Shared hypothesis strategies for the parser robustness tests.

Every parser must either return a result or raise ParseError, on any text:
random text, and the real and own fixtures mutated the ways real captures get
mangled (truncated, lines lost, tabs turned into spaces, CRLF line ends, noise
lines inserted, lines swapped).
"""
from hypothesis import HealthCheck, settings, strategies as st

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# At least 2,000 examples per parser, as the parsers issue asks.
FUZZ_SETTINGS = settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


class _Drawer:
    def __init__(self, draw):
        self.draw = draw


_NOISE = st.sampled_from([
    '', ' ', '\t', '#', '# ', ':', '::', '=', '|', '-----', 'NCCL INFO x', 'Warning: x',
    'Port 1:', 'CA \'x\'', 'Switch: 0x', 'Rate: ', 'GPU0', '\x00', '\ufffd', 'nan', '-1',
    '99999999999999999999', '{', '}', '[', ']', '"', 'null', 'N/A', 'Conflicting CPU frequency values',
])


@st.composite
def _mutated(draw, samples):
    text = draw(st.sampled_from(samples))
    data = _Drawer(draw)
    lines = text.split('\n')
    op = data.draw(st.sampled_from(
        ['truncate', 'delete', 'tabs', 'crlf', 'insert', 'swap', 'chars', 'dup', 'combo']))
    if op in ('truncate', 'combo'):
        text = text[:data.draw(st.integers(0, len(text)))]
        lines = text.split('\n')
    if op in ('delete', 'combo') and lines:
        for _unused in range(data.draw(st.integers(1, max(1, min(10, len(lines)))))):
            if lines:
                del lines[data.draw(st.integers(0, len(lines) - 1))]
    if op == 'insert':
        for _unused in range(data.draw(st.integers(1, 5))):
            noise = data.draw(st.one_of(_NOISE, st.text(max_size=40)))
            lines.insert(data.draw(st.integers(0, len(lines))), noise)
    if op == 'swap' and len(lines) > 1:
        i = data.draw(st.integers(0, len(lines) - 1))
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    if op == 'dup' and lines:
        i = data.draw(st.integers(0, len(lines) - 1))
        lines.insert(i, lines[i])
    text = '\n'.join(lines)
    if op in ('tabs', 'combo'):
        text = text.replace('\t', ' ' * data.draw(st.integers(0, 8)))
    if op in ('crlf', 'combo'):
        text = text.replace('\n', '\r\n')
    if op == 'chars' and text:
        chars = list(text)
        for _unused in range(data.draw(st.integers(1, 20))):
            pos = data.draw(st.integers(0, len(chars) - 1))
            chars[pos] = data.draw(st.sampled_from(list(' \t:=xX0-9.#|\n')))
        text = ''.join(chars)
    return text


def texts_from(samples):
    """A strategy: random text, or one of ``samples`` mutated."""
    samples = [s for s in samples if s]
    mutated = _mutated(samples) if samples else st.nothing()
    return st.one_of(st.text(), st.text(alphabet=st.characters(codec='ascii')), mutated)


def only_parse_error(parser, text):
    """Run a parser; any exception but ParseError fails the test."""
    try:
        result = parser(text)
    except ParseError:
        return None
    return result
