from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError


def test_parse_error_is_a_value_error_with_position():
    err = ParseError('not ibstat output', line_number=3, line='garbage')
    assert isinstance(err, ValueError)
    assert err.line_number == 3
    assert 'line 3' in str(err) and 'garbage' in str(err)


def test_fuzz_strategy_yields_mutations():
    from hypothesis import given, settings
    from _fuzz import texts_from
    seen = []

    @settings(max_examples=50, database=None)
    @given(texts_from(['a\tb\nc\nd']))
    def run(text):
        seen.append(text)
    run()
    assert len(seen) == 50
