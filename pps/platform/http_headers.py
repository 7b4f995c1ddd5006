"""Headers every answer carries, applied by one Flask hook (:mod:`pps.web.hooks`). No Flask."""

from __future__ import annotations

import re

from pps.platform.ids import unique_tag

__all__ = ["PAGE_CSP", "PAGE_HEADERS", "TOKEN_URL_HEADERS", "page_headers", "request_id_from"]

#: Every HTML page: own-origin resources only, no inline scripts or styles, no framing.
#: (The editor's steps replace ``frame-ancestors`` with the client's allowed origins, see
#: :mod:`pps.editor.embed`.)
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

#: Defaults for HTML answers, ours and the error pages; a view may set its own first.
PAGE_HEADERS = (
    ("Content-Security-Policy", PAGE_CSP),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
)

#: Every answer to a URL that carried a token (a login or a file link): no cache may keep
#: it, and the next site gets no ``Referer`` (a redirect's policy governs the request it
#: leads to). Their redirects have no body, so they carry these and none of the page
#: headers: there is no document to frame or restrict and no content to sniff.
TOKEN_URL_HEADERS = (
    ("Cache-Control", "no-store"),
    ("Referrer-Policy", "no-referrer"),
)

_FRAME_ANCESTORS = re.compile(r"(?:^|;)\s*frame-ancestors\s+([^;]*)", re.IGNORECASE)


def page_headers(csp: str | None) -> tuple[tuple[str, str], ...]:
    """The defaults for an HTML answer whose view set ``csp`` (or none).

    A page whose own policy names origins in ``frame-ancestors`` (the editor, framed by the
    client's shop) gets no ``X-Frame-Options``: ``DENY`` there would block the very frames
    the policy allows in a browser that reads only the older header.
    """
    match = _FRAME_ANCESTORS.search(csp or "")
    if match is None or match.group(1).strip() == "'none'":
        return PAGE_HEADERS
    return tuple(header for header in PAGE_HEADERS if header[0] != "X-Frame-Options")


_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_from(incoming: str | None) -> str:
    """The request id: the one nginx sent (``X-Request-ID``) when sane, else a fresh one."""
    if incoming and _REQUEST_ID.fullmatch(incoming):
        return incoming
    return unique_tag()
