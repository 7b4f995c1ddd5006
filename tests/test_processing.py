"""``/api-ext/pdf-processing``: batch print files, run by an RQ worker or the app's thread.

Every test runs against real Redis and a real database; notification receivers are real
HTTP servers on 127.0.0.1 (``notify_allow_private`` is on in the test config). Forbidden
addresses are only ever submitted, never connected to.
"""

from __future__ import annotations

import logging
import re
import time
from types import SimpleNamespace
from typing import Any

import pypdfium2
import pytest
import sqlalchemy as sa
from api_support import assert_error, make_draft, make_template
from conftest import ApiClient, free_port
from flask import Flask
from processing_support import (
    card_draft,
    card_template,
    drain_notifications,
    receiver,
    run_jobs,
    snapshot_states,
)

from pps.platform.models import Client
from pps.platform.outages import DATABASE_DOWN
from pps.platform.repository.sql import SqlRepository
from pps.platform.repository.tables import processing_drafts, processings
from pps.platform.settings import Settings
from pps.processing import retry
from pps.processing.job import fail_processing, job_from_services, run_processing

PROCESSING_ID = re.compile(r"^[0-9a-f]{32}$")
URL = "/api-ext/pdf-processing"


@pytest.fixture(params=["rq", "thread"])
def worker_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def app_config(app_config: dict[str, Any], worker_mode: str) -> dict[str, Any]:
    # Short pauses between retries keep the "receiver down" tests fast; notifications go
    # through the webhook outbox, whose dispatcher looks at it often here.
    return {
        **app_config,
        "worker_mode": worker_mode,
        "notify_backoff": 0.02,
        "webhook_poll": 0.05,
    }


def submit(api: ApiClient, draft_ids: list[str], notify_url: str | None = None) -> str:
    body: dict[str, Any] = {"draftIds": draft_ids}
    if notify_url is not None:
        body["stateChangedNotifyUrl"] = notify_url
    response = api.post(URL, json=body)
    assert response.status_code == 201, response.get_data()
    data = response.get_json()
    assert set(data) == {"processingId"}
    assert PROCESSING_ID.match(data["processingId"])
    assert response.headers["Location"].endswith(f"{URL}/{data['processingId']}")
    return str(data["processingId"])


def status(api: ApiClient, processing_id: str) -> dict[str, Any]:
    response = api.get(f"{URL}/{processing_id}")
    assert response.status_code == 200, response.get_data()
    return response.get_json()  # type: ignore[no-any-return]


def rows(repo: SqlRepository, client: Client) -> int:
    """Processings of ``client`` and their drafts (the PostgreSQL database is shared)."""
    mine = sa.select(processings.c.processing_id).where(
        processings.c.client_identifier == client.identifier
    )
    with repo.engine.connect() as conn:
        heads = conn.execute(sa.select(sa.func.count()).select_from(mine.subquery()))
        items = conn.execute(
            sa.select(sa.func.count())
            .select_from(processing_drafts)
            .where(processing_drafts.c.processing_id.in_(mine))
        )
        return int(heads.scalar_one()) + int(items.scalar_one())


# -- the happy path ----------------------------------------------------------------------


