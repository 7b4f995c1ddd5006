"""What an autosave or a form save says about the draft version it was made on. No Flask.

The editor page carries the version of the draft it was loaded with (``base_version`` in the
form, ``baseVersion`` in the autosave's JSON). A save whose base is not the draft's current
version was made on a page that did not see the latest change (the shop's API, another tab),
so it is refused with a conflict instead of silently overwriting that change; the customer
then looks at the other change or saves again on the current version ("keep mine").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pps.platform.storable_text import text_problem

__all__ = [
    "BASE_VERSION_FIELD",
    "AutosaveBody",
    "BadBaseVersion",
    "autosave_body",
    "form_base_version",
]

#: The hidden field of the editor's forms naming the version the page shows.
BASE_VERSION_FIELD = "base_version"
#: Versions are positive 32-bit integers in the database.
_MAX_VERSION = 2**31 - 1


class BadBaseVersion(ValueError):
    """``base_version`` is present but not a version number."""


@dataclass(frozen=True)
class AutosaveBody:
    base_version: int
    values: dict[str, str]


def form_base_version(form: Mapping[str, str]) -> int | None:
    """The form's base version; None when the form has none (a page from before the field
    existed: such a save is not checked)."""
    raw = form.get(BASE_VERSION_FIELD)
    if raw is None or raw == "":
        return None
    text = raw.strip()
    # At most as many digits as _MAX_VERSION: int() refuses a string of thousands of them.
    digits = text.isascii() and text.isdigit() and len(text) <= len(str(_MAX_VERSION))
    if not digits or not 0 < int(text) <= _MAX_VERSION:
        raise BadBaseVersion(raw)
    return int(text)


def autosave_body(
    data: Any, *, max_values: int
) -> tuple[AutosaveBody | None, dict[str, list[str]]]:
    """``{"baseVersion": int, "values": {DataKey: string}}`` checked for shape and types.

    Returns the body, or None and the problems per JSON field (the API's 422 shape).
    Whether the values fit the template is the renderer's check, made afterwards.
    """
    if not isinstance(data, dict):
        return None, {"body": ["The body must be a JSON object."]}
    errors: dict[str, list[str]] = {}
    unknown = sorted(set(data) - {"baseVersion", "values"})
    for name in unknown:
        errors[name] = ["Unknown field; send only baseVersion and values."]
    base = data.get("baseVersion")
    if base is None:
        errors["baseVersion"] = ["Required: the draft version the page was loaded with."]
    elif isinstance(base, bool) or not isinstance(base, int) or not 0 < base <= _MAX_VERSION:
        errors["baseVersion"] = ["Must be a positive integer (a draft version)."]
    values = data.get("values")
    if not isinstance(values, dict):
        errors["values"] = ["Required: an object of DataKey to text."]
        values = {}
    elif len(values) > max_values:
        errors["values"] = [f"At most {max_values} values."]
        values = {}
    for key, value in values.items():
        key_problem = text_problem(key)
        field = f"values.{key[:100]}" if key_problem is None else "values"
        if key_problem is not None:
            # Stored, a NUL or a lone surrogate would break every later page of the draft.
            errors.setdefault(field, []).append(f"A key {key_problem}")
        elif not isinstance(value, str):
            errors[field] = ["Must be a string."]
        elif (value_problem := text_problem(value)) is not None:
            errors.setdefault(field, []).append(f"The value {value_problem}")
    if errors or not isinstance(base, int):
        return None, errors
    cleaned = {
        key: value.replace("\r\n", "\n").replace("\r", "\n") for key, value in values.items()
    }
    return AutosaveBody(base_version=base, values=cleaned), {}
