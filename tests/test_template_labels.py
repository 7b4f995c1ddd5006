"""A template's words for its DataKeys: label, help, placeholder and input type, per locale.

The template file's ``fields`` object is parsed and checked like the rest of the file (a
wrong type is an import error with its path); the editor shows the words in the page's
language, with the input type, keyboard (``inputmode``) and autofill (``autocomplete``)
that fit, and a readable form of the key where the template gives no label.
"""

from __future__ import annotations

import copy
import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

import api_support
import pytest
from flask.testing import FlaskClient
from test_editor import log_in

from pps.editor.inputs import input_attributes, readable_key
from pps.platform.models import Client, User
from pps.platform.repository.sql import SqlRepository
from pps.render import Field, SpecError, parse_spec
from pps.render.model import Localized

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "templates"


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name / "template.json").read_text())
    return data


def spec_errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_spec(data)
    return caught.value.errors


# -- the template format -----------------------------------------------------------------


def test_labels_per_locale_or_plain_and_the_input_type_are_parsed() -> None:
    data = example("business-card")
    data["fields"]["title"]["placeholder"] = "Head of Print"
    spec = parse_spec(data, EXAMPLES / "business-card")
    name, title, phone, email, url, logo = spec.fields
    assert name.label == Localized({"en": "Your name", "de": "Ihr Name"})
    assert name.label.get("de") == "Ihr Name"
    assert name.label.get("de-AT") == "Ihr Name"  # a region falls back to its language
    assert name.label.get("fr") == "Your name"  # a language the template lacks: English
    assert title.placeholder is not None and title.placeholder.get("de") == "Head of Print"
    assert (phone.input_type, email.input_type, url.input_type) == ("phone", "email", "url")
    assert (logo.kind, logo.input_type, logo.label) == (
        "image",
        "image",
        Localized({"en": "Your logo", "de": "Ihr Logo"}),
    )
    assert name.input_type is None and name.autocomplete == "name"
    # The limits of the elements are still merged into the same fields.
    assert (name.max_length, name.required, name.default) == (40, True, "Alex Example")


def test_every_example_labels_every_datakey_in_english_and_german() -> None:
    for name in ("business-card", "postcard"):
        spec = parse_spec(example(name), EXAMPLES / name)
        for field in spec.fields:
            assert field.label is not None, (name, field.key)
            assert set(field.label.texts) == {"en", "de"}, (name, field.key)
            if field.help is not None:
                assert set(field.help.texts) == {"en", "de"}, (name, field.key)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": {"label": 7}}, "fields.name.label: must be a string or an object"),
        ({"name": {"label": {"en": 7}}}, "fields.name.label.en: must be a string, got a number"),
        ({"name": {"label": {"english": "Name"}}}, "fields.name.label.english: must be a lang"),
        ({"name": {"label": ""}}, "fields.name.label: must be a non-empty string"),
        ({"name": {"label": {}}}, "fields.name.label: must be a string or an object"),
        ({"name": {"help": "x" * 1001}}, "fields.name.help: must be at most 1000 characters"),
        ({"name": {"inputType": "textarea"}}, "fields.name.inputType: must be one of text, mul"),
        ({"name": {"inputType": "multiline"}}, 'fields.name.inputType: can only be "multiline"'),
        ({"name": {"autocomplete": "nickname!"}}, "fields.name.autocomplete: must be one of off"),
        ({"name": {"lable": "Name"}}, "fields.name.lable: is not a known key here"),
        ({"nmae": {"label": "Name"}}, "fields.nmae: is not a known key here (email, logo, name,"),
        ({"name": "Name"}, "fields.name: must be an object, got a string"),
        ([], "fields: must be an object, got a list"),
    ],
)
def test_a_wrong_fields_entry_is_an_import_error_with_its_path(fields: Any, expected: str) -> None:
    data = example("business-card")
    data["fields"] = fields
    errors = spec_errors(data)
    assert len(errors) == 1, errors
    assert errors[0].startswith(expected), errors


def test_the_import_command_reports_a_bad_label(tmp_path: Path) -> None:
    from pps.templates.files import TemplateFileError, load_template_file

    data = example("business-card")
    data["fields"]["email"]["label"] = {"en": ["Email"]}
    path = tmp_path / "template.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TemplateFileError) as caught:
        load_template_file(path)
    assert "fields.email.label.en: must be a string, got a list" in str(caught.value)


# -- what the editor derives -------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("recipientName", "Recipient name"),
        ("first_name", "First name"),
        ("companyURL", "Company URL"),
        ("address2", "Address 2"),
        ("name", "Name"),
        ("<b>tagline</b>", "<b>tagline</b>"),  # not a plain key: shown as it is
        ("Straße", "Straße"),
    ],
)
def test_without_a_label_the_key_is_made_readable(key: str, label: str) -> None:
    assert readable_key(key) == label


