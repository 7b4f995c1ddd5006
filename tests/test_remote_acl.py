"""Remote ACL: for a draft with ``remoteAcl``, pps asks the shop (a real HTTP server on
127.0.0.1 run here) before opening it in the editor, saving, finishing and handing out
its files, with the request shape the PHP SDK's ``src/Acl/Handler.php`` answers, and
obeys ``allowAction``; a shop that denies, is down or is slow gets a 403 (an HTML page in
the editor, JSON for file endpoints)."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import free_port
from flask import Flask
from flask.testing import FlaskClient
from joserfc import jwt
from joserfc.jwk import OctKey
from joserfc.jws import JWSRegistry
from loopback_http import serve_on_loopback
from processing_support import card_draft, card_template
from window_support import in_one_window

from app import create_app
from pps.acl.limit import QUESTIONS_PER_MINUTE
from pps.acl.remote import ACTIONS, ask
from pps.editor.autosave_web import AUTOSAVES_PER_SECOND
from pps.editor.throttle import FORM_SAVE_BURST, FORM_SAVES
from pps.platform.models import Client, Draft
from pps.platform.repository.tables import drafts

ACL_TIMEOUT = 0.5


class Shop:
    """The shop's ACL endpoint: answers like ``Acl\\Handler`` with the actions in ``allow``
    allowed, after ``delay`` seconds."""

    def __init__(self, allow: set[str], delay: float = 0.0) -> None:
        self.allow = allow
        self.delay = delay
        self.questions: list[dict[str, Any]] = []
        shop = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                shop.questions.append(json.loads(json.dumps(body)))
                time.sleep(shop.delay)
                actions = body["actions"]
                for action in actions:
                    action["allowAction"] = action["action"] in shop.allow
                data = json.dumps(actions).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # pps gave up waiting

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server, self.thread = serve_on_loopback(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/printformer/acl"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def acl_app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app({**app_config, "acl_timeout": ACL_TIMEOUT})
    yield application
    application.extensions["pps"].close()


@pytest.fixture
def setup(acl_app: Flask) -> tuple[Any, Client, Draft]:
    services = acl_app.extensions["pps"]
    client = services.repository.create_client("Shop")
    draft = card_draft(services.repository, client, card_template(services.repository, client), "A")
    with services.repository.engine.begin() as conn:
        conn.execute(
            drafts.update().where(drafts.c.draft_hash == draft.draft_hash).values(remote_acl=True)
        )
    return services, client, draft


def sign(key: str, claims: dict[str, Any], header_jti: bool = False) -> str:
    header: dict[str, Any] = {"alg": "HS256", "typ": "JWT"}
    if header_jti:
        header["jti"] = uuid.uuid4().hex
    registry = JWSRegistry(algorithms=["HS256"], strict_check_header=False)
    return jwt.encode(header, claims, OctKey.import_key(key), registry=registry)


def log_in(browser: FlaskClient, client: Client, draft: Draft) -> None:
    claims = {"client": client.identifier, "user": draft.user_identifier, "iat": time.time()}
    response = browser.get("/auth", query_string={"jwt": sign(client.api_key, claims, True)})
    assert response.status_code in (200, 302), response.get_data(as_text=True)


def logged_in(app: Flask, client: Client, draft: Draft) -> FlaskClient:
    """A browser logged in as the draft's user."""
    browser = app.test_client()
    log_in(browser, client, draft)
    return browser


@contextmanager
def shop_for(services: Any, client: Client, allow: set[str], delay: float = 0.0) -> Iterator[Shop]:
    """A shop answering pps's access questions, named as the client's ACL URL until the end
    of the block."""
    shop = Shop(allow=allow, delay=delay)
    try:
        services.integrations.set_acl_url(client.identifier, shop.url)
        yield shop
    finally:
        shop.close()


def fetch_print(browser: FlaskClient, client: Client, draft: Draft) -> Any:
    """As the Magento module asks for files: client, iat, exp."""
    now = int(time.time())
    token = sign(client.api_key, {"client": client.identifier, "iat": now, "exp": now + 300})
    return browser.get(
        f"/api-ext/files/draft/{draft.draft_hash}/print", query_string={"jwt": token}
    )


def test_the_question_has_the_sdk_handlers_shape() -> None:
    shop = Shop(allow={"draft.save"})
    try:
        decision = ask(shop.url, "draft.save", user_identifier="U1", draft_hash="h" * 32, timeout=2)
        assert decision.allowed
        assert shop.questions == [
            {
                "actions": [
                    {
                        "action": "draft.save",
                        "userIdentifier": "U1",
                        "entityType": "draft",
                        "entityIdentifier": "h" * 32,
                    }
                ]
            }
        ]
        assert not ask(
            shop.url, "draft.finish", user_identifier="U1", draft_hash="h", timeout=2
        ).allowed
    finally:
        shop.close()
    assert set(ACTIONS) == {"draft.editor.open", "draft.save", "draft.finish", "draft.files.fetch"}


