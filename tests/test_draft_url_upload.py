"""``POST /api-ext/draft/<hash>/upload`` with JSON ``{fileURL, callbackURL}``: pps downloads
the PDF from the shop in the background, stores it as a multipart upload would be, and then
POSTs to ``callbackURL``.

The shop is a real HTTP server on 127.0.0.1 (:mod:`shop_support`); the app allows private
addresses (``notify_allow_private``, as every test app) except in the refusal tests, which
check that nothing is sent at all. The outbox, the dispatcher and the download are real.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import assert_error
from client_compat_support import renderable_template
from conftest import ApiClient, delete_deliveries
from flask import Flask
from loopback_http import serve_on_loopback
from preflight_support import print_pdf
from shop_support import Served, Shop, running_shop, wait_until

from app import create_app
from pps.drafts.url_upload import CALLBACK_NOTIFICATION, FETCH_JOB, UrlUploadJob, queue_url_upload
from pps.platform.models import Client, Template
from pps.platform.repository.integrations import LeaseLost
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import webhook_deliveries
from pps.platform.services import build_services
from pps.platform.settings import load_settings
from pps.platform.ssrf import RequestFailed, ResponseTooLarge, get, post
from pps.processing.job import run_in_process
from pps.webhooks.delivery import Outcome
from pps.webhooks.dispatcher import Dispatcher

#: Small enough for a test file to pass it; the real PDFs are about 22 kB.
LIMIT = 200_000
FAST = {
    "worker_mode": "thread",
    "webhook_poll": 0.05,
    "notify_attempts": 2,
    "notify_backoff": 0.1,
    "upload_fetch_timeout": 2.0,
    "max_upload_bytes": LIMIT,
}


@pytest.fixture
def app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app({**app_config, **FAST})
    yield application
    application.extensions["pps"].close()


@pytest.fixture
def shop() -> Iterator[Shop]:
    with running_shop() as server:
        yield server


@pytest.fixture
def template(repo: SqlRepository, tenant: Client) -> Template:
    return renderable_template(repo, tenant)


def new_draft(api: ApiClient, template: Template, intent: str = "upload") -> dict[str, Any]:
    user = api.post("/api-ext/user").get_json()["data"]["identifier"]
    body = {"user_identifier": user, "templateIdentifier": template.identifier, "intent": intent}
    response = api.post("/api-ext/draft", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    data: dict[str, Any] = response.get_json()["data"]
    return data


def shop_urls(shop: Shop, draft_hash: str, served: Served) -> dict[str, str]:
    """The module's shapes: its media URL, and its callback with ``?filepath=``."""
    path = f"tmp/upload/{draft_hash}/print.pdf"
    return {
        "fileURL": shop.serve(f"/pub/media/{path}", served),
        "callbackURL": f"{shop.base}/printformer/process/draft/draft_id/{draft_hash}/"
        f"?filepath={path}",
    }


def callback(shop: Shop) -> Any:
    """The one callback the shop received, once it came."""
    posts = wait_until(lambda: shop.requests("POST"))
    assert len(posts) == 1, posts
    return posts[0]


def outbox(app: Flask, *clients: Client) -> int:
    """The rows of ``clients`` in the outbox (on PostgreSQL the database is the run's: other
    tests leave deliveries there)."""
    pending = app.extensions["pps"].integrations.pending
    return sum(int(pending(client.identifier)) for client in clients)


def upload(api: ApiClient, draft_hash: str, body: Any) -> Any:
    return api.post(f"/api-ext/draft/{draft_hash}/upload", json=body)


