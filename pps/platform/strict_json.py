"""JSON as pps accepts it from outside: no ``NaN`` or ``Infinity``, no number beyond a float.

Neither PostgreSQL's JSON type nor a JSON answer can hold those values, so request bodies and
token segments refuse them while parsing. Text nested deeper than the decoder can recurse is
refused the same way, as a ``ValueError`` (:class:`TooDeep`), so a caller that handles invalid
JSON handles that too.
"""

from __future__ import annotations

import json
import math
from typing import Any


class TooDeep(ValueError):
    """The JSON nests deeper than the decoder can recurse (about a thousand levels)."""


def loads(text: str | bytes) -> Any:
    """``json.loads`` refusing non-finite numbers and too deep nesting with a ``ValueError``.

    One decoder serves every call: ``json.loads`` with hooks builds a new one each time,
    which costs more than decoding a token's header.
    """
    if isinstance(text, bytes | bytearray):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        return _DECODER.decode(text)
    except RecursionError:
        # The decoder recurses once per array or object; callers only expect ValueError.
        raise TooDeep("the JSON nests too deeply to be read") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    """``1e400`` parses as infinity, which neither PostgreSQL nor a JSON answer can hold."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
