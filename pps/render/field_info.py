"""A template's ``fields``: the words and the kind of input the editor shows per DataKey.

::

    "fields": {
      "recipientName": {
        "label": {"en": "Recipient's name", "de": "Name des Empfängers"},
        "help": "As it should appear on the envelope.",       # a plain string: any language
        "placeholder": {"en": "Jane Doe", "de": "Erika Mustermann"},
        "inputType": "text",        # text, multiline, email, phone, url, number, date, image
        "autocomplete": "name"       # optional; derived from inputType and the key otherwise
      }
    }

Every key of ``fields`` must be a DataKey of the template. The texts are for people, so they
are checked as strictly as the rest of the file: a wrong type, an unknown language code or
an over-long text is an import error with its path, never silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pps.render.model import (
    AUTOCOMPLETE_TOKENS,
    INPUT_TYPES,
    MAX_HELP_LENGTH,
    MAX_LABEL_LENGTH,
    Field,
    Localized,
)
from pps.render.problems import Code
from pps.render.reader import Reader, kind_of, shown

__all__ = ["FIELD_KEYS", "apply_field_info"]

FIELD_KEYS = {"label", "help", "placeholder", "inputType", "autocomplete"}
#: A BCP 47 language tag as people write them: ``en``, ``de``, ``de-AT``, ``pt-BR``.
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")
_LIMITS = {"label": MAX_LABEL_LENGTH, "placeholder": MAX_LABEL_LENGTH, "help": MAX_HELP_LENGTH}


def apply_field_info(
    c: Reader, data: Mapping[str, Any], fields: Sequence[Field]
) -> tuple[Field, ...]:
    """``fields`` with what the template's ``fields`` object says of each DataKey."""
    if "fields" not in data:
        return tuple(fields)
    raw = c.obj(data["fields"], "fields", {field.key for field in fields})
    if raw is None:
        return tuple(fields)
    result = []
    for field in fields:
        if field.key in raw:
            field = _one(c, raw[field.key], f"fields.{field.key}", field)
        result.append(field)
    return tuple(result)


def _one(c: Reader, raw: Any, path: str, field: Field) -> Field:
    obj = c.obj(raw, path, FIELD_KEYS)
    if obj is None:
        return field
    texts = {
        name: _localized(c, obj[name], f"{path}.{name}", _LIMITS[name])
        for name in ("label", "help", "placeholder")
        if name in obj
    }
    input_type = (
        c.choice(obj, "inputType", path, INPUT_TYPES, "text") if "inputType" in obj else None
    )
    if input_type == "multiline" and not field.multiline:
        c.error(f"{path}.inputType", Code.SPEC_MULTILINE_INPUT, key=repr(field.key))
    autocomplete = (
        c.choice(obj, "autocomplete", path, AUTOCOMPLETE_TOKENS, "off")
        if "autocomplete" in obj
        else None
    )
    return replace(
        field,
        label=texts.get("label"),
        help=texts.get("help"),
        placeholder=texts.get("placeholder"),
        input_type=input_type,
        autocomplete=autocomplete,
    )


def _localized(c: Reader, raw: Any, path: str, limit: int) -> Localized | None:
    """A plain string (any language) or ``{"en": ..., "de": ...}``; None when wrong."""
    if isinstance(raw, str):
        return Localized({"": raw}) if _text(c, raw, path, limit) else None
    if not isinstance(raw, Mapping) or not raw:
        c.error(path, Code.SPEC_LOCALIZED, got=kind_of(raw) if raw != {} else shown(raw))
        return None
    texts: dict[str, str] = {}
    for language, text in raw.items():
        where = f"{path}.{language}"
        if not isinstance(language, str) or not _LANGUAGE.fullmatch(language):
            c.error(where, Code.SPEC_LANGUAGE, got=shown(language))
        elif language.lower() in texts:
            c.error(where, Code.SPEC_DUPLICATE_VALUE, got=shown(language), first=language)
        elif not isinstance(text, str):
            c.error(where, Code.SPEC_NOT_STRING, kind=kind_of(text))
        elif _text(c, text, where, limit):
            texts[language.lower()] = text
    return Localized(texts) if len(texts) == len(raw) else None


def _text(c: Reader, text: str, path: str, limit: int) -> bool:
    if not text.strip():
        c.error(path, Code.SPEC_NON_EMPTY_STRING, got=shown(text))
        return False
    if len(text) > limit:
        c.error(path, Code.SPEC_TOO_LONG, limit=limit, length=len(text))
        return False
    return True
