"""The session cookie: Flask's, signed and timestamped, refused when tampered with or too
old, and opened only on the paths that use it."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest
from flask import Flask, session
from itsdangerous import URLSafeTimedSerializer
from itsdangerous.encoding import base64_encode

from pps.web.session import PpsSessionInterface, Sessionless


@pytest.fixture
def small_app() -> Flask:
    app = Flask(__name__)
    app.secret_key = "test-secret-key-0123456789abcdef"
    app.session_interface = PpsSessionInterface()

    @app.get("/editor/set")
    def set_value() -> str:
        session.permanent = True
        session["user"] = "u1"
        session["editor"] = {"h" * 32: {"callbacks": {"callback": "https://shop.example/x"}}}
        return "ok"

    @app.get("/editor/get")
    def get_value() -> str:
        return str(session.get("user"))

    @app.get("/auth")
    def login() -> str:
        seen = str(session.get("user"))
        session["user"] = "fresh"
        return seen

    @app.get("/api-ext/read")
    def api_read() -> str:
        return str(session.get("user"))

    @app.get("/api-ext/write")
    def api_write() -> str:
        session["user"] = "nope"
        return "written"

    return app


def cookie_value(app: Flask) -> str:
    client = app.test_client()
    client.get("/editor/set")
    cookie = client.get_cookie("session")
    assert cookie is not None
    return cookie.value


def test_round_trip(small_app: Flask) -> None:
    value = cookie_value(small_app)
    client = small_app.test_client()
    client.set_cookie("session", value)
    assert client.get("/editor/get").text == "u1"


def test_signed_by_flask_with_hmac_sha256_and_the_pps_salt(small_app: Flask) -> None:
    """What Flask's own interface writes with those three settings, and nothing else."""
    value = cookie_value(small_app)
    reference = URLSafeTimedSerializer(
        "test-secret-key-0123456789abcdef",
        salt="pps-session",
        serializer=PpsSessionInterface.serializer,
        signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256},
    )
    data = reference.loads(value, max_age=60)
    assert data["user"] == "u1"
    assert data["_permanent"] is True


def test_cookies_written_with_flasks_tagged_json_still_load(small_app: Flask) -> None:
    """Cookies of the releases that used Flask's default serializer: for the JSON values pps
    keeps, tagged JSON is plain JSON."""
    from flask.sessions import session_json_serializer

    tagged = URLSafeTimedSerializer(
        "test-secret-key-0123456789abcdef",
        salt="pps-session",
        serializer=session_json_serializer,
        signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256},
    )
    data = {"user": "u4", "_permanent": True, "editor": {"h" * 32: {"callbacks": {}}}}
    with small_app.app_context():
        value = tagged.dumps(data)
        ours = PpsSessionInterface.serializer.dumps(data)
        assert json.loads(ours) == json.loads(session_json_serializer.dumps(data)) == data
    client = small_app.test_client()
    client.set_cookie("session", value)
    assert client.get("/editor/get").text == "u4"


def test_tampered_cookie_is_an_empty_session(small_app: Flask) -> None:
    value = cookie_value(small_app)
    payload, rest = value.rsplit(".", 2)[0], ".".join(value.rsplit(".", 2)[1:])
    forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + rest
    client = small_app.test_client()
    client.set_cookie("session", forged)
    assert client.get("/editor/get").text == "None"


def test_cookie_older_than_the_lifetime_is_refused(small_app: Flask) -> None:
    small_app.permanent_session_lifetime = 1
    value = cookie_value(small_app)
    time.sleep(2.1)
    client = small_app.test_client()
    client.set_cookie("session", value)
    assert client.get("/editor/get").text == "None"


def test_cookies_of_the_earlier_writer_still_load(small_app: Flask) -> None:
    """Plain compact JSON (never compressed) and zlib-compressed cookies, both signed with
    the same key, salt and digest, as pps wrote them before it used Flask's writer."""
    earlier = URLSafeTimedSerializer(
        "test-secret-key-0123456789abcdef",
        salt="pps-session",
        serializer=json,
        signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256},
    )
    compressed = earlier.dumps({"user": "u2", "pad": "x" * 400})
    assert compressed.startswith(".")
    plain_json = json.dumps({"user": "u3", "_permanent": True}, separators=(",", ":"))
    plain = earlier.make_signer().sign(base64_encode(plain_json)).decode()
    assert not plain.startswith(".")
    for value, user in ((compressed, "u2"), (plain, "u3")):
        client = small_app.test_client()
        client.set_cookie("session", value)
        assert client.get("/editor/get").text == user


def test_the_signing_serializer_is_built_once_per_app_and_key(small_app: Flask) -> None:
    interface = small_app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    first = interface.get_signing_serializer(small_app)
    assert first is not None
    assert interface.get_signing_serializer(small_app) is first
    value = cookie_value(small_app)
    small_app.secret_key = "another-secret-key-0123456789abcd"
    second = interface.get_signing_serializer(small_app)
    assert second is not first
    client = small_app.test_client()
    client.set_cookie("session", value)
    assert client.get("/editor/get").text == "None"  # the old key no longer signs


def test_paths_without_a_session_never_read_or_write_it(small_app: Flask) -> None:
    """A logged-in browser (a permanent session, refreshed on every request where one is
    open) calling the API: no cookie read, no Set-Cookie, no Vary: Cookie."""
    client = small_app.test_client()
    client.get("/editor/set")
    refreshed = client.get("/editor/get")
    assert "Set-Cookie" in refreshed.headers  # where a session is open, Flask refreshes it
    response = client.get("/api-ext/read")
    assert response.text == "None"
    assert "Set-Cookie" not in response.headers
    assert "Vary" not in response.headers
    small_app.testing = True  # let the view's exception through
    with pytest.raises(RuntimeError, match="no session"):
        client.get("/api-ext/write")


def test_a_login_starts_from_an_empty_session(small_app: Flask) -> None:
    client = small_app.test_client()
    client.get("/editor/set")
    response = client.get("/auth")
    assert response.text == "None"  # the earlier session was not read
    assert "Set-Cookie" in response.headers
    assert client.get("/editor/get").text == "fresh"


def test_the_null_session_of_a_sessionless_path_reads_as_empty() -> None:
    empty: Any = Sessionless()
    assert empty.get("user") is None and not empty
    with pytest.raises(RuntimeError):
        empty["user"] = "x"
