"""``pps.platform.strict_json.loads`` on its own, without Flask: what it refuses, and that every
refusal is a ``ValueError``, the one exception its callers handle."""

from __future__ import annotations

import json

import pytest

from pps.platform import strict_json


def test_plain_json_is_read() -> None:
    assert strict_json.loads(b'{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}


@pytest.mark.parametrize(
    "text",
    ['{"a": NaN}', "[Infinity]", "-Infinity", "1e999", '{"a": -1e400}', "\ufeff{}", '{"a": '],
)
def test_refusals_are_value_errors(text: str) -> None:
    with pytest.raises(ValueError):
        strict_json.loads(text)


@pytest.mark.parametrize("text", ["[" * 2000, "[" * 5000 + "]" * 5000, '{"a":' * 100_000])
def test_too_deep_nesting_is_a_value_error(text: str) -> None:
    """Deeper than the decoder can recurse: a ``ValueError`` with a clear message, not the
    ``RecursionError`` that callers expecting invalid JSON let through as a 500."""
    with pytest.raises(strict_json.TooDeep, match="nests too deeply"):
        strict_json.loads(text)
    with pytest.raises(ValueError):
        strict_json.loads(text.encode())


def test_nesting_the_decoder_can_read_is_read() -> None:
    text = "[" * 500 + "]" * 500
    assert strict_json.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "key"),
    [('{"a": 1, "a": 2}', "a"), ('[{"x": {"b": 1, "c": 2, "b": 1}}]', "b"), ('{"": 0, "": 0}', "")],
)
def test_a_key_twice_in_one_object_is_refused(text: str, key: str) -> None:
    """``json.loads`` keeps the last value where another reader may keep the first."""
    with pytest.raises(strict_json.DuplicateKey, match=f"the key {key!r} appears twice"):
        strict_json.loads(text)


def test_the_same_key_in_different_objects_is_read() -> None:
    assert strict_json.loads('[{"a": 1}, {"a": 2, "b": {"a": 3}}]') == [
        {"a": 1},
        {"a": 2, "b": {"a": 3}},
    ]
