"""DataKey values as the text they print as.

Shops send ``apiDefaultValues`` as any JSON value (PHP arrays keep their ints, floats and
bools). They are stored as sent, and rendered, shown in the editor and checked as the text
below, so a number prints as the shop wrote it and never makes a file fail to render.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def as_text(value: Any) -> str | None:
    """The text ``value`` prints as; ``None`` for a missing value (the template's default).

    Strings as they are; ``true``/``false``; numbers as JSON writes them (``2``, ``2.5``);
    lists and objects as compact JSON text, so nothing a shop sent is silently lost.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


def as_texts(values: Mapping[str, Any]) -> dict[str, str | None]:
    """Every value of ``values`` as its text (see :func:`as_text`)."""
    return {key: as_text(value) for key, value in values.items()}
