"""A customer's print PDF becomes a draft's: checked, stored, preflighted. No Flask.

One path for both ways a PDF arrives (``POST /api-ext/draft/<hash>/upload`` with the file
itself, or with a ``fileURL`` pps downloads in the background, :mod:`pps.drafts.url_upload`),
so a PDF is judged the same either way and a refused one changes nothing.
"""

from __future__ import annotations

from typing import Protocol

from pps.files.rendering import TemplateNotRenderable, template_spec
from pps.files.uploaded import upload_key
from pps.platform.models import UPLOAD_INTENTS, Draft
from pps.platform.repository import Repository
from pps.platform.repository.uploads import SqlUploadStore
from pps.platform.settings import Settings
from pps.platform.storage import FileStorage
from pps.preflight import PdfRefused, accept_pdf, preflight_and_store
from pps.render.decode import DECODE_ERRORS
from pps.render.pdf_errors import read_error
from pps.uploads.budget import room_for
from pps.webhooks.events import DRAFT_UPDATED, EventServices, draft_payload, emit

__all__ = [
    "DRAFT_NOT_FOUND",
    "DraftGone",
    "PdfNotTaken",
    "UploadServices",
    "intent_problem",
    "store_pdf",
]

DRAFT_NOT_FOUND = "No draft with this hash exists for this client."


class UploadServices(EventServices, Protocol):
    """What storing a PDF takes of :class:`pps.platform.services.Services`."""

    @property
    def settings(self) -> Settings: ...

    @property
    def repository(self) -> Repository: ...

    @property
    def storage(self) -> FileStorage: ...

    @property
    def uploads(self) -> SqlUploadStore: ...


class PdfNotTaken(Exception):
    """The PDF cannot be the draft's print file; ``field`` is what the problems are about
    (``file``, or ``template`` when the template cannot be rendered), ``problems`` one
    sentence each, and the message names them all. Nothing was changed."""

    def __init__(self, message: str, field: str, problems: list[str]) -> None:
        super().__init__(message)
        self.field = field
        self.problems = problems


class DraftGone(Exception):
    """The draft (or its template) no longer exists; nothing was kept."""


def intent_problem(draft: Draft) -> str | None:
    """Why ``draft`` takes no print PDF (its intent), or None when it takes one."""
    if draft.intent in UPLOAD_INTENTS:
        return None
    return (
        f"Only drafts with intent {' or '.join(UPLOAD_INTENTS)} take a print PDF; "
        f"this draft's intent is {draft.intent!r}."
    )


def store_pdf(services: UploadServices, client: str, draft: Draft, data: bytes) -> Draft:
    """Check ``data`` against the draft's template, store it as the draft's upload (replacing
    an earlier one), preflight the draft and tell webhooks; the draft as it is now.

    :class:`PdfNotTaken`, :class:`DraftGone` or
    :class:`~pps.platform.errors.ClientStorageFull` (the PDF would take the client's uploads
    past ``PPS_CLIENT_STORAGE_BYTES``; it needs room beside the one it replaces, as both are
    stored for a moment) leave the draft as it was.

    Uploads to one draft at once each store a file under a key of its own, and are
    recorded one after the other (:meth:`~pps.platform.repository.Repository.replace_upload`
    locks the draft's row); each deletes the file it was told it replaced. So every file
    but the last one recorded is deleted by the upload that replaced it, and the budget,
    which counts the draft's ``upload_size``, counts just what is stored.
    """
    template = services.repository.get_template(client, draft.template_identifier)
    if template is None:
        raise DraftGone("The draft's template no longer exists.")
    try:
        spec = template_spec(template)
        accepted = accept_pdf(data, spec)
    except PdfRefused as exc:
        raise PdfNotTaken(f"The PDF cannot be the print file: {exc}", "file", exc.problems) from exc
    except TemplateNotRenderable as exc:
        raise PdfNotTaken(str(exc), "template", [str(exc)]) from exc
    except DECODE_ERRORS as exc:
        # pikepdf or pdfium gave up on the upload part-way (a page's content that does not
        # decompress): the customer's file, not one of the template's, whatever the reader.
        reason = f"The PDF cannot be read: {read_error(exc)}"
        raise PdfNotTaken(reason, "file", [reason]) from exc
    key = upload_key(client, draft.draft_hash, accepted.data)
    size = len(accepted.data)
    with room_for(services.uploads.budget, client, size, services.settings.client_storage_bytes):
        services.storage.put(key, accepted.data)
        try:
            replaced = services.repository.replace_upload(client, draft.draft_hash, key, size)
        except Exception:
            # Not recorded: no budget counts the file and no sweep finds it. The key is
            # this upload's own, so no draft names it.
            services.storage.delete(key)
            raise
        if replaced is None:  # deleted meanwhile
            services.storage.delete(key)
            raise DraftGone(DRAFT_NOT_FOUND)
    # The key the draft named when this one was recorded, not the one ``draft`` names:
    # an upload at once may have replaced that already, and this one replaced its file.
    if replaced.previous_key is not None and replaced.previous_key != key:
        services.storage.delete(replaced.previous_key)
    updated = replaced.draft
    checked = preflight_and_store(
        services.repository,
        services.storage,
        updated,
        max_pixels=services.settings.max_image_pixels,
    )
    emit(services, client, DRAFT_UPDATED, draft_payload(checked))
    return checked
