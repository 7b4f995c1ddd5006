"""Template variants and themes: the template format, ``/api-ext/variant``, ``/api-ext/theme``,
a template's ``variants``, a draft's ``variant`` and the DraftBuilder options that choose it.

Requests are shaped as the PHP SDK (risscsolutions/printformer-php-sdk) sends them and the
answers are checked against the types its models enforce.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from api_support import snapshot
from flask import Flask
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry
from pypdf import PdfReader

from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.render import SpecError, parse_spec
from pps.templates.files import import_template, load_template_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "templates"
OCEAN = "1 .45 0 .3 k"  # the accent's DeviceCMYK fill as reportlab writes it
FOREST = ".8 0 1 .3 k"


@pytest.fixture
def card(app: Flask, repo: SqlRepository, tenant: Client) -> Template:
    loaded = load_template_file(EXAMPLES / "business-card" / "template.json")
    return import_template(repo, app.extensions["pps"].storage, tenant.identifier, loaded)


def file_token(tenant: Client) -> str:
    """A file token as the Magento module signs it: client, iat and exp."""
    now = int(time.time())
    claims = {"client": tenant.identifier, "iat": now, "exp": now + 300}
    registry = JWSRegistry(algorithms=["HS256"], strict_check_header=False)
    return jwt.encode(
        {"alg": "HS256"}, claims, OctKey.import_key(tenant.api_key), registry=registry
    )


def print_file(client: FlaskClient, tenant: Client, draft: Draft) -> bytes:
    path = f"/api-ext/files/draft/{draft.draft_hash}/print"
    response = client.get(path, query_string={"jwt": file_token(tenant)})
    assert response.status_code == 302, response.get_data(as_text=True)
    with client.get(urlsplit(response.headers["Location"]).path) as served:
        assert served.status_code == 200
        return served.data  # type: ignore[no-any-return]


def stored_folders(app: Flask, tenant: Client, draft_hash: str) -> set[str]:
    root = app.extensions["pps"].storage.root / "drafts" / tenant.identifier / draft_hash
    return {path.parent.name for path in root.rglob("*") if path.is_file()}


def assert_sdk_variant(item: dict[str, Any]) -> None:
    """``Variant::fromArray``: int id, string identifier and name, a known thumbnail type."""
    assert set(item) == {"id", "identifier", "name", "thumbnail_type", "thumbnail_value"}
    assert type(item["id"]) is int
    assert all(isinstance(item[key], str) for key in ("identifier", "name", "thumbnail_value"))
    assert item["thumbnail_type"] in ("color", "image")


def page_ops(pdf: bytes) -> str:
    page = PdfReader(io.BytesIO(pdf)).pages[0]
    return page.get_contents().get_data().decode("latin-1")  # type: ignore[union-attr]


def new_draft(api: Any, **body: Any) -> Any:
    return api.post("/api-ext/draft", json=body)


# -- the template format ---------------------------------------------------------------------


def test_the_business_card_has_two_colour_variants_that_swap_its_accent() -> None:
    data = load_template_file(EXAMPLES / "business-card" / "template.json").spec
    spec = parse_spec(data)
    assert [(v.id, v.identifier, v.thumbnail_type) for v in spec.variants] == [
        (1, "ocean", "color"),
        (2, "forest", "color"),
    ]
    assert [t.identifier for t in spec.themes] == ["classic", "nature"]
    forest = parse_spec(data, variant="forest")
    fills = {type(e).__name__: e for e in forest.pages[0].elements}
    assert fills["RectElement"].fill.c == 80  # type: ignore[union-attr]
    assert forest.digest != spec.digest and forest.variant == "forest"


def test_bad_variants_are_reported_with_their_paths() -> None:
    data = {
        "name": "X",
        "size": {"width": 50, "height": 50},
        "swatches": {"accent": "#112233"},
        "pages": [
            {
                "elements": [
                    {
                        "type": "rect",
                        "box": {"x": 0, "y": 0, "width": 5, "height": 5},
                        "fill": {"swatch": "nope"},
                    }
                ]
            }
        ],
        "variants": [
            {
                "id": 1,
                "identifier": "a",
                "name": "A",
                "thumbnail": {"color": "#000000"},
                "swatches": {"other": "#ffffff"},
                "backgrounds": {"3": {"color": "#ffffff"}},
            },
            {"id": 1, "identifier": "b", "name": "B", "thumbnail": {"image": "ftp://x"}},
        ],
        "themes": [{"identifier": "t", "name": "T", "variants": ["zzz"]}],
    }
    with pytest.raises(SpecError) as raised:
        parse_spec(data)
    text = str(raised.value)
    for path in (
        "pages[0].elements[0].fill.swatch",
        "variants[0].swatches.other",
        "variants[0].backgrounds.3",
        "variants[1].thumbnail.image",
        "themes[0].variants[0]",
    ):
        assert path in text, path


@pytest.mark.parametrize("key", ["\u00b2", "\u0661", "1" * 5000, "+1", " 1"])
def test_a_background_page_that_is_not_ascii_digits_is_reported_with_its_path(key: str) -> None:
    """A page index of a variant's backgrounds is read from ASCII digits only: "²" (a
    digit to ``isdigit()``, not to ``int()``) and 5000 digits (more than ``int()`` reads)
    were tracebacks of ``pps template import``; the Arabic-Indic one was page 1."""
    data = {
        "name": "X",
        "size": {"width": 50, "height": 50},
        "pages": [{"elements": []}, {"elements": []}],
        "variants": [
            {
                "id": 1,
                "identifier": "a",
                "name": "A",
                "thumbnail": {"color": "#000000"},
                "backgrounds": {key: {"color": "#ffffff"}},
            }
        ],
    }
    with pytest.raises(SpecError) as raised:
        parse_spec(data)
    assert "variants[0].backgrounds." in str(raised.value)
    assert "must be a page index from 0 to 1" in str(raised.value)


# -- lists and the template's variants ---------------------------------------------------------


def test_variant_list_as_the_sdk_asks_for_it(api: Any, card: Template) -> None:
    """printformer-php-sdk tests/Client/Variant/ClientTest.php: GET variant?page=1&per_page=25."""
    body = api.get("/api-ext/variant?page=1&per_page=25").get_json()
    for item in body["data"]:
        assert_sdk_variant(item)
    assert [item["identifier"] for item in body["data"]] == ["ocean", "forest"]
    assert body["data"][1]["thumbnail_value"] == "#2e7d32"
    assert body["meta"] == {"currentPage": 1, "lastPage": 1, "perPage": 25, "total": 2}
    second = api.get("/api-ext/variant?page=2&per_page=1").get_json()
    assert [item["name"] for item in second["data"]] == ["Forest green"]
    assert second["meta"]["lastPage"] == 2


def test_theme_list_as_the_sdk_asks_for_it(api: Any, card: Template) -> None:
    """printformer-php-sdk tests/Client/Theme/ClientTest.php: GET theme?page=1&per_page=25."""
    body = api.get("/api-ext/theme?page=1&per_page=25").get_json()
    assert body["data"] == [
        {"identifier": "classic", "name": "Classic"},
        {"identifier": "nature", "name": "Nature"},
    ]
    assert body["meta"]["total"] == 2


def test_other_clients_see_none_of_them(other_api: Any, card: Template) -> None:
    assert other_api.get("/api-ext/variant").get_json()["data"] == []
    assert other_api.get("/api-ext/theme").get_json()["data"] == []


def test_template_shows_its_variants(api: Any, card: Template) -> None:
    """MasterTemplate::fromArray reads `variants` as an array."""
    template = api.get(f"/api-ext/template/{card.identifier}").get_json()["data"]
    assert [item["identifier"] for item in template["variants"]] == ["ocean", "forest"]
    for item in template["variants"]:
        assert_sdk_variant(item)


# -- a draft's variant ----------------------------------------------------------------------------


def test_draftbuilder_options_choose_the_variant(api: Any, card: Template, user: User) -> None:
    """printformer-php-sdk tests/Builder/DraftBuilderTest.php (testFull): variant as an int
    id, `version`, `availableVariants`, `availableVariantVersions`, `theme` as a string."""
    response = new_draft(
        api,
        intent="customize",
        user_identifier=user.identifier,
        templateIdentifier=card.identifier,
        apiDefaultValues=[],
        customAttributes=[],
        variant=2,
        availableVariants=[1, 2],
        version=1,
        availableVariantVersions=[1],
        theme="classic",
        pagePlanner=False,
        remoteAcl=False,
        locked=False,
        disablePreflight=False,
    )
    assert response.status_code == 201, response.get_json()
    draft = response.get_json()["data"]
    assert draft["variant"] == {"id": 2, "identifier": "forest", "version": 1}
    shown = api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"]
    assert shown["variant"] == draft["variant"]


def test_without_options_the_draft_has_no_variant(api: Any, card: Template, user: User) -> None:
    """The SDK's fixture for "no variant" (tests/Client/Draft/ClientTest.php)."""
    draft = new_draft(
        api, user_identifier=user.identifier, templateIdentifier=card.identifier
    ).get_json()["data"]
    assert draft["variant"] == {"id": None, "identifier": "", "version": None}


