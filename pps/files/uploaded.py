"""A customer's own print PDF in a draft (intents ``upload`` and ``upload-and-editor``). No Flask.

The uploaded PDF (checked by :mod:`pps.preflight.pdf`) is kept in storage beside the
draft's rendered files, under ``drafts/<client>/<draftHash>/upload/<digest>-<random>.pdf``:
it goes with the draft and is not an outdated version for ``pps files sweep``. Rendering uses it
as the artwork of every page, through the renderer's own PDF background (aligned by the
TrimBox, which the upload check guarantees), so previews and images come from pdfium like
any other page:

* ``upload``: the PDF alone; its print file is the uploaded PDF itself;
* ``upload-and-editor``: the PDF under the template's fields, which the editor fills in.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets

from pps.files.keys import draft_files_prefix
from pps.platform.models import UPLOAD_INTENTS, Draft
from pps.platform.storage import FileStorage
from pps.render import AssetError, TemplateSpec
from pps.render.assets import AssetLoader
from pps.render.model import Page, PdfBackground

__all__ = [
    "UPLOAD_ASSET",
    "UPLOAD_FOLDER",
    "UploadAssets",
    "upload_key",
    "uploaded_spec",
    "uses_upload",
]

#: The folder of a draft's uploaded print PDF among its files (beside ``v<version>/``).
UPLOAD_FOLDER = "upload"

#: The name the upload goes by among a template's files: a ``..`` part, which no template
#: may name (:func:`pps.render.assets.check_relative_name`), so it never shadows one.
UPLOAD_ASSET = "../upload.pdf"


def upload_key(client: str, draft_hash: str, data: bytes) -> str:
    """A key no other upload has, even of the same bytes: the file is deleted by whichever
    upload replaces it (:func:`pps.drafts.pdf_upload.store_pdf`), and must not be one that
    another upload of the same PDF has just written and is about to record."""
    digest = hashlib.sha256(data).hexdigest()[:24]
    unique = secrets.token_hex(8)
    return f"{draft_files_prefix(client, draft_hash)}/{UPLOAD_FOLDER}/{digest}-{unique}.pdf"


def uses_upload(draft: Draft) -> bool:
    """Whether the draft renders from an uploaded PDF (an upload intent and a file)."""
    return draft.intent in UPLOAD_INTENTS and draft.upload_key is not None


def uploaded_spec(spec: TemplateSpec, intent: str, key: str) -> TemplateSpec:
    """``spec`` with the upload (stored at ``key``) as every page's artwork; without fields
    for ``upload``. Its digest names the upload, so cached renders never mix the two."""
    digest = hashlib.sha256(f"{spec.digest}:{intent}:{key}".encode()).hexdigest()
    spec = dataclasses.replace(spec, digest=digest)
    keep_fields = intent == "upload-and-editor"
    pages = tuple(
        Page(
            background=PdfBackground(file=UPLOAD_ASSET, page=index),
            elements=page.elements if keep_fields else (),
        )
        for index, page in enumerate(spec.pages)
    )
    if keep_fields:
        return dataclasses.replace(spec, pages=pages)
    return dataclasses.replace(spec, pages=pages, fields=(), data_keys=())


class UploadAssets:
    """A template's files plus the draft's upload under :data:`UPLOAD_ASSET`."""

    def __init__(self, storage: FileStorage, key: str, template_files: AssetLoader) -> None:
        self.storage = storage
        self.key = key
        self.template_files = template_files

    def __call__(self, name: str) -> bytes:
        if name != UPLOAD_ASSET:
            return self.template_files(name)
        data = self.storage.read(self.key)
        if data is None:
            raise AssetError("the uploaded PDF is missing from file storage; upload it again")
        return data
