"""Accepting an upload: sniff, check completely, store the bytes, record the file. No Flask.

Every check runs before anything is written, so a refused file leaves nothing behind. A
photo with an EXIF orientation is stored turned upright (:mod:`pps.uploads.orientation`). The
bytes go to file storage under ``uploads/<client>/<identifier>/file.<kind>``; the record
(kind, name, size) to the database, within the client's byte budget
(:mod:`pps.uploads.budget`: a 507 before anything is written when it does not fit). Later
readers (variable data, image values) look the file up by identifier *and* client, so one
shop can never read another's upload.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass

from pps.platform.repository.uploads import SqlUploadStore, Upload
from pps.platform.storage import FileStorage
from pps.render.decode import AssetFault, asset_fault
from pps.render.pdf_encryption import encryption_problem
from pps.render.vector import SvgFault, svg_fault
from pps.uploads.budget import room_for
from pps.uploads.kinds import Kind, UnknownKind, decode_text, sniff
from pps.uploads.orientation import upright
from pps.uploads.svg import SvgRefused, sanitize_svg
from pps.uploads.workbook import workbook_problem

__all__ = ["UploadLimits", "UploadRefused", "accept_upload", "read_upload"]

#: Longest file name kept (the name is only shown back, never used as a path).
MAX_NAME = 255


#: The catalogues' message for a customer of each way an SVG cannot be drawn.
_SVG_FAULTS: Mapping[SvgFault, str] = {
    "no_size": "media.svg_no_size",
    "bad_size": "media.svg_bad_size",
    "too_big": "media.svg_too_complex",
    "not_drawable": "media.svg_not_drawable",
}


class UploadRefused(ValueError):
    """The file is not accepted; the message says why, for the shop's developer (the API
    answers it). ``code`` and ``params`` say it for a customer: a message of the
    catalogues and its numbers, byte counts named ``*_bytes`` (the editor words it in the
    page's language). Refusals the editor cannot meet (it sends PNG, JPEG and SVG only)
    keep the code ``media.not_an_image``."""

    def __init__(self, message: str, code: str = "media.not_an_image", **params: float) -> None:
        super().__init__(message)
        self.code = code
        self.params = params


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int
    max_pixels: int
    #: ``PPS_CLIENT_STORAGE_BYTES``: what all of a client's uploads may take (0: no budget).
    client_bytes: int


def accept_upload(
    storage: FileStorage,
    records: SqlUploadStore,
    client: str,
    name: str,
    data: bytes,
    limits: UploadLimits,
) -> Upload:
    if len(data) > limits.max_bytes:
        raise UploadRefused(
            f"The file has {len(data)} bytes; at most {limits.max_bytes} are accepted.",
            "media.too_large",
            size_bytes=len(data),
            limit_bytes=limits.max_bytes,
        )
    try:
        kind = sniff(data)
    except UnknownKind as exc:
        raise UploadRefused(
            f"The file is not a PNG, JPEG, PDF, SVG, CSV or XLSX file: it is {exc}."
        ) from None
    data = _checked(kind, data, limits)
    identifier = records.new_identifier()
    key = f"uploads/{client}/{identifier}/file.{kind}"
    clean_name = "".join(ch for ch in name if ch.isprintable())[:MAX_NAME] or f"file.{kind}"
    with room_for(records.budget, client, len(data), limits.client_bytes):
        storage.put(key, data)
        try:
            return records.create(
                client,
                identifier=identifier,
                kind=kind,
                name=clean_name,
                size=len(data),
                storage_key=key,
            )
        except Exception:
            storage.delete(key)  # no record: the file would count nowhere and stay forever
            raise


def read_upload(storage: FileStorage, record: Upload) -> bytes:
    data = storage.read(record.storage_key)
    if data is None:
        raise UploadRefused(f"The file {record.identifier!r} is missing from file storage.")
    return data


def _checked(kind: Kind, data: bytes, limits: UploadLimits) -> bytes:
    """``data`` as it will be stored (an SVG cleaned); raise :class:`UploadRefused`."""
    if kind == "pdf":
        # Refused as a draft's print PDF is: an empty user password opens it, and then
        # the decoding below would accept it.
        encrypted = encryption_problem(data)
        if encrypted is not None:
            raise UploadRefused(encrypted)
    if kind in ("png", "jpeg", "pdf"):
        found = asset_fault(data, max_pixels=limits.max_pixels)
        if found is not None:
            raise _not_decodable(kind, *found, limits.max_pixels)
        return data if kind == "pdf" else upright(data, kind)
    if kind == "svg":
        try:
            cleaned = sanitize_svg(decode_text(data))
        except SvgRefused as exc:
            raise UploadRefused(f"The SVG file cannot be used: {exc}.", exc.code) from None
        fault = svg_fault(cleaned)
        if fault is not None:
            raise UploadRefused(f"The SVG file cannot be used: {fault[1]}.", _SVG_FAULTS[fault[0]])
        return cleaned
    if kind == "xlsx":
        _check_workbook(data)
        return data
    return data  # csv: decoded already by sniff; read with its column mapping later


def _not_decodable(kind: Kind, fault: AssetFault, problem: str, max_pixels: int) -> UploadRefused:
    """The refusal of a PNG, JPEG or PDF that :func:`asset_fault` found ``problem`` in: for
    a customer, an image with too many pixels is not a damaged one."""
    message = f"The {kind.upper()} file cannot be used: {problem}."
    if kind == "pdf":
        return UploadRefused(message)
    if fault == "too_many_pixels":
        return UploadRefused(message, "media.too_many_pixels", megapixels=max_pixels / 1_000_000)
    return UploadRefused(message, "media.damaged")


def _check_workbook(data: bytes) -> None:
    """Refuse a workbook too big to open (the check variable data runs too), or unreadable."""
    from openpyxl import load_workbook

    problem = workbook_problem(data)
    if problem is not None:
        raise UploadRefused(f"The XLSX file cannot be used: {problem}.")
    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=False)
        workbook.close()
    except Exception as exc:  # openpyxl raises many kinds (KeyError, zip, XML errors)
        raise UploadRefused(f"The XLSX file cannot be read: {exc}.") from None
