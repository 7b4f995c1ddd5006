"""The browser pages in the OpenAPI reference: ``/auth``, the editor, file links, the docs.

They answer HTML pages, redirects or file bytes, not schemas, so they are described here and
registered on their real URL rules (:func:`document`): a page that moves or goes away fails
the reference test instead of leaving a stale entry. Their errors are HTML pages with a
request id, except on ``/files/`` and ``/openapi.json``, which answer JSON.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from apispec import APISpec
from flask import Flask

from pps.web.openapi import ErrorOut, api_of

AUTH = """\
Browser entry point. The shop signs a JWT (HS256, its API key as the key) with `client`,
`user` (a user of that client), `jti` (header or payload; every token logs in once), `iat`
(a login issued longer ago than `PPS_NONCE_TTL`, 30 days by default, is refused; a token
with neither `iat` nor `exp` too) and optionally `redirect`, `exp`, `nbf` and `urlPath`
(which must then be `/auth`).

On success the user is logged in for 8 hours and the answer is `302` to the `redirect`
claim: a path on this service or an absolute URL on this service's origin or one of the
client's allowed origins. Without `redirect` a page says the user is logged in. The answer
sets a fresh session cookie (HttpOnly; `SameSite=None; Secure; Partitioned` under https and
on loopback hosts, `SameSite=Lax` on plain http elsewhere), except when `redirect` is an
editor URL on this service's origin: then it sets none and appends `handoff=<code>` to the
`Location`, which the editor exchanges once, within two minutes, for the cookie. So the
editor also opens in a browser that never saw this answer (a shop that calls `/auth` from
its server and frames the `Location`).

Errors are HTML pages with a request id: `400` for a missing or malformed token or a refused
redirect target, `401` for a bad signature, unknown client or user, expired token, missing
`user`/`jti`, missing `iat` and `exp`, a login issued too long ago, or a token used before;
`503` when the session store is unavailable (nobody is logged in then). A refused token's
`jti` is not used up.
"""

EDITOR = """\
Browser page, for the user logged in through `/auth`. `step` is `edit` (a form with one
input per DataKey and a live preview), `preview` (every page large) or `proof` (every page of
the print file with the trim marked, a checkbox "I have checked spelling and layout", required
when the client's proof approval is required, and the Finish button); without a step the
editor opens at the step last visited (`edit` at first). Query parameters as the shop sends
them: `callback`, `callback_cancel`, `callback_halt` (standard base64 of a URL,
URL-encoded), `callback_target`, `locale` (`en` or `de`; remembered for the session).
Callbacks that came inside the signed `redirect` claim of the login are used as they are;
others only when their origin is one of the client's allowed origins; a button whose
callback is refused is shown disabled with the reason.

Draft states: `init` (created), `edited` (saved in the editor), `finished` (the customer
pressed Finish; saving again makes it `edited`).

HTML errors: `401` without a login for this draft's user, `404` for an unknown draft or step.
"""

EDITOR_FORM = """\
The editor's form, sent by the browser (`application/x-www-form-urlencoded`): `csrf_token`
(from the page; missing: `400`, wrong: `403`, nothing saved), `v:<DataKey>` per value and
`action`: `save` (then `303` back to the form), `preview` (then `303` to the preview step)
or `halt` (then `303` to `callback_halt`). Values are checked against the template (required
keys, maximum length, fitting their box); on a problem the answer is `422` with the form and
a message beside each field, and nothing is saved. Saving sets the draft's state to
`edited` and bumps its version. More than 1000 form fields or a body over the size limit:
`413`. `base_version` (hidden, the draft version the page showed): when the draft has
another version now (changed through the API or in another window) the answer is `409` with
the form showing the sent values on the current version and nothing is saved; sending that
form again overwrites (a form without `base_version` is not checked). `action=proof` saves,
then `303` to the proof step. A script that ranks `application/json` above `text/html` in
`Accept` (the embed bridge: `application/json, text/html;q=0.9`) gets every refusal as JSON
with `message`: the `422` as the live preview's (`fields` per form field, `fieldsByKey` the
same messages per DataKey, `general`), the `409` as the
autosave's (`conflict`, `currentVersion`), errors with their `Retry-After`; successful
answers stay the same.
"""

EDITOR_FINISH = """\
Finish personalizing: with `csrf_token` and optionally the form's `v:<DataKey>` values
(saved first, checked as for saving). The draft's state becomes `finished` and the browser
is sent (`303`) to the decoded `callback`, unchanged. When no callback may be followed the
answer is `303` to the preview step. Errors as for saving (`409` with `base_version` of an
older version: the current proof again; JSON for a script that asks for it first, as for
saving). `proof_approved=1` (the proof step's checkbox)
records the approval on the draft (`proofApprovedAt`, `proofApprovedVersion`); when the
client requires it (`pps client proof-approval <id> --required`) finishing without it is a
`422` with the proof again, and nothing changes.
"""

EDITOR_AUTOSAVE = """\
The editor's script saves while the customer types (one second after the last change and
when a field is left). JSON body `{"baseVersion": <the draft version the page shows>,
"values": {"<DataKey>": "<text>"}}` (keys the template does not have are ignored), the
page's CSRF token in `X-CSRF-Token`, the editor's session. Values are checked as for the
form; valid ones are stored as a new draft version (state `edited`), answered
`{"success": true, "version", "state", "changed"}` (`changed` false when they were stored
already: no new version). `409` `{"conflict": true, "currentVersion"}` when the draft is at
another version (changed through the API or in another window): nothing is saved; the
same values sent with `baseVersion` = `currentVersion` overwrite. Every answer is JSON.
"""

EDITOR_PROOF_IMAGE = """\
A page (`page` counted from 0) of the draft's print file as PNG, 1200 pixels wide, bleed
included, the trim box drawn as a solid line and the bleed under a light veil: the proof
step's images. Cached per draft version (`?v=`). `422` (JSON) when the saved values cannot
be rendered.
"""

EDITOR_IMAGE = """\
A page (`page` counted from 0) as PNG, `width` 960 or 1600 pixels. `GET`: the saved draft,
cached by draft version. `POST` with the form's `csrf_token` and `v:<DataKey>` values: the
page rendered from those values without saving them (the live preview); `422` with
`{"message", "errors"}` per DataKey when they cannot be rendered, `429` when sent faster
than four times a second per login (all drafts and pages together) or past the client's
`PPS_RENDERS_PER_MINUTE`, `503` when the renderer is busy. A problem of the template itself
(a file that cannot be decoded) is a `422` whose `general` says so.
"""

REVIEW = """\
Browser page of a review (proof approval), for its reviewers: the shop signs a login JWT
for one of the review's users with `redirect` = `{base}/review/{review_id}` and sends the
browser to `/auth`. The page shows every page of the draft's print file, bleed included,
with the trim box drawn as a solid line and the bleed (cut off after printing) under a
light veil, the reviewers' decisions so far and, while the review is open, a form to
approve or reject with a comment.

