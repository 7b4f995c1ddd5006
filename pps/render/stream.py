"""A PDF written page by page, so that a document of 10,000 records needs the memory of one.

reportlab keeps every page of a document in memory until ``save`` and then builds the whole
file in memory too: 10,000 business cards held about 20 KB each. :class:`PageStream` takes
over a reportlab canvas: each page reportlab finishes (``showPage``) has its content stream
compressed and written to the output at once, and only a few numbers per page are kept
(its content's offset, which page geometry it has). Drawing stays reportlab's: fonts,
their subsets, images and colour spaces live in reportlab's document as before. At the end
reportlab writes a small document of one empty page whose resources are the union of every
page's; its objects (fonts embedded once, subset with every glyph any page used; images
once) are copied behind the pages with new numbers, and the page dictionaries, the page
tree, the catalogue and the cross-reference table follow.

This reaches into reportlab (``Canvas._doc``, ``PDFDocument.addPage``, a page's resource
attributes), an exception to "libraries through their public API" with a measured reason:
reportlab has no public way to write a page out before ``save``, and holding the pages cost
about 20 kB each (tracemalloc: 5.5x the peak at 400 records as at 50; ``bench/vdata.py``
prints the RSS ratio of 10,000 to 1,000 records). Written against reportlab 5.1;
``tests/test_vdata_memory.py`` fails if an upgrade changes what it relies on.

The copy reads reportlab's output as reportlab writes it: a classic cross-reference table,
no object streams, references (``n 0 R``) only in dictionaries, never inside stream data
(which is copied byte for byte). The document's ``/ID`` is the MD5 of everything written
before it, so the same input gives the same bytes, as with ``invariant=True``.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from array import array
from collections.abc import Callable
from io import BytesIO
from typing import IO, Any

from reportlab.pdfbase import pdfdoc
from reportlab.pdfgen.canvas import Canvas

__all__ = ["PageStream"]

_REF = re.compile(rb"(\d+) 0 R\b")
_OBJ = re.compile(rb"(\d+) 0 obj\b")
_STREAM = re.compile(rb"stream\r?\n")
Box = tuple[float, ...]


class _Writer:
    """Bytes to ``out``, counted and hashed as they go."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.position = 0
        self.digest = hashlib.md5(usedforsecurity=False)

    def write(self, data: bytes) -> int:
        """Write ``data``; the offset it starts at."""
        at = self.position
        self.out.write(data)
        self.digest.update(data)
        self.position += len(data)
        return at


def _number(value: float) -> bytes:
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return (text if text not in ("", "-0") else "0").encode("ascii")


def _array(values: Box) -> bytes:
    return b"[" + b" ".join(_number(v) for v in values) + b"]"


def _text(value: str) -> bytes:
    """A PDF text string: UTF-16BE with BOM, hex-encoded (nothing to escape)."""
    return b"<FEFF" + value.encode("utf-16-be").hex().upper().encode("ascii") + b">"


def _dictionary_at(data: bytes, start: int) -> bytes:
    """The balanced ``<< ... >>`` that begins at ``start`` (reportlab's dictionaries hold no
    strings with angle brackets)."""
    depth = 0
    index = start
    while index < len(data):
        pair = data[index : index + 2]
        if pair == b"<<":
            depth += 1
            index += 2
            continue
        if pair == b">>":
            depth -= 1
            index += 2
            if depth == 0:
                return data[start:index]
            continue
        index += 1
    raise ValueError("unbalanced dictionary in reportlab's output")


