"""The editor inside the shop's page: which steps exist, who may frame them, which cookie
survives a cross-site frame. Plain Python: no Flask (the views in :mod:`pps.editor.web`
turn these answers into headers).

* **Steps.** ``edit`` (the form and live preview), ``preview`` (every page large),
  ``proof`` (the pages with trim marks, approved before Finish), ``embed`` (the editor
  meant for a shop's ``<iframe>``, driven through ``/static/pps-editor-client.js``) and
  ``3d`` (a flat mockup of the product until real 3D exists). ``/editor/<hash>`` opens the
  step the session remembers.
* **Framing.** Every editor step may be framed by the draft's client's allowed origins
  (``pps client create --allow-origin``) and by nobody else: ``frame-ancestors`` lists
  exactly those origins, never ``*``; with none it is ``'none'``. Every other page keeps
  ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``.
* **The cookie.** A session set inside a cross-site frame is a third-party cookie:
  Chromium (and the others, one by one) drop those unless they are partitioned
  (CHIPS: ``SameSite=None; Secure; Partitioned``, kept per top-level site). ``Secure``
  needs a secure context, i.e. https, or a loopback host (``127.0.0.1``, ``localhost``,
  ``::1``), which browsers treat as secure even over plain http. Under http on any other
  host no cookie survives a cross-site frame, so pps keeps ``SameSite=Lax`` there: the
  editor works top-level and framed by its own site only (develop on a loopback host or
  serve https).
* **The cookie's name.** A Secure cookie is named ``__Host-pps_session``: browsers accept a
  ``__Host-`` cookie only with ``Secure``, ``Path=/`` and no ``Domain``, so a page on a
  sibling subdomain cannot plant one for pps's host (cookie tossing: a
  ``pps_session=<its own login>; Domain=.example.com`` cookie would otherwise be read as
  the customer's session). Only where the cookie cannot be Secure (plain http on a
  non-loopback host, development only) is it plain ``pps_session``.
* **API keys in URLs.** ``?api_token=`` on an editor URL is refused: a key in a browser
  URL ends up in history, logs and ``Referer`` headers. The shop's server calls ``/auth``
  instead and frames the ``Location`` it gets.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "API_TOKEN_PARAMS",
    "CLIENT_MODULE",
    "COOKIE_NAME",
    "DEFAULT_STEP",
    "FRAMED_STEPS",
    "HOST_COOKIE_NAME",
    "STEPS",
    "CookiePolicy",
    "cookie_policy",
    "frame_ancestors",
    "frame_origins",
    "step_to_open",
]

#: Every step, in the order the step navigation lists them.
STEPS = ("edit", "preview", "proof", "embed", "3d")
DEFAULT_STEP = "edit"
#: Steps a shop may frame (all of them: the Magento module frames ``edit`` and the steps it
#: leads to, the demo ``embed`` and ``3d``).
FRAMED_STEPS = frozenset(STEPS)
#: Query parameters that carry an API key in the reference product's custom UIs.
API_TOKEN_PARAMS = ("api_token", "apiToken")

#: The ES module shops import (``/static/<this>``), with ``Connector`` and ``Events``.
CLIENT_MODULE = "pps-editor-client.js"

#: The session cookie where it cannot be Secure (plain http on a non-loopback host).
COOKIE_NAME = "pps_session"
#: The session cookie wherever it is Secure: the ``__Host-`` prefix keeps sibling
#: subdomains from planting it.
HOST_COOKIE_NAME = f"__Host-{COOKIE_NAME}"

_LOOPBACK_NAMES = frozenset({"localhost"})


def step_to_open(asked: str | None, remembered: object) -> str:
    """The step to show: the one asked for, else the one the session remembers, else edit."""
    if asked is not None:
        return asked
    return remembered if isinstance(remembered, str) and remembered in STEPS else DEFAULT_STEP


def frame_origins(allowed_origins: Iterable[str]) -> list[str]:
    """The allowed origins that are safe as CSP source expressions, normalised and unique.

    Only ``http(s)://host[:port]`` passes: no wildcard, no path, nothing that could end the
    directive (``;``, ``,``, whitespace, quotes). ``pps client create`` checks the origins
    already; this keeps a bad row from loosening the header.
    """
    found: list[str] = []
    for origin in allowed_origins:
        normalised = _origin(origin)
        if normalised is not None and normalised not in found:
            found.append(normalised)
    return found


def frame_ancestors(allowed_origins: Iterable[str]) -> str:
    """The CSP directive for an editor page of a client with ``allowed_origins``."""
    origins = frame_origins(allowed_origins)
    return "frame-ancestors " + (" ".join(origins) if origins else "'none'")


def _origin(text: str) -> str | None:
    if not isinstance(text, str) or any(c in text for c in "*;,'\"\\ \t\r\n") or not text.isascii():
        return None
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in ("http", "https") or not host or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + ("" if port in (None, default) else f":{port}")


@dataclass(frozen=True)
class CookiePolicy:
    """The session cookie's name and attributes (Flask's ``SESSION_COOKIE_*`` settings)."""

    samesite: str
    secure: bool
    partitioned: bool

    @property
    def name(self) -> str:
        """``__Host-pps_session`` when Secure (``Path=/``, no ``Domain``), else
        ``pps_session``."""
        return HOST_COOKIE_NAME if self.secure else COOKIE_NAME

    @property
    def framable(self) -> bool:
        """Whether the session survives a cross-site frame."""
        return self.partitioned


def cookie_policy(base_url: str) -> CookiePolicy:
    """``SameSite=None; Secure; Partitioned`` where browsers keep it (https, or http on a
    loopback host), ``SameSite=Lax`` on plain http elsewhere (see the module docstring)."""
    parts = urlsplit(base_url)
    if parts.scheme.lower() == "https" or (
        parts.scheme.lower() == "http" and _loopback(parts.hostname or "")
    ):
        return CookiePolicy(samesite="None", secure=True, partitioned=True)
    return CookiePolicy(samesite="Lax", secure=False, partitioned=False)


def _loopback(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def draft_info(
    *,
    draft_hash: str,
    template_name: str,
    pages: int,
    data_keys: Iterable[tuple[str, str]],
    variants: Iterable[dict[str, object]],
    active_variant: str | None,
    step: str,
    version: int,
    locked: bool,
    proof_required: bool,
) -> dict[str, object]:
    """What the bridge announces as ``draftInfo`` when a shop connects (no secrets: the
    shop's page sees all of it). ``masterName`` is the reference product's name for the
    template's name, which its demo shows."""
    return {
        "hash": draft_hash,
        "draftHash": draft_hash,
        "templateName": template_name,
        "masterName": template_name,
        "pages": pages,
        "dataKeys": [{"name": name, "label": label} for name, label in data_keys],
        "variants": list(variants),
        "activeVariant": active_variant,
        "step": step,
        "version": version,
        "locked": locked,
        "proofRequired": proof_required,
    }