def test_allowed_actions_proceed(setup: tuple[Any, Client, Draft], acl_app: Flask) -> None:
    services, client, draft = setup
    with shop_for(services, client, allow=set(ACTIONS)) as shop:
        browser = logged_in(acl_app, client, draft)
        page = browser.get(f"/editor/{draft.draft_hash}/edit")
        assert page.status_code == 200
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
        assert token is not None
        saved = browser.post(
            f"/editor/{draft.draft_hash}/edit",
            data={"csrf_token": token.group(1), "v:name": "Grace"},
        )
        assert saved.status_code == 303, saved.get_data(as_text=True)
        finished = browser.post(
            f"/editor/{draft.draft_hash}/finish",
            data={"csrf_token": token.group(1), "v:name": "Grace"},
        )
        assert finished.status_code == 303
        assert fetch_print(acl_app.test_client(), client, draft).status_code == 302
        asked = [q["actions"][0]["action"] for q in shop.questions]
        assert asked == [
            "draft.editor.open",
            "draft.save",
            "draft.finish",
            "draft.files.fetch",
        ]
        assert {q["actions"][0]["userIdentifier"] for q in shop.questions} == {
            draft.user_identifier
        }
        assert (
            services.repository.get_draft(client.identifier, draft.draft_hash).state == "finished"
        )


