"""A files directory that is full or read-only: the request is answered 507 or 503 (JSON,
with the reason), not a 500, and no part of the file is left behind.

Needs a filesystem of its own to fill: a small tmpfs, mounted when the tests may mount
(root with CAP_SYS_ADMIN, as on the project's CI machines); skipped elsewhere, a failure
under CI (``conftest.missing_service``)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ApiClient, missing_service
from test_uploads import png, upload


def _mount(*args: str) -> bool:
    done = subprocess.run(["mount", *args], capture_output=True, timeout=30)
    return done.returncode == 0


@pytest.fixture
def files_mount(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs for the files directory, unmounted afterwards."""
    mount = tmp_path / "files"
    mount.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)):
        missing_service("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, timeout=30)


@pytest.fixture
def app_config(app_config: dict[str, Any], files_mount: Path) -> dict[str, Any]:
    return {**app_config, "files_dir": files_mount}


def _fill(folder: Path) -> None:
    with (folder / "ballast").open("wb", buffering=0) as ballast:
        try:
            while True:
                ballast.write(b"\0" * 4096)
        except OSError:
            pass


def _left_behind(folder: Path) -> list[str]:
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and path.name != "ballast"
    )


def test_a_full_files_directory_is_a_507(api: ApiClient, files_mount: Path) -> None:
    # A picture that does not fit in what the filled disk has left in its last block.
    _fill(files_mount)
    response = upload(api, "logo.png", png(64, 64))
    assert response.status_code == 507, response.get_data(as_text=True)
    assert response.get_json()["message"].startswith("The file storage is full")
    assert _left_behind(files_mount) == []


def test_a_read_only_files_directory_is_a_503(api: ApiClient, files_mount: Path) -> None:
    assert _mount("-o", "remount,ro", str(files_mount))
    response = upload(api, "logo.png", png())
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.headers["Retry-After"] == "5"
    assert "file storage" in response.get_json()["message"]
