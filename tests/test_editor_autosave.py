"""Never lose work and approve the proof (issue 14, items 5 and 6), through the Flask client.

Autosave (JSON, CSRF header, the same checks as the form), optimistic concurrency for the
autosave and the no-JavaScript form (a conflict instead of an overwrite), the proof step,
the per-client "proof must be confirmed" setting and the approval stored on the draft and
shown by the API. Real Redis and a real database, logins through ``/auth``.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from typing import Any

import pytest
from api_support import snapshot
from flask import Flask
from flask.testing import FlaskClient
from test_editor import b64_url, edit_url, form, log_in, make_draft, open_editor, stored
from window_support import in_one_window

from pps.editor.autosave_web import AUTOSAVES_PER_SECOND
from pps.platform.models import Client, Draft, User
from pps.platform.repository import VersionConflict
from pps.platform.repository.sql import SqlRepository

PNG = b"\x89PNG\r\n\x1a\n"
CALLBACK = "https://shop.example/checkout?draft=1"


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client, user: User) -> Draft:
    return make_draft(repo, tenant, user)


def base_version(page: str) -> int:
    match = re.search(r'name="base_version" value="(\d+)"', page)
    assert match is not None, page
    return int(match.group(1))


def autosave(
    client: FlaskClient,
    draft: Draft,
    token: str | None,
    body: Any,
    *,
    content_type: str = "application/json",
) -> Any:
    headers = {"X-CSRF-Token": token} if token is not None else {}
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(
        f"/editor/{draft.draft_hash}/autosave",
        data=data,
        content_type=content_type,
        headers=headers,
    )


def opened(client: FlaskClient, tenant: Client, user: User, draft: Draft) -> tuple[str, str]:
    redirect = f"/editor/{draft.draft_hash}/edit?callback={b64_url(CALLBACK)}"
    log_in(client, tenant, user, redirect)
    return open_editor(client, redirect)


def pps_cli(app: Flask, *args: str) -> Any:
    return app.test_cli_runner().invoke(args=["pps", "client", *args])


# -- autosave ----------------------------------------------------------------------------


def test_autosave_stores_a_new_version_and_skips_an_unchanged_one(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    page, token = opened(client, tenant, user, draft)
    version = base_version(page)
    assert version == draft.version
    assert f'data-url="/editor/{draft.draft_hash}/autosave"' in page

    response = autosave(
        client, draft, token, {"baseVersion": version, "values": {"headline": "Typed\r\nnow"}}
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json() == {
        "success": True,
        "version": version + 1,
        "state": "edited",
        "changed": True,
    }
    after = stored(repo, tenant, draft)
    assert (after.version, after.state) == (version + 1, "edited")
    assert after.values["headline"] == "Typed\nnow"
    assert api.get(f"/api-ext/draft/{draft.draft_hash}").get_json()["data"]["draftVersion"] == (
        version + 1
    )

    # The same values again: nothing new to store, no new version.
    again = autosave(
        client, draft, token, {"baseVersion": version + 1, "values": {"headline": "Typed\nnow"}}
    )
    assert again.status_code == 200
    assert again.get_json()["changed"] is False
    assert stored(repo, tenant, draft).version == version + 1

    # The editor opened afresh shows the autosaved text and the new base version.
    page, _ = open_editor(client, edit_url(draft))
    assert base_version(page) == version + 1
    assert "Typed\nnow" in html_lib.unescape(page)


def test_autosave_ignores_keys_the_template_does_not_have(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = opened(client, tenant, user, draft)
    response = autosave(
        client,
        draft,
        token,
        {"baseVersion": draft.version, "values": {"phone": "+49 1", "no such key": "x"}},
    )
    assert response.status_code == 200
    assert stored(repo, tenant, draft).values == {"phone": "+49 1"}


JSON = "application/json"


@pytest.mark.parametrize(
    ("body", "content_type", "status", "field"),
    [
        ("{not json", "application/json", 400, None),
        ('{"baseVersion": NaN, "values": {}}', "application/json", 400, None),
        ('{"baseVersion": 1, "values": ' + "[" * 2000, "application/json", 400, None),
        ("headline=x", "application/x-www-form-urlencoded", 415, None),
        ("[1, 2]", "application/json", 422, "body"),
        ('{"values": {"headline": "x"}}', "application/json", 422, "baseVersion"),
        ('{"baseVersion": "1", "values": {}}', "application/json", 422, "baseVersion"),
        ('{"baseVersion": true, "values": {}}', "application/json", 422, "baseVersion"),
        ('{"baseVersion": 0, "values": {}}', "application/json", 422, "baseVersion"),
        ('{"baseVersion": 1, "values": ["x"]}', "application/json", 422, "values"),
        (
            '{"baseVersion": 1, "values": {"headline": 7}}',
            "application/json",
            422,
            "values.headline",
        ),
        (
            '{"baseVersion": 1, "values": {"headline": null}}',
            "application/json",
            422,
            "values.headline",
        ),
        ('{"baseVersion": 1, "values": {}, "force": true}', "application/json", 422, "force"),
        # Stored, these would break every later page of the draft (not encodable, or not
        # storable in PostgreSQL's text).
        (r'{"baseVersion": 1, "values": {"headline": "Ada\ud800"}}', JSON, 422, "values.headline"),
        (r'{"baseVersion": 1, "values": {"headline": "A\u0000"}}', JSON, 422, "values.headline"),
        (r'{"baseVersion": 1, "values": {"head\udfffline": "x"}}', JSON, 422, "values"),
        (r'{"baseVersion": 1, "values": {"head\u0000": "x"}}', JSON, 422, "values"),
    ],
)
def test_autosave_refuses_bad_bodies_with_json_and_changes_nothing(
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    draft: Draft,
    body: str,
    content_type: str,
    status: int,
    field: str | None,
) -> None:
    _, token = opened(client, tenant, user, draft)
    before = snapshot(repo)
    response = autosave(client, draft, token, body, content_type=content_type)
    assert response.status_code == status, response.get_data(as_text=True)
    answer = response.get_json()
    assert answer["success"] is False and answer["message"]
    if field is not None:
        assert field in answer["errors"], answer
    assert snapshot(repo) == before


def test_autosave_checks_values_as_the_form_does(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = opened(client, tenant, user, draft)
    before = snapshot(repo)
    for values in ({"headline": "x" * 41}, {"headline": ""}):
        response = autosave(client, draft, token, {"baseVersion": draft.version, "values": values})
        assert response.status_code == 422
        answer = response.get_json()
        assert set(answer["fields"]) == {"f-0"}  # the form's field, as the live preview
        assert answer["fieldsByKey"] == {"headline": answer["fields"]["f-0"]}
        assert set(answer["errors"]) == {"headline"}
    assert snapshot(repo) == before


def test_autosave_needs_the_login_and_the_csrf_header(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    body = {"baseVersion": draft.version, "values": {"headline": "x"}}
    response = autosave(client, draft, "whatever", body)
    assert response.status_code == 401
    assert response.mimetype == "application/json"
    _, token = opened(client, tenant, user, draft)
    before = snapshot(repo)
    missing = autosave(client, draft, None, body)
    assert (missing.status_code, missing.mimetype) == (400, "application/json")
    wrong = autosave(client, draft, token[::-1], body)
    assert (wrong.status_code, wrong.mimetype) == (403, "application/json")
    assert snapshot(repo) == before


def test_autosave_of_a_locked_draft_is_refused(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = opened(client, tenant, user, draft)
    locked = repo.update_draft(tenant.identifier, draft.draft_hash, flags={"locked": True})
    assert locked is not None
    before = snapshot(repo)
    response = autosave(
        client, draft, token, {"baseVersion": locked.version, "values": {"headline": "x"}}
    )
    assert response.status_code == 409
    assert "conflict" not in response.get_json()
    assert snapshot(repo) == before


def test_autosave_after_an_api_update_is_a_conflict_until_kept_explicitly(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    page, token = opened(client, tenant, user, draft)
    loaded = base_version(page)
    changed = api.put(
        f"/api-ext/draft/{draft.draft_hash}", json={"apiDefaultValues": {"phone": "+1 555"}}
    )
    assert changed.status_code == 200
    current = changed.get_json()["data"]["draftVersion"]
    assert current > loaded
    before = snapshot(repo)

    mine = {"headline": "Mine"}
    response = autosave(client, draft, token, {"baseVersion": loaded, "values": mine})
    assert response.status_code == 409
    answer = response.get_json()
    assert answer["conflict"] is True and answer["currentVersion"] == current
    assert "changed elsewhere" in answer["message"]
    assert snapshot(repo) == before  # nothing overwritten

    # "Keep mine": the same values on the version the conflict named.
    kept = autosave(client, draft, token, {"baseVersion": current, "values": mine})
    assert kept.status_code == 200
    after = stored(repo, tenant, draft)
    assert after.values["headline"] == "Mine"
    assert after.api_default_values["phone"] == "+1 555"  # the shop's change is kept too


def test_autosave_is_limited_per_login(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = opened(client, tenant, user, draft)

    def burst() -> list[int]:
        return [
            autosave(client, draft, token, {"baseVersion": 1, "values": {}}).status_code
            for _ in range(AUTOSAVES_PER_SECOND + 2)
        ]

    # Counted per second of the clock: all in one, the ones past the limit refused.
    assert in_one_window(1, burst) == [200] * AUTOSAVES_PER_SECOND + [429, 429]


def test_repository_writes_only_on_the_expected_version(
    repository: SqlRepository, tenant_factory: Any
) -> None:
    client, user, template = tenant_factory(repository)
    draft = repository.create_draft(
        client.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="customize",
        api_default_values={},
        custom_attributes={},
    )
    assert draft is not None
    moved = repository.update_draft(client.identifier, draft.draft_hash, values={"a": "1"})
    assert moved is not None and moved.version == draft.version + 1
    with pytest.raises(VersionConflict) as caught:
        repository.update_draft(
            client.identifier, draft.draft_hash, values={"a": "2"}, expected_version=draft.version
        )
    assert caught.value.current == moved.version
    assert repository.get_draft(client.identifier, draft.draft_hash) == moved
    assert (
        repository.update_draft(client.identifier, "0" * 32, values={"a": "2"}, expected_version=1)
        is None
    )
    written = repository.update_draft(
        client.identifier, draft.draft_hash, values={"a": "3"}, expected_version=moved.version
    )
    assert written is not None and written.values == {"a": "3"}


@pytest.fixture
def tenant_factory() -> Any:
    def make(repository: SqlRepository) -> tuple[Any, Any, Any]:
        client = repository.create_client("Shop")
        user = repository.create_user(client.identifier, {})
        template = repository.create_template(
            client.identifier,
            name="T",
            data_keys=["a"],
            custom_attributes={},
            page_count=1,
            spec={},
        )
        return client, user, template

    return make


# -- the form without JavaScript ---------------------------------------------------------


def test_a_stale_form_gets_a_conflict_page_and_saving_again_overwrites(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    page, token = opened(client, tenant, user, draft)
    loaded = base_version(page)
    api.put(f"/api-ext/draft/{draft.draft_hash}", json={"apiDefaultValues": {"headline": "Theirs"}})
    before = snapshot(repo)

    data = {**form(token, headline="Mine"), "base_version": str(loaded), "action": "save"}
    response = client.post(edit_url(draft), data=data)
    assert response.status_code == 409
    conflict = response.get_data(as_text=True)
    assert 'id="save-conflict" role="alert"' in conflict
    assert "Changed elsewhere." in conflict
    assert 'value="Mine"' in conflict  # the customer's text is not lost
    current = stored(repo, tenant, draft).version
    assert base_version(conflict) == current  # saving this form again is the explicit choice
    assert snapshot(repo) == before

    again = client.post(edit_url(draft), data={**data, "base_version": str(current)})
    assert again.status_code == 303
    assert stored(repo, tenant, draft).values["headline"] == "Mine"


#: What the embed bridge's form posts accept: pps's refusals as JSON, its pages as pages.
BRIDGE_ACCEPT = {"Accept": "application/json, text/html;q=0.9"}


def test_a_form_post_asking_for_json_first_gets_its_refusals_as_json(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    """The embed bridge reports pps's message to the shop: the form's own refusals (a stale
    page, values the template refuses) answer such a post in JSON, as the autosave does."""
    page, token = opened(client, tenant, user, draft)
    loaded = base_version(page)
    refused = client.post(
        edit_url(draft),
        data={**form(token, headline="", phone="x" * 31), "base_version": str(loaded)},
        headers=BRIDGE_ACCEPT,
    )
    assert refused.status_code == 422
    body = refused.get_json()
    assert body["message"] == "Please correct the marked fields. Nothing was saved."
    assert body["fields"]["f-0"] == ["is required"]
    # The same messages by DataKey, as the bridge hands them to the shop's page.
    assert body["fieldsByKey"] == {
        "headline": ["is required"],
        "phone": ["must be at most 30 characters (now 31)"],
    }

    api.put(f"/api-ext/draft/{draft.draft_hash}", json={"apiDefaultValues": {"headline": "Theirs"}})
    before = snapshot(repo)
    current = stored(repo, tenant, draft).version
    data = {**form(token, headline="Mine"), "base_version": str(loaded)}
    for action in ("edit", "finish"):
        response = client.post(
            f"/editor/{draft.draft_hash}/{action}", data=data, headers=BRIDGE_ACCEPT
        )
        assert response.status_code == 409, action
        assert response.headers["Cache-Control"] == "no-store"
        assert response.get_json() == {
            "success": False,
            "conflict": True,
            "message": (
                "This design was changed elsewhere (by the shop or in another window) since you "
                "opened it, so your latest changes are not saved yet. Reload to see the other "
                "changes, or keep yours and replace them."
            ),
            "currentVersion": current,
        }
    assert snapshot(repo) == before

    pps_cli(client.application, "proof-approval", tenant.identifier, "--required")
    unapproved = client.post(
        f"/editor/{draft.draft_hash}/finish",
        data={**data, "base_version": str(current)},
        headers=BRIDGE_ACCEPT,
    )
    assert unapproved.status_code == 422
    assert unapproved.get_json() == {
        "success": False,
        "message": "Please confirm that you have checked the proof. Nothing was finished.",
    }
    assert snapshot(repo) == before

    # A successful save still answers as the page expects: the redirect to the edit step.
    saved = client.post(
        edit_url(draft), data={**data, "base_version": str(current)}, headers=BRIDGE_ACCEPT
    )
    assert saved.status_code == 303
    assert stored(repo, tenant, draft).values["headline"] == "Mine"


def test_a_form_without_base_version_is_not_checked_and_a_bad_one_is_refused(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    _, token = opened(client, tenant, user, draft)
    before = snapshot(repo)
    # The last: more digits than Python turns into an int (4300), which was a 500.
    for bad in ("x", "-1", "0", "1.5", "99999999999", "\u0661", "1_0", "9" * 5000):
        response = client.post(edit_url(draft), data={**form(token), "base_version": bad})
        assert response.status_code == 400, bad[:20]
    assert snapshot(repo) == before
    plain = client.post(edit_url(draft), data=form(token, headline="No version"))
    assert plain.status_code == 303


def test_the_german_conflict_page(
    client: FlaskClient, api: Any, tenant: Client, user: User, draft: Draft
) -> None:
    page, token = opened(client, tenant, user, draft)
    client.get(edit_url(draft, "locale=de"))
    api.put(f"/api-ext/draft/{draft.draft_hash}", json={"customAttributes": {"o": 1}})
    data = {**form(token, headline="Meins"), "base_version": str(base_version(page))}
    response = client.post(edit_url(draft), data=data)
    assert response.status_code == 409
    assert "An anderer Stelle geändert." in response.get_data(as_text=True)


# -- the proof ---------------------------------------------------------------------------


def test_the_proof_step_shows_every_page_with_the_trim_marked(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    opened(client, tenant, user, draft)
    response = client.get(f"/editor/{draft.draft_hash}/proof")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert "Check your proof" in page
    sources = re.findall(r'<img class="proof-image" src="([^"]+)"', page)
    assert [html_lib.unescape(src) for src in sources] == [
        f"/editor/{draft.draft_hash}/proof/{n}.png?v={draft.version}" for n in (0, 1)
    ]
    checkbox = re.search(r'<input type="checkbox" id="proof-approved"[^>]*>', page)
    assert checkbox is not None and " required" not in checkbox.group(0)  # optional by default
    assert 'aria-current="step">Proof<' in page

    image = client.get(html_lib.unescape(sources[1]))
    assert image.status_code == 200
    assert image.data.startswith(PNG)
    from io import BytesIO

    from PIL import Image

    with Image.open(BytesIO(image.data)) as shown:
        assert shown.width == 1200
        # The trim line (magenta) is drawn inside the bleed.
        pixels = shown.convert("RGB")
        row = shown.height // 2
        assert (226, 0, 116) in {pixels.getpixel((x, row)) for x in range(0, 80)}
    assert client.get(f"/editor/{draft.draft_hash}/proof/2.png").status_code == 404


def test_optional_proof_finishes_without_and_records_an_approval_when_ticked(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    page, token = opened(client, tenant, user, draft)
    assert 'formaction="' in page  # Finish straight from the form, as before
    response = client.post(f"/editor/{draft.draft_hash}/finish", data={"csrf_token": token})
    assert response.status_code == 303
    shown = api.get(f"/api-ext/draft/{draft.draft_hash}").get_json()["data"]
    assert shown["state"] == "finished"
    assert shown["proofApprovedAt"] is None and shown["proofApprovedVersion"] is None

    proof = client.get(f"/editor/{draft.draft_hash}/proof").get_data(as_text=True)
    finished = client.post(
        f"/editor/{draft.draft_hash}/finish",
        data={"csrf_token": token, "base_version": str(base_version(proof)), "proof_approved": "1"},
    )
    assert finished.status_code == 303
    after = stored(repo, tenant, draft)
    assert after.proof_approved_at is not None
    assert after.proof_approved_version == after.version
    shown = api.get(f"/api-ext/draft/{draft.draft_hash}").get_json()["data"]
    assert shown["proofApprovedVersion"] == shown["draftVersion"] == after.version
    assert shown["proofApprovedAt"].endswith("Z")


def test_required_proof_refuses_finish_without_the_confirmation(
    app: Flask,
    client: FlaskClient,
    api: Any,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    draft: Draft,
) -> None:
    result = pps_cli(app, "proof-approval", tenant.identifier, "--required", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"identifier": tenant.identifier, "proofRequired": True}

    page, token = opened(client, tenant, user, draft)
    # The form's Finish leads to the proof (saving first); it no longer finishes directly.
    assert 'name="action" value="proof"' in page
    assert 'formaction="' not in page
    to_proof = client.post(edit_url(draft), data={**form(token), "action": "proof"})
    assert to_proof.status_code == 303
    assert f"/editor/{draft.draft_hash}/proof" in to_proof.headers["Location"]
    preview = client.get(f"/editor/{draft.draft_hash}/preview").get_data(as_text=True)
    assert "Check the proof and finish" in preview

    proof = client.get(to_proof.headers["Location"]).get_data(as_text=True)
    checkbox = re.search(r'<input type="checkbox" id="proof-approved"[^>]*>', proof)
    assert checkbox is not None and " required" in checkbox.group(0)
    version = base_version(proof)

    before = snapshot(repo)
    refused = client.post(
        f"/editor/{draft.draft_hash}/finish",
        data={"csrf_token": token, "base_version": str(version)},
    )
    assert refused.status_code == 422
    text = refused.get_data(as_text=True)
    assert "Please confirm that you have checked the proof. Nothing was finished." in text
    assert 'aria-invalid="true"' in text
    assert snapshot(repo) == before  # nothing changed
    # Values sent along do not slip through either.
    refused = client.post(
        f"/editor/{draft.draft_hash}/finish", data=form(token, headline="Sneaked in")
    )
    assert refused.status_code == 422
    assert snapshot(repo) == before

    approved = client.post(
        f"/editor/{draft.draft_hash}/finish",
        data={"csrf_token": token, "base_version": str(version), "proof_approved": "1"},
    )
    assert approved.status_code == 303
    assert approved.headers["Location"] == CALLBACK
    after = stored(repo, tenant, draft)
    assert after.state == "finished"
    assert after.proof_approved_version == after.version == version + 1

    optional = pps_cli(app, "proof-approval", tenant.identifier, "--optional")
    assert optional.exit_code == 0
    assert "optional" in optional.output
    assert "optional" in pps_cli(app, "proof-approval", tenant.identifier).output
    assert pps_cli(app, "proof-approval", "nobody").exit_code != 0


def test_a_finish_without_approval_of_values_that_cannot_print_says_only_what_to_fix(
    app: Flask, client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    """A finish without the tick (the shop's frame can ask for one from the edit step) when
    the values cannot make the print file: the proof step lists what to correct and has no
    checkbox, so it must not also ask for the tick (a second summary, its link leading
    nowhere)."""
    assert pps_cli(app, "proof-approval", tenant.identifier, "--required").exit_code == 0
    draft = make_draft(repo, tenant, user, headline="")  # required, and empty
    _, token = opened(client, tenant, user, draft)
    before = snapshot(repo)
    refused = client.post(
        f"/editor/{draft.draft_hash}/finish",
        data={"csrf_token": token, "base_version": str(draft.version)},
    )
    assert refused.status_code == 422
    text = refused.get_data(as_text=True)
    assert "This design cannot be printed yet" in text
    assert "Headline: is required" in text
    assert 'id="proof-approved"' not in text  # no checkbox to tick ...
    assert 'href="#proof-approved"' not in text  # ... so no link to it
    assert "Please confirm that you have checked the proof" not in text
    assert text.count('id="error-summary"') == 1
    assert snapshot(repo) == before


def test_approving_a_proof_that_changed_meanwhile_is_a_conflict(
    client: FlaskClient, api: Any, repo: SqlRepository, tenant: Client, user: User, draft: Draft
) -> None:
    opened(client, tenant, user, draft)
    proof = client.get(f"/editor/{draft.draft_hash}/proof").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', proof).group(1)  # type: ignore[union-attr]
    api.put(f"/api-ext/draft/{draft.draft_hash}", json={"apiDefaultValues": {"headline": "New"}})
    before = snapshot(repo)
    response = client.post(
        f"/editor/{draft.draft_hash}/finish",
        data={"csrf_token": token, "base_version": str(base_version(proof)), "proof_approved": "1"},
    )
    assert response.status_code == 409
    page = response.get_data(as_text=True)
    assert "changed after you opened the proof" in page
    assert base_version(page) == stored(repo, tenant, draft).version  # the current proof
    assert snapshot(repo) == before
    assert stored(repo, tenant, draft).proof_approved_at is None


def test_the_new_strings_come_in_german_too(
    client: FlaskClient, tenant: Client, user: User, draft: Draft
) -> None:
    opened(client, tenant, user, draft)
    page = html_lib.unescape(client.get(edit_url(draft, "locale=de")).get_data(as_text=True))
    for text in ("Alle Änderungen gespeichert.", "Rückgängig", "Wiederholen", "Meine behalten"):
        assert text in page, text
    proof = html_lib.unescape(
        client.get(f"/editor/{draft.draft_hash}/proof").get_data(as_text=True)
    )
    assert "Korrekturabzug prüfen" in proof
    assert "Ich habe Rechtschreibung und Gestaltung jeder Seite geprüft." in proof