def test_denied_actions_are_403_and_change_nothing(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    services, client, draft = setup
    with shop_for(services, client, allow={"draft.editor.open"}) as shop:
        browser = logged_in(acl_app, client, draft)
        page = browser.get(f"/editor/{draft.draft_hash}/edit")
        assert page.status_code == 200
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
        assert token is not None
        saved = browser.post(
            f"/editor/{draft.draft_hash}/edit",
            data={"csrf_token": token.group(1), "v:name": "Mallory"},
        )
        assert saved.status_code == 403
        assert saved.mimetype == "text/html"
        assert "draft.save" in saved.get_data(as_text=True)
        assert services.repository.get_draft(client.identifier, draft.draft_hash).values == {}
        files = fetch_print(acl_app.test_client(), client, draft)
        assert files.status_code == 403
        body = files.get_json()
        assert "draft.files.fetch" in body["message"] and "does not allow" in body["message"]
        shop.allow = set()
        opened = browser.get(f"/editor/{draft.draft_hash}/preview")
        assert opened.status_code == 403 and opened.mimetype == "text/html"


LEAKS = ("Errno", "ConnectionRefusedError", "127.0.0.1", "169.254")


def test_a_shop_that_is_down_denies_in_plain_words(
    setup: tuple[Any, Client, Draft], acl_app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    """The shopper's page and the API error say the shop's check could not be reached and
    why in plain words; the network error's text and the address go to the log only, with
    the request id."""
    caplog.set_level("WARNING", logger="pps")
    services, client, draft = setup
    services.integrations.set_acl_url(client.identifier, f"http://127.0.0.1:{free_port()}/acl")
    response = fetch_print(acl_app.test_client(), client, draft)
    assert response.status_code == 403
    message = response.get_json()["message"]
    assert "could not be reached (the connection was refused)" in message
    assert not [leak for leak in LEAKS if leak in message], message
    browser = logged_in(acl_app, client, draft)
    page = browser.get(f"/editor/{draft.draft_hash}/edit")
    text = page.get_data(as_text=True)
    assert page.status_code == 403 and "could not be reached" in text
    assert not [leak for leak in LEAKS if leak in text]
    logged = [r.getMessage() for r in caplog.records if r.name == "pps"]
    for answer in (response, page):
        rid = answer.headers["X-Request-ID"]
        line = next(m for m in logged if rid in m)
        assert "ConnectionRefusedError" in line and "127.0.0.1" in line


def test_a_refused_acl_address_is_not_shown(
    setup: tuple[Any, Client, Draft], acl_app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    """An address the rules refuse is named in the log, not in the answer (no connection is
    made: the address is refused before)."""
    caplog.set_level("WARNING", logger="pps")
    services, client, draft = setup
    services.integrations.set_acl_url(client.identifier, "http://169.254.169.254/acl")
    response = fetch_print(acl_app.test_client(), client, draft)
    assert response.status_code == 403
    message = response.get_json()["message"]
    assert "URL is refused" in message and "169.254" not in message
    rid = response.headers["X-Request-ID"]
    assert any(
        rid in r.getMessage() and "169.254.169.254" in r.getMessage() for r in caplog.records
    )


def test_a_slow_shop_denies_within_the_deadline(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    services, client, draft = setup
    with shop_for(services, client, allow=set(ACTIONS), delay=3.0):
        started = time.monotonic()
        response = fetch_print(acl_app.test_client(), client, draft)
        elapsed = time.monotonic() - started
        assert response.status_code == 403
        assert f"did not answer within {ACL_TIMEOUT:g} s" in response.get_json()["message"]
        assert elapsed < ACL_TIMEOUT + 1.0, elapsed


@contextmanager
def answering(body: bytes) -> Iterator[str]:
    """An ACL endpoint that answers every question with ``body`` (200); its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/acl"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_an_answer_nested_too_deeply_denies_with_a_403(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    """JSON deeper than the decoder can recurse is "not JSON", a denial, not a 500."""
    services, client, draft = setup
    with answering(b"[" * 100_000) as url:
        decision = ask(
            url, "draft.save", user_identifier="u", draft_hash=draft.draft_hash, timeout=2.0
        )
        assert not decision.allowed and "other than JSON" in decision.reason
        services.integrations.set_acl_url(client.identifier, url)
        response = fetch_print(acl_app.test_client(), client, draft)
        assert response.status_code == 403
        assert "other than JSON" in response.get_json()["message"]


def test_no_acl_url_denies_and_drafts_without_the_flag_are_not_asked(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    services, client, draft = setup
    response = fetch_print(acl_app.test_client(), client, draft)
    assert response.status_code == 403
    assert "no access control URL" in response.get_json()["message"]
    plain = card_draft(
        services.repository,
        client,
        services.repository.get_template(client.identifier, draft.template_identifier),
        "B",
    )
    with shop_for(services, client, allow=set()) as shop:
        assert fetch_print(acl_app.test_client(), client, plain).status_code == 302
        assert shop.questions == []


def test_a_group_member_is_asked_about_as_themself(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    """A member of the draft's user group may edit it (pps.groups); the shop is asked about
    the member who acts, not the draft's owner, and a denial stops the member too."""
    services, client, draft = setup
    repository = services.repository
    group = repository.create_user_group(client.identifier)
    repository.update_draft(
        client.identifier, draft.draft_hash, user_group_identifier=group.identifier
    )
    member = repository.create_user(client.identifier, {"user_group_identifier": group.identifier})
    assert member.user_group_identifier == group.identifier
    with shop_for(services, client, allow={"draft.editor.open"}) as shop:
        browser = acl_app.test_client()
        claims = {"client": client.identifier, "user": member.identifier, "iat": time.time()}
        response = browser.get("/auth", query_string={"jwt": sign(client.api_key, claims, True)})
        assert response.status_code in (200, 302), response.get_data(as_text=True)
        page = browser.get(f"/editor/{draft.draft_hash}/edit")
        assert page.status_code == 200
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
        assert token is not None
        saved = browser.post(
            f"/editor/{draft.draft_hash}/edit",
            data={"csrf_token": token.group(1), "v:name": "Member"},
        )
        assert saved.status_code == 403
        assert repository.get_draft(client.identifier, draft.draft_hash).values == {}
        assert [
            (q["actions"][0]["action"], q["actions"][0]["userIdentifier"]) for q in shop.questions
        ] == [
            ("draft.editor.open", member.identifier),
            ("draft.save", member.identifier),
        ]


def test_a_post_without_its_csrf_token_never_asks_the_shop(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    """A cross-site form post is refused by its missing token before pps asks the shop
    anything in the customer's name."""
    services, client, draft = setup
    with shop_for(services, client, allow=set(ACTIONS)) as shop:
        browser = logged_in(acl_app, client, draft)
        assert browser.get(f"/editor/{draft.draft_hash}/edit").status_code == 200
        shop.questions.clear()
        for step in ("edit", "finish", "upload"):
            refused = browser.post(
                f"/editor/{draft.draft_hash}/{step}", data={"v:name": "Mallory", "upload": "x"}
            )
            assert refused.status_code == 400, (step, refused.get_data(as_text=True))
            forged = browser.post(
                f"/editor/{draft.draft_hash}/{step}",
                data={"csrf_token": "x" * 43, "v:name": "Mallory", "upload": "x"},
            )
            assert forged.status_code == 403, step
        assert shop.questions == []
        assert services.repository.get_draft(client.identifier, draft.draft_hash).values == {}


def test_refused_form_posts_count_against_the_limit_before_the_shop_is_asked(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    """A script posting forms that are refused (a stale version, a required value left
    empty) would otherwise make pps ask the shop without end: past the form's limit every
    post is a 429 and the shop hears nothing of it."""
    services, client, draft = setup
    with shop_for(services, client, allow=set(ACTIONS)) as shop:
        browser = logged_in(acl_app, client, draft)
        page = browser.get(f"/editor/{draft.draft_hash}/edit")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
        assert page.status_code == 200 and token is not None
        stale = str(draft.version + 1)
        posts = [  # edit, finish and the upload button without a file, each refused
            ("edit", {"v:name": ""}),
            ("finish", {"v:name": "Mallory", "base_version": stale}),
            ("upload", {"upload": "logo", "v:name": ""}),
        ]

        def burst() -> list[Any]:
            answers = []
            for index in range(FORM_SAVE_BURST + 1):
                step, fields = posts[index % len(posts)]
                before = len(shop.questions)
                answer = browser.post(
                    f"/editor/{draft.draft_hash}/{step}",
                    data={"csrf_token": token.group(1), **fields},
                )
                answers.append(answer)
                # Each answer but a 429 asked the shop once; a 429 asked nothing.
                assert len(shop.questions) == before + (answer.status_code != 429), step
            return answers

        # The burst is counted in windows of two seconds of the clock: all in one.
        answers = in_one_window(FORM_SAVES.burst_seconds, burst)
        statuses = [answer.status_code for answer in answers]
        assert statuses[-1] == 429, statuses
        assert set(statuses[:-1]) == {409, 422}, statuses
        assert 1 <= int(answers[-1].headers["Retry-After"]) <= FORM_SAVES.burst_seconds
        assert services.repository.get_draft(client.identifier, draft.draft_hash).values == {}


def test_autosaves_past_their_limit_never_ask_the_shop(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    """Autosaves are held to a few a second; the ones refused for it ask the shop nothing
    (the limit comes before the shop's check, as on the form posts)."""
    services, client, draft = setup
    with shop_for(services, client, allow=set(ACTIONS)) as shop:
        browser = logged_in(acl_app, client, draft)
        page = browser.get(f"/editor/{draft.draft_hash}/edit")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
        assert page.status_code == 200 and token is not None

        def burst() -> list[int]:
            statuses = []
            for _ in range(AUTOSAVES_PER_SECOND + 2):
                before = len(shop.questions)
                answer = browser.post(
                    f"/editor/{draft.draft_hash}/autosave",
                    json={"baseVersion": draft.version + 1, "values": {}},  # stale: a 409
                    headers={"X-CSRF-Token": token.group(1)},
                )
                statuses.append(answer.status_code)
                assert len(shop.questions) == before + (answer.status_code != 429), statuses
            return statuses

        # Counted per second of the clock: all in one, the ones past the limit refused.
        assert in_one_window(1, burst) == [409] * AUTOSAVES_PER_SECOND + [429, 429]


def test_a_login_asks_the_shop_at_most_the_limit_a_minute(
    setup: tuple[Any, Client, Draft], acl_app: Flask
) -> None:
    """Reloading the editor is a question to the shop each time: past the login's limit a
    page is a 429 (HTML, with Retry-After) and the shop hears nothing more; the same login's
    file URLs (JSON) are held by the same count."""
    services, client, draft = setup
    with shop_for(services, client, allow=set(ACTIONS)) as shop:
        browser = logged_in(acl_app, client, draft)
        statuses = []
        # Two minute windows at most while this runs: the limit is passed within 2n + 1.
        for _ in range(2 * QUESTIONS_PER_MINUTE + 1):
            before = len(shop.questions)
            page = browser.get(f"/editor/{draft.draft_hash}/edit")
            statuses.append(page.status_code)
            assert len(shop.questions) == before + (page.status_code != 429), statuses[-3:]
            if page.status_code == 429:
                break
        assert statuses[-1] == 429 and set(statuses[:-1]) == {200}, set(statuses)
        assert len(statuses) > QUESTIONS_PER_MINUTE
        assert page.mimetype == "text/html"
        assert 1 <= int(page.headers["Retry-After"]) <= 60
        before = len(shop.questions)
        files = fetch_print(acl_app.test_client(), client, draft)
        if files.status_code == 429:  # else a new minute began meanwhile
            assert files.mimetype == "application/json"
            assert "access control" in files.get_json()["message"]
            assert 1 <= int(files.headers["Retry-After"]) <= 60
            assert len(shop.questions) == before
