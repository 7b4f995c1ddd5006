"""``GET /api-ext/draft/<hash>/<usage>/page-info``: as ``Draft\\Client::pageInfo`` sends it
(src/Client/Draft/Client.php: ``?row=&unit=`` through ``buildQuery``, which drops empty
values, and ``PageInfo::fromArray($body['data'])`` with ``pages: int`` and ``dimensions``
of ``{width: float, height: float}``) and as the Magento gallery calls it (Helper/Media.php:
``getDraftUsagePageInfo($draftId, 'preview')``, reading ``data.pages``, errors uncaught)."""

from __future__ import annotations

import pytest
from api_support import assert_error
from conftest import ApiClient
from vdata_support import card_draft, card_template

from pps.platform.models import Client, Draft
from pps.platform.repository.sql import SqlRepository


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant))


def info(api: ApiClient, draft: Draft, usage: str, query: str = "") -> dict[str, object]:
    response = api.get(f"/api-ext/draft/{draft.draft_hash}/{usage}/page-info{query}")
    assert response.status_code == 200, response.get_data(as_text=True)
    data = response.get_json()["data"]
    assert isinstance(data["pages"], int)
    for page in data["dimensions"]:
        assert isinstance(page["width"], float) and isinstance(page["height"], float)
    return data  # type: ignore[no-any-return]


def test_sdk_and_magento_calls(api: ApiClient, draft: Draft) -> None:
    assert info(api, draft, "print") == {
        "pages": 1,
        "dimensions": [{"width": 85.0, "height": 55.0, "bleed": 3.0, "unit": "mm"}],
    }
    preview = info(api, draft, "preview")
    assert preview["dimensions"] == [{"width": 85.0, "height": 55.0, "bleed": 0.0, "unit": "mm"}]


def test_units_and_rows(api: ApiClient, draft: Draft) -> None:
    points = info(api, draft, "print", "?unit=pt")["dimensions"]
    assert points == [{"width": 240.945, "height": 155.906, "bleed": 8.504, "unit": "pt"}]
    pixels = info(api, draft, "print", "?unit=px")["dimensions"]
    assert pixels == [{"width": 321.26, "height": 207.874, "bleed": 11.339, "unit": "px"}]
    assert info(api, draft, "print", "?row=1")["pages"] == 1
    one = assert_error(
        api.get(f"/api-ext/draft/{draft.draft_hash}/print/page-info?row=2"), 422, "row"
    )
    assert one["message"] == "row must be from 1 to 1: the draft has 1 record."
    api.put(
        f"/api-ext/draft/{draft.draft_hash}/variable-data",
        json={"data": [{"name": "A"}, {"name": "B"}]},
    )
    assert info(api, draft, "print", "?row=2&unit=mm")["pages"] == 1
    two = assert_error(
        api.get(f"/api-ext/draft/{draft.draft_hash}/print/page-info?row=3"), 422, "row"
    )
    assert two["message"] == "row must be from 1 to 2: the draft has 2 records."
    assert_error(api.get(f"/api-ext/draft/{draft.draft_hash}/print/page-info?unit=in"), 422, "unit")
    assert_error(api.get(f"/api-ext/draft/{draft.draft_hash}/banner/page-info"), 422, "usage")


def test_unknown_and_foreign_drafts_are_404(
    api: ApiClient, other_api: ApiClient, draft: Draft
) -> None:
    assert_error(api.get("/api-ext/draft/nope/print/page-info"), 404)
    assert_error(other_api.get(f"/api-ext/draft/{draft.draft_hash}/print/page-info"), 404)


def test_the_reference_lists_the_usages_answered(api: ApiClient, draft: Draft) -> None:
    """``usage`` is documented with the words that get pages: it was any string, and a
    client reading the reference could send one that is a 422."""
    reference = api.get("/openapi.json").get_json()
    parameters = reference["paths"]["/api-ext/draft/{draft_hash}/{usage}/page-info"]["parameters"]
    (usage,) = [p for p in parameters if p["name"] == "usage"]
    assert usage["in"] == "path" and usage["required"] is True
    documented = usage["schema"]["enum"]
    assert set(documented) == {"print", "preview", "low-res", "image", "thumbnail"}
    for word in documented:
        assert info(api, draft, word)["pages"] == 1
    assert_error(api.get(f"/api-ext/draft/{draft.draft_hash}/0/page-info"), 422, "usage")