@pytest.mark.parametrize(
    ("key", "given", "multiline", "expected"),
    [
        ("email", None, False, ("input", "email", "email", "email")),
        ("mobilePhone", None, False, ("input", "tel", "tel", "tel")),
        ("website", None, False, ("input", "text", "url", "url")),
        ("jobTitle", None, False, ("input", "text", "text", "organization-title")),
        ("message", None, True, ("textarea", "", "text", "off")),
        ("amount", "number", False, ("input", "text", "decimal", "off")),
        ("day", "date", False, ("input", "date", "", "off")),
        ("contact", "phone", False, ("input", "tel", "tel", "tel")),
        ("slogan", None, False, ("input", "text", "text", "off")),
    ],
)
def test_input_keyboard_and_autofill_follow_the_type_and_the_key(
    key: str, given: Any, multiline: bool, expected: tuple[str, str, str, str]
) -> None:
    field = Field(key, None, False, None, multiline, input_type=given)
    html = input_attributes(field)
    assert (html.element, html.type, html.inputmode, html.autocomplete) == expected


# -- the editor page ---------------------------------------------------------------------


def card_draft(repo: SqlRepository, tenant: Client, user: User, spec: dict[str, Any]) -> str:
    template = repo.create_template(
        tenant.identifier,
        name=spec["name"],
        data_keys=list(spec["dataKeys"]),
        custom_attributes={},
        page_count=1,
        spec=spec,
    )
    draft = api_support.make_draft(
        repo, tenant, user, template, api_default_values={}, custom_attributes={}
    )
    return draft.draft_hash


def field_tags(page: str) -> dict[str, dict[str, str]]:
    """Per input (by its DataKey): its label text, help text and attributes."""
    result: dict[str, dict[str, str]] = {}
    for tag in re.findall(r"<(?:input|textarea) id=\"f-\d+\"[^>]*>", page):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        field_id = attrs["id"]
        label = re.search(rf'<label for="{field_id}">([^<]*)', page)
        help_text = re.search(rf'<p class="help" id="{field_id}-help">([^<]*)</p>', page)
        attrs["label"] = label.group(1).strip() if label else ""
        attrs["help"] = help_text.group(1) if help_text else ""
        attrs["element"] = tag[1:].split(" ", 1)[0]
        result[attrs["data-key"]] = attrs
    return result


@pytest.mark.parametrize(
    ("locale", "labels"),
    [
        ("en", ["Your name", "Job title", "Phone", "Email", "Website"]),
        ("de", ["Ihr Name", "Position", "Telefon", "E-Mail", "Website"]),
    ],
)
def test_the_editor_shows_the_templates_words_in_the_pages_language(
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    locale: str,
    labels: list[str],
) -> None:
    draft_hash = card_draft(repo, tenant, user, example("business-card"))
    log_in(client, tenant, user)
    response = client.get(f"/editor/{draft_hash}/edit?locale={locale}")
    assert response.status_code == 200
    fields = field_tags(response.get_data(as_text=True))
    assert [fields[key]["label"] for key in ("name", "title", "phone", "email", "url")] == labels
    name, title, phone, email, url = (fields[k] for k in ("name", "title", "phone", "email", "url"))
    assert name["placeholder"] == ("Alex Beispiel" if locale == "de" else "Alex Example")
    assert name["autocomplete"] == "name"
    assert title["help"] == (
        "Steht kursiv unter Ihrem Namen." if locale == "de" else "Shown in italics under your name."
    )
    assert title["aria-describedby"].split() == ["f-1-help", "f-1-hint", "f-1-error"]
    assert title["autocomplete"] == "organization-title"
    assert (phone["type"], phone["inputmode"], phone["autocomplete"]) == ("tel", "tel", "tel")
    assert (email["type"], email["inputmode"], email["autocomplete"]) == (
        "email",
        "email",
        "email",
    )
    assert (url["type"], url["inputmode"], url["autocomplete"]) == ("text", "url", "url")


def test_a_template_without_fields_shows_readable_keys(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    spec = copy.deepcopy(example("postcard"))
    del spec["fields"]
    for page in spec["pages"]:
        page.pop("background", None)  # no artwork files in this test's storage
    draft_hash = card_draft(repo, tenant, user, spec)
    log_in(client, tenant, user)
    page = client.get(f"/editor/{draft_hash}/edit?locale=de").get_data(as_text=True)
    fields = field_tags(page)
    assert fields["recipientName"]["label"] == "Recipient name"
    assert fields["message"]["element"] == "textarea"
    assert fields["street"]["autocomplete"] == "street-address"  # guessed from the key


def test_the_shops_frame_gets_the_same_labels_as_the_form(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    """``draftInfo.dataKeys`` (what ``pps-editor-client.js`` hands the shop's page, and the
    labels of its scope and text objects) carried each key as its own label, whatever the
    template's ``fields`` said."""
    draft_hash = card_draft(repo, tenant, user, example("business-card"))
    log_in(client, tenant, user)
    page = client.get(f"/editor/{draft_hash}/embed?locale=de").get_data(as_text=True)
    found = re.search(r"data-pps-bridge[^>]*data-info='([^']*)'", page)
    assert found is not None
    info = json.loads(html_lib.unescape(found.group(1)))
    labels = {key["name"]: key["label"] for key in info["dataKeys"]}
    assert [labels[key] for key in ("name", "title", "phone", "email", "url")] == [
        "Ihr Name",
        "Position",
        "Telefon",
        "E-Mail",
        "Website",
    ]
    fields = field_tags(page)
    assert all(labels[key] == fields[key]["label"] for key in fields)