def test_the_pdf_is_downloaded_stored_and_the_shop_called_back(
    app: Flask,
    api: ApiClient,
    tenant: Client,
    template: Template,
    shop: Shop,
    repo: SqlRepository,
) -> None:
    draft = new_draft(api, template)
    urls = shop_urls(shop, draft["draftHash"], Served(print_pdf(2, text="Mine")))
    response = upload(api, draft["draftHash"], urls)
    assert response.status_code == 204 and response.get_data() == b""
    seen = callback(shop)
    # The URL as the shop gave it: its controller reads draft_id and filepath from it.
    assert seen.path == urls["callbackURL"].removeprefix(shop.base)
    assert seen.json() == {"draftHash": draft["draftHash"], "success": True, "message": None}
    assert seen.headers["Content-Type"] == "application/json"
    (get,) = shop.requests("GET")
    assert get.path == urls["fileURL"].removeprefix(shop.base)
    shown = api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"]
    assert shown["preflightStatus"] != -1  # preflighted, as after a multipart upload
    stored = repo.get_draft(api_client_identifier(app, api), draft["draftHash"])
    assert stored is not None and stored.upload_key is not None
    assert wait_until(lambda: outbox(app, tenant) == 0)


def api_client_identifier(app: Flask, api: ApiClient) -> str:
    client = app.extensions["pps"].repository.find_client_by_api_key(api.api_key)
    return str(client.identifier)


@pytest.mark.parametrize(
    ("served", "said"),
    [
        (Served(b"Hello, this is not a PDF at all."), "not a PDF"),
        (Served(print_pdf(1)), "page"),
        (Served(b"%PDF-1.7\n" + b"0" * (LIMIT * 3)), "larger than 200000 bytes"),
        (Served(b"%PDF-1.7\n" + b"0" * (LIMIT * 3), length=False), "larger than 200000 bytes"),
        (Served(print_pdf(2), statuses=[404]), "answered 404"),
        (Served(print_pdf(2), statuses=[302]), "redirects are not followed"),
    ],
    ids=["not-a-pdf", "wrong-pages", "too-large", "too-large-unannounced", "404", "redirect"],
)
def test_a_refused_download_leaves_the_draft_and_tells_the_shop(
    app: Flask, api: ApiClient, template: Template, shop: Shop, served: Served, said: str
) -> None:
    draft = new_draft(api, template)
    before = api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"]
    assert (
        upload(api, draft["draftHash"], shop_urls(shop, draft["draftHash"], served)).status_code
        == 204
    )
    body = callback(shop).json()
    assert body["success"] is False and body["draftHash"] == draft["draftHash"]
    assert said in body["message"]
    assert len(shop.requests("GET")) == 1  # final at once: not tried again
    assert api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"] == before


def test_a_shop_that_fails_for_a_while_is_tried_again(
    api: ApiClient, template: Template, shop: Shop
) -> None:
    draft = new_draft(api, template)
    served = Served(print_pdf(2), statuses=[503, 200])
    assert (
        upload(api, draft["draftHash"], shop_urls(shop, draft["draftHash"], served)).status_code
        == 204
    )
    assert callback(shop).json()["success"] is True
    assert len(shop.requests("GET")) == 2


def test_a_download_cut_short_is_tried_again_not_stored(
    api: ApiClient, template: Template, shop: Shop
) -> None:
    """The shop hangs up after half the Content-Length it announced: a failed download,
    tried again, never half a PDF taken for the whole one."""
    draft = new_draft(api, template)
    served = Served(print_pdf(2), cut=True)
    before = api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"]
    assert (
        upload(api, draft["draftHash"], shop_urls(shop, draft["draftHash"], served)).status_code
        == 204
    )
    body = callback(shop).json()
    assert body["success"] is False and "IncompleteRead" in body["message"]
    assert len(shop.requests("GET")) == FAST["notify_attempts"]
    assert api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"] == before


def test_a_slow_shop_is_cut_off_at_the_deadline(
    api: ApiClient, template: Template, shop: Shop
) -> None:
    """A shop trickling its file: each attempt ends at ``PPS_UPLOAD_FETCH_TIMEOUT``, then
    the job is given up after ``PPS_NOTIFY_ATTEMPTS`` and the shop told."""
    draft = new_draft(api, template)
    served = Served(print_pdf(2), trickle=True)
    before = api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"]
    assert (
        upload(api, draft["draftHash"], shop_urls(shop, draft["draftHash"], served)).status_code
        == 204
    )
    body = callback(shop).json()
    assert body["success"] is False and "timed out" in body["message"]
    assert len(shop.requests("GET")) == FAST["notify_attempts"]
    assert api.get(f"/api-ext/draft/{draft['draftHash']}").get_json()["data"] == before