class PageStream:
    """Pages of ``canvas`` go to ``out`` as they are finished; :meth:`close` completes it.

    ``canvas`` must write to a buffer of its own (only the small closing document lands
    there). Link annotations are not carried over (the templates make none).
    """

    def __init__(self, canvas: Canvas, out: IO[bytes]) -> None:
        self._canvas: Any = canvas  # reportlab internals: see the module docstring
        self._doc: Any = getattr(canvas, "_doc")  # noqa: B009  # not in reportlab's stubs
        self._add_page: Callable[[Any], None] = self._doc.addPage
        self._doc.addPage = self._take  # reportlab calls this from showPage
        self._writer = _Writer(out)
        self._writer.write(b"%PDF-1.4\n%\x93\x8c\x8b\x9e pps\n")
        #: Offset of each page's content stream; object n + 1 is page n's content.
        self._contents = array("Q")
        #: Index into ``_geometries`` of each page.
        self._shapes = array("I")
        self._geometries: dict[tuple[Box | None, ...], int] = {}
        self._xobjects: dict[str, Any] = {}
        self._colors: dict[Any, Any] = {}
        self._shadings: dict[Any, Any] = {}
        self._ext_states: dict[str, Any] = {}
        self._images = False

    @property
    def pages(self) -> int:
        return len(self._contents)

    def _take(self, page: Any) -> None:
        """Instead of reportlab's ``addPage``: write the page's content now, keep its shape."""
        data = page.stream.encode("utf-8") if isinstance(page.stream, str) else page.stream
        packed = zlib.compress(data)
        number = len(self._contents) + 1
        self._contents.append(
            self._writer.write(
                b"%d 0 obj\n<< /Filter /FlateDecode /Length %d >>\nstream\n" % (number, len(packed))
                + packed
                + b"\nendstream\nendobj\n"
            )
        )
        media = (0.0, 0.0, float(page.pagewidth), float(page.pageheight))
        if page.Rotate in (90, 270):
            media = (0.0, 0.0, float(page.pageheight), float(page.pagewidth))
        boxes = tuple(
            tuple(float(v) for v in box.sequence) if box is not None else None
            for box in (page.TrimBox, page.BleedBox, page.CropBox, page.ArtBox)
        )
        shape = (media, *boxes, (float(page.Rotate or 0),))
        self._shapes.append(self._geometries.setdefault(shape, len(self._geometries)))
        if page.XObjects is not None:
            self._xobjects.update(page.XObjects.dict)
        self._colors.update(page._colorsUsed or {})
        self._shadings.update(getattr(page, "_shadingUsed", None) or {})
        states = page.ExtGState
        if states:
            self._ext_states.update(states.dict if hasattr(states, "dict") else states)
        self._images = self._images or bool(page.hasImages)
        self._doc.pageCounter += 1
        self._doc.inObject = None

    def close(self) -> int:
        """Write what reportlab holds (fonts, images, ...) and the document's structure;
        the number of pages."""
        if not self._contents:
            raise ValueError("a document needs at least one page")
        data = self._closing_document()
        objects, root_page = _objects(data)
        resources = _dictionary_at(objects[root_page], objects[root_page].index(b"/Resources") + 11)
        skip = _structure(data, objects, root_page)
        pages = len(self._contents)
        first_page = pages + 1
        tree = first_page + pages
        catalog = tree + 1
        shared = catalog + 1
        info = shared + 1
        offset = info  # reportlab's object k becomes offset + k

        def renumber(part: bytes) -> bytes:
            return _REF.sub(lambda m: b"%d 0 R" % (int(m.group(1)) + offset), part)

        write = self._writer.write
        starts = array("Q", self._contents)
        geometry = {index: shape for shape, index in self._geometries.items()}
        for index in range(pages):
            shape = geometry[self._shapes[index]]
            parts = [b"/Type /Page /Parent %d 0 R /Resources %d 0 R" % (tree, shared)]
            parts.append(b"/MediaBox " + _array(shape[0] or ()))
            for name, box in zip(
                (b"TrimBox", b"BleedBox", b"CropBox", b"ArtBox"), shape[1:5], strict=True
            ):
                if box is not None:
                    parts.append(b"/" + name + b" " + _array(box))
            if shape[5] and shape[5][0]:
                parts.append(b"/Rotate %d" % int(shape[5][0]))
            parts.append(b"/Contents %d 0 R" % (index + 1))
            starts.append(
                write(b"%d 0 obj\n<< %s >>\nendobj\n" % (first_page + index, b" ".join(parts)))
            )
        kids = b" ".join(b"%d 0 R" % (first_page + index) for index in range(pages))
        starts.append(
            write(
                b"%d 0 obj\n<< /Type /Pages /Count %d /Kids [%s] >>\nendobj\n" % (tree, pages, kids)
            )
        )
        starts.append(
            write(b"%d 0 obj\n<< /Type /Catalog /Pages %d 0 R >>\nendobj\n" % (catalog, tree))
        )
        starts.append(write(b"%d 0 obj\n%s\nendobj\n" % (shared, renumber(resources))))
        title = str(getattr(self._doc.info, "title", "") or "")
        creator = str(getattr(self._doc.info, "creator", "") or "")
        starts.append(
            write(
                b"%d 0 obj\n<< /Title %s /Creator %s /Producer %s >>\nendobj\n"
                % (info, _text(title), _text(creator), _text("pps"))
            )
        )
        for number in sorted(objects):
            body = objects[number]
            if number in skip:
                body = b"null"  # keeps the numbering dense; nothing refers to it
            else:
                found = _STREAM.search(body)
                head, tail = (
                    (body, b"") if found is None else (body[: found.start()], body[found.start() :])
                )
                body = renumber(head) + tail
            starts.append(write(b"%d 0 obj\n%s\nendobj\n" % (number + offset, body.strip())))
        size = offset + max(objects) + 1
        xref = self._writer.position
        lines = [b"xref\n0 %d\n" % size, b"0000000000 65535 f \n"]
        lines.extend(b"%010d 00000 n \n" % start for start in starts)
        if len(starts) != size - 1:
            raise ValueError("objects of reportlab's output are not numbered densely")
        self._writer.write(b"".join(lines))
        identifier = self._writer.digest.hexdigest().encode("ascii")
        self._writer.write(
            b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /ID [<%s> <%s>] >>\n"
            b"startxref\n%d\n%%%%EOF\n" % (size, catalog, info, identifier, identifier, xref)
        )
        return pages

    def _closing_document(self) -> bytes:
        """reportlab's document with one empty page holding every page's resources."""
        page: Any = pdfdoc.PDFPage()
        page.setStream(" ")
        page.XObjects = pdfdoc.PDFDictionary(self._xobjects) if self._xobjects else None
        page._colorsUsed = self._colors
        page._shadingUsed = self._shadings
        page.ExtGState = pdfdoc.PDFDictionary(self._ext_states) if self._ext_states else None
        page.hasImages = self._images
        self._add_page(page)
        buffer = self._canvas._filename
        if not isinstance(buffer, BytesIO):
            raise TypeError("the canvas must write to a BytesIO")
        self._canvas._code = []  # nothing is pending: every page went through showPage
        self._canvas.save()
        return buffer.getvalue()


