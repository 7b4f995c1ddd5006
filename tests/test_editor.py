"""The editor: who may open a draft, the form, saving, previews, finishing and the way back.

Driven with the Flask test client against real Redis and a real database; every login goes
through ``/auth`` with a token signed by joserfc, as a shop signs it.
"""

from __future__ import annotations

import base64
import html as html_lib
import re
import time
import uuid
from typing import Any
from urllib.parse import quote

import api_support
import pytest
from conftest import complete_login
from flask import Flask
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry
from window_support import in_one_window

from pps.editor.throttle import BURST, BURST_SECONDS, FORM_SAVE_BURST, FORM_SAVES
from pps.files.keys import draft_file_key
from pps.platform.models import Client, Draft, User
from pps.platform.repository.sql import SqlRepository

PNG = b"\x89PNG\r\n\x1a\n"

#: Two pages; DataKeys with markup in their name and limits the editor must enforce.
SPEC: dict[str, Any] = {
    "name": "Flyer <A5>",
    "size": {"width": 85, "height": 55},
    "bleed": 3,
    "pages": [
        {
            "elements": [
                {
                    "type": "text",
                    "dataKey": "headline",
                    "box": {"x": 5, "y": 5, "width": 75, "height": 10},
                    "size": 12,
                    "maxLength": 40,
                    "required": True,
                    "shrinkToFit": True,
                },
                {
                    "type": "text",
                    "dataKey": "<b>tagline</b>",
                    "box": {"x": 5, "y": 20, "width": 75, "height": 8},
                    "size": 8,
                    "maxLength": 60,
                    "shrinkToFit": True,
                    "default": "Fresh & local",
                },
            ]
        },
        {
            "elements": [
                {
                    "type": "text",
                    "dataKey": "phone",
                    "box": {"x": 5, "y": 5, "width": 75, "height": 8},
                    "size": 8,
                    "maxLength": 30,
                    "shrinkToFit": True,
                }
            ]
        },
    ],
}
DATA_KEYS = ["headline", "<b>tagline</b>", "phone"]


# -- logging in as shops do --------------------------------------------------------------


def sign(key: str, claims: dict[str, Any]) -> str:
    """A login token as the PHP SDK signs it: jti in the header, float iat, no exp."""
    header = {"alg": "HS256", "typ": "JWT", "jti": uuid.uuid4().hex}
    registry = JWSRegistry(algorithms=["HS256"], strict_check_header=False)
    return jwt.encode(header, claims, OctKey.import_key(key), registry=registry)


def b64_url(url: str) -> str:
    return quote(base64.b64encode(url.encode()).decode(), safe="")


def log_in(client: FlaskClient, tenant: Client, user: User, redirect: str | None = None) -> None:
    claims: dict[str, Any] = {
        "client": tenant.identifier,
        "user": user.identifier,
        "iat": round(time.time(), 6),
    }
    if redirect is not None:
        claims["redirect"] = redirect
    response = client.get("/auth", query_string={"jwt": sign(tenant.api_key, claims)})
    assert response.status_code in (200, 302), response.get_data(as_text=True)
    complete_login(client, response)


# -- arranging ---------------------------------------------------------------------------


def make_draft(repo: SqlRepository, client: Client, user: User, **values: Any) -> Draft:
    template = repo.create_template(
        client.identifier,
        name="Flyer <A5>",
        data_keys=DATA_KEYS,
        custom_attributes={},
        page_count=2,
        spec=SPEC,
    )
    return api_support.make_draft(
        repo,
        client,
        user,
        template,
        api_default_values={"headline": "Default headline", "phone": 12345, **values},
        custom_attributes={},
    )


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User) -> Draft:
    return make_draft(repo, tenant, user)


def edit_url(draft: Draft, query: str = "") -> str:
    return f"/editor/{draft.draft_hash}/edit" + (f"?{query}" if query else "")


def open_editor(client: FlaskClient, url: str) -> tuple[str, str]:
    """(page HTML, CSRF token) of an editor page."""
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)
    page = response.get_data(as_text=True)
    match = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert match is not None
    return page, match.group(1)


def field_error(page: str, index: int) -> str:
    match = re.search(rf'<p class="field-error" id="f-{index}-error">([^<]*)</p>', page)
    assert match is not None, page
    return html_lib.unescape(match.group(1))


def input_tag(page: str, index: int) -> str:
    match = re.search(rf'<input id="f-{index}"[^>]*>', page)
    assert match is not None
    return match.group(0)


def links(page: str) -> dict[str, str]:
    """``data-exit`` -> href of the ways back that are links."""
    return {
        name: html_lib.unescape(href)
        for href, name in re.findall(
            r'<a class="button secondary" href="([^"]*)"[^>]*data-exit="([^"]+)"', page
        )
    }


