"""Every ``PPS_*`` value pps cannot use stops the start with one line naming the variable."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import TEST_SECRET_KEY
from server_support import pps_script

from pps.platform.settings import SettingsError, load_settings


def _env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"PPS_SECRET_KEY": TEST_SECRET_KEY, "PPS_INSTANCE_PATH": str(tmp_path), **values}


NOT_UTF8 = b"http://shop\xff.example".decode("utf-8", "surrogateescape")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PPS_FILE_LINK_TTL", "99999999999999999999999"),
        ("PPS_NONCE_TTL", "9" * 5000),
        ("PPS_MAX_BODY_BYTES", str(2**31)),
        ("PPS_CLIENT_CACHE_TTL", "nan"),
        ("PPS_CLIENT_CACHE_TTL", "-5"),
        ("PPS_CLIENT_CACHE_TTL", "inf"),
        ("PPS_REDIS_TIMEOUT", "1e300"),
        ("PPS_DATABASE_TIMEOUT", "1e9"),
        ("PPS_NOTIFY_TIMEOUT", "1e308"),
        ("PPS_WEBHOOK_POLL", "100000"),
        ("PPS_DEVELOPMENT", "maybe"),
        ("PPS_NOTIFY_ALLOW_PRIVATE", "enabled"),
        ("PPS_BASE_URL", "http://exa mple"),
        ("PPS_BASE_URL", "http://shop.example:port"),
        ("PPS_BASE_URL", "https://"),
        ("PPS_BASE_URL", "http://[::1"),
        ("PPS_BASE_URL", "https://[print.example]"),
        ("PPS_BASE_URL", "https://shop.example/?a=1"),
        ("PPS_BASE_URL", NOT_UTF8),
        ("PPS_DATABASE_URL", "foo://bar"),
        ("PPS_DATABASE_URL", "garbage"),
        ("PPS_DATABASE_URL", "mysql://db/pps"),
        ("PPS_REDIS_URL", "foo://x"),
        ("PPS_REDIS_URL", "sqlite:///:memory:"),
        ("PPS_REDIS_URL", "redis://127.0.0.1:abc/0"),
        ("PPS_REDIS_URL", "REDIS://127.0.0.1:6379/0"),
        ("PPS_REDIS_URL", "unix://"),
        ("PPS_REDIS_URL", "unix://?db=0"),
        ("PPS_REDIS_URL", "redis://127.0.0.1:99999/0"),
        ("PPS_REDIS_URL", "redis://127.0.0.1:6379/0?db=x"),
        ("PPS_REDIS_URL", "redis://127.0.0.1:6379/zero"),
        ("PPS_REDIS_URL", "rediss://cache.example:6380/0?socket_timeout=soon"),
        ("PPS_X_ACCEL_PREFIX", "_pps_files"),
        ("PPS_INSTANCE_PATH", NOT_UTF8),
        ("PPS_PROCESSING_RETENTION", "3600"),
        ("PPS_PROCESSING_RETENTION", "-1"),
    ],
)
def test_a_value_pps_cannot_use_is_refused_naming_the_variable(
    tmp_path: Path, name: str, value: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(_env(tmp_path, **{name: value}))
    message = str(refused.value)
    assert name in message
    assert "\n" not in message
    assert len(message) < 300


@pytest.mark.parametrize(
    "key",
    [
        " " * 20,
        "<python -c 'import secrets; print(secrets.token_urlsafe(48))'>",
        "<python -c import secrets; print(secrets.token_urlsafe(48))>",
        "a" * 40,
        "abababababababababab",
    ],
)
def test_production_refuses_a_secret_key_that_is_no_real_secret(tmp_path: Path, key: str) -> None:
    with pytest.raises(SettingsError, match="PPS_SECRET_KEY"):
        load_settings(_env(tmp_path, PPS_SECRET_KEY=key))


def test_a_secret_key_that_is_not_utf8_is_refused_without_being_shown(tmp_path: Path) -> None:
    key = b"0123456789abcdef\xffsecret".decode("utf-8", "surrogateescape")
    with pytest.raises(SettingsError, match="PPS_SECRET_KEY") as refused:
        load_settings(_env(tmp_path, PPS_SECRET_KEY=key))
    assert "secret" not in str(refused.value).removeprefix("PPS_SECRET_KEY")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PPS_BASE_URL", "https://print.example/"),
        ("PPS_BASE_URL", "http://127.0.0.1:8000"),
        ("PPS_DATABASE_URL", "sqlite:////tmp/pps.sqlite3"),
        ("PPS_DATABASE_URL", "postgresql+psycopg://pps:pw@db/pps"),
        ("PPS_REDIS_URL", "unix:///run/redis/redis-server.sock?db=0"),
        ("PPS_REDIS_URL", "redis://:pw@127.0.0.1:6379/10"),
        ("PPS_REDIS_URL", "rediss://cache.example"),
        ("PPS_REDIS_URL", "sqlite:///instance/ephemeral.sqlite3"),
        ("PPS_DEVELOPMENT", "off"),
        ("PPS_NOTIFY_ALLOW_PRIVATE", "Yes"),
        ("PPS_CLIENT_CACHE_TTL", "0"),
        ("PPS_X_ACCEL_PREFIX", "/_pps_files"),
        ("PPS_NONCE_TTL", str(2**31 - 1)),
        ("PPS_PROCESSING_RETENTION", "0"),
        ("PPS_PROCESSING_RETENTION", "86400"),
    ],
)
def test_usual_values_are_taken(tmp_path: Path, name: str, value: str) -> None:
    load_settings(_env(tmp_path, **{name: value}))


def test_the_console_script_says_it_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPS_")}
    env.update(_env(tmp_path, PPS_DATABASE_URL="foo://bar"))
    done = subprocess.run(
        [pps_script(), "client", "list"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Error: PPS_DATABASE_URL ")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("content", [b"", b"  \n", b"short", b"\xff\xfe not utf-8 at all"])
def test_development_refuses_a_key_file_that_holds_no_usable_key(
    tmp_path: Path, content: bytes
) -> None:
    (tmp_path / "secret_key").write_bytes(content)
    env = {"PPS_INSTANCE_PATH": str(tmp_path), "PPS_DEVELOPMENT": "1"}
    with pytest.raises(SettingsError, match="PPS_SECRET_KEY is not set and the development key"):
        load_settings(env)


def test_development_generates_a_key_once_and_keeps_it(tmp_path: Path) -> None:
    env = {"PPS_INSTANCE_PATH": str(tmp_path), "PPS_DEVELOPMENT": "1"}
    first = load_settings(env).secret_key
    assert len(first) >= 32
    assert load_settings(env).secret_key == first