def test_without_callback_url_the_pdf_is_still_stored(
    app: Flask,
    api: ApiClient,
    tenant: Client,
    template: Template,
    shop: Shop,
    repo: SqlRepository,
) -> None:
    """The module's "social" call sends only ``fileURL``."""
    draft = new_draft(api, template)
    file_url = shop_urls(shop, draft["draftHash"], Served(print_pdf(2)))["fileURL"]
    assert upload(api, draft["draftHash"], {"fileURL": file_url}).status_code == 204
    client = api_client_identifier(app, api)
    wait_until(lambda: (d := repo.get_draft(client, draft["draftHash"])) and d.upload_key)
    assert wait_until(lambda: outbox(app, tenant) == 0)
    assert shop.requests("POST") == []


# -- refused at once -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "fileURL"),
        ({"callbackURL": "https://shop.example/cb"}, "fileURL"),
        ({"fileURL": 12}, "fileURL"),
        ({"fileURL": ""}, "fileURL"),
        ({"fileURL": "ftp://shop.example/a.pdf"}, "fileURL"),
        ({"fileURL": "https://user:pw@shop.example/a.pdf"}, "fileURL"),
        ({"fileURL": "file:///etc/passwd"}, "fileURL"),
        ({"fileURL": "http://127.0.0.1:9/a.pdf", "callbackURL": ["x"]}, "callbackURL"),
        ({"fileURL": "http://127.0.0.1:9/a.pdf", "callbackURL": "javascript:x"}, "callbackURL"),
    ],
)
def test_bad_urls_are_422_naming_the_field(
    app: Flask,
    api: ApiClient,
    tenant: Client,
    template: Template,
    body: dict[str, Any],
    field: str,
) -> None:
    draft = new_draft(api, template)
    error = assert_error(upload(api, draft["draftHash"], body), 422, field)
    assert set(error["errors"]) == {field}
    assert outbox(app, tenant) == 0


def test_json_that_is_not_an_object_is_refused(api: ApiClient, template: Template) -> None:
    draft = new_draft(api, template)
    url = f"/api-ext/draft/{draft['draftHash']}/upload"
    assert_error(api.post(url, data="{", content_type="application/json"), 400)
    assert_error(api.post(url, json=["https://shop.example/a.pdf"]), 422)


@pytest.mark.parametrize("body", [b"", b"  \r\n", b"[]"])
def test_an_empty_json_body_is_a_422_naming_file_url(
    app: Flask, api: ApiClient, tenant: Client, template: Template, body: bytes
) -> None:
    """No body under ``Content-Type: application/json`` is ``{}`` as on every other
    endpoint (COMPAT.md), so the answer names what is missing, not malformed JSON."""
    draft = new_draft(api, template)
    url = f"/api-ext/draft/{draft['draftHash']}/upload"
    error = assert_error(api.post(url, data=body, content_type="application/json"), 422)
    assert set(error["errors"]) == {"fileURL"}
    assert outbox(app, tenant) == 0


def test_unknown_and_foreign_drafts_are_404_and_other_intents_422(
    app: Flask,
    api: ApiClient,
    other_api: ApiClient,
    tenant: Client,
    other_tenant: Client,
    template: Template,
    shop: Shop,
) -> None:
    draft = new_draft(api, template)
    urls = shop_urls(shop, draft["draftHash"], Served(print_pdf(2)))
    assert_error(upload(api, "0" * 32, urls), 404)
    assert_error(upload(other_api, draft["draftHash"], urls), 404)
    customize = new_draft(api, template, intent="customize")
    error = assert_error(upload(api, customize["draftHash"], urls), 422, "intent")
    # The same answer as the multipart path gives.
    multipart = api.post(
        f"/api-ext/draft/{customize['draftHash']}/upload",
        data={"file": (io.BytesIO(print_pdf(2)), "a.pdf", "application/pdf")},
        content_type="multipart/form-data",
    )
    assert multipart.get_json() == error
    assert outbox(app, tenant, other_tenant) == 0 and shop.requests() == []