def disabled_exits(page: str) -> set[str]:
    buttons = re.findall(r"<button[^>]*>", page)
    return {
        re.search(r'data-exit="([^"]+)"', tag).group(1)  # type: ignore[union-attr]
        for tag in buttons
        if " disabled" in tag and "data-exit" in tag
    } | set(re.findall(r'<span class="exit-refused" data-exit="([^"]+)"', page))


def stored(repo: SqlRepository, tenant: Client, draft: Draft) -> Draft:
    current = repo.get_draft(tenant.identifier, draft.draft_hash)
    assert current is not None
    return current


def form(token: str | None = None, **values: str) -> dict[str, str]:
    data = {f"v:{key}": value for key, value in values.items()}
    if token is not None:
        data["csrf_token"] = token
    return data


# -- who may open it ---------------------------------------------------------------------


def test_without_session_every_route_is_401(client: FlaskClient, draft: Draft) -> None:
    base = f"/editor/{draft.draft_hash}"
    for method, path in [
        ("GET", f"{base}/edit"),
        ("GET", f"{base}/preview"),
        ("POST", f"{base}/edit"),
        ("POST", f"{base}/finish"),
        ("GET", f"{base}/page/0.png"),
        ("POST", f"{base}/page/0.png"),
    ]:
        response = client.open(path, method=method)
        assert response.status_code == 401, (method, path)
        assert response.mimetype == "text/html"
    body = client.get(f"{base}/edit").get_data(as_text=True)
    assert "log in" in body


def test_another_users_session_is_401(
    client: FlaskClient, repo: SqlRepository, tenant: Client, draft: Draft
) -> None:
    someone_else = repo.create_user(tenant.identifier, {})
    log_in(client, tenant, someone_else)
    assert client.get(edit_url(draft)).status_code == 401
    assert client.get(f"/editor/{draft.draft_hash}/page/0.png").status_code == 401


def test_another_clients_draft_is_404(
    client: FlaskClient, repo: SqlRepository, other_tenant: Client, draft: Draft
) -> None:
    stranger = repo.create_user(other_tenant.identifier, {})
    log_in(client, other_tenant, stranger)
    response = client.get(edit_url(draft))
    assert response.status_code == 404
    assert response.mimetype == "text/html"


