"""The way back to the shop for a shopper who hit an error page: a link, or none at all.

A page that cannot go on (a used or expired login link, a login that ended, an unknown
design) offers the shop's own address only when the shop told pps in a signed place: the
callbacks of the login's ``redirect`` claim (kept in the session, or read from a token whose
signature was good but which is used up or too old). ``callback_cancel`` is the way back
the shop asked for; otherwise the start page of the shop's origin, never ``callback``
itself, which a shop may use to put the design into the cart. Plain Python: no Flask.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pps.auth.callbacks import query_callbacks, vetted_callbacks
from pps.auth.redirects import RedirectRefused, origin_of, safe_redirect_target

__all__ = ["from_callbacks", "from_redirect", "from_session_entries"]


def from_callbacks(callbacks: Mapping[str, str] | None, *, base_url: str) -> str | None:
    """``callback_cancel`` when given and followable; else the origin of another callback."""
    if not callbacks:
        return None
    vetted = vetted_callbacks(callbacks, base_url=base_url, allowed_origins=(), signed=True)
    if "callback_cancel" in vetted:
        return vetted["callback_cancel"]
    for name in ("callback_halt", "callback"):
        origin = origin_of(vetted[name]) if name in vetted else None
        if origin is not None:
            return origin + "/"
    return None


def from_redirect(
    redirect: str | None, *, base_url: str, allowed_origins: Iterable[str]
) -> str | None:
    """The way back named by a signed ``redirect`` claim: its editor URL's callbacks, or the
    origin of a shop page it pointed at when that origin is one the login itself would have
    sent the browser to (``allowed_origins``, the signing client's)."""
    if not redirect:
        return None
    origin = origin_of(redirect)
    if origin is not None and origin != origin_of(base_url):
        try:
            return safe_redirect_target(
                origin + "/", base_url=base_url, allowed_origins=allowed_origins
            )
        except RedirectRefused:
            return None
    try:
        query = urlsplit(redirect).query
    except ValueError:  # not a URL (``https://[host/``): the login would not follow it either
        return None
    return from_callbacks(query_callbacks(query), base_url=base_url)


def from_session_entries(entries: Any, *, base_url: str, prefer: Iterable[str] = ()) -> str | None:
    """From the session's editor entries (``{draftHash: {"callbacks": {...}}}``): the
    preferred drafts' first, then any other login grant."""
    if not isinstance(entries, Mapping):
        return None
    order = [key for key in prefer if key in entries] + [k for k in entries if k not in prefer]
    for key in order:
        entry = entries[key]
        callbacks = entry.get("callbacks") if isinstance(entry, Mapping) else None
        if isinstance(callbacks, Mapping):
            clean = {k: v for k, v in callbacks.items() if isinstance(v, str)}
            found = from_callbacks(clean, base_url=base_url)
            if found is not None:
                return found
    return None
