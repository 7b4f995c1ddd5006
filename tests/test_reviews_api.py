"""Reviews (proof approval) as the PHP SDK drives them, and the reviewer's pages.

Requests copy ``risscsolutions/printformer-php-sdk`` ``src/Client/Review/Client.php``:
``create`` POSTs JSON ``{draftId, user, closeCallbackURL, remoteAcl}`` and reads
``data.reviewId`` into ``Review(public string $id)`` (``src/Client/Review/Review.php``);
``addUser``/``deleteUser`` POST ``{userIdentifier}``, ``createReviewPDF`` POSTs
``{notifyCallbackURL}``, ``closeReview`` POSTs with no body at all (``$this->http->post``
without options), and each returns ``getStatusCode() === 204``. The reviewer's login URL
is the SDK's ``src/Url/Review.php`` (``tests/Url/ReviewTest.php``): ``/auth`` with a JWT
whose ``redirect`` is ``{base_uri}/review/{id}`` and whose ``jti`` is in the header.

Real Redis, real SQLite and PostgreSQL, a real HTTP receiver on 127.0.0.1 for the
callbacks (the app fixture allows loopback targets, as ``PPS_NOTIFY_ALLOW_PRIVATE`` does).
"""

from __future__ import annotations

import io
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ApiClient
from flask import Flask
from flask.testing import FlaskClient
from PIL import Image
from processing_support import Receiver, card_draft, card_template, receiver
from pypdf import PdfReader
from server_support import shop_token

from pps.platform.models import Client, Draft, User
from pps.platform.repository.sql import SqlRepository
from pps.reviews.proof import BLEED_EDGE_COLOR, TRIM_COLOR

REVIEW_ID = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as server:
        yield server


@pytest.fixture
def draft(repo: SqlRepository, tenant: Client) -> Draft:
    return card_draft(repo, tenant, card_template(repo, tenant), "Ada Lovelace")


@pytest.fixture
def reviewer(repo: SqlRepository, tenant: Client) -> User:
    return repo.create_user(tenant.identifier, {"first_name": "Grace", "last_name": "Hopper"})


@pytest.fixture
def stranger(repo: SqlRepository, tenant: Client) -> User:
    return repo.create_user(tenant.identifier, {})


def create(api: ApiClient, draft_id: str, users: list[str], url: str = "") -> str:
    """``Review\\Client::create`` with ``remoteAcl`` at its default, false."""
    response = api.post(
        "/api-ext/review",
        json={"draftId": draft_id, "user": users, "closeCallbackURL": url, "remoteAcl": False},
    )
    assert response.status_code == 201, response.get_json()
    review_id = response.get_json()["data"]["reviewId"]
    assert isinstance(review_id, str) and REVIEW_ID.match(review_id)
    return review_id  # type: ignore[no-any-return]


def empty_204(response: Any) -> None:
    assert response.status_code == 204, response.get_data(as_text=True)
    assert response.get_data() == b""


