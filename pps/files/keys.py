"""Where rendered files live in storage, and what they are called when served.

One module for the key layout, so the renderer that writes the files and the file endpoints
that hand out links to them can never disagree. Plain Python, no Flask.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass

__all__ = [
    "DRAFT_FILE_KINDS",
    "DraftFileKind",
    "content_type_for",
    "draft_file_key",
    "draft_file_name",
    "draft_files_prefix",
    "draft_values_image_key",
    "template_asset_key",
    "template_preview_name",
    "template_rendered_preview_key",
    "version_folder",
]


@dataclass(frozen=True)
class DraftFileKind:
    """One kind of file rendered from a draft."""

    name: str
    """The ``<kind>`` of ``/api-ext/files/draft/<draftHash>/<kind>``."""
    stored_name: str
    """The last segment of its storage key."""
    content_type: str
    label: str
    """Used in messages and logs: "the print file of draft ..."."""


DRAFT_FILE_KINDS: dict[str, DraftFileKind] = {
    kind.name: kind
    for kind in (
        DraftFileKind("print", "print.pdf", "application/pdf", "print file"),
        DraftFileKind("low-res", "low-res.pdf", "application/pdf", "low-resolution PDF"),
        DraftFileKind("image", "image.png", "image/png", "preview image"),
    )
}


def draft_file_key(
    client: str,
    draft_hash: str,
    version: int,
    kind: str,
    *,
    page: int = 0,
    size: tuple[int, int] | None = None,
    variant: str | None = None,
) -> str:
    """``drafts/<client>/<draftHash>/v<version>[-<variant>]/<file>``.

    The draft's version is part of the key: a file rendered from an older version of the
    draft is never served for the current one, and a re-render never overwrites a file a
    link may still point at. So is the draft's variant (see :func:`version_folder`). Images
    also carry their page (counted from 0) and pixel size,
    ``image-p<page>-<width>x<height>.png``, so every size asked for is cached on its own.
    """
    prefix = f"{draft_files_prefix(client, draft_hash)}/{version_folder(version, variant)}"
    if kind != "image":
        return f"{prefix}/{DRAFT_FILE_KINDS[kind].stored_name}"
    if size is None:
        raise ValueError("an image key needs the image's pixel size")
    return f"{prefix}/image-p{page}-{size[0]}x{size[1]}.png"


def version_folder(version: int, variant: str | None) -> str:
    """``v<version>``, or ``v<version>-<variant>`` for a draft with a variant: a file of one
    variant is never served for another, even where a version would not tell them apart."""
    return f"v{version}" if variant is None else f"v{version}-{variant}"


def draft_values_image_key(
    client: str,
    draft_hash: str,
    version: int,
    page: int,
    size: tuple[int, int],
    digest: str,
    variant: str | None = None,
) -> str:
    """``drafts/<client>/<draftHash>/v<version>/values-p<page>-<w>x<h>-<digest>.png``.

    A page rendered from the values the editor shows rather than the stored ones (which
    may hold numbers the renderer refuses); ``digest`` names those values. In the draft
    version's folder, so it goes with the draft and its outdated versions.
    """
    prefix = f"{draft_files_prefix(client, draft_hash)}/{version_folder(version, variant)}"
    return f"{prefix}/values-p{page}-{size[0]}x{size[1]}-{digest}.png"


def draft_files_prefix(client: str, draft_hash: str) -> str:
    """``drafts/<client>/<draftHash>``: the folder of every file rendered from a draft."""
    return f"drafts/{client}/{draft_hash}"


def template_asset_key(client: str, identifier: str, name: str) -> str:
    """``templates/<client>/<identifier>/assets/<name>``: a file shipped with a template.

    ``name`` is the relative name written in the template (checked by the importer and by
    the storage), so a template's files keep their folder layout.
    """
    return f"templates/{client}/{identifier}/assets/{name}"


def template_rendered_preview_key(
    client: str, identifier: str, page: int, size: tuple[int, int], digest: str
) -> str:
    """``templates/<client>/<identifier>/rendered/preview-p<page>-<w>x<h>-<digest>.png``.

    ``digest`` is a hash of what the image is made from (template, renderer version, or the
    imported preview's bytes), so a changed template never serves an old picture.
    """
    return (
        f"templates/{client}/{identifier}/rendered/preview-p{page}-{size[0]}x{size[1]}-{digest}.png"
    )


def draft_file_name(draft_hash: str, kind: str) -> str:
    """The name a browser or shop sees: ``<draftHash>-print.pdf``."""
    stored = DRAFT_FILE_KINDS[kind].stored_name
    return f"{draft_hash}-{stored}"


def template_preview_name(template_identifier: str, storage_key: str) -> str:
    """``<templateId>-page-preview-thumb.<ext>``, the extension taken from the storage key."""
    last = storage_key.rsplit("/", 1)[-1]
    _, dot, ext = last.rpartition(".")
    suffix = f".{ext.lower()}" if dot and ext.isalnum() else ""
    return f"{template_identifier}-page-preview-thumb{suffix}"


def content_type_for(storage_key: str) -> str:
    """Content type by extension; unknown extensions are served as opaque bytes."""
    guessed, _ = mimetypes.guess_type(storage_key, strict=True)
    return guessed or "application/octet-stream"