@pytest.fixture
def strict_app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app({**app_config, **FAST, "notify_allow_private": False})
    yield application
    application.extensions["pps"].close()


@pytest.mark.parametrize(
    ("file_host", "callback_host", "field", "said"),
    [
        ("127.0.0.1", "127.0.0.1", "fileURL", "loopback"),
        ("[::1]", "127.0.0.1", "fileURL", "loopback"),
        ("10.1.2.3", "127.0.0.1", "fileURL", "private"),
        ("169.254.169.254", "127.0.0.1", "fileURL", "link-local"),
        ("localhost", "127.0.0.1", "fileURL", "loopback"),
        ("93.184.215.14", "192.168.1.1", "callbackURL", "private"),
    ],
)
def test_private_addresses_are_refused_without_sending_anything(
    strict_app: Flask, shop: Shop, file_host: str, callback_host: str, field: str, said: str
) -> None:
    """``PPS_NOTIFY_ALLOW_PRIVATE`` off: judged from the address alone, nothing sent."""
    tenant = strict_app.extensions["pps"].repository.create_client("Strict shop")
    api = ApiClient(strict_app.test_client(), tenant.api_key)
    template = renderable_template(strict_app.extensions["pps"].repository, tenant)
    draft = new_draft(api, template)
    port = shop.server.server_address[1]
    body = {
        "fileURL": f"http://{file_host}:{port}/a.pdf",
        "callbackURL": f"http://{callback_host}:{port}/cb",
    }
    error = assert_error(upload(api, draft["draftHash"], body), 422, field)
    assert said in error["errors"][field][0]
    assert outbox(strict_app, tenant) == 0
    assert shop.requests() == []


def test_a_refused_address_at_download_time_is_not_fetched(strict_app: Flask, shop: Shop) -> None:
    """An address allowed when the request came may be refused later (settings changed, DNS
    rebinding): the download checks again before connecting, and sends nothing."""
    services = strict_app.extensions["pps"]
    tenant = services.repository.create_client("Strict shop")
    api = ApiClient(strict_app.test_client(), tenant.api_key)
    draft = new_draft(api, renderable_template(services.repository, tenant))
    urls = shop_urls(shop, draft["draftHash"], Served(print_pdf(2)))
    # Queued as the view queues it, bypassing its check (as if the address changed since).
    queue_url_upload(services, tenant.identifier, draft["draftHash"], urls["fileURL"], None)
    assert wait_until(lambda: outbox(strict_app, tenant) == 0)
    assert shop.requests() == []


# -- surviving a restart -------------------------------------------------------------------


def test_a_queued_download_is_done_by_the_next_process(
    app_config: dict[str, Any], shop: Shop
) -> None:
    """Recorded by a process that stopped before its dispatcher ran: the outbox row is in
    the database, and the next app's dispatcher downloads and calls back."""
    settings = load_settings({}, {**app_config, **FAST})
    first = build_services(settings, run_in_process)  # no dispatcher: only queues
    try:
        tenant = first.repository.create_client("Shop A")
        template = renderable_template(first.repository, tenant)
        user = first.repository.create_user(tenant.identifier, {})
        draft = first.repository.create_draft(
            tenant.identifier,
            user_identifier=user.identifier,
            template_identifier=template.identifier,
            intent="upload",
            api_default_values={},
            custom_attributes={},
        )
        assert draft is not None
        urls = shop_urls(shop, draft.draft_hash, Served(print_pdf(2)))
        queue_url_upload(
            first, tenant.identifier, draft.draft_hash, urls["fileURL"], urls["callbackURL"]
        )
        assert events(first, tenant.identifier) == [FETCH_JOB]
    finally:
        first.close()
    assert shop.requests() == []
    second = create_app({**app_config, **FAST})
    try:
        second.extensions["pps"].dispatcher()  # started by the first event, or pps worker
        assert callback(shop).json()["success"] is True
        stored = second.extensions["pps"].repository.get_draft(tenant.identifier, draft.draft_hash)
        assert stored is not None and stored.upload_key is not None
    finally:
        second.extensions["pps"].close()