def test_a_theme_offers_its_variants_and_starts_with_the_first(
    api: Any, card: Template, user: User
) -> None:
    draft = new_draft(
        api, user_identifier=user.identifier, templateIdentifier=card.identifier, theme="nature"
    ).get_json()["data"]
    assert draft["variant"]["identifier"] == "forest"
    refused = api.put(f"/api-ext/draft/{draft['draftHash']}", json={"variant": 1})
    assert refused.status_code == 422
    assert "not offered" in refused.get_json()["errors"]["variant"][0]


@pytest.mark.parametrize(
    ("options", "field", "named"),
    [
        ({"variant": 23}, "variant", "23"),
        ({"variant": "purple"}, "variant", "purple"),
        ({"theme": "aw3n4h8H"}, "theme", "aw3n4h8H"),
        ({"availableVariants": [23, 5]}, "availableVariants", "23"),
        ({"variant": 1, "version": 23}, "version", "23"),
        ({"availableVariantVersions": [23]}, "availableVariantVersions", "23"),
    ],
)
def test_unknown_variant_options_are_422_naming_them(
    api: Any,
    repo: SqlRepository,
    card: Template,
    user: User,
    options: dict[str, Any],
    field: str,
    named: str,
) -> None:
    before = snapshot(repo)
    response = new_draft(
        api, user_identifier=user.identifier, templateIdentifier=card.identifier, **options
    )
    assert response.status_code == 422
    body = response.get_json()
    assert named in body["errors"][field][0]
    assert snapshot(repo) == before


