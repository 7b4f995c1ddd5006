"""A reviewer approves a proof in a real Chromium; the shop hears of it and files the PDF.

pps runs under gunicorn with the deploy config and a real Redis (as in ``test_browser.py``);
the shop is this test: it calls the API as the PHP SDK does (``src/Client/Review/Client.php``
of ``risscsolutions/printformer-php-sdk``), signs the reviewer's login as the SDK's
``src/Url/Review.php`` does (``redirect`` = ``{base}/review/{id}``, ``jti`` in the header)
and receives the close callback on a real HTTP server on 127.0.0.1 (the server runs with
``PPS_NOTIFY_ALLOW_PRIVATE=1`` so the notifier may reach loopback, as in the batch tests).

Without Chromium or Playwright the test is skipped locally and fails when ``CI`` is set.
"""

from __future__ import annotations

import io
import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from processing_support import Receiver, receiver
from server_support import ROOT, Server, served, shop_token
from test_browser import chromium, watch_csp, watch_refusals

__all__ = ["chromium"]  # the fixture shared with test_browser.py, used by name

pytestmark = pytest.mark.slow

TEMPLATE = ROOT / "examples" / "templates" / "business-card" / "template.json"
COMMENT = "Colours match the brand guide; approved for print"


@pytest.fixture(scope="module")
def pps_server(
    tmp_path_factory: pytest.TempPathFactory, redis_server: tuple[str, bool]
) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("review-pps")
    with served(
        tmp,
        redis_server[0],
        PPS_WORKERS="1",
        PPS_THREADS="8",
        PPS_ACCESS_LOG="",
        PPS_NOTIFY_ALLOW_PRIVATE="1",
        PPS_NOTIFY_BACKOFF="0.2",
    ) as server:
        yield server


class Shop:
    """The shop's backend: API calls with the bearer key, tokens signed with it."""

    def __init__(self, server: Server, client: str, api_key: str) -> None:
        self.pps = server.base_url
        self.client = client
        self.api_key = api_key

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            self.pps + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={
                "Authorization": f"Bearer {self.api_key}",
                "Accept": "application/json",
                **({"Content-Type": "application/json"} if body is not None else {}),
            },
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            data = response.read()
            return response.status, (json.loads(data) if data else None)

    def review_login(self, user: str, review_id: str) -> str:
        token = shop_token(
            self.api_key,
            {
                "client": self.client,
                "user": user,
                "redirect": f"{self.pps}/review/{review_id}",
                "iat": round(time.time(), 6),
            },
            {"jti": uuid.uuid4().hex},
        )
        return f"{self.pps}/auth?{urlencode({'jwt': token})}"


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as server:
        yield server


