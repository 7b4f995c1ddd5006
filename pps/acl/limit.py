"""How many questions pps may send a shop's remote ACL for one login.

Every question is a request pps sends the shop in a customer's name, and opening an editor
page (a GET anyone logged in may repeat) asks one. So the questions of one login (client
and user) are counted per minute in the ephemeral store (shared by every worker and node),
in :func:`pps.acl.remote.guard` for every action at once, before the shop is asked; past
:data:`QUESTIONS_PER_MINUTE` the action is a 429 with ``Retry-After`` and the shop hears
nothing. A person editing a design never comes near it: a question per page opened, save,
finish and file fetched. No Flask here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pps.platform.ephemeral import EphemeralStore
from pps.platform.errors import PpsError

__all__ = ["QUESTIONS_PER_MINUTE", "TooManyQuestions", "question_wait"]

#: Remote ACL questions per login per minute (all its drafts and actions together): two a
#: second on average, far beyond a person's pace, and a bound on what a script with one
#: login can make pps send the shop.
QUESTIONS_PER_MINUTE = 120


class TooManyQuestions(PpsError):
    """429: the login made pps ask the shop's access control too often this minute."""

    status = 429
    default_message = (
        "Too many requests from this login in the last minute that need the shop's access "
        "control; wait a moment (Retry-After seconds) and try again."
    )

    def __init__(self, retry_after: int) -> None:
        super().__init__(headers={"Retry-After": str(max(1, retry_after))})


def question_wait(
    store: EphemeralStore, client: str, user: str, clock: Callable[[], float] = time.time
) -> int:
    """Count one question asked for ``user``; 0 when it may be sent, else seconds to wait."""
    now = clock()
    minute = int(now // 60)
    if store.count(f"pps:aclq:{client}:{user}:m{minute}", 120) > QUESTIONS_PER_MINUTE:
        return max(1, 60 - int(now % 60))
    return 0
