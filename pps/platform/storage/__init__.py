"""File storage behind a small seam: a local directory now, an object store later."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class StorageUnavailable(OSError):
    """Storing a file failed on the disk's side: it is full (``ENOSPC``, ``EDQUOT``), read-only
    or not writable. An ``OSError``, so callers that caught those still do; the web layer
    answers 507 (full) or 503 instead of a 500, and no part of the file is left behind."""

    @property
    def full(self) -> bool:
        return self.errno in (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class StoredFile:
    key: str
    size: int
    path: Path | None
    """A local path when the storage has one (lets the web layer use sendfile or X-Accel)."""


@dataclass(frozen=True)
class ListedFile:
    """A file found by :meth:`FileStorage.list_files`; ``modified`` in seconds since the epoch."""

    key: str
    size: int
    modified: float


class FileStorage(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically (readers never see a half-written file)."""
        ...

    def stat(self, key: str) -> StoredFile | None: ...

    def read(self, key: str) -> bytes | None: ...

    def delete(self, key: str) -> None: ...

    def list_files(self, prefix: str) -> Iterator[ListedFile]:
        """Every file whose key starts with ``prefix/`` (``prefix`` is a folder), any depth."""
        ...

    def delete_tree(self, prefix: str) -> int:
        """Delete every file below the folder ``prefix``; how many were deleted."""
        ...


def open_storage(files_dir: Path) -> FileStorage:
    """The file storage for ``files_dir`` (``PPS_FILES_DIR``): a local directory for now."""
    # Imported here: the implementation imports StoredFile from this module.
    from pps.platform.storage.local import LocalStorage

    return LocalStorage(files_dir)
