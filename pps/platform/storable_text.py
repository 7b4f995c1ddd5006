"""Whether a string, or a nesting of values, can be stored and served again. Plain Python.

PostgreSQL's text holds no NUL character, and a lone UTF-16 surrogate (``"\\ud800"``, which
JSON's ``\\u`` escapes can carry) cannot be encoded as UTF-8: stored, either would fail the
write on one backend, or every later page and JSON answer that shows it. Every edge that
takes text from outside (API bodies, the editor's autosave) asks this one function.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "nested_deeper_than", "text_problem"]

#: Deepest nesting of lists and objects pps takes from outside (request bodies, template
#: files): nothing a shop sends nests this far, and encoding a very deep value again (into
#: the database, into an answer) would hit the recursion limit.
MAX_DEPTH = 32


def text_problem(text: str) -> str | None:
    """What is wrong with ``text`` as a stored value, phrased to follow "The value ...";
    None when nothing is."""
    if "\x00" in text:
        return "must not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (a lone surrogate was sent)."
    return None


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects in ``value`` nest more than ``limit`` levels (the value
    itself is level 1). Walked without recursion, since encoding such a value again (into
    the database, into an answer) recurses once per level and would fail there."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False
