"""The session cookie: signed, timestamped, refused when tampered with or too old."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from flask import Flask, session
from itsdangerous import Serializer, URLSafeTimedSerializer
from itsdangerous.encoding import base64_encode, int_to_bytes
from werkzeug.http import dump_cookie

from pps.web.session import CompactJson, PpsSessionInterface, UncompressedSerializer


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


def test_payload_and_timestamp_are_encoded_as_itsdangerous_encodes_them(small_app: Flask) -> None:
    """Every length of payload (so every base64 padding) and of timestamp, against
    itsdangerous' own ``base64_encode``."""
    interface = small_app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    ours = interface.get_signing_serializer(small_app)
    assert isinstance(ours, UncompressedSerializer)
    for length in range(0, 40):
        data = {"user": "u" * length, "é": [1, 2.5, None]}
        assert ours.dump_payload(data) == base64_encode(CompactJson.dumps(data).encode())
    for timestamp in (0, 1, 255, 256, 65_536, 1_795_450_951, 2**37 + 7):
        payload, stamp, mac = ours.dumps_at({"user": "u"}, timestamp).split(".")
        assert stamp.encode() == base64_encode(int_to_bytes(timestamp))
        assert ours.loads(f"{payload}.{stamp}.{mac}", return_timestamp=True)[1] == (
            datetime.fromtimestamp(timestamp, UTC)
        )


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


def reference_cookie(app: Flask, data: dict[str, object], now: int) -> str:
    """``Set-Cookie`` as Flask's own ``save_session`` path builds it, signed at ``now``."""
    interface = app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    serializer = interface.get_signing_serializer(app)
    assert serializer is not None
    with freeze_time(now):
        value = Serializer.dumps(serializer, {**data, "_permanent": True})
    return dump_cookie(
        interface.get_cookie_name(app),
        value,
        expires=datetime.fromtimestamp(now, UTC) + app.permanent_session_lifetime,
        path=interface.get_cookie_path(app),
        domain=interface.get_cookie_domain(app),
        secure=interface.get_cookie_secure(app),
        httponly=interface.get_cookie_httponly(app),
        samesite=interface.get_cookie_samesite(app),
        partitioned=interface.get_cookie_partitioned(app),
        max_size=app.config["MAX_COOKIE_SIZE"],
    )


@contextmanager
def freeze_time(now: float) -> Iterator[None]:
    """``time.time()`` answers ``now`` (itsdangerous and pps both read it)."""
    real = time.time
    time.time = lambda: now
    try:
        yield
    finally:
        time.time = real


@pytest.mark.parametrize(
    "config",
    [
        {},
        {
            "SESSION_COOKIE_NAME": "pps_session",
            "SESSION_COOKIE_SECURE": True,
            "SESSION_COOKIE_SAMESITE": "Strict",
            "SESSION_COOKIE_DOMAIN": "print.example",
            "SESSION_COOKIE_PATH": "/pps",
            "SESSION_COOKIE_PARTITIONED": True,
        },
    ],
    ids=["defaults", "every attribute"],
)
def test_fresh_session_cookie_is_what_flask_writes(
    small_app: Flask, config: dict[str, object]
) -> None:
    """The hot route's ``Set-Cookie`` is byte for byte Werkzeug's, second after second."""
    small_app.config.update(config)
    small_app.permanent_session_lifetime = 3600
    interface = small_app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    data = {"user": "u4", "editor": {"h": {"callbacks": {"callback": "https://shop.example/é"}}}}
    start = int(time.time())
    for now in (start, start + 0.999, start + 1, start + 86_400):  # the template changes
        with freeze_time(now):
            fresh = interface.fresh_session_cookie(small_app, data)
        assert fresh == reference_cookie(small_app, data, int(now))
    small_app.permanent_session_lifetime = 60  # a new lifetime is seen at once
    with freeze_time(start + 86_400):
        fresh = interface.fresh_session_cookie(small_app, data)
    assert fresh == reference_cookie(small_app, data, start + 86_400)


def test_oversized_fresh_session_cookie_warns_as_flask_does(small_app: Flask) -> None:
    interface = small_app.session_interface
    assert isinstance(interface, PpsSessionInterface)
    big = {"pad": "x" * 5000}
    with pytest.warns(UserWarning, match="cookie is too large"):
        fresh = interface.fresh_session_cookie(small_app, big)
    assert fresh.startswith("session=") and len(fresh) > 5000
