"""The flask-smorest Blueprint every documented pps endpoint is declared on.

One declaration per contract: ``@blp.body`` / ``@blp.query`` validate with a schema and
document it, ``@blp.response`` serialises with a schema and documents it, and
``@blp.errors`` lists the other statuses the view really answers, with the error schema.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import flask_smorest
from marshmallow import EXCLUDE, Schema, fields

from pps.api.parser import BODY, parser
from pps.web.openapi import ErrorOut

F = TypeVar("F", bound=Callable[..., Any])

#: What each error status means, as the reference says it for every operation.
STATUS_DESCRIPTIONS = {
    400: (
        "Malformed request: the body is not valid JSON (a key given twice in one object "
        "included), or a form body or the query string is not UTF-8."
    ),
    401: "Missing, unknown or invalid credentials.",
    403: "The credentials do not allow this.",
    404: "No such resource for this client.",
    405: "This method is not allowed here; `Allow` lists the methods that are.",
    406: "The Accept header excludes application/json.",
    409: "The request conflicts with the current state of the resource.",
    413: "The body is larger than the limit.",
    415: (
        "The body is neither application/json nor a form, or it is sent with a "
        "`Content-Encoding` (none is decoded)."
    ),
    422: "The data was understood but is invalid; `errors` says per field.",
    429: "Too many requests; `Retry-After` says when to try again.",
    503: "A backing service is unavailable; nothing was done. Try again shortly.",
    507: (
        "No room: the file storage is full, or the client's uploaded files would take more "
        "than `PPS_CLIENT_STORAGE_BYTES`; `message` says which. Nothing was stored."
    ),
}

#: The statuses a body adds to an operation.
BODY_STATUSES = (400, 413, 415, 422)


def form_schema(schema: Schema) -> dict[str, Any]:
    """The form encoding of a body schema: the schema itself, plus ``name[]`` for each list
    (PHP's ``a[]=x``, and its indexed ``a[0]=x``) beside the repeated key ``a=x&a=y`` the
    encoding object documents."""
    php_lists = php_list_spellings(type(schema))
    if php_lists is None:
        return {"schema": schema}
    return {"schema": {"allOf": [schema, php_lists]}}


@functools.cache
def php_list_spellings(schema: type[Schema]) -> Schema | None:
    """A schema of the ``name[]`` spellings of ``schema``'s lists, each a copy of its list
    field: the items keep their own rules (a review's ``user[]`` items are not empty), which
    plain ``{"type": "string"}`` items did not say. One per class, so that the reference has
    one component of that name; None when ``schema`` has no list."""
    spellings: dict[str, fields.Field[Any]] = {}
    for name, field in schema().fields.items():
        if isinstance(field, fields.List):
            spelling = copy.deepcopy(field)
            spelling.metadata = {
                "description": f"PHP's spellings of `{name}`: `{name}[]=a&{name}[]=b`, or "
                f"indexed as `http_build_query` writes a list: `{name}[0]=a&{name}[1]=b` "
                "(the indexes 0 to n-1 in order; other indexes make a map, which is refused)."
            }
            spellings[f"{name}[]"] = spelling
    if not spellings:
        return None
    return _PhpLists.from_dict(spellings, name=f"{schema.__name__}PhpLists")()


class _PhpLists(Schema):
    """Beside the body's own schema in an ``allOf``: its other fields are not extra here."""

    class Meta:
        unknown = EXCLUDE


def form_encoding(schema: Schema) -> dict[str, dict[str, Any]]:
    """Lists as repeated keys (``explode``), maps as ``a[key]=value`` (``deepObject``; its
    values nest further as PHP writes them, ``a[key][sub]=value``: the API description says
    so, as OpenAPI defines ``deepObject`` for one level only)."""
    encoding: dict[str, dict[str, Any]] = {}
    for name, field in schema.fields.items():
        if isinstance(field, fields.List):
            encoding[name] = {"style": "form", "explode": True}
        elif isinstance(field, fields.Dict):
            encoding[name] = {"style": "deepObject", "explode": True}
    return encoding


def error_responses(*statuses: int, **described: str) -> dict[int, dict[str, Any]]:
    """OpenAPI responses of error ``statuses`` with the error schema, as
    :meth:`Blueprint.errors` documents them; ``described`` as there."""
    return {
        status: {
            "description": described.get(f"s{status}", STATUS_DESCRIPTIONS[status]),
            "content": {"application/json": {"schema": ErrorOut}},
        }
        for status in statuses
    }


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]
    """A resource: its routes are tagged ``tag`` and need ``security`` (an OpenAPI
    security requirement list; ``[]`` for none); ``head=False`` for a resource whose
    ``GET`` uses something up (see :mod:`pps.web.routing`)."""

    ARGUMENTS_PARSER = parser
    DEFAULT_LOCATION_CONTENT_TYPE_MAPPING: ClassVar[dict[str, str]] = {
        **flask_smorest.Blueprint.DEFAULT_LOCATION_CONTENT_TYPE_MAPPING,
        BODY: "application/json",
    }

    def __init__(
        self,
        name: str,
        import_name: str,
        *,
        tag: str,
        security: list[dict[str, list[str]]] | None = None,
        always: tuple[int, ...] = (),
        head: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, import_name, **kwargs)
        self.tag = tag
        self.security = [{"bearer": []}] if security is None else security
        self.always = always
        self.head = head

    def route(
        self,
        rule: str,
        *,
        parameters: list[Any] | None = None,
        tags: list[str] | None = None,
        document: dict[str, Any] | None = None,
        **options: Any,
    ) -> Callable[[F], F]:
        """Register a view; ``document`` is its whole OpenAPI operation at once.

        With ``document`` (for views that answer a bodiless redirect, which no schema
        serialises; its own answer is documented with ``alt_response(..., success=True)``),
        the operation, the blueprint's security and its ``always`` errors are put on the
        view by one ``doc`` wrapper instead of a wrapper per status: each of
        flask-smorest's wrappers costs the view a call through ``current_app`` at every
        request. The reference comes out as ``errors`` and ``doc`` would write it.
        """
        if not self.head:
            options.setdefault("head", False)
        register = super().route(rule, parameters=parameters, tags=tags or [self.tag], **options)

        def decorator(func: F) -> F:
            if document is not None:
                responses = {**document.get("responses", {}), **error_responses(*self.always)}
                func = self.doc(**{**document, "responses": responses}, security=self.security)(
                    func
                )
            else:
                func = self.errors(*self.always)(func)
                func = self.doc(security=self.security)(func)
            register(func)
            return func

        return decorator

    # flask-smorest has no type hints: these give the decorators pps uses their types.

    def get(self, rule: str, **options: Any) -> Callable[[F], F]:
        return self.route(rule, methods=["GET"], **options)

    def post(self, rule: str, **options: Any) -> Callable[[F], F]:
        return self.route(rule, methods=["POST"], **options)

    def put(self, rule: str, **options: Any) -> Callable[[F], F]:
        return self.route(rule, methods=["PUT"], **options)

    def delete(self, rule: str, **options: Any) -> Callable[[F], F]:
        return self.route(rule, methods=["DELETE"], **options)

    def response(self, status_code: int, schema: Any = None, **options: Any) -> Callable[[F], F]:
        """Serialise what the view returns with ``schema`` (a view returning a Response is
        passed through; ``schema`` then only documents it)."""
        decorator: Callable[[F], F] = super().response(status_code, schema, **options)
        return decorator

    def body(
        self, schema: Schema | type[Schema], description: str | None = None
    ) -> Callable[[F], F]:
        """The request body: JSON or a form, validated by ``schema`` (the view gets a dict).

        Documented as required when ``schema`` has a required field: a request without a body
        is then a 422 naming it. Otherwise no body is as good as ``{}`` (an empty
        ``POST /api-ext/user`` is normal)."""
        instance = schema() if isinstance(schema, type) else schema
        required = any(field.required for field in instance.fields.values())
        arguments = self.arguments(
            instance, location=BODY, required=required, description=description
        )
        form = {
            **form_schema(instance),
            "encoding": form_encoding(instance),
        }
        document = self.doc(requestBody={"content": {"application/x-www-form-urlencoded": form}})
        add_errors = self.errors(*BODY_STATUSES)

        def decorator(func: F) -> F:
            return add_errors(document(arguments(func)))  # type: ignore[no-any-return]

        return decorator

    def query(self, schema: Schema | type[Schema]) -> Callable[[F], F]:
        """Query parameters validated by ``schema`` (422 per field; 400 when the query
        string is not UTF-8)."""
        instance = schema() if isinstance(schema, type) else schema
        arguments = self.arguments(instance, location="query")
        add_errors = self.errors(400, 422)

        def decorator(func: F) -> F:
            return add_errors(arguments(func))  # type: ignore[no-any-return]

        return decorator

    def errors(self, *statuses: int, **described: str) -> Callable[[F], F]:
        """Document error statuses with the error schema; ``described`` overrides the
        standard description of a status, keyed ``s404`` and so on."""
        decorators = [
            self.alt_response(
                status,
                schema=ErrorOut,
                description=described.get(f"s{status}", STATUS_DESCRIPTIONS[status]),
            )
            for status in statuses
        ]

        def decorator(func: F) -> F:
            for add in decorators:
                func = add(func)
            return func

        return decorator
