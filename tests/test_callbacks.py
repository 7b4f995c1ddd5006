"""pps.auth.callbacks: which redirect targets open the editor, and with which callbacks."""

from __future__ import annotations

import base64
import random
from urllib.parse import parse_qs, quote

import pytest

from pps.auth.callbacks import editor_callbacks, editor_target, query_callbacks
from pps.auth.redirects import check_redirect_target

ALLOWED = ["https://shop.example"]
CALLBACK = "https://shop.example/cart?product=42&qty=1"
ENCODED = quote(base64.b64encode(CALLBACK.encode()).decode(), safe="")
HASH = "a" * 32


def grants(target: str, base_url: str = "https://pps.example") -> tuple[str, str | None] | None:
    checked = check_redirect_target(target, base_url=base_url, allowed_origins=ALLOWED)
    found = editor_target(checked, base_url)
    return None if found is None else (found.draft_hash, found.step)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (f"/editor/{HASH}", (HASH, None)),
        (f"/editor/{HASH}/", (HASH, None)),
        (f"/editor/{HASH}/edit", (HASH, "edit")),
        (f"/editor/{HASH}/preview?callback={ENCODED}#top", (HASH, "preview")),
        (f"https://pps.example/editor/{HASH}/edit?locale=de", (HASH, "edit")),
        (f"HTTPS://PPS.example:443/editor/{HASH}", (HASH, None)),
        (f"https://pps.example/editor/{HASH}#/editor/other", (HASH, None)),
        ("https://pps.example", None),
        ("https://pps.example?x=/editor/abc", None),
        (f"https://shop.example/editor/{HASH}/edit", None),  # an allowed origin, not ours
        (f"/editor/{HASH}/edit/more", None),
        (f"/files/editor/{HASH}", None),
        ("/editor/", None),
    ],
)
def test_editor_targets_on_our_origin(target: str, expected: tuple[str, str | None]) -> None:
    assert grants(target) == expected


def test_editor_below_the_base_path_only() -> None:
    base = "https://pps.example/print"
    assert grants(f"https://pps.example/print/editor/{HASH}/edit", base) == (HASH, "edit")
    assert grants(f"/print/editor/{HASH}/edit", base) is None  # relative paths are as given
    assert grants(f"https://pps.example/editor/{HASH}/edit", base) is None
    assert grants(f"https://pps.example/printer/editor/{HASH}", base) is None


def test_callbacks_of_an_editor_target_are_decoded() -> None:
    checked = check_redirect_target(
        f"https://pps.example/editor/{HASH}/edit?callback={ENCODED}&locale=de#x",
        base_url="https://pps.example",
        allowed_origins=[],
    )
    found = editor_target(checked, "https://pps.example")
    assert found is not None
    assert found.query == f"callback={ENCODED}&locale=de"
    assert query_callbacks(found.query) == {"callback": CALLBACK}


#: Pieces of query strings: the callback names, spelled plainly and percent-encoded, values
#: in base64 (with '+' sent raw, as a space, or encoded), and the separators.
_PIECES = [
    "callback",
    "callback_cancel",
    "callback_halt",
    "callb%61ck",
    "callback%5Fhalt",
    "callback+",
    "locale",
    "=",
    "&",
    "&&",
    ENCODED,
    base64.b64encode(b"https://a.example/?x=1&y=2>").decode(),
    "aHR0cHM6Ly9h+LmV4YW1wbGU=",
    "aHR0cHM6Ly9h%2BLmV4YW1wbGU%3D",
    "%",
    "%ZZ",
    "%C3%A9",
    "é",
    "",
]


def test_query_callbacks_are_what_parse_qs_would_give() -> None:
    rng = random.Random(20261123)
    queries = [f"callback={ENCODED}", "", "&", "callback", "callback=&callback=" + ENCODED]
    queries += ["".join(rng.choices(_PIECES, k=rng.randint(1, 12))) for _ in range(5000)]
    for query in queries:
        expected = editor_callbacks(parse_qs(query, keep_blank_values=True))
        assert query_callbacks(query) == expected, query
