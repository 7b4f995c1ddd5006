"""Routes whose ``GET`` uses something up answer no ``HEAD``.

Werkzeug gives every ``GET`` rule an implicit ``HEAD``, which Flask answers with the ``GET``
view. Link scanners in mail and chat clients probe URLs that way, so where a ``GET`` spends a
single-use token or writes (a login, a file link, a copy), a probe would spend or write too.
Such a rule is declared with ``head=False``: the router itself answers ``HEAD`` with ``405``,
before any hook or view runs, and ``Allow`` (of that ``405``, of another method's and of
``OPTIONS``) names only the methods the route really serves.
"""

from __future__ import annotations

from typing import Any

from werkzeug.routing import Rule

__all__ = ["PpsRule"]


class PpsRule(Rule):
    """A Werkzeug rule taking ``head=False`` to drop the ``HEAD`` its ``GET`` implies."""

    def __init__(self, string: str, *args: Any, head: bool = True, **kwargs: Any) -> None:
        super().__init__(string, *args, **kwargs)
        if not head and self.methods is not None:
            self.methods = self.methods - {"HEAD"}