def _objects(data: bytes) -> tuple[dict[int, bytes], int]:
    """reportlab's objects by number (each body without ``n 0 obj``/``endobj``) and the
    number of its one page."""
    start = int(data[data.rindex(b"startxref") + 9 :].split()[0])
    lines = data[start:].split(b"\n")
    if lines[0].strip() != b"xref":
        raise ValueError("reportlab's output has no classic cross-reference table")
    first, count = (int(v) for v in lines[1].split())
    offsets = {
        first + index: int(lines[2 + index][:10])
        for index in range(count)
        if lines[2 + index][17:18] == b"n"
    }
    objects: dict[int, bytes] = {}
    for number, at in offsets.items():
        header = _OBJ.match(data, at)
        if header is None or int(header.group(1)) != number:
            raise ValueError(f"object {number} is not where the table says")
        end = data.index(b"endobj", header.end())
        objects[number] = data[header.end() : end].strip()
    trailer = data[data.rindex(b"trailer") :]
    root = int(re.search(rb"/Root (\d+) 0 R", trailer).group(1))  # type: ignore[union-attr]
    tree = int(re.search(rb"/Pages (\d+) 0 R", objects[root]).group(1))  # type: ignore[union-attr]
    kids = re.search(rb"/Kids \[\s*(\d+) 0 R", objects[tree])
    if kids is None:
        raise ValueError("reportlab's page tree has no page")
    return objects, int(kids.group(1))


def _structure(data: bytes, objects: dict[int, bytes], page: int) -> set[int]:
    """reportlab's own catalogue, info, page tree, page and its content: replaced by ours."""
    trailer = data[data.rindex(b"trailer") :]
    skip = {page}
    for pattern, source in (
        (rb"/Root (\d+) 0 R", trailer),
        (rb"/Info (\d+) 0 R", trailer),
        (rb"/Parent (\d+) 0 R", objects[page]),
        (rb"/Contents (\d+) 0 R", objects[page]),
    ):
        found = re.search(pattern, source)
        if found is not None:
            skip.add(int(found.group(1)))
    return skip
