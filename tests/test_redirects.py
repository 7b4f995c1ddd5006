"""pps.auth.redirects: only our own paths and allowed origins; every known open-redirect
trick fails."""

from __future__ import annotations

import random
import string
from urllib.parse import urlsplit

import pytest

from pps.auth.redirects import (
    RedirectRefused,
    check_redirect_target,
    origin_of,
    path_of,
    safe_redirect_target,
)

BASE = "https://pps.example"
ALLOWED = ["https://shop.example", "http://localhost:8080"]


def target(url: str) -> str:
    return safe_redirect_target(url, base_url=BASE, allowed_origins=ALLOWED)


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/editor/abc123/edit?callback=aHR0cHM6Ly9zaG9wLmV4YW1wbGUv&locale=de",
        "/editor/abc#step",
        "/a@b/c:d",
        "/%2F%2Fevil.com",  # stays a path on our origin in every browser
        "/%5Cevil.com",
        "https://pps.example/editor/abc",
        "https://PPS.example:443/editor",
        "https://pps.example:/x",
        "https://shop.example",
        "https://shop.example/checkout?x=1#y",
        "https://shop.example/path@with-at",
        "HTTPS://Shop.Example/cart",
        "http://localhost:8080/done",
    ],
)
def test_allowed(url: str) -> None:
    assert target(url) == url


def test_non_ascii_is_percent_encoded() -> None:
    assert target("/editor/größe?q=ü") == "/editor/gr%C3%B6%C3%9Fe?q=%C3%BC"
    assert target("https://shop.example/ä") == "https://shop.example/%C3%A4"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "//evil.com",
        "///evil.com",
        "/\\evil.com",
        "\\\\evil",
        "\\/evil.com",
        "/foo\\bar",
        "https:evil.com",
        "http:/evil.com",
        "https:///evil.com",
        "https:\\\\evil.com",
        "https://shop.example@evil.com",
        "https://evil.com\\@shop.example",
        "https://user:pass@shop.example/",
        "https://@shop.example/",
        "https://shop.example.evil.com/",
        "https://evil.com#@shop.example",
        "https://evil.com?@shop.example",
        "https://evil.com/https://shop.example",
        "https://shop.example:8443/",
        "http://shop.example/",  # the allowed origin is https only
        "https://localhost:8080/",
        "https://pps.example./",
        "https://shop%2Eexample/",
        "https://shop.example%2F@evil.com/",
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "JaVaScRiPt://shop.example/%0aalert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox",
        "ftp://shop.example/",
        "editor/abc",
        "evil.com",
        "?next=x",
        "#frag",
        " /editor",
        "/editor ",
        "/ /evil.com",
        "/\t/evil.com",
        "/\n/evil.com",
        "/\r/evil.com",
        "\t//evil.com",
        "/\x00evil",
        "/\x7fevil",
        "/\u2028/evil.com",
        "/\u00a0evil.com",
        "/\u202eevil.com",
        "java\tscript:alert(1)",
        "https://shöp.example/",
        "https://shop.example:99999/",
        "https://shop.example:-1/",
        "https://shop.example:8o/",
        "https://[::1/",
        "https://:443/",
    ],
)
def test_refused(url: str) -> None:
    with pytest.raises(RedirectRefused) as info:
        target(url)
    assert info.value.reason


def test_base_url_origin_is_allowed_without_allowed_origins() -> None:
    url = "https://pps.example/editor"
    assert safe_redirect_target(url, base_url=BASE, allowed_origins=[]) == url
    with pytest.raises(RedirectRefused, match=r"shop\.example"):
        safe_redirect_target("https://shop.example/", base_url=BASE, allowed_origins=())


def test_invalid_allowed_origins_are_ignored() -> None:
    with pytest.raises(RedirectRefused):
        safe_redirect_target(
            "https://evil.com/", base_url=BASE, allowed_origins=["evil.com", "https://u@evil.com"]
        )


def test_ipv6_origin() -> None:
    url = "http://[::1]:8080/x"
    assert safe_redirect_target(url, base_url=BASE, allowed_origins=["http://[::1]:8080"]) == url


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Shop.Example", "https://shop.example"),
        ("https://shop.example:443/", "https://shop.example"),
        ("http://shop.example:80", "http://shop.example"),
        ("http://shop.example:443", "http://shop.example:443"),
        ("https://shop.example:8443/base/path?q#f", "https://shop.example:8443"),
        ("HTTP://LOCALHOST:8080", "http://localhost:8080"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
        ("https://[2001:DB8::1]:443", "https://[2001:db8::1]"),
    ],
)
def test_origin_of(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "",
        "shop.example",
        "/path",
        "//shop.example",
        "ftp://shop.example",
        "https://",
        "https://u:p@shop.example",
        "https://shop.example ",
        "https:shop.example",
        "https://shop..example\\",
        "https://shop.example:70000",
        # Not encodable for Location: an empty label, a label over 63 characters, a name
        # over 253.
        "https://shop..example",
        "https://.shop.example",
        "https://" + "a" * 64 + ".example",
        "https://" + "a." * 127 + "example",
    ],
)
def test_origin_of_refuses(url: str) -> None:
    assert origin_of(url) is None


def test_fuzz_only_redirect_refused_escapes() -> None:
    rng = random.Random(7)
    pieces = ["/", "//", "\\", "@", ":", "https:", "http://", "shop.example", "evil.com", "?", "#"]
    pieces += ["%2F", " ", "\t", "[", "]", ":443", "é", "\ud800", "javascript:", "."]
    for _ in range(3000):
        url = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        url += "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 3)))
        try:
            result = target(url)
        except RedirectRefused:
            continue
        # Whatever passes is ASCII and either a single-slash path or an allowed origin.
        assert result.isascii()
        if result.startswith("/"):
            assert not result.startswith("//")
            assert "\\" not in result
        else:
            assert origin_of(result) in {BASE, *ALLOWED}
        # And what follows its authority is what urllib finds there.
        checked = check_redirect_target(url, base_url=BASE, allowed_origins=ALLOWED)
        assert checked.location == result
        assert checked.origin == (None if result.startswith("/") else origin_of(result))
        assert path_of(checked) == _after_authority(result)


def _after_authority(url: str) -> str:
    """Everything after ``scheme://netloc`` as urllib splits it; a path is all path."""
    parts = urlsplit(url)
    return url if not parts.scheme else url[len(parts.scheme) + 3 + len(parts.netloc) :]
