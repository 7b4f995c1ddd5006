"""File storage in a local directory, the default for a single host."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pps.platform.storage import ListedFile, StorageUnavailable, StoredFile

#: What the disk answers when it cannot take a file now: full, over quota, read-only, not
#: writable, failing. Other errors (a file where a folder should be) stay bugs.
_DISK_ERRORS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
)

#: Times a put makes its folder again when a concurrent ``delete_tree`` removed it.
_FOLDER_ATTEMPTS = 3

FILE_MODE = 0o644
"""Readable by nginx, which serves these files itself through X-Accel-Redirect."""


def check_key(key: str) -> str:
    """Accept only plain relative POSIX keys, so that no key can leave the root.

    Checked on the text instead of resolving paths: ``..``, absolute paths, backslashes
    (a separator elsewhere), NUL and empty or ``.`` segments are all refused outright.
    """
    if not isinstance(key, str) or not key:
        raise ValueError("storage key must be a non-empty string")
    if "\\" in key or "\x00" in key:
        raise ValueError(f"storage key {key!r} contains a backslash or NUL")
    if key.startswith("/"):
        raise ValueError(f"storage key {key!r} must be relative")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise ValueError(f"storage key {key!r} has an empty, '.' or '..' segment")
    return key


class LocalStorage:
    """:class:`~pps.platform.storage.FileStorage` in a directory; keys are paths below ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).absolute()
        self.root.mkdir(parents=True, exist_ok=True)
        self._root_text = str(self.root).rstrip("/")  # "" for "/": no "//" prefix

    def path_for(self, key: str) -> Path:
        return Path(self._path_text(key))

    def _path_text(self, key: str) -> str:
        """The file's path as text: a checked key has no empty, ``.`` or ``..`` segment, so
        joining the text is the same path as ``root.joinpath(*segments)``, at a third of
        what pathlib costs (a file link looks a file up on every request)."""
        return f"{self._root_text}/{check_key(key)}"

    def put(self, key: str, data: bytes) -> None:
        """Write beside the target and rename over it: readers see the old or the new file."""
        target = self.path_for(key)
        try:
            self._put(target, data)
        except StorageUnavailable:
            raise
        except OSError as exc:
            if exc.errno not in _DISK_ERRORS:
                raise
            raise StorageUnavailable(exc.errno, exc.strerror, exc.filename) from exc

    def _put(self, target: Path, data: bytes) -> None:
        fd, tmp_name = self._temporary_beside(target)
        try:
            with os.fdopen(fd, "wb") as tmp:
                tmp.write(data)
                tmp.flush()
                os.fsync(tmp.fileno())
            # mkstemp creates 0600 files; nginx runs as another user.
            os.chmod(tmp_name, FILE_MODE)
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise

    @staticmethod
    def _temporary_beside(target: Path) -> tuple[int, str]:
        """A new temporary file in ``target``'s folder, made first when missing.

        The folder may go between its ``mkdir`` and the file: a draft's delete removes its
        folders (``delete_tree``) while a render of it is stored. Made again, a few times;
        the file in it then keeps the folder until it is renamed over ``target``.
        """
        prefix, folder = f".{target.name}.", target.parent
        for _ in range(_FOLDER_ATTEMPTS - 1):
            try:
                folder.mkdir(parents=True, exist_ok=True)
                return tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
            except FileNotFoundError:
                continue
        folder.mkdir(parents=True, exist_ok=True)
        return tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")

    def stat(self, key: str) -> StoredFile | None:
        path = self._path_text(key)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return StoredFile(key=key, size=st.st_size, path=Path(path))

    def read(self, key: str) -> bytes | None:
        try:
            return self.path_for(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def delete(self, key: str) -> None:
        """Remove the file; a missing one is already what the caller wants."""
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            self.path_for(key).unlink()

    def list_files(self, prefix: str) -> Iterator[ListedFile]:
        """Walk the folder ``prefix``; files being written (``.<name>.*.tmp``) are skipped."""
        top = self.path_for(prefix)
        for folder, _dirs, names in os.walk(top):
            base = Path(folder)
            for name in sorted(names):
                if name.startswith(".") and name.endswith(".tmp"):
                    continue
                path = base / name
                try:
                    st = path.lstat()
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    key = path.relative_to(self.root).as_posix()
                    yield ListedFile(key=key, size=st.st_size, modified=st.st_mtime)

    def delete_tree(self, prefix: str) -> int:
        """Delete the files below ``prefix``, then the folders left empty (the top one too)."""
        top = self.path_for(prefix)
        deleted = 0
        for listed in list(self.list_files(prefix)):
            self.delete(listed.key)
            deleted += 1
        for folder, _dirs, _names in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
            with contextlib.suppress(OSError):  # not empty: a file arrived meanwhile
                os.rmdir(folder)
        return deleted