# -- one job, one result ---------------------------------------------------------------------


@pytest.fixture
def quiet(app_config: dict[str, Any]) -> Iterator[Any]:
    """Services without a dispatcher: the test claims and runs the job itself."""
    services = build_services(load_settings({}, {**app_config, **FAST}), run_in_process)
    yield services
    services.close()


def queued_job(services: Any, shop: Shop) -> tuple[str, str]:
    """A client's upload draft with a download queued for it; (client, draft hash)."""
    tenant = services.repository.create_client("Shop A")
    template = renderable_template(services.repository, tenant)
    user = services.repository.create_user(tenant.identifier, {})
    draft = services.repository.create_draft(
        tenant.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="upload",
        api_default_values={},
        custom_attributes={},
    )
    urls = shop_urls(shop, draft.draft_hash, Served(print_pdf(2)))
    queue_url_upload(
        services, tenant.identifier, draft.draft_hash, urls["fileURL"], urls["callbackURL"]
    )
    return tenant.identifier, draft.draft_hash


def forget_outbox(services: Any, client: str) -> None:
    """Delete what a test left in the client's outbox: the PostgreSQL database is the
    run's, and the dispatchers of tests that follow would take the rows up."""
    delete_deliveries(services.repository.engine, client)


@pytest.fixture
def queued(quiet: Any, shop: Shop) -> Iterator[Callable[[], tuple[str, str]]]:
    """Queues a job as :func:`queued_job` does; the client's outbox is emptied afterwards."""
    made: list[str] = []

    def queue() -> tuple[str, str]:
        client, draft_hash = queued_job(quiet, shop)
        made.append(client)
        return client, draft_hash

    yield queue
    for client in made:
        forget_outbox(quiet, client)


def events(services: Any, client: str) -> list[str]:
    """The events of the client's outbox rows (the PostgreSQL database is the run's)."""
    mine = webhook_deliveries.c.client_identifier == client
    with services.repository.engine.connect() as conn:
        return list(conn.execute(sa.select(webhook_deliveries.c.event).where(mine)).scalars())


def claim(services: Any, client: str, **leases: float) -> Any:
    """The client's one due row, claimed as a dispatcher claims it (``leases`` by event)."""
    others = webhook_deliveries.c.client_identifier != client
    with services.repository.engine.connect() as conn:
        busy = set(
            conn.execute(sa.select(webhook_deliveries.c.client_identifier).where(others))
            .scalars()
            .all()
        )
    events_leases = {FETCH_JOB: leases["job"]} if "job" in leases else None
    (claimed,) = services.integrations.claim_due(
        limit=1, lease=60.0, busy=busy, leases=events_leases, jobs=[FETCH_JOB]
    )
    return claimed


def test_an_attempt_that_outlived_its_lease_stores_nothing(
    quiet: Any, shop: Shop, queued: Callable[[], tuple[str, str]]
) -> None:
    """A dispatcher's attempt outlives its lease and another dispatcher takes the row over:
    the first one stops before storing, so the PDF is stored once and the shop called back
    once, by the attempt that holds the row."""
    client, draft_hash = queued()
    late = claim(quiet, client, job=-1.0)
    taken_over = claim(quiet, client)  # the lease had run out
    assert taken_over.identifier == late.identifier
    job = UrlUploadJob(quiet)
    with pytest.raises(LeaseLost):
        job.attempt(late)
    stored = quiet.repository.get_draft(client, draft_hash)
    assert stored.upload_key is None and events(quiet, client) == [FETCH_JOB]
    assert job.attempt(taken_over).ok
    version = quiet.repository.get_draft(client, draft_hash).version
    with pytest.raises(LeaseLost):  # the same claim, again: held anew by its first run
        job.attempt(taken_over)
    assert quiet.repository.get_draft(client, draft_hash).version == version
    assert sorted(events(quiet, client)) == sorted([FETCH_JOB, CALLBACK_NOTIFICATION])
    assert shop.requests("POST") == []  # nothing sent here: no dispatcher runs