def test_unknown_draft_and_step_are_404(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    assert client.get("/editor/doesnotexist0000000000000000000/edit").status_code == 404
    assert client.get(f"/editor/{draft.draft_hash}/wizard").status_code == 404
    assert client.get(f"/editor/{draft.draft_hash}/<script>").status_code == 404


@pytest.mark.parametrize("action", ["finish", "upload", "autosave"])
def test_get_on_a_post_only_editor_url_is_405_naming_post(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, action: str
) -> None:
    """A form's action opened as a link (a bookmark, a reload of the address) is the wrong
    method, not a missing step; the ``Allow`` of any wrong method names only ``POST``."""
    log_in(client, tenant, user)
    for method in ("GET", "HEAD", "DELETE"):
        response = client.open(f"/editor/{draft.draft_hash}/{action}", method=method)
        assert response.status_code == 405, (method, action)
        assert response.headers["Allow"] == "OPTIONS, POST", (method, action)
        assert response.mimetype == "text/html"
    assert client.delete(f"/editor/{draft.draft_hash}/edit").headers["Allow"] == (
        "GET, HEAD, OPTIONS, POST"
    )
    assert client.delete(f"/editor/{draft.draft_hash}/wizard").status_code == 404


@pytest.mark.parametrize("path", ["finish/", "upload/", "autosave/", "wizard/"])
def test_a_slashed_address_that_is_no_step_is_404_not_a_500(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, path: str
) -> None:
    """Only a step's address with a trailing slash is sent on to the step: ``finish/`` or
    ``wizard/`` has no address without the slash to go to (building one failed: a 500)."""
    log_in(client, tenant, user)
    response = client.get(f"/editor/{draft.draft_hash}/{path}")
    assert response.status_code == 404
    assert response.mimetype == "text/html"


# -- the form ----------------------------------------------------------------------------


def test_a_form_that_is_not_utf8_is_400_saying_so(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    """A form body Werkzeug cannot read is refused rather than read as empty; the page says
    what is wrong with this body (its text is not UTF-8), not with a multipart one."""
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    response = client.post(
        edit_url(draft),
        data=f"csrf_token={token}&v%3Aheadline=M\xfcller".encode("latin-1"),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert "not valid UTF-8" in page
    assert "multipart" not in page
    assert stored(repo, tenant, draft) == draft


def test_one_labelled_input_per_datakey_prefilled(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    repo.update_draft(tenant.identifier, draft.draft_hash, values={"phone": "+49 30 1234"})
    log_in(client, tenant, user)
    page, _ = open_editor(client, edit_url(draft))

    labels = re.findall(r'<label for="(f-\d)">([^<]*)', page)
    assert [(for_, text.strip()) for for_, text in labels] == [
        ("f-0", "Headline"),  # no label in the template: a readable form of the key
        ("f-1", "&lt;b&gt;tagline&lt;/b&gt;"),
        ("f-2", "Phone"),
    ]
    assert 'value="Default headline"' in input_tag(page, 0)  # apiDefaultValues
    assert 'value="Fresh &amp; local"' in input_tag(page, 1)  # the template's default
    assert 'value="+49 30 1234"' in input_tag(page, 2)  # saved values win
    headline = input_tag(page, 0)
    assert 'maxlength="40"' in headline
    assert " required" in headline
    assert 'aria-describedby="f-0-hint f-0-error"' in headline
    assert 'name="v:&lt;b&gt;tagline&lt;/b&gt;"' in input_tag(page, 1)
    assert "<h1>Flyer &lt;A5&gt;</h1>" in page


def test_values_with_markup_are_escaped(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    draft = make_draft(repo, tenant, user, headline='"><script>alert(1)</script>')
    log_in(client, tenant, user)
    page, token = open_editor(client, edit_url(draft))
    assert "<script>alert(1)" not in page
    assert "&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page

    # Saved through the form and shown again: still text, never markup.
    evil = "<script>alert(2)</script>"
    response = client.post(edit_url(draft), data=form(token, headline=evil, phone="1"))
    assert response.status_code == 303
    assert stored(repo, tenant, draft).values["headline"] == evil
    page = client.get(edit_url(draft)).get_data(as_text=True)
    assert "<script>alert(2)" not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page


def test_security_headers_and_no_inline_script(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    response = client.get(edit_url(draft))
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    # Framed by the client's allowed origin only (tests/test_embed.py has the rest).
    assert "frame-ancestors https://shop-a.example" in csp
    assert "img-src 'self' data: blob:" in csp
    assert "X-Frame-Options" not in response.headers
    assert response.headers["Cache-Control"] == "no-store"
    page = response.get_data(as_text=True)
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.S)
    assert scripts and set(scripts) == {""}  # scripts from files only
    assert '<script src="/static/editor.js" defer></script>' in page
    assert not re.search(r"\son[a-z]+=", page)  # no inline event handlers
    assert "style=" not in page
    for asset, mimetype in [("editor.js", "text/javascript"), ("editor.css", "text/css")]:
        with client.get(f"/static/{asset}") as served:
            assert served.status_code == 200
            assert served.mimetype == mimetype


def test_accessible_structure(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    page, _ = open_editor(client, edit_url(draft))
    assert '<html lang="en">' in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '<a class="skip" href="#editor-main">' in page
    assert 'aria-label="Editor steps"' in page
    assert 'aria-current="step"' in page
    assert 'role="status" aria-live="polite"' in page  # the preview announces updates
    assert re.search(r'<img class="page-image"[^>]*alt="Preview of page 1 of 2"', page)
    assert 'tabindex="1' not in page  # no tab order hacks


# -- language ----------------------------------------------------------------------------


def test_locale_de_shows_german_and_is_remembered(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    page, _ = open_editor(client, edit_url(draft, "locale=de"))
    assert '<html lang="de">' in page
    assert ">Speichern</button>" in page
    assert "(Pflichtfeld)" in page
    assert "höchstens 40 Zeichen" in page
    assert "<h2>Bearbeiten</h2>" in page

    # Remembered for the session, also on the next step.
    page = client.get(f"/editor/{draft.draft_hash}/preview").get_data(as_text=True)
    assert "<h2>Vorschau</h2>" in page
    page = client.get(edit_url(draft, "locale=en")).get_data(as_text=True)
    assert ">Save</button>" in page
    assert "(required)" in page


def test_unknown_locale_falls_back_to_english(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    page, _ = open_editor(client, edit_url(draft, "locale=%22%3E%3Cx"))
    assert '<html lang="en">' in page
    page, _ = open_editor(client, edit_url(draft, "locale=de_AT"))
    assert '<html lang="de">' in page


def test_german_validation_messages(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft, "locale=de"))
    response = client.post(edit_url(draft), data=form(token, headline="", phone="x" * 31))
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert field_error(page, 0) == "ist ein Pflichtfeld"
    assert field_error(page, 2) == "darf höchstens 30 Zeichen lang sein (jetzt 31)"


def test_german_messages_for_the_renderers_problems(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    """Problems the layout finds (glyphs the font lacks) are translated by code as well."""
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft, "locale=de"))
    response = client.post(edit_url(draft), data=form(token, headline="漢字"))
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert field_error(page, 0) == ("enthält Zeichen, die die Schrift nicht darstellen kann: 字漢")
    assert "Bitte korrigieren Sie die markierten Felder" in page
    english = client.post(edit_url(draft, "locale=en"), data=form(token, headline="漢字"))
    assert field_error(english.get_data(as_text=True), 0) == (
        "contains characters the font cannot show: 字漢"
    )


# -- saving ------------------------------------------------------------------------------


def test_save_moves_to_edited_and_bumps_the_version(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    assert draft.state == "init"
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    response = client.post(
        edit_url(draft),
        data={
            **form(token, headline="Summer sale", phone="", **{"<b>tagline</b>": "Fresh"}),
            "action": "save",
        },
    )
    assert response.status_code == 303
    assert response.headers["Location"] == edit_url(draft)
    after = stored(repo, tenant, draft)
    assert after.state == "edited"
    assert after.version == draft.version + 1
    assert after.values == {"headline": "Summer sale", "<b>tagline</b>": "Fresh", "phone": ""}

    shown = api.get(f"/api-ext/draft/{draft.draft_hash}").get_json()["data"]
    assert shown["state"] == "edited"
    assert shown["personalizations"]["amount"] == 1  # one record: no variable data
    assert shown["variant"] == {"id": None, "identifier": "", "version": None}

    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "Your changes are saved." in page
    assert 'value="Summer sale"' in page


def test_save_and_preview_goes_to_the_preview_step(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    query = "callback=" + b64_url("https://shop-a.example/done") + "&locale=de"
    _, token = open_editor(client, edit_url(draft, query))
    response = client.post(
        edit_url(draft, query), data={**form(token, headline="Hi"), "action": "preview"}
    )
    assert response.status_code == 303
    # The shop's parameters travel along.
    assert response.headers["Location"] == f"/editor/{draft.draft_hash}/preview?{query}"


def test_csrf_missing_is_400_and_nothing_saved(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    open_editor(client, edit_url(draft))
    for path in (edit_url(draft), f"/editor/{draft.draft_hash}/finish"):
        response = client.post(path, data=form(headline="Hacked"))
        assert response.status_code == 400
        assert response.mimetype == "text/html"
        assert "security token" in response.get_data(as_text=True)
    assert stored(repo, tenant, draft) == draft


def test_csrf_wrong_is_403_and_nothing_saved(
    app: Flask, client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    # A token from another login of the same user does not count either.
    other_browser = app.test_client()
    log_in(other_browser, tenant, user)
    _, foreign_token = open_editor(other_browser, edit_url(draft))
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    assert foreign_token != token
    for wrong in ("x" * 43, foreign_token, token[:-1], token + "=", "ä" * 43):
        for path in (edit_url(draft), f"/editor/{draft.draft_hash}/finish"):
            response = client.post(path, data=form(wrong, headline="Hacked"))
            assert response.status_code == 403, wrong
    assert stored(repo, tenant, draft) == draft


def test_a_new_login_starts_a_new_csrf_token(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, first = open_editor(client, edit_url(draft))
    log_in(client, tenant, user)
    _, second = open_editor(client, edit_url(draft))
    assert first != second
    assert client.post(edit_url(draft), data=form(first, headline="x")).status_code == 403


def test_validation_errors_beside_fields_and_nothing_saved(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    too_long = "<i>" + "x" * 40
    response = client.post(
        edit_url(draft), data=form(token, headline="  ", phone=too_long, **{"<b>tagline</b>": "ok"})
    )
    assert response.status_code == 422
    assert response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert field_error(page, 0) == "is required"
    assert field_error(page, 1) == ""
    assert field_error(page, 2) == "must be at most 30 characters (now 43)"
    assert 'aria-invalid="true"' in input_tag(page, 0)
    assert 'aria-invalid="true"' in input_tag(page, 2)
    assert "aria-invalid" not in input_tag(page, 1)
    # The form comes back with what was typed, escaped, and a summary linking the fields.
    assert 'value="&lt;i&gt;xxxx' in input_tag(page, 2)
    assert 'role="alert"' in page
    assert '<a href="#f-0">Headline: is required</a>' in page
    assert "Nothing was saved." in page
    assert stored(repo, tenant, draft) == draft


@pytest.mark.parametrize("action", ["edit", "finish", "page/0.png"])
def test_a_value_with_nul_is_refused_beside_its_field_as_autosave_refuses_it(
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    draft: Draft,
    action: str,
) -> None:
    """Save, Finish and the live preview refuse a NUL in a value with a 422 naming the
    field, as the autosave and the API do, on SQLite and PostgreSQL alike; before, the form
    stored it (as JSON) while the autosave of the same text was refused."""
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    response = client.post(
        f"/editor/{draft.draft_hash}/{action}",
        data=form(token, headline="Big\x00news", phone="123"),
    )
    message = "must be plain text: it must not contain NUL characters"
    assert response.status_code == 422
    if action == "page/0.png":  # the preview's script reads JSON
        assert response.mimetype == "application/json"
        assert response.get_json()["errors"] == {"headline": [message]}
    else:
        assert response.mimetype == "text/html"
        page = response.get_data(as_text=True)
        assert field_error(page, 0) == message
        assert field_error(page, 2) == ""
    assert stored(repo, tenant, draft) == draft


def test_value_that_does_not_fit_its_box_is_refused(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    spec = {
        "name": "Narrow",
        "size": {"width": 50, "height": 20},
        "pages": [
            {
                "elements": [
                    {
                        "type": "text",
                        "dataKey": "name",
                        "box": {"x": 1, "y": 1, "width": 10, "height": 5},
                        "size": 12,
                    }
                ]
            }
        ],
    }
    template = repo.create_template(
        tenant.identifier,
        name="Narrow",
        data_keys=["name"],
        custom_attributes={},
        page_count=1,
        spec=spec,
    )
    narrow = api_support.make_draft(
        repo, tenant, user, template, api_default_values={}, custom_attributes={}
    )
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(narrow))
    response = client.post(edit_url(narrow), data=form(token, name="A rather long name indeed"))
    assert response.status_code == 422
    assert "too long for its box" in field_error(response.get_data(as_text=True), 0)
    assert stored(repo, tenant, narrow) == narrow


def test_ten_thousand_values_are_refused_cleanly(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    data = form(token, headline="ok")
    data.update({f"v:key{index}": "v" for index in range(10_000)})
    response = client.post(edit_url(draft), data=data)
    assert response.status_code == 413
    assert response.mimetype == "text/html"
    assert "more than 1000 fields" in response.get_data(as_text=True)
    assert stored(repo, tenant, draft) == draft


def test_multi_megabyte_value_is_refused_cleanly(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    response = client.post(edit_url(draft), data=form(token, headline="x" * (3 * 1024 * 1024)))
    assert response.status_code == 413
    assert response.mimetype == "text/html"
    assert stored(repo, tenant, draft) == draft
    # Under the body limit but far over the field's limit: a 422 beside the field.
    response = client.post(edit_url(draft), data=form(token, headline="x" * 200_000))
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert field_error(page, 0) == "must be at most 40 characters (now 200000)"
    assert stored(repo, tenant, draft) == draft


# -- finishing and the way back ----------------------------------------------------------


def test_finish_sends_the_browser_to_the_callback(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    # Not an allowed origin of the client: trusted because it was inside the signed claim.
    callback = "https://partner.example/done?order=7&x=%2F"
    redirect = f"/editor/{draft.draft_hash}/edit?callback={b64_url(callback)}"
    log_in(client, tenant, user, redirect)
    page, token = open_editor(client, redirect)
    assert (
        "form-action 'self' https://partner.example"
        in client.get(redirect).headers["Content-Security-Policy"]
    )
    assert disabled_exits(page) == set()

    response = client.post(f"/editor/{draft.draft_hash}/finish", data={"csrf_token": token})
    assert response.status_code == 303
    assert response.headers["Location"] == callback  # unchanged
    after = stored(repo, tenant, draft)
    assert after.state == "finished"
    assert after.version == draft.version + 1
    assert api.get(f"/api-ext/draft/{draft.draft_hash}").get_json()["data"]["state"] == "finished"


def test_finish_from_the_form_saves_the_values_too(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    callback = "https://shop-a.example/done"
    redirect = f"/editor/{draft.draft_hash}/edit?callback={b64_url(callback)}"
    log_in(client, tenant, user, redirect)
    page, token = open_editor(client, redirect)
    finish = re.search(r'formaction="([^"]+)"', page)
    assert finish is not None
    response = client.post(
        html_lib.unescape(finish.group(1)), data=form(token, headline="Final words")
    )
    assert response.status_code == 303
    assert response.headers["Location"] == callback
    after = stored(repo, tenant, draft)
    assert (after.state, after.values["headline"]) == ("finished", "Final words")


def test_finish_with_invalid_values_saves_nothing(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    redirect = f"/editor/{draft.draft_hash}/edit?callback={b64_url('https://shop-a.example/')}"
    log_in(client, tenant, user, redirect)
    _, token = open_editor(client, redirect)
    response = client.post(f"/editor/{draft.draft_hash}/finish", data=form(token, headline=""))
    assert response.status_code == 422
    assert field_error(response.get_data(as_text=True), 0) == "is required"
    assert stored(repo, tenant, draft) == draft


def test_saving_a_finished_design_makes_it_edited_again(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    repo.update_draft(tenant.identifier, draft.draft_hash, state="finished")
    log_in(client, tenant, user)
    page, token = open_editor(client, edit_url(draft))
    assert "This design is finished." in page
    assert client.post(edit_url(draft), data=form(token, headline="Again")).status_code == 303
    assert stored(repo, tenant, draft).state == "edited"


def test_halt_saves_and_goes_to_callback_halt(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    done, cancel, halt = (f"https://shop-a.example/{name}" for name in ("done", "cancel", "halt"))
    redirect = (
        f"http://localhost/editor/{draft.draft_hash}/edit?callback={b64_url(done)}"
        f"&callback_cancel={b64_url(cancel)}&callback_halt={b64_url(halt)}"
        "&callback_target=_top&locale=fr"
    )
    log_in(client, tenant, user, redirect)
    page, token = open_editor(client, redirect.removeprefix("http://localhost"))
    assert links(page) == {"callback_cancel": cancel}
    assert 'formtarget="_top"' in page
    response = client.post(
        edit_url(draft), data={**form(token, headline="Later"), "action": "halt"}
    )
    assert response.status_code == 303
    assert response.headers["Location"] == halt
    assert stored(repo, tenant, draft).values["headline"] == "Later"
    preview = client.get(f"/editor/{draft.draft_hash}/preview").get_data(as_text=True)
    assert links(preview) == {"callback_cancel": cancel, "callback_halt": halt}


def test_cancel_and_halt_default_to_callback(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    callback = "https://partner.example/done?order=7"
    redirect = f"/editor/{draft.draft_hash}/preview?callback={b64_url(callback)}"
    log_in(client, tenant, user, redirect)
    page, _ = open_editor(client, redirect)
    assert links(page) == {"callback_cancel": callback, "callback_halt": callback}


def test_signed_callbacks_win_over_the_query(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    signed = "https://partner.example/done"
    log_in(client, tenant, user, f"/editor/{draft.draft_hash}?callback={b64_url(signed)}")
    tampered = f"callback={b64_url('https://shop-a.example/x')}"
    page, token = open_editor(client, edit_url(draft, tampered))
    assert links(page)["callback_cancel"] == signed
    response = client.post(f"/editor/{draft.draft_hash}/finish?{tampered}", data=form(token))
    assert response.headers["Location"] == signed


def test_unsigned_callback_on_an_allowed_origin_is_followed(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)  # no redirect: nothing signed for this draft
    allowed = "https://shop-a.example/cart"
    query = f"callback={b64_url(allowed)}"
    page, token = open_editor(client, edit_url(draft, query))
    assert disabled_exits(page) == set()
    response = client.post(f"/editor/{draft.draft_hash}/finish?{query}", data=form(token))
    assert response.status_code == 303
    assert response.headers["Location"] == allowed


def test_callback_neither_signed_nor_allowed_is_not_followed(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    query = f"callback={b64_url('https://evil.example/phish?x=1')}"
    page, token = open_editor(client, edit_url(draft, query))
    # Every button says where it cannot go instead of linking there.
    assert disabled_exits(page) == {"callback", "callback_halt", "callback_cancel"}
    assert "https://evil.example was not confirmed by the shop" in page
    assert 'href="https://evil.example' not in page
    assert (
        "evil.example" not in client.get(edit_url(draft, query)).headers["Content-Security-Policy"]
    )
    response = client.post(f"/editor/{draft.draft_hash}/finish?{query}", data=form(token))
    assert response.status_code == 303
    assert response.headers["Location"].startswith(f"/editor/{draft.draft_hash}/preview")
    assert "evil" not in response.headers["Location"].split("?")[0]
    halt = client.post(edit_url(draft, query), data={**form(token), "action": "halt"})
    assert halt.headers["Location"].startswith(f"/editor/{draft.draft_hash}/edit")


def test_refused_cancel_does_not_fall_back_to_callback(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    """A cancel must never land on the shop's "done" callback (it may add to the cart)."""
    log_in(client, tenant, user)
    allowed = "https://shop-a.example/cart/add?sku=1"
    page, _ = open_editor(
        client,
        edit_url(
            draft,
            f"callback={b64_url(allowed)}&callback_cancel={b64_url('https://evil.example/x')}",
        ),
    )
    # callback_halt defaults to callback_cancel, so it cannot go there either.
    assert disabled_exits(page) == {"callback_cancel", "callback_halt"}
    assert "Cancel and return to shop: not available, because https://evil.example" in page


def test_without_any_callback_the_buttons_say_so(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    page, _ = open_editor(client, edit_url(draft))
    assert disabled_exits(page) == {"callback", "callback_halt", "callback_cancel"}
    assert "the shop gave no address to return to" in page


@pytest.mark.parametrize(
    "callback",
    [
        "javascript:alert(1)",
        "data:text/html,hi",
        "//evil.example",
        "https://a@evil.example/",
        # Host names Location cannot carry (an empty label, a label over 63 characters):
        # followed, the answer failed after the draft was finished.
        "https://shop..example/done",
        "https://" + "a" * 64 + ".example/done",
    ],
)
def test_dangerous_callbacks_are_never_linked_even_signed(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, callback: str
) -> None:
    redirect = f"/editor/{draft.draft_hash}/edit?callback={b64_url(callback)}"
    log_in(client, tenant, user, redirect)
    page, token = open_editor(client, redirect)
    assert links(page) == {}
    assert "javascript:" not in page
    assert "callback" in disabled_exits(page)
    response = client.post(f"/editor/{draft.draft_hash}/finish", data=form(token))
    assert response.headers["Location"].startswith(f"/editor/{draft.draft_hash}/preview")


def test_undecodable_callback_is_ignored(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    redirect = f"/editor/{draft.draft_hash}/edit?callback=%%%not-base64"
    log_in(client, tenant, user, redirect)
    page, _ = open_editor(client, redirect)
    assert links(page) == {}


@pytest.mark.parametrize("signed", [True, False])
def test_an_undecodable_cancel_never_falls_back_to_the_callback(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, signed: bool
) -> None:
    # callback may put the design into the cart: a cancel the shop gave but pps cannot
    # read is shown disabled, as a refused one is, instead of becoming that callback.
    done = "https://shop-a.example/cart/add"
    query = f"callback={b64_url(done)}&callback_cancel=%%%not-base64"
    redirect = f"/editor/{draft.draft_hash}/edit?{query}"
    log_in(client, tenant, user, redirect if signed else None)
    page, _ = open_editor(client, redirect)
    assert links(page) == {}  # the Cancel link went to `done`
    assert 'aria-describedby="why-callback_cancel"' in page
    assert "is not a web address" in page


def test_overlong_callback_is_dropped_and_the_session_still_fits(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    long = "https://shop-a.example/" + "x" * 1100
    short = "https://shop-a.example/ok"
    redirect = (
        f"/editor/{draft.draft_hash}/preview?callback={b64_url(short)}"
        f"&callback_cancel={b64_url(long)}&callback_halt={b64_url(long)}"
    )
    log_in(client, tenant, user, redirect)
    page, _ = open_editor(client, redirect)
    # Given but unusable, cancel and halt are shown disabled rather than falling back to
    # the callback (they used to link to `short`); the callback itself is still followed.
    assert links(page) == {}
    assert "callback" not in disabled_exits(page)
    assert 'aria-describedby="why-callback_cancel"' in page


# -- steps and previews ------------------------------------------------------------------


def test_no_step_opens_edit_then_the_last_visited_step(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    first = client.get(f"/editor/{draft.draft_hash}").get_data(as_text=True)
    assert "<h2>Edit</h2>" in first
    assert client.get(f"/editor/{draft.draft_hash}/preview").status_code == 200
    again = client.get(f"/editor/{draft.draft_hash}").get_data(as_text=True)
    assert "<h2>Preview</h2>" in again


def test_the_session_cookie_stays_small_however_many_drafts_are_visited(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    """Each visited draft's step was remembered forever: 72 bytes a draft, past 4 KB (where
    browsers drop the cookie, and the login with it) after about 53 drafts."""
    callback = "https://shop-a.example/cart?item=1"
    log_in(client, tenant, user, f"/editor/{draft.draft_hash}/edit?callback={b64_url(callback)}")
    others = [make_draft(repo, tenant, user) for _ in range(70)]
    sizes = []
    for other in others:
        response = client.get(f"/editor/{other.draft_hash}/preview")
        assert response.status_code == 200
        sizes.append(len(response.headers["Set-Cookie"]))
    assert max(sizes) < 1500, sizes
    assert sizes[-1] <= sizes[30] + 100  # flat, not growing with every draft
    # The newest drafts open at their remembered step; the oldest are forgotten.
    for other in others[-12:]:
        assert "<h2>Preview</h2>" in client.get(f"/editor/{other.draft_hash}").get_data(
            as_text=True
        )
    assert "<h2>Edit</h2>" in client.get(f"/editor/{others[0].draft_hash}").get_data(as_text=True)
    # The login's own draft keeps the shop's signed callback.
    page = client.get(f"/editor/{draft.draft_hash}/edit").get_data(as_text=True)
    assert f'href="{callback}"' in page


def test_preview_step_shows_every_page_large(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    page, _ = open_editor(client, f"/editor/{draft.draft_hash}/preview")
    images = re.findall(r'<img src="([^"]+)" width="(\d+)" height="(\d+)" alt="([^"]+)"', page)
    assert [(html_lib.unescape(src), w, alt) for src, w, _, alt in images] == [
        (f"/editor/{draft.draft_hash}/page/0.png?width=1600&v=1", "1600", "Preview of page 1 of 2"),
        (f"/editor/{draft.draft_hash}/page/1.png?width=1600&v=1", "1600", "Preview of page 2 of 2"),
    ]
    for src, width, height, _ in images:
        response = client.get(html_lib.unescape(src))
        assert response.status_code == 200
        assert response.mimetype == "image/png"
        assert response.data.startswith(PNG)
        assert _png_size(response.data) == (int(width), int(height))


def test_saved_page_image_is_cached_by_draft_version(
    app: Flask, client: FlaskClient, tenant: Client, user: User, repo: SqlRepository
) -> None:
    draft = make_draft(repo, tenant, user, phone="+1 555")  # only strings: the cached path
    log_in(client, tenant, user)
    first = client.get(f"/editor/{draft.draft_hash}/page/1.png?width=960")
    assert first.status_code == 200
    assert first.data.startswith(PNG)
    assert "private" in first.headers["Cache-Control"]
    storage = app.extensions["pps"].storage
    key = draft_file_key(
        tenant.identifier,
        draft.draft_hash,
        draft.version,
        "image",
        page=1,
        size=_png_size(first.data),
    )
    assert storage.stat(key) is not None
    assert client.get(f"/editor/{draft.draft_hash}/page/1.png?width=960").data == first.data


def test_live_preview_renders_unsaved_values_without_saving(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    page, token = open_editor(client, edit_url(draft))
    img = re.search(r'<img class="page-image" src="([^"]+)" data-render-url="([^"]+)"', page)
    assert img is not None
    saved = client.get(html_lib.unescape(img.group(1)))
    assert saved.status_code == 200 and saved.data.startswith(PNG)

    render_url = html_lib.unescape(img.group(2))
    typed = client.post(render_url, data=form(token, headline="<script>Typed</script>"))
    assert typed.status_code == 200
    assert typed.mimetype == "image/png"
    assert typed.headers["Cache-Control"] == "no-store"
    assert typed.data.startswith(PNG)
    assert typed.data != saved.data
    assert stored(repo, tenant, draft) == draft  # rendered, not saved


def test_live_preview_needs_csrf_and_reports_problems_per_field(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft, "locale=de"))
    url = f"/editor/{draft.draft_hash}/page/0.png?width=960"
    assert client.post(url, data=form(headline="x")).status_code == 400
    assert client.post(url, data=form("wrong" * 9, headline="x")).status_code == 403
    # (Refused tokens are checked before the rate limit, so they used up no slot.)
    response = client.post(url, data=form(token, headline="x" * 41))
    assert response.status_code == 422
    problem = response.get_json()
    assert problem["fields"] == {"f-0": ["darf höchstens 40 Zeichen lang sein (jetzt 41)"]}
    assert problem["fieldsByKey"] == {
        "headline": ["darf höchstens 40 Zeichen lang sein (jetzt 41)"]
    }
    assert problem["errors"] == {"headline": ["must be at most 40 characters, got 41"]}
    assert problem["message"]


def test_live_preview_is_rate_limited(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    url = f"/editor/{draft.draft_hash}/page/0.png?width=960"
    # A burst (typing) goes through; past it, 429 until the short window ends. (Too long
    # values: refused after the count, so nothing is rendered.)
    too_long = form(token, headline="x" * 41)

    def burst() -> list[Any]:
        return [client.post(url, data=too_long) for _ in range(BURST + 1)]

    # The burst is counted in windows of BURST_SECONDS of the clock: all in one.
    *taken, refused = in_one_window(BURST_SECONDS, burst)
    assert [answer.status_code for answer in taken] == [422] * BURST
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= BURST_SECONDS


def test_form_saves_are_rate_limited_per_login(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))

    # Saves and finishes share the limit; past it 429 and nothing is written.
    def burst() -> tuple[list[Any], int]:
        answers = []
        for index in range(FORM_SAVE_BURST + 1):
            url = edit_url(draft) if index % 2 else f"/editor/{draft.draft_hash}/finish"
            version = stored(repo, tenant, draft).version
            answers.append(client.post(url, data=form(token, headline=f"Save {index}")))
        return answers, version

    # The burst is counted in windows of two seconds of the clock: all in one.
    answers, version = in_one_window(FORM_SAVES.burst_seconds, burst)
    statuses = [answer.status_code for answer in answers]
    assert statuses == [303] * FORM_SAVE_BURST + [429], statuses
    assert stored(repo, tenant, draft).version == version  # the refused one wrote nothing
    refused = answers[-1]
    assert 1 <= int(refused.headers["Retry-After"]) <= FORM_SAVES.burst_seconds
    assert refused.mimetype == "text/html"
    assert 'data-kind="busy"' in refused.get_data(as_text=True)


def test_live_preview_refuses_oversized_input(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    log_in(client, tenant, user)
    _, token = open_editor(client, edit_url(draft))
    url = f"/editor/{draft.draft_hash}/page/0.png?width=960"
    many = form(token)
    many.update({f"v:k{index}": "v" for index in range(10_000)})
    assert client.post(url, data=many).status_code == 413
    huge = form(token, headline="x" * (3 * 1024 * 1024))
    assert client.post(url, data=huge).status_code == 413


@pytest.mark.parametrize(
    "path",
    ["page/2.png", "page/-1.png", "page/0.png?width=100000", "page/0.png?width=0", "page/x.png"],
)
def test_unknown_page_or_size_is_404(
    client: FlaskClient, tenant: Client, user: User, draft: Draft, path: str
) -> None:
    log_in(client, tenant, user)
    assert client.get(f"/editor/{draft.draft_hash}/{path}").status_code == 404


# -- documentation -----------------------------------------------------------------------


def test_states_and_editor_routes_are_documented(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    state = spec["components"]["schemas"]["DraftOut"]["properties"]["state"]
    assert state["enum"] == ["init", "edited", "finished"]
    assert "finished" in state["description"]
    paths = spec["paths"]
    assert "post" in paths["/editor/{draft_hash}/edit"]
    assert "post" in paths["/editor/{draft_hash}/finish"]
    assert {"get", "post"} <= set(paths["/editor/{draft_hash}/page/{page}.png"])


def _png_size(data: bytes) -> tuple[int, int]:
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
