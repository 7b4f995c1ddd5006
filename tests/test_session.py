"""The session cookie: signed, timestamped, refused when tampered with or too old."""

from __future__ import annotations

import time

import pytest
from flask import Flask, session
from itsdangerous import Serializer, URLSafeTimedSerializer

from pps.web.session import CompactJson, PpsSessionInterface


@pytest.fixture
def small_app() -> Flask:
    app = Flask(__name__)
    app.secret_key = "test-secret-key-0123456789abcdef"
    app.session_interface = PpsSessionInterface()

    @app.get("/set")
    def set_value() -> str:
        session.permanent = True
        session["user"] = "u1"
        session["editor"] = {"h" * 32: {"callbacks": {"callback": "https://shop.example/x"}}}
        return "ok"

    @app.get("/get")
    def get_value() -> str:
        return str(session.get("user"))

    return app


def cookie_value(app: Flask) -> str:
    client = app.test_client()
    client.get("/set")
    cookie = client.get_cookie("session")
    assert cookie is not None
    return cookie.value


def test_round_trip_and_no_compression(small_app: Flask) -> None:
    value = cookie_value(small_app)
    assert not value.startswith(".")  # never zlib-compressed
    client = small_app.test_client()
    client.set_cookie("session", value)
    assert client.get("/get").text == "u1"


def test_tampered_cookie_is_an_empty_session(small_app: Flask) -> None:
    value = cookie_value(small_app)
    payload, rest = value.split(".", 1)
    forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + rest
    client = small_app.test_client()
    client.set_cookie("session", forged)
    assert client.get("/get").text == "None"


def test_cookie_older_than_the_lifetime_is_refused(small_app: Flask) -> None:
    small_app.permanent_session_lifetime = 1
    value = cookie_value(small_app)
    time.sleep(2.1)
    client = small_app.test_client()
    client.set_cookie("session", value)
    assert client.get("/get").text == "None"


def test_compressed_cookies_still_load(small_app: Flask) -> None:
    """A cookie written with zlib compression (itsdangerous' default) is still accepted."""
    interface = PpsSessionInterface()
    serializer = URLSafeTimedSerializer(
        small_app.secret_key,  # type: ignore[arg-type]
        salt=interface.salt,
        serializer=CompactJson(),
        signer_kwargs={"key_derivation": "hmac", "digest_method": interface.digest_method},
    )
    value = serializer.dumps({"user": "u2", "pad": "x" * 400})
    assert value.startswith(".")
    client = small_app.test_client()
    client.set_cookie("session", value)
    assert client.get("/get").text == "u2"


def test_cookies_are_signed_exactly_as_itsdangerous_signs_them(small_app: Flask) -> None:
    """The session serializer's own signing writes byte for byte what itsdangerous writes."""
    interface = small_app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    ours = interface.get_signing_serializer(small_app)
    assert ours is not None
    data = {"user": "u3", "editor": {"h": {"callbacks": {"callback": "https://shop.example/é"}}}}
    generic = Serializer.dumps  # itsdangerous' own path: a fresh signer, key derived per call
    for _ in range(5):  # both within one second, so both carry the same timestamp
        second = int(time.time())
        fast, reference = ours.dumps(data), generic(ours, data)
        if int(time.time()) == second:
            break
    assert fast == reference
    assert ours.loads(fast, max_age=60) == data
    # A different secret key gives a different signature (the key is really used).
    other = PpsSessionInterface()
    stranger = Flask(__name__)
    stranger.secret_key = "another-secret-key-0123456789abcd"
    signed_elsewhere = other.get_signing_serializer(stranger)
    assert signed_elsewhere is not None
    assert signed_elsewhere.dumps(data).rsplit(".", 1)[1] != fast.rsplit(".", 1)[1]
