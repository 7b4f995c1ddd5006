"""Form bodies read as PHP's ``parse_str`` reads them (``pps.api.parser.php_form``), without
Flask: what ``http_build_query`` and Guzzle's ``form_params`` write comes out as the same
data ``json_encode`` would send, and where PHP would drop a value without a word pps
refuses the body (422 naming the field) instead.

With ``php`` on the PATH (Debian's ``php-cli``), the table of PHP's readings is checked
against PHP itself.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

import pytest
from conftest import missing_service

from pps.api.parser import (
    MAX_DEPTH,
    Repeated,
    check_storable,
    multipart_pairs,
    php_form,
    urlencoded_pairs,
)
from pps.platform.errors import ValidationFailed


def form(raw: str) -> dict[str, Any]:
    return php_form(urlencoded_pairs(raw.encode()))


def refusal(raw: str) -> dict[str, list[str]]:
    with pytest.raises(ValidationFailed) as refused:
        form(raw)
    assert refused.value.status == 422
    return refused.value.errors


#: Bodies and what PHP's parse_str makes of them, as json_encode writes it (PHP 8.2).
AS_PHP_READS_THEM = [
    ("drafts%5B0%5D=a&drafts%5B1%5D=b", {"drafts": ["a", "b"]}),
    (
        "a[0]=x&a[1]=y&b[c][d]=1&e[]=1&e[]=2",
        {"a": ["x", "y"], "b": {"c": {"d": "1"}}, "e": ["1", "2"]},
    ),
    ("customAttributes%5Bsize%5D%5Bw%5D=10", {"customAttributes": {"size": {"w": "10"}}}),
    ("a[x][0]=1&a[x][1]=2", {"a": {"x": ["1", "2"]}}),
    ("a[b][]=1&a[b][]=2", {"a": {"b": ["1", "2"]}}),
    ("a[][b]=1&a[][b]=2", {"a": [{"b": "1"}, {"b": "2"}]}),
    ("a[0][0]=1&a[0][1]=2&a[1][x]=3", {"a": [["1", "2"], {"x": "3"}]}),
    # a map that is not 0..n-1 in order stays a map
    ("a[]=1&a[x]=2", {"a": {"0": "1", "x": "2"}}),
    ("a[1]=x&a[0]=y", {"a": {"1": "x", "0": "y"}}),
    ("a[0]=1&a[2]=2", {"a": {"0": "1", "2": "2"}}),
    ("a[1]=1", {"a": {"1": "1"}}),
    # [] appends one past the largest integer key; "01" and "-0" are text keys
    ("a[]=x&a[1]=y&a[]=z", {"a": ["x", "y", "z"]}),
    ("a[5]=x&a[]=y", {"a": {"5": "x", "6": "y"}}),
    ("a[-5]=x&a[]=y", {"a": {"-5": "x", "-4": "y"}}),
    ("a[5]=x&a[-2]=y&a[]=z", {"a": {"5": "x", "-2": "y", "6": "z"}}),
    ("a[01]=x&a[]=y", {"a": {"01": "x", "0": "y"}}),
    ("a[-0]=1", {"a": {"-0": "1"}}),
    ("a[9223372036854775808]=1&a[]=2", {"a": {"9223372036854775808": "1", "0": "2"}}),
    # the same place twice: the last value counts
    ("a[b]=1&a[b]=2", {"a": {"b": "2"}}),
    ("a[]=1&a[0]=2", {"a": ["2"]}),
    # how PHP reads a key: an index runs to the next ], anything after it but [ is ignored
    ("a[b]c=1", {"a": {"b": "1"}}),
    ("a[b]]=1", {"a": {"b": "1"}}),
    ("a[]]=1", {"a": ["1"]}),
    ("a[b][c=1", {"a": {"b": "1"}}),
    ("a[b]x[c]=1", {"a": {"b": "1"}}),
    ("a[b[c]=1", {"a": {"b[c": "1"}}),
    ("a[[b]]=1", {"a": {"[b": "1"}}),
    ("a[ b]=1", {"a": {" b": "1"}}),
]


@pytest.mark.parametrize(
    ("raw", "expected"), AS_PHP_READS_THEM, ids=[r for r, _ in AS_PHP_READS_THEM]
)
def test_keys_nest_as_php_reads_them(raw: str, expected: dict[str, Any]) -> None:
    assert form(raw) == expected


def test_the_table_is_what_php_says() -> None:
    if shutil.which("php") is None:
        missing_service("php is not on PATH (Debian: apt-get install -y php-cli)")
    script = (
        "foreach (json_decode($argv[1]) as $raw) { parse_str($raw, $r); "
        "echo json_encode($r), PHP_EOL; }"
    )
    bodies = json.dumps([raw for raw, _ in AS_PHP_READS_THEM])
    run = subprocess.run(["php", "-r", script, bodies], capture_output=True, text=True, check=True)
    said = [json.loads(line) for line in run.stdout.splitlines()]
    assert said == [expected for _, expected in AS_PHP_READS_THEM]


def test_a_list_is_a_list_at_every_level_not_only_where_a_schema_wants_one() -> None:
    """PHP's json_encode sends an array keyed 0..n-1 in order as a JSON list, so the same
    data as a form means what it means as JSON, whatever the field (a map field then
    refuses it, as it refuses the JSON list)."""
    assert form("customAttributes[0]=x&customAttributes[1]=y") == {"customAttributes": ["x", "y"]}
    assert form("apiDefaultValues[Names][0]=a&apiDefaultValues[Names][1]=b") == {
        "apiDefaultValues": {"Names": ["a", "b"]}
    }


def test_appending_past_phps_largest_integer_keeps_every_value() -> None:
    """PHP drops ``a[]=2`` here without a word; pps keeps counting."""
    assert form("a[9223372036854775807]=1&a[]=2&a[]=3") == {
        "a": {"9223372036854775807": "1", "9223372036854775808": "2", "9223372036854775809": "3"}
    }


def test_plain_keys_as_before() -> None:
    """A key sent once is its value; sent several times, a list the parser narrows to its
    last value where the schema wants one value (PHP's own reading)."""
    assert form("firstName=Ada&x=") == {"firstName": "Ada", "x": ""}
    repeated = form("drafts=a&drafts=b")["drafts"]
    assert repeated == ["a", "b"] and isinstance(repeated, Repeated)
    assert not isinstance(form("drafts[]=a&drafts[]=b")["drafts"], Repeated)
    assert form("[a]=1&a[b=1") == {"[a]": "1", "a[b": "1"}  # no field: names as sent


@pytest.mark.parametrize(
    "raw",
    [
        "a=1&a[b]=2",  # PHP: a[b]=2, the 1 is gone
        "a[b]=2&a=1",  # PHP: a=1, the map is gone
        "a[]=1&a=2",
        "a=1&a=2&a[]=3",
        "a[b]=1&a[b][c]=2",
        "a[b][c]=1&a[b]=2",
        "a[x][]=1&a[x][0][y]=2",
    ],
)
def test_a_value_and_nested_keys_at_one_place_are_refused(raw: str) -> None:
    errors = refusal(raw)
    assert list(errors) == ["a"]
    assert "one of them would be lost" in errors["a"][0]


def test_a_conflict_is_named_as_the_client_spelled_the_field() -> None:
    assert list(refusal("b=1&custom_attributes[k]=1&custom_attributes=2")) == ["custom_attributes"]


def test_depth_up_to_max_depth_is_read_and_storable() -> None:
    deepest = "a" + "[b]" * (MAX_DEPTH - 1) + "=1"
    value: Any = form(deepest)
    check_storable(value)  # the same limit as a JSON body's
    for _ in range(MAX_DEPTH):
        value = value["a" if "a" in value else "b"]
    assert value == "1"


@pytest.mark.parametrize("indexes", [MAX_DEPTH, MAX_DEPTH + 1, 100_000])
def test_deeper_keys_are_refused_naming_the_field(indexes: int) -> None:
    started = time.monotonic()
    errors = refusal("x=1&customAttributes" + "[b]" * indexes + "=1")
    assert errors == {"customAttributes": [f"Nested deeper than {MAX_DEPTH} levels."]}
    assert time.monotonic() - started < 1


def test_multipart_fields_keep_their_order_and_nest_the_same() -> None:
    parts = [("a[]", "x"), ("a[1]", "y"), ("a[]", "z"), ("m[k][j]", "1"), ("p", "1"), ("p", "2")]
    raw = b"".join(
        b'--b\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n'
        % (name.encode(), value.encode())
        for name, value in parts
    )
    pairs = multipart_pairs(raw + b"--b--\r\n", "b", None)
    assert php_form(pairs) == {"a": ["x", "y", "z"], "m": {"k": {"j": "1"}}, "p": ["1", "2"]}
