"""What an operator sees when pps cannot start: one line naming the setting, never a
traceback, and a server that stops instead of listening without workers."""

from __future__ import annotations

import os
import runpy
import subprocess
from pathlib import Path

import pytest
from conftest import TEST_SECRET_KEY, free_port
from server_support import BIN, GUNICORN_CONF, ROOT, pps_script

from app import create_app
from pps.platform.settings import SettingsError


def _gunicorn(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """gunicorn with the deploy config, expected to stop by itself."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    env.update(
        PPS_BIND=f"127.0.0.1:{free_port()}",
        PPS_SECRET_KEY=TEST_SECRET_KEY,
        PPS_INSTANCE_PATH=str(tmp_path / "instance"),
        PPS_WORKERS="1",
    )
    env.update(settings)
    proc = subprocess.Popen(
        [str(BIN / "gunicorn"), "-c", str(GUNICORN_CONF), "wsgi:app"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"gunicorn kept running:\n{out}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def test_gunicorn_stops_with_one_line_on_a_bad_setting(tmp_path: Path) -> None:
    done = _gunicorn(tmp_path, PPS_SECRET_KEY="short")
    assert done.returncode == 4, done.stdout  # gunicorn: "App failed to load."
    assert "pps: PPS_SECRET_KEY must be at least 16 characters long" in done.stdout
    assert "Traceback" not in done.stdout


def test_gunicorn_with_many_workers_stops_in_one_line_every_time(tmp_path: Path) -> None:
    """The master checks the settings before it forks: when five workers failed to load at
    once, the master itself sometimes printed a traceback of its HaltServer and exited 1."""
    for _ in range(5):
        done = _gunicorn(tmp_path, PPS_SECRET_KEY="short", PPS_WORKERS="5")
        assert done.returncode == 4, done.stdout
        assert done.stdout.count("PPS_SECRET_KEY") == 1, done.stdout
        assert "pps: PPS_SECRET_KEY must be at least 16 characters long" in done.stdout
        assert "Traceback" not in done.stdout
        assert "Booting worker" not in done.stdout  # no worker was started to fail


@pytest.mark.parametrize(("name", "value"), [("PPS_WORKERS", "0"), ("PPS_THREADS", "many")])
def test_gunicorn_refuses_a_server_setting_it_cannot_use(
    tmp_path: Path, name: str, value: str
) -> None:
    done = _gunicorn(tmp_path, **{name: value})
    assert done.returncode == 1, done.stdout
    assert f"pps: {name} must be a whole number of at least 1, got {value!r}" in done.stdout
    assert "Traceback" not in done.stdout


@pytest.mark.parametrize("setting", ["instance_path", "files_dir"])
def test_an_instance_or_files_folder_that_cannot_be_made_is_named(
    tmp_path: Path, setting: str
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for path in (a_file, a_file / "below"):
        config = {"secret_key": TEST_SECRET_KEY, "instance_path": tmp_path / "instance"}
        config[setting] = path
        with pytest.raises(SettingsError) as refused:
            create_app(config)
        name = "PPS_INSTANCE_PATH" if setting == "instance_path" else "PPS_FILES_DIR"
        assert str(refused.value).startswith(f"{name}: "), refused.value
        assert str(a_file) in str(refused.value)


def test_gunicorn_stops_on_a_sqlite_database_whose_folder_is_missing(tmp_path: Path) -> None:
    # It started, and then every request answered 503: SQLite could not open the file.
    folder = tmp_path / "missing" / "dir"
    done = _gunicorn(tmp_path, PPS_DATABASE_URL=f"sqlite:///{folder / 'x.db'}")
    assert done.returncode == 4, done.stdout
    assert (
        f"pps: PPS_DATABASE_URL: the folder {str(folder)!r} of the SQLite database does not "
        "exist; create it or correct the URL"
    ) in done.stdout
    assert "Traceback" not in done.stdout


def test_db_upgrade_says_in_one_line_that_the_database_folder_is_missing(
    tmp_path: Path,
) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    folder = tmp_path / "missing" / "dir"
    env.update(
        PPS_SECRET_KEY=TEST_SECRET_KEY,
        PPS_INSTANCE_PATH=str(tmp_path / "instance"),
        PPS_DATABASE_URL=f"sqlite:///{folder / 'x.db'}",
    )
    done = subprocess.run(
        [pps_script(), "db", "upgrade"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"Error: PPS_DATABASE_URL: the folder {str(folder)!r} of the SQLite database does not "
        "exist; create it or correct the URL\n"
    )
    assert not folder.exists()  # a mistyped path does not become a new, empty database


def test_a_sqlite_database_folder_that_is_a_file_is_named(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    config = {
        "secret_key": TEST_SECRET_KEY,
        "instance_path": tmp_path / "instance",
        "database_url": f"sqlite:///{a_file / 'x.db'}",
    }
    with pytest.raises(SettingsError) as refused:
        create_app(config)
    assert str(refused.value) == (
        f"PPS_DATABASE_URL: the folder {str(a_file)!r} of the SQLite database is not a "
        "folder; correct the URL"
    )


def test_flask_cli_says_a_bad_setting_in_one_line(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    env.update(PPS_SECRET_KEY="short", PPS_INSTANCE_PATH=str(tmp_path))
    done = subprocess.run(
        [str(BIN / "flask"), "--app", "app", "pps", "client", "list"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == "Error: PPS_SECRET_KEY must be at least 16 characters long\n"


def _config(monkeypatch: pytest.MonkeyPatch, **settings: str) -> dict[str, object]:
    """deploy/gunicorn.conf.py's values under ``settings``, read the way gunicorn reads it."""
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(GUNICORN_CONF))


