"""LocalStorage: a directory of files addressed by relative keys that cannot escape it."""

from __future__ import annotations

import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from pps.platform.storage import StoredFile, open_storage
from pps.platform.storage.local import LocalStorage


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "files")


def test_put_then_stat_read_and_delete(storage: LocalStorage, tmp_path: Path) -> None:
    key = "templates/ABCdef12/preview.png"
    storage.put(key, b"\x89PNG data")

    expected_path = tmp_path / "files" / "templates" / "ABCdef12" / "preview.png"
    assert storage.stat(key) == StoredFile(key=key, size=9, path=expected_path)
    assert storage.read(key) == b"\x89PNG data"

    storage.delete(key)
    assert storage.stat(key) is None
    assert storage.read(key) is None
    assert not expected_path.exists()


def test_missing_key_is_none_and_deleting_it_is_fine(storage: LocalStorage) -> None:
    assert storage.stat("drafts/nope/print.pdf") is None
    assert storage.read("drafts/nope/print.pdf") is None
    storage.delete("drafts/nope/print.pdf")


def test_a_directory_is_not_a_file(storage: LocalStorage) -> None:
    storage.put("templates/ABCdef12/preview.png", b"x")
    assert storage.stat("templates/ABCdef12") is None
    assert storage.read("templates/ABCdef12") is None


def test_empty_file_is_stored(storage: LocalStorage) -> None:
    storage.put("empty.bin", b"")
    stored = storage.stat("empty.bin")
    assert stored is not None
    assert stored.size == 0
    assert storage.read("empty.bin") == b""


def test_overwrite_replaces_content_and_leaves_no_temp_files(storage: LocalStorage) -> None:
    key = "drafts/Xy12/print.pdf"
    storage.put(key, b"first version, rather long")
    storage.put(key, b"second")
    assert storage.read(key) == b"second"
    stored = storage.stat(key)
    assert stored is not None
    assert stored.size == len(b"second")
    assert stored.path is not None
    assert sorted(p.name for p in stored.path.parent.iterdir()) == ["print.pdf"]


def test_readers_never_see_a_half_written_file(storage: LocalStorage) -> None:
    """Overwrite in a loop while reading: every read is one whole version."""
    key = "drafts/Xy12/print.pdf"
    versions = [bytes([n]) * 512 * 1024 for n in range(8)]
    storage.put(key, versions[0])
    stop = threading.Event()
    seen: list[bytes | None] = []

    def reader() -> None:
        while not stop.is_set():
            seen.append(storage.read(key))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(5):
            for version in versions:
                storage.put(key, version)
    finally:
        stop.set()
        thread.join()
    assert seen
    assert all(data in versions for data in seen)


def test_a_folder_deleted_while_a_file_is_put_into_it_is_made_again(
    storage: LocalStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A draft's delete removes its folder (``delete_tree``) while a render of it stores
    a file there: the folder went between the put's ``mkdir`` and its temporary file, and
    the put raised FileNotFoundError (a 500 for the file link). The put makes the folder
    again; the render's own check then deletes what it stored for a deleted draft."""
    storage.put("drafts/Xy12/abc/v1/low-res.pdf", b"old")
    real = tempfile.mkstemp
    calls = {"n": 0}

    def folder_deleted_first(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:  # the draft's delete, just after the put made the folder
            assert storage.delete_tree("drafts/Xy12/abc") == 1
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", folder_deleted_first)
    storage.put("drafts/Xy12/abc/v1/print.pdf", b"new")
    assert storage.read("drafts/Xy12/abc/v1/print.pdf") == b"new"
    assert calls["n"] == 2


def test_stored_files_are_readable_by_other_users(storage: LocalStorage) -> None:
    """nginx serves the files through X-Accel-Redirect and runs as another user."""
    storage.put("templates/ABCdef12/preview.png", b"x")
    stored = storage.stat("templates/ABCdef12/preview.png")
    assert stored is not None
    assert stored.path is not None
    assert stat.S_IMODE(stored.path.stat().st_mode) == 0o644


@pytest.mark.parametrize(
    "key",
    [
        "",
        "/etc/passwd",
        "../outside.txt",
        "templates/../../outside.txt",
        "templates/..",
        "..",
        "templates/./preview.png",
        ".",
        "templates//preview.png",
        "templates/preview.png/",
        "templates\\..\\outside.txt",
        "templates/pre\x00view.png",
    ],
)
def test_keys_that_could_escape_or_are_not_canonical_are_refused(
    storage: LocalStorage, tmp_path: Path, key: str
) -> None:
    for operation in (
        lambda: storage.put(key, b"x"),
        lambda: storage.stat(key),
        lambda: storage.read(key),
        lambda: storage.delete(key),
    ):
        with pytest.raises(ValueError, match="storage key"):
            operation()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["files"]
    assert list((tmp_path / "files").iterdir()) == []


def test_open_storage_gives_local_storage_in_the_files_dir(tmp_path: Path) -> None:
    storage = open_storage(tmp_path / "files")
    assert isinstance(storage, LocalStorage)
    storage.put("a/b.txt", b"hello")
    assert (tmp_path / "files" / "a" / "b.txt").read_bytes() == b"hello"