HTML errors: `401` without a login, `403` for a login of a user who is not one of the
review's users, `404` for a review of another client or one that does not exist.
"""

REVIEW_DECIDE = """\
The reviewer's decision, sent by the browser (`application/x-www-form-urlencoded`):
`csrf_token` (from the page; missing: `400`, wrong: `403`), `version` (the draft version
the page showed), `decision` (`approve` or `reject`) and `comment` (at most 2000
characters; needed to reject). Then `303` back to the page. A rejection closes the review
at once; an approval closes it when every reviewer has approved; either way pps POSTs the
review's state to the shop's `closeCallbackURL`. `409` (HTML) when the review is closed
already or the draft changed since the page was loaded; `422` with the form again when
the decision is incomplete.
"""

REVIEW_IMAGE = """\
A page (`page` counted from 0) of the review's proof as PNG, 1200 pixels wide: the print
file's page rasterized with its bleed, the trim box and the bleed marked. For the
review's users only (errors as for the page). Cached per draft version (`?v=`).
`429` past the client's `PPS_RENDERS_PER_MINUTE`.
"""

FILE_LINK = (
    "The target of the redirects of `/api-ext/files/*`. Serves the file itself "
    "(`Content-Disposition: inline`), supports HEAD, Range and conditional requests, and can "
    "be fetched repeatedly until the link expires; then `404` with a JSON `message`."
)

_PAGE_ERRORS = {
    400: "HTML error page: a missing or malformed token, a refused redirect target or a "
    "missing CSRF token.",
    401: "HTML error page: not logged in (or a token that failed verification).",
    403: "HTML error page: a wrong CSRF token.",
    404: "HTML error page: no such draft, step or page for this login.",
    405: "HTML error page: HEAD (a link scanner's probe must not use up the login).",
    413: "HTML error page: too many form fields or a body over the size limit.",
    409: "HTML: the draft changed since the page was loaded (the form again with the sent "
    "values on the current version; nothing saved), or the shop locked it (error page).",
    422: "The form again (HTML), with a message beside each invalid field.",
    429: "JSON error: previews requested too fast; `Retry-After` says when to try again.",
    503: "HTML error page: a backing service is unavailable; nothing was done.",
    507: "No room for the file (the shop's uploads are at `PPS_CLIENT_STORAGE_BYTES`, or "
    "the storage is full): JSON with `errors.<DataKey>`, or the form again (HTML) with the "
    "reason beside the image; nothing stored.",
}
_LOCATION = {"Location": {"schema": {"type": "string"}}}
_REVIEW_ERRORS = {
    **_PAGE_ERRORS,
    403: "HTML error page: the login is not one of the review's users (or a wrong CSRF "
    "token on the form).",
    404: "HTML error page: no such review (or page) for this login's client.",
    409: "HTML error page: the review is closed, or the draft changed since the page loaded.",
    422: "The page again (HTML) with what is missing, such as a comment for a rejection.",
    429: "HTML error page: the client's renders per minute are used up.",
}


def _review_page(
    summary: str, description: str, success: dict[str, dict[str, Any]], errors: tuple[int, ...]
) -> dict[str, Any]:
    operation = _page(summary, description, success, (), tag="Review")
    operation["responses"].update({str(status): _html(_REVIEW_ERRORS[status]) for status in errors})
    return operation


def _html(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}


def _page(
    summary: str,
    description: str,
    success: dict[str, dict[str, Any]],
    errors: tuple[int, ...],
    *,
    security: list[dict[str, list[str]]] | None = None,
    tag: str = "Auth",
    parameters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "tags": [tag],
        "summary": summary,
        "description": description,
        "security": security or [],
        "responses": {
            **success,
            **{str(status): _html(_PAGE_ERRORS[status]) for status in errors},
        },
    }
    if parameters:
        operation["parameters"] = parameters
    return operation


def _json_error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": ErrorOut}},
    }


def _binary(content_type: str, description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {content_type: {"schema": {"type": "string", "format": "binary"}}},
    }


_EDITOR_QUERY = [
    {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
    for name in ("callback", "callback_cancel", "callback_halt", "callback_target", "locale")
]

#: endpoint -> {method: operation}
PAGES: dict[str, dict[str, dict[str, Any]]] = {
    "web.login": {
        "get": _page(
            "Log a user in with a signed JWT and redirect",
            AUTH,
            {
                "302": {
                    "description": "Logged in; redirect to the `redirect` claim (with "
                    "`handoff=<code>` for an editor on this service).",
                    "headers": _LOCATION,
                },
                "200": _html("Logged in; no `redirect` claim, so a page says so."),
            },
            (400, 401, 405, 503),
            security=[{"jwt": []}],
        )
    },
    "web.editor_default": {
        "get": _page(
            "Open the editor at the last visited step",
            EDITOR,
            {"200": _html("The editor page.")},
            (400, 401, 404, 503),
            parameters=_EDITOR_QUERY,
        )
    },
    "web.editor_step": {
        "get": _page(
            "Open the editor at a step",
            EDITOR,
            {"200": _html("The editor page.")},
            (400, 401, 404, 503),
            parameters=_EDITOR_QUERY,
        )
    },
    **{
        endpoint: {
            "get": _page(
                "The editor's address with a trailing slash",
                "`308` to the same address without the slash, with the same query (a "
                "login's handoff code included): a login's `redirect` may name "
                "`{base}/editor/{draft_hash}/`.",
                {"308": {"description": "The editor's address.", "headers": _LOCATION}},
                (),
            )
        }
        for endpoint in ("web.editor_default_slash", "web.editor_step_slash")
    },
    "web.editor_save": {
        "post": _page(
            "Save the editor's form",
            EDITOR_FORM,
            {"303": {"description": "Saved; redirect to the next page.", "headers": _LOCATION}},
            (400, 401, 403, 404, 409, 413, 422, 503),
        )
    },
    "web.editor_autosave": {
        "post": {
            "tags": ["Auth"],
            "summary": "Autosave the editor's values (JSON, from the editor's script)",
            "description": EDITOR_AUTOSAVE,
            "security": [],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["baseVersion", "values"],
                            "properties": {
                                "baseVersion": {"type": "integer", "minimum": 1},
                                "values": {
                                    "type": "object",
                                    "additionalProperties": {"type": "string"},
                                },
                            },
                        }
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "Saved (or nothing to save).",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "success": {"type": "boolean"},
                                    "version": {"type": "integer"},
                                    "state": {"type": "string"},
                                    "changed": {"type": "boolean"},
                                },
                            }
                        }
                    },
                },
                **{
                    str(status): _json_error(text)
                    for status, text in {
                        400: "The body is not JSON, or the CSRF header is missing.",
                        401: "Not logged in for this draft.",
                        403: "A wrong CSRF token.",
                        404: "No such draft.",
                        409: "The draft changed meanwhile (`currentVersion`), or it is locked.",
                        415: "The body is not `application/json`.",
                        422: "Values the template refuses, or a body of the wrong shape.",
                        429: "Saves sent too fast; `Retry-After` says when to try again.",
                        503: "A backing service is unavailable; nothing was saved.",
                    }.items()
                },
            },
        }
    },
    "web.editor_proof_image": {
        "get": _page(
            "A page of the design's print file as PNG, trim marked (the proof step)",
            EDITOR_PROOF_IMAGE,
            {"200": _binary("image/png", "The PNG.")},
            (401, 404, 503),
        )
    },
    "web.editor_finish": {
        "post": _page(
            "Finish personalizing and return to the shop",
            EDITOR_FINISH,
            {
                "303": {
                    "description": "Finished; redirect to the shop's callback.",
                    "headers": _LOCATION,
                }
            },
            (400, 401, 403, 404, 409, 413, 422, 503),
        )
    },
    "web.editor_page_image": {
        method: _page(
            "A page of the design as PNG (saved, or from unsaved form values)",
            EDITOR_IMAGE,
            {"200": _binary("image/png", "The PNG.")},
            (401, 404, 503) if method == "get" else (400, 401, 403, 404, 413, 503),
            parameters=[
                {
                    "name": "width",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "integer", "enum": [960, 1600]},
                }
            ],
        )
        for method in ("get", "post")
    },
    "review_pages.review_page": {
        "get": _review_page(
            "A review's proof and decision form, for its reviewers",
            REVIEW,
            {"200": _html("The review page.")},
            (401, 403, 404, 503),
        )
    },
    "review_pages.review_page_slash": {
        "get": _page(
            "The review page's address with a trailing slash",
            "The Magento module signs `redirect` = `{base}/review/{review_id}/` (with the "
            "slash, and its `redirect-url` and `submit-callback-url` in the query): `308` to "
            "`/review/{review_id}` with the same query. pps reads neither parameter: the "
            "review's `closeCallbackURL` is where the shop hears of the decision.",
            {"308": {"description": "The review page's address.", "headers": _LOCATION}},
            (),
            tag="Review",
        )
    },
    "review_pages.review_decide": {
        "post": _review_page(
            "Approve or reject a review's proof with a comment",
            REVIEW_DECIDE,
            {"303": {"description": "Decided; back to the review page.", "headers": _LOCATION}},
            (400, 401, 403, 404, 409, 413, 422, 503),
        )
    },
    "review_pages.review_page_image": {
        "get": _review_page(
            "A page of a review's proof as PNG, trim and bleed marked",
            REVIEW_IMAGE,
            {"200": _binary("image/png", "The PNG.")},
            (401, 403, 404, 422, 429, 503),
        )
    },
    "web.file_link": {
        "get": {
            "tags": ["Files"],
            "summary": "Download a file through a short-lived link",
            "description": FILE_LINK,
            "security": [],
            "responses": {
                "200": _binary("application/octet-stream", "The file's bytes."),
                "206": _binary("application/octet-stream", "A range of the file's bytes."),
                "404": _json_error("The link is unknown or has expired."),
                "503": _json_error("A backing service is unavailable."),
            },
        }
    },
    "web.openapi_json": {
        "get": {
            "tags": ["Docs"],
            "summary": "This reference as an OpenAPI 3 document",
            "security": [],
            "responses": {
                "200": {
                    "description": "The document.",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        }
    },
    "web.docs": {
        "get": _page(
            "This reference, interactive (Swagger UI)",
            "Swagger UI on local assets under a strict Content-Security-Policy.",
            {"200": _html("The page.")},
            (),
            tag="Docs",
        )
    },
    "web.client_module": {
        "get": _page(
            "The editor client module a shop's page imports",
            "`pps-editor-client.js`, an ES module: `Connector().connect(iframe, emitter)` "
            "drives an editor framed in the shop's page by postMessage (see "
            "docs/embedding.md). Public and without credentials, so any origin may "
            "import it (`Access-Control-Allow-Origin: *`).",
            {"200": _binary("text/javascript", "The module.")},
            (),
        )
    },
    "web.docs_asset": {
        "get": _page(
            "Swagger UI's scripts and styles, served locally",
            "Only the files of the bundle the page uses.",
            {"200": _binary("application/octet-stream", "The asset.")},
            (404,),
            tag="Docs",
        )
    },
    "web.home": {
        "get": _page(
            "Home page, linking the reference",
            "Also where `pps demo` sends the editor's Finish and Cancel.",
            {"200": _html("The page.")},
            (),
            tag="Docs",
        )
    },
}


def document(app: Flask, spec: APISpec) -> None:
    """Register each page on the rule of its endpoint; path parameters come from the rule."""
    for endpoint, operations in PAGES.items():
        (rule,) = app.url_map.iter_rules(endpoint)
        spec.path(rule=rule, operations=deepcopy(operations))


def document_pages(app: Flask) -> None:
    """Add the browser pages to the reference; call after every blueprint is registered."""
    document(app, api_of(app).spec)
