"""Request data as the reference product's clients send it, in one webargs parser.

Bodies come as JSON objects, as PHP's ``[]`` for an empty object, as form fields, or not at
all, even under ``Content-Type: application/json``. Form keys are read as PHP's
``parse_str`` reads them (``http_build_query`` and Guzzle's ``form_params`` write them so):
``a[b][c]=1`` nests to any depth up to MAX_DEPTH, ``a[]=x`` appends, ``a[0]=x&a[1]=y`` are
keys ``"0"`` and ``"1"``; other clients repeat a key (``a=x&a=y``). Field names come as
``snake_case`` or ``camelCase``; both are folded to the camelCase the schemas declare
(camelCase wins a tie). The ``php`` location reads bodies that way, ``query`` folds query
names the same way; every refusal is a :class:`pps.platform.errors.PpsError`, so it keeps
the JSON error shape of every other error.

Where PHP would silently drop a value, pps refuses the body instead (422 naming the field):
a key nested deeper than MAX_DEPTH, and a value and nested keys at the same place
(``a=1&a[b]=2``, ``a[b][c]=1&a[b]=2``). A map whose keys are exactly ``"0"`` to ``"n-1"`` in
order becomes a list at every level, not only where the schema wants one: PHP's
``json_encode`` makes a JSON list of such an array, so a form means what the same data sent
as JSON by the same shop would mean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn
from urllib.parse import parse_qsl

import flask
import marshmallow as ma
from webargs.flaskparser import FlaskParser
from werkzeug.http import parse_options_header
from werkzeug.sansio.multipart import Data, Epilogue, Field, File, MultipartDecoder, NeedData

from pps.platform import strict_json
from pps.platform.errors import BadRequest, UnsupportedMediaType, ValidationFailed
from pps.platform.storable_text import MAX_DEPTH, text_problem

#: The location of request bodies, for ``Blueprint.arguments(..., location=BODY)``.
BODY = "php"
FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
_SNAKE = re.compile(r"_([a-z0-9])")
#: An integer key as PHP's arrays keep it (``"7"``, ``"-1"``; ``"07"`` and ``"-0"`` are text).
_PHP_INT = re.compile(r"(?:0|-?[1-9][0-9]*)\Z")
_PHP_LONG = 2**63
#: Where the spellings a client used are kept for the request (see :func:`sent_spellings`).
_SPELLINGS = "pps_sent_spellings"


def camel_case(name: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), name)


def fold_names(data: Mapping[str, Any]) -> dict[str, Any]:
    """Fold ``user_identifier`` into ``userIdentifier``; the camelCase spelling wins a tie.

    The spellings the client used instead are remembered for the request, so a 422 can name
    a field as it was sent, too.
    """
    folded: dict[str, Any] = {}
    spellings: dict[str, str] = {}
    for key, value in data.items():
        camel = camel_case(key)
        if camel != key:
            if camel in data:
                continue
            spellings[camel] = key
        folded[camel] = value
    if spellings and flask.has_request_context():
        flask.g.setdefault(_SPELLINGS, {}).update(spellings)
    return folded


def sent_spellings() -> dict[str, str]:
    """camelCase name -> the other spelling the current request used for it."""
    return dict(flask.g.get(_SPELLINGS) or {})


class Repeated(list[str]):
    """The values of a key sent several times without brackets (``drafts=a&drafts=b``): a
    list where the schema wants one, else the last value counts (as in PHP)."""


class _PhpArray(dict[str, Any]):
    """A PHP array while a form is read: its keys in the order sent, and the integer that
    ``[]`` appends at (one past the largest integer key, as PHP keeps it)."""

    def __init__(self) -> None:
        super().__init__()
        self.next_index: int | None = None

    def key(self, index: str | None) -> str:
        """The key ``[index]`` sets; ``[]`` (``None``) is the next integer (past PHP's
        largest integer too, where PHP drops the value)."""
        if index is None:
            appended = 0 if self.next_index is None else self.next_index
            self.next_index = appended + 1
            return str(appended)
        if _PHP_INT.match(index) and -_PHP_LONG <= int(index) < _PHP_LONG:
            following = int(index) + 1
            if self.next_index is None or following > self.next_index:
                self.next_index = following
        return index


def _form_key(key: str) -> tuple[str, list[str | None]]:
    """``a[b][]`` as ``("a", ["b", None])``, read as PHP's ``parse_str`` reads it.

    An index runs to the next ``]`` (``a[b[c]`` is index ``b[c``); after an index, anything
    but another ``[`` ends the key and is ignored (``a[b]x``, ``a[b][c``); a key whose first
    ``[`` is never closed, or that starts with one, is a plain name. Reading stops at
    MAX_DEPTH indexes: such a key is refused whatever follows.
    """
    start = key.find("[")
    indexes: list[str | None] = []
    at = start
    while start > 0 and at < len(key) and key[at] == "[" and len(indexes) < MAX_DEPTH:
        end = key.find("]", at + 1)
        if end < 0:
            break
        indexes.append(key[at + 1 : end] or None)
        at = end + 1
    return (key[:start], indexes) if indexes else (key, [])


def _conflict(name: str, key: str) -> ValidationFailed:
    """PHP keeps the later of a value and nested keys at one place, and drops the other."""
    return ValidationFailed(
        errors={
            name: [
                f"The form key {key!r} puts a value where an earlier key put nested keys, or "
                "nested keys where one put a value; one of them would be lost. Send one shape."
            ]
        }
    )


def _put(array: _PhpArray, indexes: list[str | None], value: str, name: str, key: str) -> None:
    """Set ``value`` at ``indexes`` under ``array``, making the arrays on the way."""
    *path, last = indexes
    for index in path:
        child = array.setdefault(array.key(index), _PhpArray())
        if not isinstance(child, _PhpArray):
            raise _conflict(name, key)
        array = child
    slot = array.key(last)
    if isinstance(array.get(slot), _PhpArray):
        raise _conflict(name, key)
    array[slot] = value  # a value sent again at the same place: the last counts, as in PHP


def _finished(value: Any) -> Any:
    """A key sent once is its value; a PHP array whose keys are ``"0"`` to ``"n-1"`` in
    order is a list, as PHP's ``json_encode`` would send it; any other a map."""
    if isinstance(value, Repeated):
        return value if len(value) > 1 else value[0]
    if isinstance(value, _PhpArray):
        items = {key: _finished(item) for key, item in value.items()}
        if all(key == str(position) for position, key in enumerate(items)):
            return list(items.values())
        return items
    return value


def php_form(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Form fields, in the order sent, as PHP's ``parse_str`` nests them (see the module
    docstring); a key sent several times without brackets is a :class:`Repeated`.

    422 naming the field where PHP would drop a value without a word: a key nested
    MAX_DEPTH levels or deeper, a value and nested keys at the same place.
    """
    form: dict[str, Repeated | _PhpArray] = {}
    for key, value in pairs:
        name, indexes = _form_key(key)
        if len(indexes) >= MAX_DEPTH:  # with the field itself, deeper than MAX_DEPTH
            raise ValidationFailed(errors={name: [f"Nested deeper than {MAX_DEPTH} levels."]})
        slot = form.get(name)
        if not indexes:
            if slot is None:
                slot = form[name] = Repeated()
            elif isinstance(slot, _PhpArray):
                raise _conflict(name, key)
            slot.append(value)
            continue
        if slot is None:
            slot = form[name] = _PhpArray()
        elif isinstance(slot, Repeated):
            raise _conflict(name, key)
        _put(slot, indexes, value, name, key)
    return {name: _finished(slot) for name, slot in form.items()}


def urlencoded_pairs(raw: bytes) -> list[tuple[str, str]]:
    """The fields of an ``application/x-www-form-urlencoded`` body in the order sent (PHP's
    ``a[]=x&a[1]=y&a[]=z`` depends on it), strictly UTF-8.

    Werkzeug keeps an escape that is not UTF-8 (``%ED%A0%80``, a UTF-16 surrogate) as the
    literal text ``%ED%A0%80`` and drops a whole body with raw non-UTF-8 bytes without a
    word; either would store something the client did not send. ``parse_qsl`` with
    ``errors="strict"`` refuses both, so the client hears of it (400).
    """
    return _strict_pairs(raw, "The form body")


def query_pairs(raw: bytes) -> list[tuple[str, str]]:
    """The parameters of a query string in the order sent, strictly UTF-8, as
    :func:`urlencoded_pairs` reads a form: Werkzeug's ``request.args`` puts U+FFFD where an
    escape is not UTF-8 (``%FF``), so a list filtered by it answered for a value the client
    never sent. 400 instead."""
    return _strict_pairs(raw, "The query string")


def _strict_pairs(raw: bytes, what: str) -> list[tuple[str, str]]:
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadRequest(
            f"{what} is not valid UTF-8 (after percent-decoding); "
            "a lone UTF-16 surrogate cannot be encoded either."
        ) from None
    return pairs


#: The charsets a multipart text part may declare, as Werkzeug honours them; UTF-8 otherwise.
_PART_CHARSETS = frozenset({"ascii", "us-ascii", "utf-8", "iso-8859-1"})
_MULTIPART_REFUSED = (
    "The multipart body is malformed, or a part is not valid UTF-8 "
    "(a lone UTF-16 surrogate cannot be encoded either)."
)
_NAMELESS_PART = (
    "A multipart part has no name: its Content-Disposition must be 'form-data; name=\"<field>\"'."
)


def multipart_pairs(raw: bytes, boundary: str, max_parts: int | None) -> list[tuple[str, str]]:
    """The text fields of a ``multipart/form-data`` body in the order sent, strictly decoded;
    file parts are not body fields and are skipped.

    Werkzeug's form parser decodes a field that is not UTF-8 with replacement characters,
    and drops the whole form without a word when the body is malformed or a part's headers
    are not UTF-8; either would store something the client did not send. Its sansio
    decoder with strict decoding refuses both, so the client hears of it (400), as it does
    a text part without a name, which belongs to no field.
    """
    texts: list[tuple[str, str]] = []
    part: Field | None = None
    chunks: list[bytes] = []
    try:
        # A boundary declared RFC 2231-style (boundary*=utf-8''...) may not be Latin-1.
        decoder = MultipartDecoder(boundary.encode("latin-1"), max_parts=max_parts)
        decoder.receive_data(raw)
        decoder.receive_data(None)
        event = decoder.next_event()
        while not isinstance(event, Epilogue | NeedData):
            if isinstance(event, Field | File):
                part = event if isinstance(event, Field) else None
                chunks = []
                if part is not None and part.name is None:
                    raise BadRequest(_NAMELESS_PART)
            elif isinstance(event, Data) and part is not None:
                chunks.append(event.data)
                if not event.more_data:
                    declared = parse_options_header(part.headers.get("content-type"))[1]
                    charset = declared.get("charset", "").lower()
                    encoding = charset if charset in _PART_CHARSETS else "utf-8"
                    texts.append((part.name, b"".join(chunks).decode(encoding)))
            event = decoder.next_event()
    except ValueError:  # UnicodeDecodeError included
        raise BadRequest(_MULTIPART_REFUSED) from None
    return texts


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
            problem = text_problem(value)
            if problem:
                errors.setdefault(field, []).append(f"The value {problem}")
        elif isinstance(value, dict):
            for key, item in value.items():
                name = str(key) if isinstance(key, str) else repr(key)
                problem = text_problem(name)
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


def json_object_body(raw: bytes, mimetype: str) -> dict[str, Any]:
    """A body that is neither form: a JSON object (PHP's ``[]`` is ``{}``), checked by
    :func:`check_storable`; 415 under another media type, 400 when malformed, 422 when it is
    not an object."""
    if mimetype and mimetype != "application/json" and not mimetype.endswith("+json"):
        raise UnsupportedMediaType()
    try:
        data = strict_json.loads(raw)
    except ValueError as exc:  # too deep to decode included (strict_json.TooDeep)
        raise BadRequest(f"The request body is not valid JSON: {exc}") from None
    if data == []:
        return {}
    if not isinstance(data, dict):
        raise ValidationFailed(
            "The request body must be a JSON object.",
            errors={"_body": [f"Expected a JSON object, got {type(data).__name__}."]},
        )
    check_storable(data)  # lone surrogates, NUL, depth: 422 as for every other body
    return data


def flatten(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    """marshmallow's nested messages as ``{"field.sub": ["..."]}``."""
    flat: dict[str, list[str]] = {}
    if isinstance(messages, list):
        flat[prefix or "_body"] = [str(m) for m in messages if not isinstance(m, dict | list)]
        for item in messages:
            if isinstance(item, dict | list):
                flat.update(flatten(item, prefix))
        return flat
    if isinstance(messages, dict):
        for key, value in messages.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if name == "_schema":
                name = "_body"
            flat.update(flatten(value, name))
        return flat
    flat[prefix or "_body"] = [str(messages)]
    return flat


class PpsParser(FlaskParser):
    """webargs' Flask parser with the ``php`` body location and folded query names."""

    __location_map__ = {  # noqa: RUF012  (webargs declares it a plain class attribute)
        **FlaskParser.__location_map__,
        BODY: "load_php",
    }
    DEFAULT_UNKNOWN_BY_LOCATION = {  # noqa: RUF012
        **FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION,
        BODY: ma.EXCLUDE,
    }

    def load_php(self, req: flask.Request, schema: ma.Schema) -> dict[str, Any]:
        """The body as a dict with camelCase keys; ``{}`` when there is none."""
        raw = req.get_data(cache=True)  # over MAX_CONTENT_LENGTH: 413 here
        if not raw.strip():
            return {}
        mimetype = req.mimetype
        data: Any
        if mimetype == "application/x-www-form-urlencoded":
            data = self._lists_where_wanted(php_form(urlencoded_pairs(raw)), schema)
        elif mimetype == "multipart/form-data":
            boundary = req.mimetype_params.get("boundary")
            if not boundary:
                raise BadRequest("A multipart/form-data body needs a boundary parameter.")
            pairs = multipart_pairs(raw, boundary, req.max_form_parts)
            data = self._lists_where_wanted(php_form(pairs), schema)
        else:
            return fold_names(json_object_body(raw, mimetype))
        check_storable(data)
        return fold_names(data)

    def load_querystring(self, req: flask.Request, schema: ma.Schema) -> dict[str, Any]:
        """Query parameters with folded names (``per_page`` is ``perPage``); the first
        value of a repeated name counts. Read strictly (:func:`query_pairs`) and checked
        as bodies are (:func:`check_storable`): a NUL in a filter is a 422 naming it, as in
        a body, not an empty list as if it named an unknown record."""
        params: dict[str, str] = {}
        for name, value in query_pairs(req.query_string):
            params.setdefault(name, value)
        check_storable(params)
        return fold_names(params)

    @staticmethod
    def _lists_where_wanted(data: dict[str, Any], schema: ma.Schema) -> dict[str, Any]:
        """A form key sent once is a list of one where the schema declares a list, and a
        key repeated without brackets is its last value where the schema declares one value.
        A PHP array (``a[]=x``, ``a[0]=x``) stays as sent: for a single value it is a 422,
        as the same list sent as JSON would be, rather than a value picked from it.

        Where the schema declares a boolean, the text spellings of marshmallow's Boolean
        (``http_build_query`` writes PHP's true as ``1`` and false as ``0``) are read into a
        bool here: a form has nothing else, while JSON has ``true`` and ``false`` and the
        field takes only those (:class:`pps.api.schemas.Flag`). Other text stays as sent,
        for the field to refuse."""
        for name, value in data.items():
            field = schema.fields.get(camel_case(name))
            wants_list = isinstance(field, ma.fields.List)
            if wants_list and isinstance(value, str):
                data[name] = [value]
            elif (
                isinstance(value, Repeated)
                and field is not None
                and not wants_list
                and not isinstance(field, ma.fields.Dict)
            ):
                data[name] = value = value[-1]
            if isinstance(field, ma.fields.Boolean) and isinstance(value, str):
                if value in field.truthy:
                    data[name] = True
                elif value in field.falsy:
                    data[name] = False
        return data

    def handle_error(
        self,
        error: ma.ValidationError,
        req: flask.Request,
        schema: ma.Schema,
        *,
        error_status_code: int | None,
        error_headers: Mapping[str, str] | None,
    ) -> NoReturn:
        """422 with ``errors`` per field, in the shape of every other pps error."""
        messages = error.messages
        if isinstance(messages, dict) and len(messages) == 1:
            # webargs files the messages under the location; clients know only field names.
            (location,) = messages
            if location in self.__location_map__:
                messages = messages[location]
        raise ValidationFailed(errors=flatten(messages))


parser = PpsParser()
