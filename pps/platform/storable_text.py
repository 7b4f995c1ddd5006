"""Whether a string can be stored and served again. Plain Python: no Flask.

PostgreSQL's text holds no NUL character, and a lone UTF-16 surrogate (``"\\ud800"``, which
JSON's ``\\u`` escapes can carry) cannot be encoded as UTF-8: stored, either would fail the
write on one backend, or every later page and JSON answer that shows it. Every edge that
takes text from outside (API bodies, the editor's autosave) asks this one function.
"""

from __future__ import annotations

__all__ = ["text_problem"]


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