def wait_for(hook: Receiver, count: int, timeout: float = 20.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bodies = hook.bodies()
        if len(bodies) >= count:
            return bodies
        time.sleep(0.1)
    raise AssertionError(f"expected {count} callbacks, got {hook.bodies()}")


def test_reviewer_approves_in_chromium_and_the_shop_gets_callback_and_pdf(
    chromium: Any, pps_server: Server, hook: Receiver
) -> None:
    from pypdf import PdfReader

    created = pps_server.pps("client", "create", "--name", "Review shop", "--json")
    imported = pps_server.pps(
        "template", "import", str(TEMPLATE), "--client", created["identifier"], "--json"
    )
    shop = Shop(pps_server, created["identifier"], created["apiKey"])
    _, body = shop.api("POST", "/api-ext/user", {"firstName": "Grace", "lastName": "Hopper"})
    reviewer = body["data"]["identifier"]
    _, body = shop.api("POST", "/api-ext/user", {"firstName": "Eve"})
    stranger = body["data"]["identifier"]
    _, body = shop.api(
        "POST",
        "/api-ext/draft",
        {
            "templateIdentifier": imported["identifier"],
            "userIdentifier": reviewer,
            "apiDefaultValues": {"name": "Ada Lovelace"},
        },
    )
    draft = body["data"]["draftHash"]
    status, body = shop.api(
        "POST",
        "/api-ext/review",
        {"draftId": draft, "user": [reviewer], "closeCallbackURL": hook.url, "remoteAcl": False},
    )
    assert status == 201
    review_id = body["data"]["reviewId"]

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    csp_violations = watch_csp(page)
    try:
        # The reviewer follows the shop's link: /auth, then the review page.
        page.goto(shop.review_login(reviewer, review_id))
        assert page.url == f"{pps_server.base_url}/review/{review_id}"
        assert page.get_by_role("heading", level=1).inner_text().startswith("Proof: ")
        images = page.locator("img.proof-image")
        assert images.count() == 1  # the business card has one page
        page.wait_for_function(
            "() => [...document.querySelectorAll('img.proof-image')]"
            ".every(img => img.complete && img.naturalWidth === 1200)",
            timeout=30_000,
        )
        legend = page.locator(".legend").inner_text()
        assert "Trim" in legend and "Bleed" in legend and "3 mm" in legend

        page.get_by_label("Comment").fill(COMMENT)
        with page.expect_navigation():
            page.get_by_role("button", name="Approve").click()
        assert page.url == f"{pps_server.base_url}/review/{review_id}"
        assert page.locator("#review-state").get_attribute("data-state") == "approved"
        assert page.get_by_role("status").inner_text().startswith("This review is over")
        assert COMMENT in page.locator(".decisions").inner_text()
        assert csp_violations == []
    finally:
        context.close()

    # The shop hears of it at closeCallbackURL, with the decision and the comment.
    (closed,) = wait_for(hook, 1)
    assert hook.requests[0].headers["Content-Type"] == "application/json"
    assert closed["reviewId"] == review_id and closed["state"] == "approved"
    assert [(r["userIdentifier"], r["decision"], r["comment"]) for r in closed["reviewers"]] == [
        (reviewer, "approved", COMMENT)
    ]

    # Another user of the shop, logged in, gets the 403 page.
    other = chromium.new_context()
    try:
        intruder = other.new_page()
        intruder.goto(shop.review_login(stranger, review_id))
        assert intruder.url == f"{pps_server.base_url}/review/{review_id}"
        response = intruder.reload()
        assert response is not None and response.status == 403
        assert "Only the reviewers of this proof may see it" in intruder.content()
        assert intruder.locator("img.proof-image").count() == 0
    finally:
        other.close()

    # The proof PDF: the cover with the comment, then the print page.
    status, _ = shop.api(
        "POST", f"/api-ext/review/{review_id}/create-review-pdf", {"notifyCallbackURL": hook.url}
    )
    assert status == 204
    note = wait_for(hook, 2)[1]
    assert note["pdfUrl"] == f"{pps_server.base_url}/api-ext/files/review/{review_id}/pdf"
    path = f"/api-ext/files/review/{review_id}/pdf"
    now = int(time.time())
    token = shop_token(
        shop.api_key, {"client": shop.client, "iat": now, "exp": now + 300, "urlPath": path}
    )
    with urllib.request.urlopen(f"{shop.pps}{path}?jwt={token}", timeout=60) as response:
        pdf = response.read()
    assert pdf.startswith(b"%PDF-")
    reader = PdfReader(io.BytesIO(pdf))
    cover = reader.pages[0].extract_text()
    assert COMMENT in cover and "Grace Hopper" in cover and "approved" in cover
    assert "Ada Lovelace" in reader.pages[1].extract_text()


def test_a_proof_that_cannot_be_printed_says_why_instead_of_broken_images(
    chromium: Any, pps_server: Server
) -> None:
    """The postcard's recipient is required: left empty, the print file (and so every proof
    image) cannot be made. The reviewer's page says so, in the page's language, naming the
    field, instead of showing broken images; rejecting with a comment still works."""
    created = pps_server.pps("client", "create", "--name", "Postcard shop", "--json")
    imported = pps_server.pps(
        "template",
        "import",
        str(ROOT / "examples" / "templates" / "postcard" / "template.json"),
        "--client",
        created["identifier"],
        "--json",
    )
    shop = Shop(pps_server, created["identifier"], created["apiKey"])
    _, body = shop.api("POST", "/api-ext/user", {"firstName": "Grace"})
    reviewer = body["data"]["identifier"]
    _, body = shop.api(
        "POST",
        "/api-ext/draft",
        {"templateIdentifier": imported["identifier"], "userIdentifier": reviewer},
    )
    draft = body["data"]["draftHash"]
    _, body = shop.api("POST", "/api-ext/review", {"draftId": draft, "user": [reviewer]})
    review_id = body["data"]["reviewId"]

    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="de-DE")
    page = context.new_page()
    refused = watch_refusals(page)
    try:
        page.goto(shop.review_login(reviewer, review_id))
        page.goto(f"{pps_server.base_url}/review/{review_id}?locale=de")
        page.wait_for_load_state("load")
        assert page.locator("img.proof-image").count() == 0
        problem = page.get_by_role("alert").inner_text()
        assert "Name des Empfängers" in problem and "ist ein Pflichtfeld" in problem
        assert refused == []
        page.get_by_label("Kommentar").fill("Der Empfänger fehlt")
        with page.expect_navigation():
            page.get_by_role("button", name="Ablehnen").click()
        assert page.locator("#review-state").get_attribute("data-state") == "rejected"
        assert refused == []
    finally:
        context.close()
