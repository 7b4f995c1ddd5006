"""Where template files (artwork PDFs, images, fonts) come from, and how they are checked.

The renderer never opens paths itself: it asks an :data:`AssetLoader` for bytes by the
relative name written in the template. A directory (``DirectoryAssets``) serves the CLI and
tests; the service can pass a loader reading from its file storage instead, so templates
need not live on the local disk of every node.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Literal

from pps.render.errors import AssetError

__all__ = [
    "MAX_ASSET_BYTES",
    "AssetKind",
    "AssetLoader",
    "Assets",
    "DirectoryAssets",
    "as_loader",
    "check_relative_name",
    "sniff",
]

#: Artwork can be large, but a single file beyond this is almost certainly a mistake.
MAX_ASSET_BYTES = 64 * 1024 * 1024

AssetLoader = Callable[[str], bytes]
Assets = Path | AssetLoader
AssetKind = Literal["pdf", "png", "jpeg", "truetype", "cff", "collection"]


def check_relative_name(name: str) -> str | None:
    """Why ``name`` is not a safe relative path inside the template's folder, or None.

    Checked on the name itself (not only after resolving) so a loader that is not a
    directory, such as object storage, gets the same guarantee.
    """
    if not name or name != name.strip():
        return "must be a non-empty relative path without surrounding spaces"
    if "\x00" in name or "\\" in name:
        return "must not contain NUL or backslash characters"
    if not _is_unicode(name):
        return "must be valid Unicode (it contains a lone UTF-16 surrogate)"
    path = PurePosixPath(name)
    if path.is_absolute() or Path(name).is_absolute():
        return "must be relative to the template file, not absolute"
    parts = name.split("/")
    if any(part in ("..", "") for part in parts):
        return "must stay inside the template's folder (no '..' or empty parts)"
    if "." in parts:
        # The name becomes a storage key, which has no '.' segments: one spelling per file.
        plain = "/".join(part for part in parts if part != ".")
        return f"must not contain '.' parts; write {plain!r}" if plain else "names no file"
    return None


def _is_unicode(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: a lone surrogate (JSON ``"\\ud800"``) does not."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sniff(data: bytes) -> AssetKind | None:
    """The kind of file ``data`` is, by its signature; None when unknown."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:4] in (b"\x00\x01\x00\x00", b"true"):
        return "truetype"
    if data[:4] == b"OTTO":
        return "cff"
    if data[:4] == b"ttcf":
        return "collection"
    return None


class DirectoryAssets:
    """Serve template files from one directory, refusing names that escape it."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir

    def __call__(self, name: str) -> bytes:
        problem = check_relative_name(name)
        if problem is not None:
            raise AssetError(f"{name!r}: {problem}")
        root = self.base_dir.resolve()
        # resolve() follows symlinks, so a link pointing out of the folder is refused too.
        target = (root / name).resolve()
        if not target.is_relative_to(root):
            raise AssetError(f"{name!r}: lies outside the template's folder")
        try:
            if not target.is_file():
                raise AssetError(f"{name!r}: does not exist or is not a file")
            if target.stat().st_size > MAX_ASSET_BYTES:
                raise AssetError(f"{name!r}: is larger than {MAX_ASSET_BYTES} bytes")
            return target.read_bytes()
        except OSError as exc:
            raise AssetError(f"{name!r}: cannot be read: {exc.strerror}") from None


def as_loader(assets: Assets) -> AssetLoader:
    """A loader for ``assets``: a directory becomes a :class:`DirectoryAssets`."""
    if isinstance(assets, Path):
        return DirectoryAssets(assets)
    return assets
