"""Reading typed values out of parsed JSON, collecting a located :class:`Problem` for each.

The parser (:mod:`pps.render.parsing`) asks a :class:`Reader` for a number, a colour or a
file name at a path; a wrong value becomes ``(path, problem)`` and reading goes on, so one
round reports every problem of a file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pps.render.assets import check_relative_name
from pps.render.model import CMYK, RGB, Color
from pps.render.problems import Code, Problem

__all__ = ["Reader", "is_int", "join", "kind_of", "shown"]

_T = TypeVar("_T")
_MISSING: Any = object()
_HEX = re.compile(r"#[0-9A-Fa-f]{6}")


class Reader:
    """Reads typed values out of JSON objects, recording ``(path, problem)`` for each problem."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, Problem]] = []
        #: Named colours ``{"swatch": name}`` resolves to; None: swatches are not allowed.
        self.swatches: Mapping[str, Color] | None = None

    def error(self, path: str, code: Code, **params: Any) -> None:
        self.problems.append((path, Problem(code, params)))

    def add(self, path: str, problem: Problem) -> None:
        self.problems.append((path, problem))

    def obj(self, raw: Any, path: str, allowed: set[str]) -> Mapping[str, Any] | None:
        """``raw`` as an object; unknown keys are errors so a typo is not silently ignored."""
        if not isinstance(raw, Mapping):
            self.error(path, Code.SPEC_NOT_OBJECT, kind=kind_of(raw))
            return None
        for key in raw:
            if key not in allowed:
                self.error(join(path, str(key)), Code.SPEC_UNKNOWN_KEY, keys=_listed(allowed))
        return raw

    def number(
        self,
        obj: Mapping[str, Any],
        key: str,
        path: str,
        *,
        gt: float | None = None,
        ge: float | None = None,
        le: float | None = None,
        default: Any = _MISSING,
    ) -> float | None:
        where = join(path, key)
        if key not in obj:
            if default is _MISSING:
                self.error(where, Code.SPEC_REQUIRED)
                return None
            return default  # type: ignore[no-any-return]
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(where, Code.SPEC_NOT_NUMBER, got=shown(value))
            return None
        # An int is finite however large; math.isfinite(10**400) would overflow a float.
        if isinstance(value, float) and not math.isfinite(value):
            self.error(where, Code.SPEC_NOT_FINITE)
            return None
        if gt is not None and value <= gt:
            self.error(where, Code.SPEC_GREATER_THAN, limit=gt)
        elif ge is not None and value < ge:
            self.error(where, Code.SPEC_AT_LEAST, limit=ge)
        elif le is not None and value > le:
            self.error(where, Code.SPEC_AT_MOST, limit=le)
        else:
            return float(value)
        return None

    def integer(
        self,
        obj: Mapping[str, Any],
        key: str,
        path: str,
        *,
        ge: int,
        le: int,
        default: Any = _MISSING,
    ) -> int | None:
        where = join(path, key)
        if key not in obj:
            if default is _MISSING:
                self.error(where, Code.SPEC_REQUIRED)
            return None if default is _MISSING else default
        value = obj[key]
        if not is_int(value) or value < ge:
            self.error(where, Code.SPEC_WHOLE_AT_LEAST, limit=ge, got=shown(value))
            return None
        if value > le:
            self.error(where, Code.SPEC_WHOLE_AT_MOST, limit=le, got=shown(value))
            return None
        return int(value)

    def boolean(self, obj: Mapping[str, Any], key: str, path: str, *, default: bool) -> bool | None:
        value = obj.get(key, default)
        if not isinstance(value, bool):
            self.error(join(path, key), Code.SPEC_BOOLEAN, got=shown(value))
            return None
        return value

    def choice(
        self, obj: Mapping[str, Any], key: str, path: str, options: tuple[_T, ...], default: _T
    ) -> _T | None:
        value = obj.get(key, default)
        if value not in options:
            self.error(
                join(path, key),
                Code.SPEC_CHOICE,
                options=", ".join(map(str, options)),
                got=shown(value),
            )
            return None
        return value  # type: ignore[no-any-return]

    def color(self, raw: Any, path: str) -> Color | None:
        if isinstance(raw, str):
            if not _HEX.fullmatch(raw):
                self.error(path, Code.SPEC_COLOR, got=shown(raw))
                return None
            return RGB(int(raw[1:3], 16), int(raw[3:5], 16), int(raw[5:7], 16))
        if not isinstance(raw, Mapping):
            self.error(path, Code.SPEC_COLOR, got=kind_of(raw))
            return None
        if "swatch" in raw and self.swatches is not None:
            return self._swatch(raw, path, self.swatches)
        obj = self.obj(raw, path, {"c", "m", "y", "k"})
        if obj is None:
            return None
        inks = [self.number(obj, ink, path, ge=0, le=100) for ink in ("c", "m", "y", "k")]
        c, m, y, k = inks
        if c is None or m is None or y is None or k is None:
            return None
        return CMYK(c, m, y, k)

    def _swatch(
        self, raw: Mapping[str, Any], path: str, swatches: Mapping[str, Color]
    ) -> Color | None:
        """``{"swatch": name}``: the template's named colour, as the active variant sets it."""
        obj = self.obj(raw, path, {"swatch"})
        name = None if obj is None else obj["swatch"]
        if obj is None:
            return None
        if not isinstance(name, str) or name not in swatches:
            self.error(
                join(path, "swatch"),
                Code.SPEC_SWATCH,
                swatches=_listed(set(swatches)) or "none",
                got=shown(name),
            )
            return None
        return swatches[name]

    def relative(self, name: str, path: str) -> bool:
        problem = check_relative_name(name)
        if problem is not None:
            self.error(path, Code.SPEC_FILE_NAME, reason=problem)
            return False
        return True

    def file(self, obj: Mapping[str, Any], key: str, path: str) -> str | None:
        where = join(path, key)
        value = obj.get(key)
        if key not in obj:
            self.error(where, Code.SPEC_REQUIRED)
        elif not isinstance(value, str):
            self.error(where, Code.SPEC_FILE_NAME_KIND, kind=kind_of(value))
        elif self.relative(value, where):
            return value
        return None


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _listed(keys: set[str]) -> str:
    return ", ".join(sorted(keys))


_KINDS: dict[type, Code] = {
    dict: Code.KIND_OBJECT,
    list: Code.KIND_LIST,
    str: Code.KIND_STRING,
    bool: Code.KIND_BOOLEAN,
}


def kind_of(value: Any) -> Code | str:
    """The JSON kind of ``value`` as a code (translated with the message), else its type."""
    if value is None:
        return Code.KIND_NULL
    if isinstance(value, Mapping):
        return Code.KIND_OBJECT
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Code.KIND_NUMBER
    return _KINDS.get(type(value), type(value).__name__)


def shown(value: Any) -> Code | str:
    """A wrong value as a message shows it: JSON, cut at 60 characters; its kind when big."""
    if isinstance(value, Mapping | list):
        return kind_of(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