def test_a_dispatcher_whose_attempt_was_taken_over_records_nothing(
    app_config: dict[str, Any], shop: Shop
) -> None:
    """While a dispatcher downloads, its lease runs out and another claim takes the row: the
    first stops before storing and leaves the row as the new claim holds it (no failed
    attempt counted, no lease cleared for a third dispatcher to take)."""
    settings = load_settings({}, {**app_config, **FAST, "upload_fetch_timeout": 30.0})
    services = build_services(settings, run_in_process)
    try:
        client, draft_hash = queued_job(services, shop)
        (path,) = shop.files
        shop.files[path] = Served(b"%PDF-1.7 slow", trickle=True)  # 13 bytes, 2.6 s
        dispatcher = Dispatcher(
            services.integrations, settings, {FETCH_JOB: UrlUploadJob(services)}
        )
        try:
            wait_until(lambda: shop.requests("GET"))
            # What another dispatcher's claim writes once the lease has run out.
            taken_over = datetime.now(UTC) + timedelta(seconds=60)
            with services.repository.engine.begin() as conn:
                conn.execute(
                    webhook_deliveries.update()
                    .where(webhook_deliveries.c.client_identifier == client)
                    .values(lease_until=taken_over)
                )
            wait_until(lambda: path in shop.finished)
            wait_until(lambda: not dispatcher.in_flight())
        finally:
            dispatcher.close(5.0)
        with services.repository.engine.connect() as conn:
            row = conn.execute(
                sa.select(webhook_deliveries).where(
                    webhook_deliveries.c.client_identifier == client
                )
            ).one()
        assert row.attempts == 0 and row.event == FETCH_JOB
        lease = row.lease_until  # SQLite gives it back naive, in UTC
        assert (lease if lease.tzinfo else lease.replace(tzinfo=UTC)) == taken_over
        assert services.repository.get_draft(client, draft_hash).upload_key is None
        assert shop.requests("POST") == []
        forget_outbox(services, client)
    finally:
        services.close()


def test_a_dispatcher_that_does_not_run_a_job_leaves_its_row(
    quiet: Any, shop: Shop, queued: Callable[[], tuple[str, str]]
) -> None:
    """A dispatcher without the job (another version of pps during a rolling deploy, a
    process that registers other jobs) must not POST the job's row to its ``fileURL`` as
    if it were a notification: it sends its messages and leaves the job for one that runs
    it."""
    client, _ = queued()
    quiet.integrations.enqueue_notification(client, "notify.test", f"{shop.base}/cb", {}, "t")
    dispatcher = Dispatcher(quiet.integrations, quiet.settings)
    try:
        wait_until(lambda: shop.requests("POST"))
        wait_until(lambda: not dispatcher.in_flight())
    finally:
        dispatcher.close(5.0)
    assert [seen.path for seen in shop.requests()] == ["/cb"]
    assert events(quiet, client) == [FETCH_JOB]


def test_a_job_calls_back_once_however_often_it_ends(
    quiet: Any, queued: Callable[[], tuple[str, str]]
) -> None:
    """Given up twice (its end written again after an outage) or after a success: one
    callback, the first."""
    client, draft_hash = queued()
    claimed = claim(quiet, client)
    job = UrlUploadJob(quiet)
    failed = Outcome(False, False, "The PDF could not be downloaded.")
    job.given_up(claimed, failed, False)
    job.given_up(claimed, failed, False)
    job.given_up(claimed, Outcome(True, False, "stored"), False)
    assert events(quiet, client).count(CALLBACK_NOTIFICATION) == 1
    with quiet.repository.engine.connect() as conn:
        payload = conn.execute(
            sa.select(webhook_deliveries.c.payload).where(
                webhook_deliveries.c.event == CALLBACK_NOTIFICATION,
                webhook_deliveries.c.client_identifier == client,
            )
        ).scalar_one()
    assert payload == {"draftHash": draft_hash, "success": False, "message": failed.detail}


# -- the download client (pps.platform.ssrf.get) -------------------------------------------


