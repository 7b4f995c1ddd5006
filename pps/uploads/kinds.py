"""What an uploaded file is, from its bytes alone (never from its name or Content-Type).

Signatures decide the binary formats; an XLSX is a ZIP that holds a workbook; an SVG is XML
whose root is ``<svg>``; anything else must be text (UTF-8, or UTF-16 with a byte-order
mark) to count as CSV. The order matters: a PDF or PNG is never read as text.
"""

from __future__ import annotations

import io
import zipfile
from typing import Literal

__all__ = ["KINDS", "Kind", "decode_text", "sniff"]

Kind = Literal["png", "jpeg", "pdf", "svg", "csv", "xlsx"]
KINDS: tuple[Kind, ...] = ("png", "jpeg", "pdf", "svg", "csv", "xlsx")
#: How far into a text file an ``<svg`` root may start (after a declaration and comments).
_SVG_HEAD = 4096


class UnknownKind(ValueError):
    """The bytes are none of :data:`KINDS`; the message says what they look like."""


def decode_text(data: bytes) -> str:
    """Text of a CSV or SVG: UTF-8 (a BOM is dropped) or UTF-16 with its BOM.

    Raises :class:`UnicodeDecodeError` for anything else: guessing a legacy code page
    would store wrong characters without a word, so the shop hears of it instead.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def sniff(data: bytes) -> Kind:
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"PK\x03\x04"):
        if _is_workbook(data):
            return "xlsx"
        raise UnknownKind("a ZIP archive that is not an XLSX workbook")
    if not data.strip():
        raise UnknownKind("empty")
    try:
        text = decode_text(data)
    except UnicodeDecodeError as exc:
        raise UnknownKind(
            f"not UTF-8 text (byte {exc.start} is not valid UTF-8): save CSV files as "
            "'CSV UTF-8'; PNG, JPEG, PDF, SVG and XLSX are recognised by their content"
        ) from None
    if "\x00" in text:
        raise UnknownKind("binary data of an unsupported kind")
    head = text[:_SVG_HEAD].lstrip()
    if head.startswith("<"):
        if "<svg" in head:
            return "svg"
        raise UnknownKind("XML or HTML that is not an SVG image")
    return "csv"


def _is_workbook(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    return "[Content_Types].xml" in names and "xl/workbook.xml" in names
