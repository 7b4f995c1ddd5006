"""Request bodies as the reference product's clients send them.

JSON objects, PHP's ``[]`` for an empty object, form fields (with PHP-style ``a[b]=c``
nesting), or nothing at all, even under ``Content-Type: application/json``. Field names come
as ``snake_case`` or ``camelCase``; both are folded to camelCase before validation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flask import request
from marshmallow import Schema
from marshmallow import ValidationError as MarshmallowValidationError

from pps import strict_json
from pps.api.schemas import PageArgs
from pps.errors import BadRequest, UnsupportedMediaType, ValidationFailed

_FORM_TYPES = {"application/x-www-form-urlencoded", "multipart/form-data"}
_BRACKETS = re.compile(r"^([^\[\]]+)\[([^\[\]]*)\]$")
_SNAKE = re.compile(r"_([a-z0-9])")
#: Deeper bodies are refused: nothing a shop sends nests this far, and serialising a very
#: deep value again (into the database, into the response) would hit the recursion limit.
MAX_DEPTH = 32


def camel_case(name: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), name)


def fold_names(data: Mapping[str, Any]) -> dict[str, Any]:
    """Fold ``user_identifier`` into ``userIdentifier``; the camelCase spelling wins a tie."""
    folded: dict[str, Any] = {}
    for key, value in data.items():
        camel = camel_case(key)
        if camel != key and camel in data:
            continue
        folded[camel] = value
    return folded


def _form_to_dict() -> dict[str, Any]:
    """Form fields, with ``apiDefaultValues[name]=x`` and ``drafts[]=a`` the way PHP nests them."""
    result: dict[str, Any] = {}
    for key in request.form:
        values = request.form.getlist(key)
        match = _BRACKETS.match(key)
        if match is None:
            result[key] = values[-1]
            continue
        outer, inner = match.groups()
        if inner == "":
            bucket = result.setdefault(outer, [])
            if isinstance(bucket, list):
                bucket.extend(values)
        else:
            nested = result.setdefault(outer, {})
            if isinstance(nested, dict):
                nested[inner] = values[-1]
    return result


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (a lone surrogate was sent)."
    return None


def check_storable(data: Any) -> None:
    """422 for values that parse but cannot be stored: NUL characters (PostgreSQL text holds
    none), lone surrogates (not encodable as UTF-8), and nesting deeper than MAX_DEPTH."""
    errors: dict[str, list[str]] = {}
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack and len(errors) < 20:
        path, value, depth = stack.pop()
        field = path or "_body"
        if depth > MAX_DEPTH:
            errors.setdefault(field, []).append(f"Nested deeper than {MAX_DEPTH} levels.")
            continue
        if isinstance(value, str):
            problem = _text_problem(value)
            if problem:
                errors.setdefault(field, []).append(f"The value {problem}")
        elif isinstance(value, dict):
            for key, item in value.items():
                name = str(key) if isinstance(key, str) else repr(key)
                problem = _text_problem(name)
                if problem:
                    errors.setdefault(field, []).append(f"A key {problem}")
                    continue
                stack.append((f"{path}.{name}" if path else name, item, depth + 1))
        elif isinstance(value, list):
            stack.extend(
                (f"{path}.{index}" if path else str(index), item, depth + 1)
                for index, item in enumerate(value)
            )
    if errors:
        raise ValidationFailed(errors=errors)


def read_body() -> dict[str, Any]:
    """The request body as a dict with camelCase keys; ``{}`` when there is none."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        return {}
    mimetype = request.mimetype
    if mimetype in _FORM_TYPES:
        form = _form_to_dict()
        check_storable(form)
        return fold_names(form)
    if mimetype and mimetype != "application/json" and not mimetype.endswith("+json"):
        raise UnsupportedMediaType()
    try:
        data = strict_json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"The request body is not valid JSON: {exc}") from None
    if data == []:
        return {}
    if not isinstance(data, dict):
        raise ValidationFailed(
            "The request body must be a JSON object.",
            errors={"_body": [f"Expected a JSON object, got {type(data).__name__}."]},
        )
    check_storable(data)
    return fold_names(data)


def load(schema: Schema, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``data`` (default: the request body) with ``schema``; 422 on any error."""
    try:
        result: dict[str, Any] = schema.load(read_body() if data is None else data)
    except MarshmallowValidationError as exc:
        raise ValidationFailed(errors=_flatten(exc.messages)) from None
    return result


def _flatten(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    """marshmallow's nested messages as ``{"field.sub": ["..."]}``."""
    flat: dict[str, list[str]] = {}
    if isinstance(messages, list):
        flat[prefix or "_body"] = [str(m) for m in messages if not isinstance(m, dict | list)]
        for item in messages:
            if isinstance(item, dict | list):
                flat.update(_flatten(item, prefix))
        return flat
    if isinstance(messages, dict):
        for key, value in messages.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if name == "_schema":
                name = "_body"
            flat.update(_flatten(value, name))
        return flat
    flat[prefix or "_body"] = [str(messages)]
    return flat


PAGE_PARAMETERS = [
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
    {
        "name": "per_page",
        "in": "query",
        "schema": {"type": "integer", "minimum": 1, "maximum": 100},
    },
]


def page_args() -> dict[str, int]:
    """``?page=N&per_page=M`` (``perPage`` too), validated like a body: 422 on bad values."""
    wanted = ("page", "per_page", "perPage")
    return load(PageArgs(), fold_names({k: v for k, v in request.args.items() if k in wanted}))