def wait_for(hook: Receiver, count: int, timeout: float = 10.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bodies = hook.bodies()
        if len(bodies) >= count:
            return bodies
        time.sleep(0.05)
    raise AssertionError(f"expected {count} callbacks, got {hook.bodies()}")


def log_in(client: FlaskClient, tenant: Client, user: User, review_id: str) -> Any:
    """The SDK's review URL: ``/auth`` with ``redirect`` = ``{base}/review/{id}``."""
    token = shop_token(
        tenant.api_key,
        {
            "client": tenant.identifier,
            "user": user.identifier,
            "redirect": f"http://localhost/review/{review_id}",
            "iat": round(time.time(), 6),
        },
        {"jti": uuid.uuid4().hex},
    )
    return client.get("/auth", query_string={"jwt": token})


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert match is not None
    return match.group(1)


def version_of(page: str) -> str:
    match = re.search(r'name="version" value="([0-9]+)"', page)
    assert match is not None
    return match.group(1)


# -- the SDK's calls -------------------------------------------------------------------------


def test_sdk_calls_answer_as_the_sdk_expects(
    api: ApiClient, draft: Draft, reviewer: User, stranger: User, hook: Receiver
) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier], hook.url)
    empty_204(
        api.post(
            f"/api-ext/review/{review_id}/add-user", json={"userIdentifier": stranger.identifier}
        )
    )
    empty_204(
        api.post(
            f"/api-ext/review/{review_id}/delete-user", json={"userIdentifier": stranger.identifier}
        )
    )
    empty_204(
        api.post(
            f"/api-ext/review/{review_id}/create-review-pdf", json={"notifyCallbackURL": hook.url}
        )
    )
    # closeReview: Guzzle's post() without options sends no body and no Content-Type.
    empty_204(api.post(f"/api-ext/review/{review_id}/close-review"))
    bodies = wait_for(hook, 2)
    pdf_note = next(body for body in bodies if "pdfUrl" in body)
    assert pdf_note["reviewId"] == review_id
    assert pdf_note["pdfUrl"] == f"http://localhost/api-ext/files/review/{review_id}/pdf"
    closed = next(body for body in bodies if body["state"] == "closed")
    assert closed["reviewId"] == review_id and closed["draftId"] == draft.draft_hash
    assert [r["userIdentifier"] for r in closed["reviewers"]] == [reviewer.identifier]
    assert closed["reviewers"][0]["decision"] is None
    # Closing again changes nothing and tells nobody; a closed review takes no reviewers.
    empty_204(api.post(f"/api-ext/review/{review_id}/close-review"))
    conflict = api.post(
        f"/api-ext/review/{review_id}/add-user", json={"userIdentifier": stranger.identifier}
    )
    assert conflict.status_code == 409 and "closed" in conflict.get_json()["message"]
    time.sleep(0.3)
    assert len(hook.bodies()) == 2


def test_a_review_closed_is_a_review_closed_webhook_event(
    api: ApiClient, draft: Draft, reviewer: User, hook: Receiver
) -> None:
    """``review.closed`` is an event a webhook may subscribe to (``POST /api-ext/webhook``
    accepts it, docs/api.md lists it): closing a review delivers it, naming the review,
    its draft and the outcome, never a reviewer's comment."""
    subscribed = api.post("/api-ext/webhook", json={"event": "review.closed", "url": hook.url})
    assert subscribed.status_code == 201, subscribed.get_json()
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    empty_204(api.post(f"/api-ext/review/{review_id}/close-review"))
    (event,) = wait_for(hook, 1)
    assert event["type"] == "review.closed"
    data = event["data"]
    assert data["reviewId"] == review_id and data["draftId"] == draft.draft_hash
    assert data["state"] == "closed" and data["closedAt"]
    assert "comment" not in str(data)
    # Closing again changes nothing and tells nobody.
    empty_204(api.post(f"/api-ext/review/{review_id}/close-review"))
    time.sleep(0.3)
    assert len(hook.bodies()) == 1


def test_php_form_and_empty_callback_url(api: ApiClient, draft: Draft, reviewer: User) -> None:
    """A form body with PHP's list spelling; an empty closeCallbackURL means no callback."""
    response = api.post(
        "/api-ext/review",
        data={"draftId": draft.draft_hash, "user[]": [reviewer.identifier], "closeCallbackURL": ""},
    )
    assert response.status_code == 201, response.get_json()
    assert REVIEW_ID.match(response.get_json()["data"]["reviewId"])


