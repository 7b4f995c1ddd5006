"""One PDF written part by part: memory bounded by a part, however many pages follow.

Neither PDF library pps uses writes pages as it goes. reportlab keeps every page of a
document until it is saved (about 11 kB of peak RSS per business card), and qpdf (pikepdf)
holds every object of a document it writes (about 17 kB per card, measured by joining parts
with ``Pdf.pages.extend``; bench/vdata.py shows the first). So a long document is drawn
in parts, each a complete PDF from reportlab, and :class:`PartsWriter` copies each part's
pages into one output as it comes: pikepdf reads the part, and each scalar is written in
pikepdf's own syntax (``unparse``); this module only numbers the objects, writes them in
order and ends with the cross-reference table, the page tree and the trailer.

Objects a part shares with an earlier part are written once: a shared object (anything a
page reaches except its own content streams) with the same serialized bytes as one written
before gets that one's number. The fonts are shared that way when every part embeds the same
subsets (see ``render_records_pdf``), and so are images and artwork. What grows with the
pages is their offsets and the page tree (a few bytes a page) and the digests of shared
objects (only objects that differ between parts, such as a page's resource dictionary).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from decimal import Decimal
from typing import IO

import pikepdf

__all__ = ["PartsWriter"]

_PAGES = 1  # the page tree's root; written last, when every kid is known
_CATALOG = 2
_INFO = 3
_FIRST_FREE = 4
#: Keys a page gets from the output's page tree, not from its part.
_PAGE_TREE_KEYS = frozenset({"/Parent"})


class PartsWriter:
    """Append the pages of PDF parts to ``out``; :meth:`close` finishes the file.

    ``info`` is the document information dictionary (``/Title``, ``/Creator``, ...). The
    output's ``/ID`` is a digest of everything written, so the same parts give the same
    bytes.
    """

    def __init__(self, out: IO[bytes], info: dict[str, str]) -> None:
        self._out = out
        self._info = info
        self._position = 0
        self._digest = hashlib.md5(usedforsecurity=False)
        self._offsets = array("q", [0] * _FIRST_FREE)  # object number -> byte offset
        self._kids = array("q")
        self._shared: dict[bytes, int] = {}
        self._write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")

    def add(self, part: pikepdf.Pdf) -> None:
        """Every page of ``part``, in order, after the pages added before."""
        numbers: dict[tuple[int, int], int] = {}
        for page in part.pages:
            self._kids.append(self._page(page.obj, numbers))

    @property
    def page_count(self) -> int:
        return len(self._kids)

    def close(self) -> None:
        """The page tree, catalog, info, cross-reference table and trailer."""
        if not self._kids:
            raise ValueError("a PDF needs at least one page")
        self._start(_PAGES)
        self._write(b"<< /Type /Pages /Count %d /Kids [" % len(self._kids))
        for start in range(0, len(self._kids), 1024):
            chunk = self._kids[start : start + 1024]
            self._write(b"".join(b" %d 0 R" % kid for kid in chunk))
        self._write(b" ] >>\nendobj\n")
        self._object(_CATALOG, b"<< /Type /Catalog /Pages %d 0 R >>" % _PAGES)
        entries = b" ".join(
            pikepdf.Name("/" + key).unparse() + b" " + pikepdf.String(value).unparse()
            for key, value in sorted(self._info.items())
        )
        self._object(_INFO, b"<< " + entries + b" >>")
        file_id = self._digest.hexdigest().encode("ascii")
        xref = self._position
        lines = [b"xref\n0 %d\n" % len(self._offsets), b"0000000000 65535 f \n"]
        lines.extend(b"%010d 00000 n \n" % offset for offset in self._offsets[1:])
        self._write(b"".join(lines))
        self._write(
            b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /ID [<%s> <%s>] >>\n"
            % (len(self._offsets), _CATALOG, _INFO, file_id, file_id)
        )
        self._write(b"startxref\n%d\n%%%%EOF\n" % xref)

    # -- objects -------------------------------------------------------------------------

    def _page(self, page: pikepdf.Dictionary, numbers: dict[tuple[int, int], int]) -> int:
        items = [b"/Parent %d 0 R" % _PAGES]
        for key, value in _sorted_items(page):
            if key in _PAGE_TREE_KEYS:
                continue
            if key == "/Contents":
                items.append(b"/Contents " + self._contents(value))
                continue
            items.append(_name(key) + b" " + self._value(value, numbers))
        return self._new(b"<< " + b" ".join(items) + b" >>")

    def _contents(self, contents: object) -> bytes:
        """A page's own content streams (one, or an array): written as they are, never
        compared with others."""
        if isinstance(contents, pikepdf.Stream):
            return b"%d 0 R" % self._new(self._stream_body(contents, {}))
        if isinstance(contents, pikepdf.Array) and all(
            isinstance(item, pikepdf.Stream) for item in contents
        ):
            return b"[" + b" ".join(self._contents(item) for item in contents) + b"]"
        raise ValueError("a page's /Contents must be a stream or an array of streams")

    def _indirect(self, obj: pikepdf.Object, numbers: dict[tuple[int, int], int]) -> int:
        key = obj.objgen
        if key in numbers:
            if numbers[key] == 0:  # still being written: the objects form a cycle
                raise ValueError("the part's objects refer to each other in a cycle")
            return numbers[key]
        numbers[key] = 0
        if isinstance(obj, pikepdf.Stream):
            body = self._stream_body(obj, numbers)
        else:
            body = self._direct(obj, numbers)
        digest = hashlib.sha256(body).digest()
        number = self._shared.get(digest)
        if number is None:
            number = self._new(body)
            self._shared[digest] = number
        numbers[key] = number
        return number

    def _stream_body(self, stream: pikepdf.Stream, numbers: dict[tuple[int, int], int]) -> bytes:
        data = stream.read_raw_bytes()  # as stored: still compressed, filters kept
        items = [
            _name(key) + b" " + self._value(value, numbers)
            for key, value in _sorted_items(stream.stream_dict)
            if key != "/Length"
        ]
        items.append(b"/Length %d" % len(data))
        return b"<< " + b" ".join(items) + b" >>\nstream\n" + data + b"\nendstream"

    def _value(self, value: object, numbers: dict[tuple[int, int], int]) -> bytes:
        if isinstance(value, pikepdf.Object) and value.is_indirect:
            return b"%d 0 R" % self._indirect(value, numbers)
        return self._direct(value, numbers)

    def _direct(self, value: object, numbers: dict[tuple[int, int], int]) -> bytes:
        # pikepdf hands out PDF numbers, booleans and null as Python values.
        if value is None:
            return b"null"
        if isinstance(value, bool):
            return b"true" if value else b"false"
        if isinstance(value, int):
            return b"%d" % value
        if isinstance(value, Decimal | float):
            return _real(value)
        if isinstance(value, pikepdf.Array):
            return b"[" + b" ".join(self._value(item, numbers) for item in value) + b"]"
        if isinstance(value, pikepdf.Dictionary):
            items = (
                _name(key) + b" " + self._value(item, numbers) for key, item in _sorted_items(value)
            )
            return b"<< " + b" ".join(items) + b" >>"
        if isinstance(value, pikepdf.Object):  # names, strings, operators
            return bytes(value.unparse())
        raise TypeError(f"cannot write {type(value).__name__} into a PDF")

    # -- the file ------------------------------------------------------------------------

    def _new(self, body: bytes) -> int:
        number = len(self._offsets)
        self._offsets.append(0)
        self._object(number, body)
        return number

    def _object(self, number: int, body: bytes) -> None:
        self._start(number)
        self._write(body + b"\nendobj\n")

    def _start(self, number: int) -> None:
        self._offsets[number] = self._position
        self._write(b"%d 0 obj\n" % number)

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._digest.update(data)
        self._position += len(data)


def _sorted_items(dictionary: pikepdf.Dictionary) -> Iterator[tuple[str, object]]:
    for key in sorted(dictionary.keys()):
        yield key, dictionary[key]


def _name(key: str) -> bytes:
    return bytes(pikepdf.Name(key).unparse())


def _real(value: Decimal | float) -> bytes:
    text = format(Decimal(value) if isinstance(value, float) else value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return (text if text not in ("", "-0") else "0").encode("ascii")