def test_reading_stops_past_the_limit(shop: Shop) -> None:
    """20 MB without a Content-Length, 200 kB taken: pps stops reading and hangs up, so the
    shop never gets to write it all."""
    url = shop.serve("/huge.pdf", Served(b"%PDF" + b"0" * 20_000_000, length=False))
    with pytest.raises(ResponseTooLarge):
        get(url, {}, deadline=10.0, max_bytes=LIMIT, allow_private=True)
    wait_until(lambda: "/huge.pdf" in shop.finished)
    assert "/huge.pdf" not in shop.completed
    declared = shop.serve("/declared.pdf", Served(b"%PDF" + b"0" * 20_000_000))
    with pytest.raises(ResponseTooLarge):
        get(declared, {}, deadline=10.0, max_bytes=LIMIT, allow_private=True)


def test_a_body_shorter_than_its_content_length_is_a_failed_request(shop: Shop) -> None:
    url = shop.serve("/cut.pdf", Served(b"%PDF" + b"0" * 10_000, cut=True))
    with pytest.raises(RequestFailed, match="IncompleteRead") as failed:
        get(url, {}, deadline=5.0, max_bytes=LIMIT, allow_private=True)
    assert not failed.value.timed_out


@pytest.mark.parametrize(
    ("declared", "too_large"),
    [("\u00b2", False), ("9" * 5000, True)],  # a digit but no number; past int()'s limit
)
def test_a_content_length_that_int_cannot_read_is_no_crash(declared: str, too_large: bool) -> None:
    """A shop's server may announce any Content-Length: ``http.client`` ignores one that is
    no number, and so does pps; one of thousands of digits is too large. Both were a
    ValueError out of the download."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", declared)
            self.end_headers()
            self.wfile.write(b"%PDF-1.4 x")

        def log_message(self, *args: Any) -> None:
            pass

    server, thread = serve_on_loopback(Handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/x.pdf"
    try:
        if too_large:
            with pytest.raises(ResponseTooLarge):
                get(url, {}, deadline=5.0, max_bytes=LIMIT, allow_private=True)
        else:
            response = get(url, {}, deadline=5.0, max_bytes=LIMIT, allow_private=True)
            assert response.body == b"%PDF-1.4 x"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_redirect_is_answered_not_followed(shop: Shop) -> None:
    url = shop.serve("/moved.pdf", Served(b"", statuses=[302]))
    assert get(url, {}, deadline=5.0, max_bytes=LIMIT, allow_private=True).status == 302
    assert len(shop.requests("GET")) == 1


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_body_trickled_after_the_headers_is_cut_off_at_the_deadline(
    shop: Shop, method: str
) -> None:
    """The answer ends with the connection (no length): ``http.client`` lets go of the
    socket after the headers, and the deadline must still end the read."""
    url = shop.serve("/slow.pdf", Served(b"x" * 30, trickle=True))  # 6 s of it
    with pytest.raises(RequestFailed, match="timed out"):
        if method == "GET":
            get(url, {}, deadline=1.0, max_bytes=LIMIT, allow_private=True)
        else:
            post(url, b"{}", {}, deadline=1.0, allow_private=True)
    # Hung up on at the deadline: the shop could not write the rest.
    wait_until(lambda: "/slow.pdf" in shop.finished)
    assert "/slow.pdf" not in shop.completed


@pytest.mark.parametrize(
    "served",
    [Served(b"Hello, this is not a PDF at all."), Served(print_pdf(1))],
    ids=["not-a-pdf", "wrong-pages"],
)
def test_the_callback_gives_each_reason_once(
    app: Flask, api: ApiClient, template: Template, shop: Shop, served: Served
) -> None:
    """The message is the multipart upload's: its reasons were appended to a message that
    already held them, so the shop's callback read every reason twice."""
    draft = new_draft(api, template)
    upload(api, draft["draftHash"], shop_urls(shop, draft["draftHash"], served))
    message = callback(shop).json()["message"]
    body = io.BytesIO(served.body)
    refused = api.post(
        f"/api-ext/draft/{draft['draftHash']}/upload",
        data={"file": (body, "print.pdf")},
        content_type="multipart/form-data",
    ).get_json()
    assert message.startswith("The PDF cannot be the print file")
    for problem in refused["errors"]["file"]:
        assert message.count(problem) == 1, message