@pytest.mark.parametrize("value", ["", " ", ","])
def test_an_empty_bind_listens_on_loopback_only(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # gunicorn read an empty address as 0.0.0.0:8000: every interface.
    assert _config(monkeypatch, PPS_BIND=value)["bind"] == ["127.0.0.1:8000"]


def test_binds_and_log_level_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(monkeypatch, PPS_BIND="127.0.0.1:9001, [::1]:9001", PPS_LOG_LEVEL="")
    assert config["bind"] == ["127.0.0.1:9001", "[::1]:9001"]
    assert config["loglevel"] == "info"


def test_an_unknown_log_level_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit, match="PPS_LOG_LEVEL must be one of"):
        _config(monkeypatch, PPS_LOG_LEVEL="verbose")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("127.0.0.1:99999", "'127.0.0.1:99999'"),
        ("127.0.0.1:8000,[::1]:65536", "'[::1]:65536'"),
        ("127.0.0.1:-1", "'127.0.0.1:-1'"),
        ("127.0.0.1:http", "'http' is not a valid port number"),
    ],
)
def test_a_bind_port_out_of_range_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, value: str, shown: str
) -> None:
    # gunicorn took it, and its master died of a traceback (OverflowError) when it bound.
    with pytest.raises(SystemExit, match=r"^pps: PPS_BIND ") as refused:
        _config(monkeypatch, PPS_BIND=value)
    assert shown in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("name", "value", "most"),
    [
        ("PPS_WORKERS", "100000", 256),  # forked as many processes
        ("PPS_THREADS", "1000", 999),  # gthread then kept no keep-alive connection
        ("PPS_TIMEOUT", "99999999999999999999", 86400),  # a hung worker was never restarted
    ],
)
def test_a_huge_server_setting_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, most: int
) -> None:
    with pytest.raises(SystemExit) as refused:
        _config(monkeypatch, **{name: value})
    assert str(refused.value) == f"pps: {name} must be at most {most}, got {value!r}"


def test_the_largest_server_settings_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(monkeypatch, PPS_WORKERS="256", PPS_THREADS="999", PPS_TIMEOUT="86400")
    assert (config["workers"], config["threads"], config["timeout"]) == (256, 999, 86400)