def test_two_drafts_processed_and_notified_in_order(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    template = card_template(repo, tenant)
    first = card_draft(repo, tenant, template, "Ada Lovelace")
    second = card_draft(repo, tenant, template, "Grace Hopper")
    with receiver() as hook:
        processing_id = submit(api, [first.draft_hash, second.draft_hash], hook.url)
        run_jobs(app, worker_mode, tenant.identifier)
        bodies = hook.bodies()
        requests = list(hook.requests)

    final = status(api, processing_id)
    assert final == {
        "processingId": processing_id,
        "draftStates": [
            {"draftId": first.draft_hash, "state": "processed", "message": None},
            {"draftId": second.draft_hash, "state": "processed", "message": None},
        ],
    }
    # One POST per state change, each the full status, in the order the changes happened.
    assert [snapshot_states(body) for body in bodies] == [
        ["pending", "pending"],
        ["in-process", "pending"],
        ["processed", "pending"],
        ["processed", "in-process"],
        ["processed", "processed"],
    ]
    assert bodies[-1] == final
    assert all(body["processingId"] == processing_id for body in bodies)
    assert all(item.headers["Content-Type"] == "application/json" for item in requests)
    assert all(item.path == "/hooks/pps?shop=1" for item in requests)

    # The print files are in storage under each draft's version, where the file endpoint
    # looks: real PDFs with the typed names in them.
    storage = app.extensions["pps"].storage
    stored = app.extensions["pps"].processings.get(tenant.identifier, processing_id)
    for item, name in zip(stored.drafts, ("Ada Lovelace", "Grace Hopper"), strict=True):
        assert item.file_key and f"/{item.draft_hash}/v1/" in item.file_key
        data = storage.read(item.file_key)
        assert data is not None and data.startswith(b"%PDF-")
        document = pypdfium2.PdfDocument(data)
        try:
            assert len(document) == 1
            assert name in document[0].get_textpage().get_text_range()
        finally:
            document.close()


def test_status_before_the_worker_ran_is_pending(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    template = card_template(repo, tenant)
    draft = card_draft(repo, tenant, template, "Ada")
    processing_id = submit(api, [draft.draft_hash])
    if worker_mode == "rq":  # nothing has run yet: the job waits in Redis
        assert status(api, processing_id)["draftStates"] == [
            {"draftId": draft.draft_hash, "state": "pending", "message": None}
        ]
    run_jobs(app, worker_mode, tenant.identifier)
    assert snapshot_states(status(api, processing_id)) == ["processed"]


def test_a_draft_that_cannot_render_fails_with_a_message_and_the_rest_go_on(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    broken = make_draft(repo, tenant, template=make_template(repo, tenant))  # no pages
    good = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    with receiver() as hook:
        processing_id = submit(api, [broken.draft_hash, good.draft_hash], hook.url)
        run_jobs(app, worker_mode, tenant.identifier)
        bodies = hook.bodies()
    states = status(api, processing_id)["draftStates"]
    assert [item["state"] for item in states] == ["failed", "processed"]
    assert isinstance(states[0]["message"], str) and states[0]["message"]
    assert states[1]["message"] is None
    assert [snapshot_states(body) for body in bodies] == [
        ["pending", "pending"],
        ["in-process", "pending"],
        ["failed", "pending"],
        ["failed", "in-process"],
        ["failed", "processed"],
    ]


# Only a queued job can lose its draft: the thread may start at once.
@pytest.mark.parametrize("worker_mode", ["rq"])
def test_a_draft_deleted_after_submission_fails(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    processing_id = submit(api, [draft.draft_hash])
    assert repo.delete_draft(tenant.identifier, draft.draft_hash)
    run_jobs(app, worker_mode, tenant.identifier)
    assert status(api, processing_id)["draftStates"] == [
        {"draftId": draft.draft_hash, "state": "failed", "message": "The draft no longer exists."}
    ]


# -- receivers that are down, failing or redirecting ---------------------------------------


def test_receiver_down_gets_retries_and_the_job_still_ends_processed(
    app: Flask,
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    worker_mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="pps.webhooks")
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    closed = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there
    started = time.monotonic()
    processing_id = submit(api, [draft.draft_hash], closed)
    run_jobs(app, worker_mode, tenant.identifier)
    assert time.monotonic() - started < 30
    assert snapshot_states(status(api, processing_id)) == ["processed"]
    failures = [r.getMessage() for r in caplog.records if "processing:" in r.getMessage()]
    # The last snapshot was tried the full number of times (5) before giving up.
    assert any("attempt 5 of 5" in message for message in failures), failures
    assert all(processing_id in message for message in failures)
    assert app.extensions["pps"].integrations.pending(tenant.identifier) == 0


def test_receiver_answering_503_gets_five_tries_of_the_final_state(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    with receiver(status=503) as hook:
        processing_id = submit(api, [draft.draft_hash], hook.url)
        run_jobs(app, worker_mode, tenant.identifier)
        bodies = hook.bodies()
    final = status(api, processing_id)
    assert snapshot_states(final) == ["processed"]
    # Older snapshots may be dropped while retrying (the newest supersedes them), but the
    # order never goes backwards and the final one gets every attempt.
    order = {"pending": 0, "in-process": 1, "processed": 2}
    seen = [order[snapshot_states(body)[0]] for body in bodies]
    assert seen == sorted(seen)
    assert sum(1 for body in bodies if body == final) == 5


def test_redirecting_receiver_is_not_followed(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    with receiver() as target, receiver(307, {"Location": "PLACEHOLDER"}) as redirector:
        redirector.headers["Location"] = target.url
        processing_id = submit(api, [draft.draft_hash], redirector.url)
        run_jobs(app, worker_mode, tenant.identifier)
        redirected = redirector.bodies()
        followed = target.bodies()
    assert snapshot_states(status(api, processing_id)) == ["processed"]
    assert followed == []
    # A redirect is a final answer for that snapshot: no retries, but each change is sent.
    assert [snapshot_states(body) for body in redirected] == [
        ["pending"],
        ["in-process"],
        ["processed"],
    ]


# -- submission checks -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",  # link-local: cloud metadata
        "http://[fe80::1]/",
        "http://0.0.0.0:8080/",
        "http://224.0.0.1/",
        "http://user@127.0.0.1/",
        "http://user:secret@127.0.0.1/",
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "127.0.0.1:8080/hook",
        "http:///hook",
        "http://127.0.0.1:99999/",
        "http://127.0.0.1/a b",
        "http://[::ffff:169.254.169.254]/",
    ],
)
def test_notify_urls_refused_even_when_private_ones_are_allowed(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, url: str
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    response = api.post(URL, json={"draftIds": [draft.draft_hash], "stateChangedNotifyUrl": url})
    assert_error(response, 422, "stateChangedNotifyUrl")
    assert rows(repo, tenant) == 0


def test_notify_url_refused_over_form_and_snake_case_too(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    response = api.post(
        URL,
        data={"draftIds[]": [draft.draft_hash], "stateChangedNotifyUrl": "http://0.0.0.0/"},
    )
    assert_error(response, 422, "stateChangedNotifyUrl")
    response = api.post(
        URL,
        json={"draft_ids": [draft.draft_hash], "state_changed_notify_url": "gopher://x/"},
    )
    assert_error(response, 422, "state_changed_notify_url")  # named as sent (issue 13)
    assert rows(repo, tenant) == 0


def test_form_body_and_snake_case_names_are_accepted(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    template = card_template(repo, tenant)
    one, two = (card_draft(repo, tenant, template, name) for name in ("A", "B"))
    response = api.post(URL, data={"draftIds[]": [one.draft_hash, two.draft_hash]})
    assert response.status_code == 201, response.get_data()
    form_id = response.get_json()["processingId"]
    response = api.post(URL, json={"draft_ids": [two.draft_hash, one.draft_hash, two.draft_hash]})
    assert response.status_code == 201, response.get_data()
    snake_id = response.get_json()["processingId"]
    run_jobs(app, worker_mode, tenant.identifier)
    assert [d["draftId"] for d in status(api, form_id)["draftStates"]] == [
        one.draft_hash,
        two.draft_hash,
    ]
    # A hash listed twice is rendered once, at its first place.
    assert [d["draftId"] for d in status(api, snake_id)["draftStates"]] == [
        two.draft_hash,
        one.draft_hash,
    ]


def test_indexed_form_list_as_http_build_query_writes_it(
    api: ApiClient, repo: SqlRepository, tenant: Client
) -> None:
    """``http_build_query(['draftIds' => [$a, $b]])``: ``draftIds%5B0%5D=..&draftIds%5B1%5D=..``."""
    template = card_template(repo, tenant)
    one, two = (card_draft(repo, tenant, template, name) for name in ("A", "B"))
    raw = f"draftIds%5B0%5D={one.draft_hash}&draftIds%5B1%5D={two.draft_hash}".encode()
    response = api.post(URL, data=raw, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 201, response.get_data()
    states = status(api, response.get_json()["processingId"])["draftStates"]
    assert [d["draftId"] for d in states] == [one.draft_hash, two.draft_hash]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"draftIds": []},
        {"draftIds": "abc"},
        {"draftIds": [1, 2]},
        {"draftIds": [""]},
        {"draftIds": None},
        {"draftIds": {"a": "b"}},
        {"draftIds": [f"d{i}" for i in range(101)]},
    ],
)
def test_bad_draft_ids_are_422(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, body: dict[str, Any]
) -> None:
    body_fields = {
        key.split(".")[0] for key in assert_error(api.post(URL, json=body), 422)["errors"]
    }
    assert body_fields == {"draftIds"}
    assert rows(repo, tenant) == 0


def test_other_tenants_and_unknown_draft_ids_fail_alone_while_the_others_proceed(
    app: Flask,
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    other_tenant: Client,
    worker_mode: str,
) -> None:
    """Issue 13: as the reference's documented notification shows, one draft ``failed``
    with a ``message`` while the others proceed; not a 422 for the batch."""
    mine = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    theirs = card_draft(repo, other_tenant, card_template(repo, other_tenant), "Eve")
    with receiver() as hook:
        response = api.post(
            URL,
            json={
                "draftIds": [theirs.draft_hash, mine.draft_hash, "no-such-draft"],
                "stateChangedNotifyUrl": hook.url,
            },
        )
        assert response.status_code == 201, response.get_data()
        processing_id = response.get_json()["processingId"]
        run_jobs(app, worker_mode, tenant.identifier)
        final = status(api, processing_id)["draftStates"]
        assert [(d["draftId"], d["state"]) for d in final] == [
            (theirs.draft_hash, "failed"),
            (mine.draft_hash, "processed"),
            ("no-such-draft", "failed"),
        ]
        assert "No draft with this hash" in final[0]["message"]
        assert final[0]["message"].endswith(theirs.draft_hash)
        assert final[2]["message"].endswith("no-such-draft")
        assert final[1]["message"] is None
        # The other client's draft is not touched or rendered.
        assert repo.get_draft(other_tenant.identifier, theirs.draft_hash) == theirs
        # The notifications show the failed ones from the first one on.
        first = hook.bodies()[0]["draftStates"]
        assert [d["state"] for d in first] == ["failed", "pending", "failed"]


def test_a_batch_of_unknown_drafts_only_is_announced_to_its_webhooks_once(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    """Every draft failed at submission: the batch is over before its job runs, and no
    draft changes state afterwards. A ``processing.state_changed`` webhook still hears
    of its final state, once, as ``stateChangedNotifyUrl`` does."""
    with receiver() as webhook, receiver() as notify:
        subscribed = api.post(
            "/api-ext/webhook", json={"event": "processing.state_changed", "url": webhook.url}
        )
        assert subscribed.status_code == 201, subscribed.get_json()
        processing_id = submit(api, ["no-such-draft", "nor-this-one"], notify.url)
        run_jobs(app, worker_mode, tenant.identifier)
        # A job run again (after an outage) announces nothing more.
        run_processing(job_from_services(app.extensions["pps"]), tenant.identifier, processing_id)
        drain_notifications(app, tenant.identifier)
        events = webhook.bodies()
        notified = notify.bodies()
    final = status(api, processing_id)
    assert snapshot_states(final) == ["failed", "failed"]
    assert notified == [final]
    assert [(event["type"], event["data"]) for event in events] == [
        ("processing.state_changed", final)
    ]


def test_other_tenants_processing_id_is_404(
    app: Flask,
    api: ApiClient,
    other_api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    worker_mode: str,
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    processing_id = submit(api, [draft.draft_hash])
    body = assert_error(other_api.get(f"{URL}/{processing_id}"), 404)
    assert "processing" in body["message"]
    assert_error(api.get(f"{URL}/{'0' * 32}"), 404)
    assert_error(api.get(f"{URL}/abc%00def"), 404)
    assert_error(api.get(f"{URL}/{processing_id}", headers={"Authorization": "Bearer nope"}), 401)
    run_jobs(app, worker_mode, tenant.identifier)
    assert_error(other_api.get(f"{URL}/{processing_id}"), 404)


# Only the RQ queue can be down.
@pytest.mark.parametrize("worker_mode", ["rq"])
def test_job_queue_down_is_503_and_nothing_is_kept(
    app_config: dict[str, Any], repo: SqlRepository, worker_mode: str
) -> None:
    from app import create_app
    from pps.platform.repository.sql import SqlRepository as Repo

    down = create_app({**app_config, "redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    try:
        own_repo: Repo = down.extensions["pps"].repository
        shop = own_repo.create_client("Shop")
        draft = card_draft(own_repo, shop, card_template(own_repo, shop), "Ada")
        api = ApiClient(down.test_client(), shop.api_key)
        assert_error(api.post(URL, json={"draftIds": [draft.draft_hash]}), 503)
        assert rows(own_repo, shop) == 0
    finally:
        down.extensions["pps"].close()


# -- the state machine itself ------------------------------------------------------------


def test_running_a_job_again_changes_nothing(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    processing_id = submit(api, [draft.draft_hash])
    run_jobs(app, worker_mode, tenant.identifier)
    before = app.extensions["pps"].processings.get(tenant.identifier, processing_id)
    job = job_from_services(app.extensions["pps"])
    after = run_processing(job, tenant.identifier, processing_id)
    assert after is not None and after.drafts == before.drafts
    assert run_processing(job, "SomeoneElse", processing_id) is None
    fail_processing(job, tenant.identifier, processing_id, "late failure")
    assert snapshot_states(status(api, processing_id)) == ["processed"]


def test_a_job_run_again_after_an_outage_does_not_send_the_final_state_twice(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    """An outage that strikes once the final notification is queued gets the job queued
    again (``pps.processing.retry``); the retry starts by sending the status it finds, the
    final one. Whether the first is still in the outbox or delivered already, the shop
    hears of the final state once, under one message id."""
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    services = app.extensions["pps"]
    with receiver() as hook:
        processing_id = submit(api, [draft.draft_hash], hook.url)
        job = job_from_services(services)
        # The retry while the first final notification may still wait in the outbox ...
        run_processing(job, tenant.identifier, processing_id)
        run_processing(job, tenant.identifier, processing_id)
        drain_notifications(app, tenant.identifier)
        # ... and once it was delivered.
        run_processing(job, tenant.identifier, processing_id)
        drain_notifications(app, tenant.identifier)
        requests = list(hook.requests)
    final = status(api, processing_id)
    assert snapshot_states(final) == ["processed"]
    finals = [item for item in requests if item.json() == final]
    assert len(finals) == 1, [item.json() for item in requests]
    assert [snapshot_states(item.json()) for item in requests][-1] == ["processed"]


# RQ's failure callback.
@pytest.mark.parametrize("worker_mode", ["rq"])
def test_a_dead_job_fails_what_is_unfinished_and_says_so(
    app: Flask, api: ApiClient, repo: SqlRepository, tenant: Client, worker_mode: str
) -> None:
    draft = card_draft(repo, tenant, card_template(repo, tenant), "Ada")
    with receiver() as hook:
        processing_id = submit(api, [draft.draft_hash], hook.url)
        job = job_from_services(app.extensions["pps"])
        fail_processing(job, tenant.identifier, processing_id, "Rendering was stopped.")
        drain_notifications(app, tenant.identifier)
        bodies = hook.bodies()
    expected = [
        {"draftId": draft.draft_hash, "state": "failed", "message": "Rendering was stopped."}
    ]
    assert status(api, processing_id)["draftStates"] == expected
    assert [body["draftStates"] for body in bodies] == [expected]


@pytest.mark.parametrize("backoff", [15.0, 0.0])
def test_a_job_keeps_coming_back_after_a_thousand_attempts(
    monkeypatch: pytest.MonkeyPatch, backoff: float
) -> None:
    """A give-up that cannot be written comes back with its attempt counted on (and
    PPS_JOB_RETRIES has no upper bound). Past about 1030 attempts the doubling delay
    overflowed: the failure callback raised, the job was never queued again, and its
    drafts stayed ``pending``. It comes back after the longest delay instead."""
    queued: list[tuple[dict[str, Any], float]] = []
    monkeypatch.setattr(
        retry, "_again", lambda job, connection, meta, delay: queued.append((meta, delay))
    )
    job = SimpleNamespace(
        args=("ShopA", "0" * 32), meta={retry.ATTEMPT: 2000, retry.GIVE_UP: "Given up."}
    )
    settings = Settings(job_retry_backoff=backoff)
    retry.after_outage(job, None, settings, lambda message: None, DATABASE_DOWN)
    assert queued == [
        ({retry.ATTEMPT: 2001, retry.GIVE_UP: "Given up."}, retry.MAX_DELAY if backoff else 0.0)
    ]