def test_refusals_name_the_field(
    api: ApiClient,
    other_api: ApiClient,
    draft: Draft,
    reviewer: User,
    repo: SqlRepository,
    other_tenant: Client,
) -> None:
    body = {"draftId": draft.draft_hash, "user": [reviewer.identifier], "closeCallbackURL": ""}
    # A draft of another client is 404, as if it did not exist.
    response = other_api.post("/api-ext/review", json=body)
    assert response.status_code == 404 and response.get_json()["message"]
    assert api.post("/api-ext/review", json={**body, "draftId": "nope"}).status_code == 404
    # Users must be the client's.
    foreign = repo.create_user(other_tenant.identifier, {})
    response = api.post(
        "/api-ext/review", json={**body, "user": [reviewer.identifier, foreign.identifier]}
    )
    assert response.status_code == 422
    errors = response.get_json()["errors"]
    assert list(errors) == ["user"] and foreign.identifier in errors["user"][0]
    # Callback URLs follow the notifier's SSRF rules; remoteAcl is refused, not dropped.
    response = api.post(
        "/api-ext/review",
        json={**body, "closeCallbackURL": "http://169.254.169.254/latest", "remoteAcl": True},
    )
    assert response.status_code == 422
    assert set(response.get_json()["errors"]) == {"closeCallbackURL", "remoteAcl"}
    response = api.post("/api-ext/review", json={"user": [reviewer.identifier]})
    assert response.status_code == 422 and "draftId" in response.get_json()["errors"]

    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    response = api.post(
        f"/api-ext/review/{review_id}/add-user", json={"userIdentifier": foreign.identifier}
    )
    assert response.status_code == 422 and "userIdentifier" in response.get_json()["errors"]
    response = api.post(f"/api-ext/review/{review_id}/add-user", json={"user_identifier": "x"})
    assert response.status_code == 422 and "user_identifier" in response.get_json()["errors"]
    # Another client's review is 404 on every call.
    for call, payload in (
        ("add-user", {"userIdentifier": reviewer.identifier}),
        ("delete-user", {"userIdentifier": reviewer.identifier}),
        ("close-review", None),
        ("create-review-pdf", {"notifyCallbackURL": ""}),
    ):
        response = other_api.post(f"/api-ext/review/{review_id}/{call}", json=payload)
        assert response.status_code == 404, call
        assert response.get_json()["message"]
    response = api.post(
        f"/api-ext/review/{review_id}/create-review-pdf",
        json={"notifyCallbackURL": "ftp://example.org/"},
    )
    assert response.status_code == 422 and "notifyCallbackURL" in response.get_json()["errors"]


def test_review_goes_with_its_draft(api: ApiClient, draft: Draft, reviewer: User) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    assert api.delete(f"/api-ext/draft/{draft.draft_hash}").status_code == 204
    assert api.post(f"/api-ext/review/{review_id}/close-review").status_code == 404


def test_removing_the_last_undecided_reviewer_completes_the_review(
    app: Flask,
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    stranger: User,
    hook: Receiver,
) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier, stranger.identifier], hook.url)
    page = log_in_and_open(client, tenant, reviewer, review_id)
    decide(client, review_id, page, "approve", "Fine by me")
    time.sleep(0.3)
    assert hook.bodies() == []  # the other reviewer has not decided yet
    empty_204(
        api.post(
            f"/api-ext/review/{review_id}/delete-user", json={"userIdentifier": stranger.identifier}
        )
    )
    (closed,) = wait_for(hook, 1)
    assert closed["state"] == "approved"
    assert [(r["userIdentifier"], r["decision"], r["comment"]) for r in closed["reviewers"]] == [
        (reviewer.identifier, "approved", "Fine by me")
    ]


# -- the reviewer's page ---------------------------------------------------------------------


def log_in_and_open(client: FlaskClient, tenant: Client, user: User, review_id: str) -> str:
    response = log_in(client, tenant, user, review_id)
    assert response.status_code == 302
    assert response.headers["Location"] == f"http://localhost/review/{review_id}"
    page = client.get(f"/review/{review_id}")
    assert page.status_code == 200, page.get_data(as_text=True)
    return page.get_data(as_text=True)


def decide(client: FlaskClient, review_id: str, page: str, decision: str, comment: str) -> Any:
    response = client.post(
        f"/review/{review_id}",
        data={
            "csrf_token": csrf_of(page),
            "version": version_of(page),
            "decision": decision,
            "comment": comment,
        },
    )
    assert response.status_code == 303, response.get_data(as_text=True)
    return response


