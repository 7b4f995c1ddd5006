"""Where a browser may be sent: the ``redirect`` claim and editor callbacks.

Plain Python, no Flask. The parser here is deliberately stricter than browsers: anything a
browser might read differently from ``urllib`` (backslashes, tabs, userinfo, a missing
``//``, extra slashes) is refused instead of interpreted, so an open redirect cannot hide
in the gap between two URL parsers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import quote

from pps.platform.hostnames import is_host_name

__all__ = [
    "RedirectRefused",
    "RedirectTarget",
    "check_redirect_target",
    "origin_of",
    "own_origin",
    "path_of",
    "safe_redirect_target",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
# A scheme as the WHATWG URL parser recognises one: anything matching this before a ':' is
# a scheme to a browser, whatever the rest of the string looks like.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_IPV6 = re.compile(r"\[[0-9a-f:.]+\]")
_PORT = re.compile(r"[0-9]{0,5}")
_AUTHORITY_END = re.compile(r"[/?#]")
# Printable ASCII stays as it is in Location; everything else is percent-encoded (UTF-8).
_LOCATION_SAFE = "".join(chr(code) for code in range(0x21, 0x7F))


class RedirectRefused(Exception):
    """The target is not a place pps sends browsers to; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class RedirectTarget(NamedTuple):
    """A redirect target that passed :func:`check_redirect_target`."""

    location: str
    """The target ready for a ``Location`` header."""
    origin: str | None
    """Its normalised origin, or None for a path on our own origin."""


def safe_redirect_target(target: str, *, base_url: str, allowed_origins: Iterable[str]) -> str:
    """Return ``target`` ready for a ``Location`` header, or raise :class:`RedirectRefused`.

    Allowed: a path on our own origin (``/...`` but not ``//`` or ``/\\``), or an absolute
    http(s) URL whose origin is that of ``base_url`` or one of ``allowed_origins``.
    Percent-encoded slashes (``/%2F%2Fevil.com``) are allowed: browsers keep them as a
    path on our origin. Non-ASCII characters are returned percent-encoded as UTF-8.
    """
    return check_redirect_target(
        target, base_url=base_url, allowed_origins=allowed_origins
    ).location


def check_redirect_target(
    target: str, *, base_url: str, allowed_origins: Iterable[str]
) -> RedirectTarget:
    """:func:`safe_redirect_target`, keeping the origin it found for the caller."""
    if not isinstance(target, str) or not target:
        raise RedirectRefused("the redirect target is empty")
    _check_characters(target)
    if target.startswith("/"):
        if target.startswith("//"):
            raise RedirectRefused("a relative target must not start with '//'")
        return RedirectTarget(_for_location(target), None)
    origin = _parse_origin(target)
    if origin not in _allowed_origins(base_url, tuple(allowed_origins)):
        raise RedirectRefused(
            f"{origin} is not an allowed redirect origin; ask the operator to add it"
        )
    return RedirectTarget(_for_location(target), origin)


def path_of(target: RedirectTarget) -> str:
    """Path, query and fragment of a checked target: all of it for a relative one."""
    if target.origin is None:
        return target.location
    # A checked absolute target is scheme://authority[/?#...]: the authority ends at the
    # first '/', '?' or '#' after the '//', as in urllib.parse.urlsplit.
    start = target.location.index("//") + 2
    end = _AUTHORITY_END.search(target.location, start)
    return "" if end is None else target.location[end.start() :]


def _for_location(target: str) -> str:
    # _check_characters let only printable characters without spaces through, and every
    # printable ASCII character stays as it is: only non-ASCII text needs encoding.
    return target if target.isascii() else quote(target, safe=_LOCATION_SAFE)


@lru_cache(maxsize=256)
def _allowed_origins(base_url: str, allowed_origins: tuple[str, ...]) -> frozenset[str]:
    """The service's origin and a client's allowed ones: the same few in every request."""
    return frozenset(o for o in (own_origin(base_url), *map(origin_of, allowed_origins)) if o)


@lru_cache(maxsize=16)
def own_origin(base_url: str) -> str | None:
    """:func:`origin_of` the service's base URL, parsed once per process."""
    return origin_of(base_url)


def origin_of(url: str) -> str | None:
    """The normalised origin ``scheme://host[:port]`` of an http(s) URL, or None.

    Scheme and host are lowercased and default ports dropped. Anything
    :func:`safe_redirect_target` would refuse (userinfo, non-ASCII hosts, whitespace) is
    None, so an operator-supplied allowed origin is exactly as strict as a target.
    """
    try:
        if not isinstance(url, str):
            return None
        _check_characters(url)
        return _parse_origin(url)
    except RedirectRefused:
        return None


def _check_characters(url: str) -> None:
    # Browsers silently drop tabs and newlines and read '\' as '/', which turns
    # "/\t/evil.com" or "/\\evil.com" into "//evil.com": refuse them all outright.
    if "\\" in url:
        raise RedirectRefused("the redirect target must not contain a backslash")
    if " " in url or not url.isprintable():
        raise RedirectRefused(
            "the redirect target must not contain whitespace or control characters"
        )


def _parse_origin(url: str) -> str:
    """Origin of an absolute http(s) URL with a plain ``host[:port]`` authority."""
    match = _SCHEME.match(url)
    if match is None:
        raise RedirectRefused("a redirect target must be a path starting with '/' or a URL")
    scheme = match.group()[:-1].lower()
    if scheme not in _DEFAULT_PORTS:
        raise RedirectRefused(f"the scheme {scheme!r} is not allowed; use http or https")
    rest = url[match.end() :]
    # "https:evil.com", "http:/evil.com" and "https:///evil.com" all reach evil.com in a
    # browser but have no (or an empty) authority to urllib.
    if not rest.startswith("//") or rest.startswith("///"):
        raise RedirectRefused("an absolute redirect target must be scheme://host/...")
    authority = _AUTHORITY_END.split(rest[2:], maxsplit=1)[0]
    if "@" in authority:
        raise RedirectRefused("the redirect target must not contain user information ('@')")
    host, port = _split_host_port(authority.lower())
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _split_host_port(authority: str) -> tuple[str, int | None]:
    if authority.startswith("["):
        end = authority.find("]") + 1
        host, port_text = authority[:end], authority[end:]
        valid_host = end > 0 and _IPV6.fullmatch(host) is not None
    else:
        host, colon, port_text = authority.partition(":")
        port_text = colon + port_text
        # Labels of 1 to 63 characters: an empty or longer one cannot be encoded for
        # Location (Werkzeug's IDNA step fails after the view has answered).
        valid_host = is_host_name(host)
    if not valid_host:
        raise RedirectRefused(f"the host {host!r} is not a valid ASCII host name")
    if not port_text:
        return host, None
    if not port_text.startswith(":") or not _PORT.fullmatch(port_text[1:]):
        raise RedirectRefused(f"the port in {authority!r} is not valid")
    if port_text == ":":  # "https://host:/" means the default port
        return host, None
    port = int(port_text[1:])
    if port > 65535:
        raise RedirectRefused(f"the port {port} is out of range")
    return host, port
