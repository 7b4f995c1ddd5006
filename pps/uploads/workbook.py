"""What an XLSX may unpack to, checked from its ZIP directory before openpyxl reads it. No Flask.

An upload (``POST /api-ext/file``) and a workbook sent straight as variable data run this
same check. openpyxl reads the whole shared-string table into memory when it opens a
workbook (about 10 µs and a few hundred bytes per entry), so that part has a limit of its own
well below the workbook's: a few hundred kilobytes of ZIP can hold millions of entries.
Rows are checked last, by reading every part as a stream (:mod:`pps.uploads.sheet_rows`).
"""

from __future__ import annotations

import io
import zipfile
import zlib
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as DefusedET
from defusedxml import DefusedXmlException

from pps.uploads.sheet_rows import rows_problem

__all__ = [
    "MAX_CONTENT_TYPES",
    "MAX_SHARED_STRINGS_UNPACKED",
    "MAX_XLSX_UNPACKED",
    "workbook_problem",
]

#: An XLSX unpacks to at most this much: a ZIP bomb is refused before openpyxl reads it.
MAX_XLSX_UNPACKED = 200 * 1024 * 1024
#: The shared-string table (every text cell's text, once) unpacks to at most this much:
#: 10,000 rows of a few short text columns fit; 4 MB of the smallest entries is still about
#: 250,000 of them, a few seconds of openpyxl's time.
MAX_SHARED_STRINGS_UNPACKED = 4 * 1024 * 1024
#: ``[Content_Types].xml`` is read to find the shared strings; a real one is a few KB.
MAX_CONTENT_TYPES = 1024 * 1024
_CONTENT_TYPES = "[Content_Types].xml"
_SHARED_STRINGS = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
_DEFAULT_STRINGS = "xl/sharedStrings.xml"


def workbook_problem(data: bytes) -> str | None:
    """Why opening the XLSX would cost too much (a phrase), or None.

    Sizes come from the ZIP directory, which also bounds what :mod:`zipfile` unpacks; the
    rows of every part are read last, as a stream, once the sizes are known to be sound.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            problem = _size_problem(archive)
            return problem if problem is not None else rows_problem(archive)
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, EOFError, zlib.error) as exc:
        return f"it is not a ZIP archive that can be read ({exc})"


def _size_problem(archive: zipfile.ZipFile) -> str | None:
    infos = archive.infolist()
    unpacked = sum(info.file_size for info in infos)
    if unpacked > MAX_XLSX_UNPACKED:
        return f"it unpacks to {unpacked} bytes; at most {MAX_XLSX_UNPACKED} are accepted"
    parts = _shared_string_parts(archive)
    if parts is None:
        return f"its {_CONTENT_TYPES} is larger than {MAX_CONTENT_TYPES} bytes"
    strings = sum(info.file_size for info in infos if info.filename in parts)
    if strings > MAX_SHARED_STRINGS_UNPACKED:
        return (
            f"its shared strings unpack to {strings} bytes; at most "
            f"{MAX_SHARED_STRINGS_UNPACKED} are accepted"
        )
    return None


def _shared_string_parts(archive: zipfile.ZipFile) -> set[str] | None:
    """Names of the parts openpyxl may read as shared strings; None if the manifest is too big.

    openpyxl finds them by content type, so a workbook may keep them under any name.
    """
    parts = {_DEFAULT_STRINGS}
    try:
        info = archive.getinfo(_CONTENT_TYPES)
    except KeyError:
        return parts  # openpyxl cannot open it either
    if info.file_size > MAX_CONTENT_TYPES:
        return None
    try:
        root = DefusedET.fromstring(archive.read(info))
    except (ParseError, DefusedXmlException):
        return parts  # openpyxl refuses it when it opens the workbook
    for element in root:
        is_override = str(element.tag).rsplit("}", 1)[-1] == "Override"
        if is_override and element.get("ContentType") == _SHARED_STRINGS:
            parts.add(element.get("PartName", "")[1:])  # as openpyxl names the part
    return parts