def test_changing_the_variant_renders_new_files(
    app: Flask, client: FlaskClient, api: Any, tenant: Client, card: Template, user: User
) -> None:
    """`PUT draft/{hash}` with `variant` (DraftClient::update's documented keys)."""
    draft = new_draft(
        api, user_identifier=user.identifier, templateIdentifier=card.identifier, variant="ocean"
    ).get_json()["data"]
    stored = repo_draft(app, tenant, draft["draftHash"])
    ocean = page_ops(print_file(client, tenant, stored))
    assert OCEAN in ocean and FOREST not in ocean

    changed = api.put(f"/api-ext/draft/{draft['draftHash']}", json={"variant": 2, "version": 1})
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["data"]["variant"] == {"id": 2, "identifier": "forest", "version": 1}
    forest = page_ops(print_file(client, tenant, stored))
    assert FOREST in forest and OCEAN not in forest
    folders = stored_folders(app, tenant, draft["draftHash"])
    assert folders == {f"v{stored.version}-ocean", f"v{stored.version + 1}-forest"}


def repo_draft(app: Flask, tenant: Client, draft_hash: str) -> Draft:
    draft = app.extensions["pps"].repository.get_draft(tenant.identifier, draft_hash)
    assert draft is not None
    return draft


def test_the_variant_survives_a_replicate(api: Any, card: Template, user: User) -> None:
    draft = new_draft(
        api, user_identifier=user.identifier, templateIdentifier=card.identifier, variant=2
    ).get_json()["data"]
    copy = api.post(f"/api-ext/draft/{draft['draftHash']}/replicate", json={}).get_json()["data"]
    assert copy["variant"] == {"id": 2, "identifier": "forest", "version": 1}
    assert re.fullmatch(r"[a-z0-9]{32}", copy["draftHash"])


def test_a_version_alone_keeps_the_drafts_variant_when_it_has_it(
    api: Any, card: Template, user: User
) -> None:
    """Both variants of the card have version 1: a version alone (as the Magento module's
    ``updateColorVariant`` sends it, a string) keeps the draft's own variant, and gives a
    draft without one the first offered variant of that version."""
    forest = new_draft(
        api, user_identifier=user.identifier, templateIdentifier=card.identifier, variant=2
    ).get_json()["data"]
    kept = api.put(f"/api-ext/draft/{forest['draftHash']}", json={"version": "1"})
    assert kept.status_code == 200, kept.get_json()
    assert kept.get_json()["data"]["variant"] == {"id": 2, "identifier": "forest", "version": 1}

    plain = new_draft(
        api, user_identifier=user.identifier, templateIdentifier=card.identifier
    ).get_json()["data"]
    chosen = api.put(f"/api-ext/draft/{plain['draftHash']}", json={"version": 1})
    assert chosen.status_code == 200, chosen.get_json()
    assert chosen.get_json()["data"]["variant"] == {"id": 1, "identifier": "ocean", "version": 1}


def test_available_variant_versions_narrow_the_offer(api: Any, card: Template, user: User) -> None:
    """Like ``availableVariants``: with no ``variant``, the first offered is chosen."""
    draft = new_draft(
        api,
        user_identifier=user.identifier,
        templateIdentifier=card.identifier,
        availableVariantVersions=["1"],
    ).get_json()["data"]
    assert draft["variant"] == {"id": 1, "identifier": "ocean", "version": 1}
