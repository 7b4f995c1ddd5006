"""Short-lived links to stored files, bought with a shop-signed JWT. Plain Python: no Flask.

A file URL's token is checked first (:func:`pps.auth.access.check_token`), then the resource
(:func:`owned_draft`), and only when the file exists does :func:`issue_link` use up the
token's ``jti`` and store a random link for ``PPS_FILE_LINK_TTL`` seconds.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from pps.auth.access import CheckedToken, claim_jti_and_put
from pps.platform import ids
from pps.platform.ephemeral import link_key
from pps.platform.errors import Forbidden, NotFound
from pps.platform.models import DraftRef
from pps.platform.services import Services

__all__ = ["issue_link", "owned_draft"]


def owned_draft(svc: Services, checked: CheckedToken, draft_hash: str) -> DraftRef:
    """The token's client's draft; 403 when the token names a ``user`` who does not own it."""
    draft = svc.repository.get_draft_ref(checked.client.identifier, draft_hash)
    if draft is None:
        raise NotFound("No such draft.")
    if checked.token.user is not None and checked.token.user != draft.user_identifier:
        raise Forbidden("The token's user does not own this draft.")
    return draft


def issue_link(
    svc: Services, checked: CheckedToken, *, key: str, filename: str, content_type: str
) -> str:
    """Use up the token's ``jti`` (if any) and store a fresh link, in one atomic step, and
    return the link's URL. Last check: a refused request leaves the ``jti`` unused."""
    token = ids.link_token()
    link = {
        "key": key,
        "filename": filename,
        "contentType": content_type,
        "client": checked.client.identifier,
    }
    claim_jti_and_put(
        svc,
        checked,
        login=False,
        link=link_key(token),
        value=json.dumps(link),
        link_ttl=svc.settings.file_link_ttl,
    )
    return f"{svc.settings.base_url}/files/{token}/{quote(filename)}"
