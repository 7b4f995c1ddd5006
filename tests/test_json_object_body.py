"""The one reader of JSON object bodies (``pps.api.parser.json_object_body``), without Flask:
the API's body location and the upload endpoints' non-multipart bodies both use it."""

from __future__ import annotations

import pytest

from pps.api.parser import MAX_DEPTH, json_object_body
from pps.platform.errors import BadRequest, PpsError, UnsupportedMediaType, ValidationFailed


@pytest.mark.parametrize("mimetype", ["application/json", "application/merge-patch+json", ""])
def test_an_object_under_a_json_type_or_none(mimetype: str) -> None:
    assert json_object_body(b'{"name": "Ada", "tags": ["a"]}', mimetype) == {
        "name": "Ada",
        "tags": ["a"],
    }


def test_php_empty_array_is_an_empty_object() -> None:
    assert json_object_body(b"[]", "application/json") == {}


@pytest.mark.parametrize(
    ("raw", "mimetype", "error", "status"),
    [
        (b'{"name": "Ada"}', "text/plain", UnsupportedMediaType, 415),
        (b'{"name": ', "application/json", BadRequest, 400),
        (b'{"a": NaN}', "application/json", BadRequest, 400),
        (b"[1, 2]", "application/json", ValidationFailed, 422),
        (b"42", "application/json", ValidationFailed, 422),
        (b'"text"', "application/json", ValidationFailed, 422),
    ],
)
def test_refusals(raw: bytes, mimetype: str, error: type[PpsError], status: int) -> None:
    with pytest.raises(error) as refused:
        json_object_body(raw, mimetype)
    assert refused.value.status == status


def test_not_an_object_names_what_came() -> None:
    with pytest.raises(ValidationFailed) as refused:
        json_object_body(b"[1]", "application/json")
    assert refused.value.errors == {"_body": ["Expected a JSON object, got list."]}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"name": "\\ud800"}', "name"),
        (b'{"name": "a\\u0000b"}', "name"),
        (b'{"outer": {"\\udc00": 1}}', "outer"),
        (b'{"deep": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}", None),
    ],
)
def test_values_that_cannot_be_stored_are_a_422(raw: bytes, field: str | None) -> None:
    with pytest.raises(ValidationFailed) as refused:
        json_object_body(raw, "application/json")
    assert refused.value.errors
    if field is not None:
        assert field in refused.value.errors
