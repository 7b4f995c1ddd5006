"""Asking the shop whether an action on a draft is allowed (the reference's remote ACL).

The request is the one the PHP SDK's ``Rissc\\Printformer\\Acl\\Handler`` answers: a POST of
``{"actions": [{"action", "userIdentifier", "entityType", "entityIdentifier"}]}`` (JSON) to
the client's ACL URL; the handler answers the same list with ``allowAction`` added to each
entry (as the list itself, or under ``actions`` or ``data``). Only ``allowAction: true`` for
the very action asked allows it; everything else denies: no ACL URL set, a refused
address, a network error, no answer within ``PPS_ACL_TIMEOUT`` seconds (the deadline of the
whole request, the lookup of the host name included), a non-2xx status, a body that is not
that JSON. Each denial says why in plain words, shown on the customer's page and in API
errors; addresses and a network error's own text go only to the log (with the request id),
never to a shopper.

The actions (``entityType`` is always ``draft``, ``entityIdentifier`` the draft hash,
``userIdentifier`` the draft's user or the user the request acts for):

* ``draft.editor.open``: showing the draft in the editor (any step);
* ``draft.save``: saving values in the editor;
* ``draft.finish``: finishing the draft in the editor;
* ``draft.files.fetch``: handing out a file of the draft (print PDF, proof, image).
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Protocol

from pps.acl.limit import TooManyQuestions, question_wait
from pps.platform.ephemeral import EphemeralStore
from pps.platform.errors import PpsError
from pps.platform.models import Draft, DraftRef
from pps.platform.name_lookup import Resolver
from pps.platform.repository.integrations import SqlIntegrationStore
from pps.platform.settings import Settings
from pps.platform.ssrf import (
    ForbiddenTarget,
    NameNotResolved,
    NotResolvedInTime,
    RequestFailed,
    post,
)
from pps.platform.strict_json import loads

__all__ = [
    "ACTIONS",
    "EDITOR_OPEN",
    "FILES_FETCH",
    "FINISH",
    "SAVE",
    "AclDenied",
    "Decision",
    "ask",
    "guard",
    "require",
]

log = logging.getLogger("pps.acl")

EDITOR_OPEN = "draft.editor.open"
SAVE = "draft.save"
FINISH = "draft.finish"
FILES_FETCH = "draft.files.fetch"
ACTIONS = {
    EDITOR_OPEN: "Show the draft in the editor.",
    SAVE: "Save values of the draft in the editor.",
    FINISH: "Finish the draft in the editor.",
    FILES_FETCH: "Hand out a file of the draft (print, low-res, image).",
}
ENTITY_TYPE = "draft"
USER_AGENT = "pps-acl/1"


class AclDenied(PpsError):
    status = 403
    default_message = "The shop does not allow this action on this design."


@dataclass(frozen=True)
class Decision:
    """``reason`` is shown (to the shopper on the editor's page, to the shop's developer in
    API errors): plain words, never an address or a network error's text; ``detail`` is
    what the log gets besides."""

    allowed: bool
    reason: str
    detail: str | None = None


def _unreachable(exc: RequestFailed, timeout: float) -> str:
    """What went wrong on the way to the shop's access control, without addresses."""
    cause = exc.cause
    if cause is not None and issubclass(cause, NotResolvedInTime):
        return f"the shop's access control's host name did not resolve within {timeout:g} s"
    if cause is not None and issubclass(cause, NameNotResolved):
        return "the shop's access control's host name did not resolve"
    if exc.timed_out:
        return f"the shop's access control did not answer within {timeout:g} s"
    if cause is not None and issubclass(cause, ConnectionRefusedError):
        what = "the connection was refused"
    elif cause is not None and issubclass(cause, ssl.SSLError):
        what = "the TLS handshake failed"
    elif cause is not None and issubclass(cause, ConnectionError | http.client.HTTPException):
        what = "the connection was closed without an answer"
    else:
        what = "a network error"
    return f"the shop's access control could not be reached ({what})"


def _entries(body: Any) -> list[Any]:
    if isinstance(body, dict):
        body = body.get("actions", body.get("data"))
    return body if isinstance(body, list) else []


