"""What a user group grants, in one place. Plain Python, no Flask.

A user group is a set of users of one client (``userGroupIdentifier`` on the user) that
share drafts: a draft belongs to the group named on it (by default its user's group when
it is created). Members of a draft's group

- find it with ``GET /api-ext/draft?userGroupIdentifier=<group>`` (the shop lists the group),
- may be given it with ``POST /api-ext/draft/claim`` and ``userGroupIdentifier`` (only the
  group's drafts move, and only to a member),
- open, save and finish it in the editor, like its own user (:func:`shares_group`).

File tokens with a ``user`` claim still need the draft's own user, and nothing else of a
draft (its values, its user) changes hands through the group.
"""

from __future__ import annotations

from pps.platform.models import Draft
from pps.platform.repository import Repository

__all__ = ["shares_group"]


def shares_group(repository: Repository, client: str, user: str, draft: Draft) -> bool:
    """Whether ``user`` (of ``client``) is a member of ``draft``'s user group."""
    if draft.user_group_identifier is None:
        return False
    member = repository.get_user(client, user)
    return member is not None and member.user_group_identifier == draft.user_group_identifier
