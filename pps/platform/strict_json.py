"""JSON as pps accepts it from outside: no ``NaN`` or ``Infinity``, no number beyond a float,
no key twice in one object.

Neither PostgreSQL's JSON type nor a JSON answer can hold those values, so request bodies and
token payloads refuse them while parsing. A key given twice is refused too: ``json.loads``
keeps the last value, while a proxy or a shop's own log may read the first (RFC 8259 4 calls
such objects unpredictable), and no JSON encoder of the reference clients writes one. (A
token's header is read by PyJWS, which keeps the last of a repeated name, as RFC 7515 4
allows; pps reads from it only ``alg``, fixed to HS256, and the ``jti`` nonce.) Text
nested deeper than the decoder can recurse is refused the same way, as a ``ValueError``
(:class:`TooDeep`), so a caller that handles invalid JSON handles that too.
"""

from __future__ import annotations

import json
import math
from typing import Any


class TooDeep(ValueError):
    """The JSON nests deeper than the decoder can recurse (about a thousand levels)."""


class DuplicateKey(ValueError):
    """An object names the same key twice."""


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


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f"the key {key[:40]!r} appears twice in one object")
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys
)