def test_reviewer_sees_marked_pages_and_approves(
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    hook: Receiver,
) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier], hook.url)
    page = log_in_and_open(client, tenant, reviewer, review_id)
    sources = re.findall(r'<img class="proof-image" src="([^"]+)"', page)
    assert sources == [f"/review/{review_id}/page/0.png?v={draft.version}"]
    image = client.get(sources[0])
    assert image.status_code == 200 and image.mimetype == "image/png"
    picture = Image.open(io.BytesIO(image.get_data())).convert("RGB")
    assert picture.width == 1200
    # The card has 3 mm bleed around 85 x 55 mm: the bleed edge frames the image and the
    # trim line runs 3/91 of the width inside it.
    assert picture.getpixel((0, picture.height // 2)) == BLEED_EDGE_COLOR
    inset = round(3 / 91 * picture.width)
    row = [picture.getpixel((x, picture.height // 2)) for x in range(inset - 3, inset + 4)]
    assert TRIM_COLOR in row

    decide(client, review_id, page, "approve", "Looks great, print it")
    after = client.get(f"/review/{review_id}").get_data(as_text=True)
    assert "Approved by every reviewer" in after and "Looks great, print it" in after
    assert 'name="decision"' not in after  # no form on a closed review
    (closed,) = wait_for(hook, 1)
    assert closed["state"] == "approved"
    (decision,) = closed["reviewers"]
    assert decision["userIdentifier"] == reviewer.identifier
    assert decision["decision"] == "approved"
    assert decision["comment"] == "Looks great, print it"
    assert decision["draftVersion"] == draft.version
    assert isinstance(decision["decidedAt"], str) and closed["closedAt"]
    # A decision on a closed review is a 409 page, and nothing more is sent.
    late = client.post(
        f"/review/{review_id}",
        data={
            "csrf_token": csrf_of(page),
            "version": version_of(page),
            "decision": "reject",
            "comment": "Too late",
        },
    )
    assert late.status_code == 409 and late.mimetype == "text/html"
    time.sleep(0.3)
    assert len(hook.bodies()) == 1


def test_rejection_needs_a_comment_and_closes_the_review(
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    stranger: User,
    hook: Receiver,
) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier, stranger.identifier], hook.url)
    page = log_in_and_open(client, tenant, reviewer, review_id)
    bare = client.post(
        f"/review/{review_id}",
        data={"csrf_token": csrf_of(page), "version": version_of(page), "decision": "reject"},
    )
    assert bare.status_code == 422 and "rejection needs a comment" in bare.get_data(as_text=True)
    decide(client, review_id, page, "reject", "The phone number is wrong")
    (closed,) = wait_for(hook, 1)
    assert closed["state"] == "rejected"
    assert closed["reviewers"][0]["comment"] == "The phone number is wrong"
    assert closed["reviewers"][1]["decision"] is None


@pytest.mark.parametrize(("decision", "comment"), [("approve", "Fine\x00"), ("reject", "No\x00pe")])
def test_a_comment_with_nul_is_the_form_again_with_422_on_every_database(
    app: Flask,
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    decision: str,
    comment: str,
) -> None:
    """PostgreSQL's text holds no NUL: such a comment was a 500 there and stored on SQLite.
    Now it is the form again (422) on both, and the review stays open without a decision."""
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    page = log_in_and_open(client, tenant, reviewer, review_id)
    response = client.post(
        f"/review/{review_id}",
        data={
            "csrf_token": csrf_of(page),
            "version": version_of(page),
            "decision": decision,
            "comment": comment,
        },
    )
    assert response.status_code == 422 and response.mimetype == "text/html"
    assert "must not contain NUL characters" in response.get_data(as_text=True)
    review = app.extensions["pps.reviews"].get(tenant.identifier, review_id)
    assert review.state == "open"
    assert [(r.decision, r.comment) for r in review.reviewers] == [(None, None)]


@pytest.mark.parametrize("version", ["\u00b2", "\u0661", "1\x00", "x" * 20])
def test_a_version_that_is_not_ascii_digits_is_a_stale_page(
    app: Flask,
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    version: str,
) -> None:
    """The form's version is the draft's as ASCII digits; anything else names no version
    and gets the 409 of a stale page, on both databases: "²" (a digit to ``isdigit()``,
    not to ``int()``) was a 500, and "\\u0661" (Arabic-Indic one) was read as version 1."""
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    page = log_in_and_open(client, tenant, reviewer, review_id)
    assert version_of(page) == "1"
    response = client.post(
        f"/review/{review_id}",
        data={"csrf_token": csrf_of(page), "version": version, "decision": "approve"},
    )
    assert response.status_code == 409 and response.mimetype == "text/html"
    review = app.extensions["pps.reviews"].get(tenant.identifier, review_id)
    assert review.state == "open"
    assert [r.decision for r in review.reviewers] == [None]


def test_only_the_reviews_users_may_see_it(
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    stranger: User,
    other_tenant: Client,
    repo: SqlRepository,
) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    anonymous = client.get(f"/review/{review_id}")
    assert anonymous.status_code == 401 and anonymous.mimetype == "text/html"
    # /auth takes the review URL for anyone of the client; the page then refuses others.
    response = log_in(client, tenant, stranger, review_id)
    assert response.status_code == 302
    for path in (f"/review/{review_id}", f"/review/{review_id}/page/0.png"):
        refused = client.get(path)
        assert refused.status_code == 403, path
        assert refused.mimetype == "text/html"
        assert "Only the reviewers of this proof may see it" in refused.get_data(as_text=True)
    refused = client.post(f"/review/{review_id}", data={"decision": "approve"})
    assert refused.status_code == 403
    # A user of another client does not learn that the review exists.
    outsider = repo.create_user(other_tenant.identifier, {})
    assert log_in(client, other_tenant, outsider, review_id).status_code == 302
    assert client.get(f"/review/{review_id}").status_code == 404
    # The reviewer still needs the form's CSRF token.
    page = log_in_and_open(client, tenant, reviewer, review_id)
    missing = client.post(
        f"/review/{review_id}", data={"decision": "approve", "version": version_of(page)}
    )
    assert missing.status_code == 400
    wrong = client.post(
        f"/review/{review_id}",
        data={"decision": "approve", "version": version_of(page), "csrf_token": "x" * 43},
    )
    assert wrong.status_code == 403


def test_a_changed_draft_must_be_looked_at_again(
    client: FlaskClient, api: ApiClient, tenant: Client, draft: Draft, reviewer: User
) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    page = log_in_and_open(client, tenant, reviewer, review_id)
    changed = api.put(
        f"/api-ext/draft/{draft.draft_hash}", json={"apiDefaultValues": {"name": "Bo"}}
    )
    assert changed.status_code == 200
    stale = client.post(
        f"/review/{review_id}",
        data={"csrf_token": csrf_of(page), "version": version_of(page), "decision": "approve"},
    )
    assert stale.status_code == 409
    fresh = client.get(f"/review/{review_id}").get_data(as_text=True)
    assert version_of(fresh) != version_of(page)
    decide(client, review_id, fresh, "approve", "")


# -- the proof PDF ---------------------------------------------------------------------------


def file_token(tenant: Client, path: str, **claims: Any) -> str:
    now = int(time.time())
    return shop_token(
        tenant.api_key,
        {"client": tenant.identifier, "iat": now, "exp": now + 300, "urlPath": path, **claims},
    )


def test_proof_pdf_has_a_cover_with_the_comments_and_the_print_pages(
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    draft: Draft,
    reviewer: User,
    stranger: User,
    hook: Receiver,
) -> None:
    review_id = create(api, draft.draft_hash, [reviewer.identifier])
    path = f"/api-ext/files/review/{review_id}/pdf"
    early = client.get(path, query_string={"jwt": file_token(tenant, path)})
    assert early.status_code == 404 and "create-review-pdf" in early.get_json()["message"]

    page = log_in_and_open(client, tenant, reviewer, review_id)
    decide(client, review_id, page, "approve", "Kerning on the name is lovely")
    empty_204(
        api.post(
            f"/api-ext/review/{review_id}/create-review-pdf", json={"notifyCallbackURL": hook.url}
        )
    )
    note = next(body for body in wait_for(hook, 1) if "pdfUrl" in body)
    assert note["state"] == "approved"

    refused = client.get(
        path, query_string={"jwt": file_token(tenant, path, user=stranger.identifier)}
    )
    assert refused.status_code == 403
    assert client.get(path, query_string={"jwt": "garbage"}).status_code in (400, 401)
    assert client.head(path, query_string={"jwt": file_token(tenant, path)}).status_code == 405

    response = client.get(
        path, query_string={"jwt": file_token(tenant, path, user=reviewer.identifier)}
    )
    assert response.status_code == 302
    link = response.headers["Location"].removeprefix("http://localhost")
    pdf = client.get(link)
    assert pdf.status_code == 200 and pdf.mimetype == "application/pdf"
    body = pdf.get_data()
    pdf.close()
    reader = PdfReader(io.BytesIO(body))
    assert len(reader.pages) == 2  # the cover and the card's one page
    cover = reader.pages[0].extract_text()
    assert "Kerning on the name is lovely" in cover
    assert "Grace Hopper" in cover and reviewer.identifier in cover and "approved" in cover
    assert "Ada Lovelace" in reader.pages[1].extract_text()  # the print page itself
    proof = reader.pages[1]
    assert proof.trimbox != proof.mediabox  # the print page keeps its bleed