def ask(
    url: str | None,
    action: str,
    *,
    user_identifier: str,
    draft_hash: str,
    timeout: float,
    allowed_hosts: Collection[str] = (),
    resolver: Resolver | None = None,
) -> Decision:
    """The shop's answer for one action; any doubt is a denial. ``resolver``: where the
    host name is looked up (the process's lookup threads unless given)."""
    if not url:
        return Decision(False, "the shop has no access control URL configured for remote ACL")
    question = {
        "action": action,
        "userIdentifier": user_identifier,
        "entityType": ENTITY_TYPE,
        "entityIdentifier": draft_hash,
    }
    body = json.dumps({"actions": [question]}, separators=(",", ":")).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
        "Connection": "close",
    }
    try:
        # The URL is the operator's (pps client set-acl-url): intranet addresses are fine,
        # the always-refused ranges (link-local metadata, ...) are not.
        response = post(
            url,
            body,
            headers,
            deadline=timeout,
            allow_private=True,
            allowed_hosts=allowed_hosts,
            purpose="Access control questions",
            resolver=resolver,
        )
    except ForbiddenTarget as exc:
        reason = "the shop's access control URL is refused by pps's rules for outbound addresses"
        return Decision(False, reason, f"{url}: {exc}")
    except RequestFailed as exc:
        return Decision(False, _unreachable(exc, timeout), f"{url}: {exc}")
    if not 200 <= response.status < 300:
        return Decision(False, f"the shop's access control answered {response.status}")
    try:
        answer = loads(response.body)  # nesting too deep for the decoder is a ValueError too
    except ValueError:
        return Decision(False, "the shop's access control answered something other than JSON")
    for entry in _entries(answer):
        if (
            isinstance(entry, dict)
            and entry.get("action") == action
            and str(entry.get("entityIdentifier")) == draft_hash
        ):
            if entry.get("allowAction") is True:
                return Decision(True, "allowed by the shop")
            return Decision(False, "the shop does not allow it")
    return Decision(False, "the shop's access control did not answer for this action")


def require(
    url: str | None,
    action: str,
    *,
    user_identifier: str,
    draft_hash: str,
    timeout: float,
    allowed_hosts: Collection[str] = (),
) -> None:
    """:func:`ask`, raising :class:`AclDenied` with the reason when the answer is no."""
    decision = ask(
        url,
        action,
        user_identifier=user_identifier,
        draft_hash=draft_hash,
        timeout=timeout,
        allowed_hosts=allowed_hosts,
    )
    if not decision.allowed:
        log.info("remote ACL denied %s on draft %s: %s", action, draft_hash, decision.reason)
        denied = AclDenied(
            f"This action ({action}) on this design is not allowed: {decision.reason}."
        )
        denied.detail = decision.detail  # logged with the request id, never shown
        raise denied


class AclServices(Protocol):
    """What :func:`guard` needs of :class:`pps.platform.services.Services`."""

    @property
    def settings(self) -> Settings: ...

    @property
    def integrations(self) -> SqlIntegrationStore: ...

    @property
    def ephemeral(self) -> EphemeralStore: ...


def guard(
    services: AclServices, draft: Draft | DraftRef, action: str, user: str | None = None
) -> None:
    """Ask the draft's shop before ``action`` when the draft was created with ``remoteAcl``;
    :class:`AclDenied` unless it allows it. Drafts without the flag pass without a question.

    Each question is counted for the login first (:mod:`pps.acl.limit`): past the limit,
    :class:`TooManyQuestions` (429) and the shop is not asked.
    """
    if not draft.remote_acl:
        return
    who = user or draft.user_identifier
    config = services.integrations.settings(draft.client_identifier)
    if config.acl_url:  # without a URL nothing is sent: the answer is a denial
        wait = question_wait(services.ephemeral, draft.client_identifier, who)
        if wait:
            raise TooManyQuestions(wait)
    require(
        config.acl_url,
        action,
        user_identifier=who,
        draft_hash=draft.draft_hash,
        timeout=services.settings.acl_timeout,
        allowed_hosts=config.allowed_hosts,
    )
