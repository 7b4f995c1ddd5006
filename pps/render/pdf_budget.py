"""How much content a PDF page draws once its forms are drawn, counted before anyone draws.

pdfium parses a Form XObject anew for every ``Do`` that draws it, draws a Type3 glyph's
procedure anew for every glyph shown, and qpdf decompresses a content stream whole before
tokenizing it. So two kilobytes of forms that each draw the next ten times make pdfium
parse a million copies (gigabytes of memory, from the upload check on: pdfium parses a
page's forms, and the glyphs its text shows, when it opens the page), a kilobyte of text
in a Type3 font whose glyph holds 100 KB of path draws for minutes, and a few kilobytes
of Flate-compressed ``0 0 m`` inflate to hundreds of megabytes. :class:`ContentBudget`
measures the decompressed content a page draws, each form counted once per ``Do`` that
reaches it, each tiling pattern's cell once per time it is selected (pdfium parses the
forms a cell draws when it fills with it; the tiles it paints from one bitmap, so a step
of 0.01 point costs no more than one of ten), and each glyph procedure once per glyph
shown (:mod:`pps.render.type3`); it refuses more than :data:`MAX_CONTENT_BYTES` a page
(:data:`MAX_DOCUMENT_CONTENT_BYTES` a document), more than :data:`MAX_FORM_DRAWS` forms
drawn, or a form, pattern or glyph that draws itself.

Every stream is measured before it is decompressed: Flate (nearly every PDF) is inflated
in chunks and counted, never held whole; other filters are decoded only when even their
worst ratio keeps them within the limit. The content of each form, pattern and glyph is
tokenized once (for the operators that draw forms, select patterns and show text) and the
walk uses an explicit stack, so the check costs about one pass over the file's content,
however often they are drawn.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable

import pikepdf

from pps.render.type3 import Type3Font, type3_font

__all__ = ["MAX_CONTENT_BYTES", "MAX_DOCUMENT_CONTENT_BYTES", "MAX_FORM_DRAWS", "ContentBudget"]

#: Decompressed content one page may draw, forms counted each time they are drawn. Rich
#: vector artwork has a few megabytes; pdfium holds some twenty bytes of memory for each
#: byte of path operators, and draws about fifteen megabytes of them a second.
MAX_CONTENT_BYTES = 32 * 1024 * 1024
#: Form XObjects one page may draw, those drawn by forms included: pdfium parses each
#: drawing of a form anew, at a kilobyte or two of memory apiece.
MAX_FORM_DRAWS = 100_000
#: Decompressed content measured in one document, over all its pages: each is tokenized
#: by the checks that follow, so a thousand pages sharing one large stream count too.
MAX_DOCUMENT_CONTENT_BYTES = 4 * MAX_CONTENT_BYTES

#: The most bytes one byte of a filter's input decodes to (Flate: zlib's 1032:1; LZW: a
#: 12-bit code of up to 4096 bytes; RunLength: 2 bytes of 128; ASCII85: ``z`` is 4 bytes).
_RATIOS = {
    "/FlateDecode": 1032,
    "/LZWDecode": 2731,
    "/RunLengthDecode": 64,
    "/ASCII85Decode": 4,
    "/ASCIIHexDecode": 1,
}
_CHUNK = 1 << 20
_MB = 1024 * 1024
_Key = tuple[int, int]
#: A form or glyph procedure drawn: ``(stream, times, is a form, its resources)``.
_Draw = tuple[pikepdf.Stream, int, bool, object]


class _TooMuch(Exception):
    """The content passed a limit; the message says which."""


class ContentBudget:
    """The content of one document's pages, measured page by page against both limits."""

    def __init__(
        self, page_limit: int = MAX_CONTENT_BYTES, limit: int = MAX_DOCUMENT_CONTENT_BYTES
    ) -> None:
        self.page_limit = page_limit
        self.limit = limit
        self.left = limit

    def problem(self, page: pikepdf.Page) -> str | None:
        """Why drawing ``page`` asks too much, or None."""
        try:
            self._drawn(page)
        except _TooMuch as exc:
            return str(exc)
        return None

    def _measure(self, stream: pikepdf.Stream) -> int:
        whole_document = self.left < self.page_limit
        size = _decoded_size(stream, self.left if whole_document else self.page_limit)
        if size is None:
            raise _TooMuch(
                f"the content of its pages decompresses to more than {self.limit // _MB} MB"
                if whole_document
                else f"a page's content decompresses to more than {self.page_limit // _MB} MB"
            )
        self.left -= size
        return size

    def _drawn(self, page: pikepdf.Page) -> None:
        contents = page.obj.get("/Contents")
        items: list[object] = [contents]
        if isinstance(contents, pikepdf.Array):
            items = list(contents)
        own = sum(self._measure(item) for item in items if isinstance(item, pikepdf.Stream))
        page_resources = page.obj.get("/Resources")
        draws = _draws(page, page_resources, page_resources) if own else []
        # Depth first over the forms and glyphs drawn, with an explicit stack: one is
        # finished, its cost known, once everything it draws is. Costs are (bytes, forms
        # drawn), keyed by stream; what a stream draws is read with the resources of its
        # first use (its own, else the page's, as pdfium reads them).
        cost: dict[_Key, tuple[int, int]] = {}
        pending: dict[_Key, tuple[int, list[_Draw]]] = {}
        stack = list(draws)
        while stack:
            stream, _, _, resources = stack[-1]
            key = stream.objgen
            if key in cost:
                stack.pop()
                continue
            if key not in pending:
                size = self._measure(stream)
                inner = _draws(stream, resources, page_resources) if size else []
                pending[key] = (size, inner)
                if any(other.objgen in pending for other, _, _, _ in inner):
                    raise _TooMuch("a form XObject, tiling pattern or Type3 glyph draws itself")
                stack.extend(draw for draw in inner if draw[0].objgen not in cost)
                continue
            stack.pop()
            size, inner = pending.pop(key)
            cost[key] = _total(size, inner, cost, self.page_limit)
        size, count = _total(own, draws, cost, self.page_limit)
        if count > MAX_FORM_DRAWS:
            raise _TooMuch(
                f"a page draws form XObjects more than {MAX_FORM_DRAWS} times, counting "
                "the forms drawn by forms, tiling patterns and Type3 glyphs"
            )
        if size > self.page_limit:
            raise _TooMuch(
                f"a page draws more than {self.page_limit // _MB} MB of content once its "
                "form XObjects, tiling patterns and Type3 glyphs are drawn each time they are used"
            )


def _total(
    size: int, draws: list[_Draw], cost: dict[_Key, tuple[int, int]], page_limit: int
) -> tuple[int, int]:
    """``(bytes, forms drawn)`` of content of ``size`` bytes that draws ``draws``, each
    saturating just past its limit so the sums stay small however much they multiply."""
    count = 0
    for stream, times, is_form, _ in draws:
        inner_size, inner_count = cost[stream.objgen]
        size += times * inner_size
        count += times * (int(is_form) + inner_count)
    return min(size, page_limit + 1), min(count, MAX_FORM_DRAWS + 1)


#: The operators :func:`_draws` reads: forms drawn, patterns and fonts selected (fonts
#: are graphics state that ``q`` and ``Q`` save and restore), and text shown.
_OPERATORS = "Do scn SCN Tf q Q Tj TJ ' \""


def _draws(
    holder: pikepdf.Page | pikepdf.Stream, resources: object, page_resources: object
) -> list[_Draw]:
    """What the content of ``holder`` draws: each form once per ``Do``, each tiling
    pattern's cell once per time it is selected, and each Type3 glyph procedure once per
    glyph shown, as ``(stream, times, is a form, the resources it is drawn with)``. Names
    of images, of nothing, or of something that is not a form, a tiling pattern or a Type3
    font draw no content and are left out."""
    if not isinstance(resources, pikepdf.Dictionary):
        return []
    xobjects = resources.get("/XObject")
    fonts = resources.get("/Font")
    patterns = resources.get("/Pattern")
    if not any(isinstance(named, pikepdf.Dictionary) for named in (xobjects, fonts, patterns)):
        return []
    try:
        instructions = pikepdf.parse_content_stream(holder, _OPERATORS)
    except (pikepdf.PdfError, RuntimeError, ValueError):
        return []  # content that cannot be read draws nothing; the readers report it
    drawn: dict[_Key, _Draw] = {}
    type3: dict[str, Type3Font | None] = {}
    current: Type3Font | None = None
    saved: list[Type3Font | None] = []

    def add(stream: pikepdf.Stream, times: int, is_form: bool, inner: object) -> None:
        before = drawn.get(stream.objgen)
        drawn[stream.objgen] = (stream, times + (before[1] if before else 0), is_form, inner)

    for instruction in instructions:
        if not isinstance(instruction, pikepdf.ContentStreamInstruction):
            continue  # an inline image
        operands, operator = instruction.operands, str(instruction.operator)
        if operator == "Do":
            target = (
                xobjects.get(operands[0])
                if len(operands) == 1
                and isinstance(operands[0], pikepdf.Name)
                and isinstance(xobjects, pikepdf.Dictionary)
                else None
            )
            if isinstance(target, pikepdf.Stream) and target.get("/Subtype") == "/Form":
                add(target, 1, True, target.get("/Resources", page_resources))
        elif operator in ("scn", "SCN"):
            # A tiling pattern's cell is content too; pdfium parses its forms when it fills.
            target = (
                patterns.get(operands[-1])
                if operands
                and isinstance(operands[-1], pikepdf.Name)
                and isinstance(patterns, pikepdf.Dictionary)
                else None
            )
            if isinstance(target, pikepdf.Stream) and target.get("/PatternType") == 1:
                add(target, 1, False, target.get("/Resources", page_resources))
        elif operator == "Tf":
            name = str(operands[0]) if operands and isinstance(operands[0], pikepdf.Name) else ""
            if name not in type3:
                font = fonts.get(name) if isinstance(fonts, pikepdf.Dictionary) and name else None
                type3[name] = type3_font(font)
            current = type3[name]
        elif operator == "q":
            saved.append(current)
        elif operator == "Q":
            current = saved.pop() if saved else current
        elif current is not None:  # text shown in a Type3 font
            inner = current.resources if current.resources is not None else page_resources
            for stream, times in current.draws(_shown(operands)):
                add(stream, times, False, inner)
    return list(drawn.values())


def _shown(operands: Iterable[object]) -> bytes:
    """The bytes a text-showing operator's operands show (``TJ``'s strings, joined)."""
    shown = b""
    for operand in operands:
        if isinstance(operand, pikepdf.String):
            shown += bytes(operand)
        elif isinstance(operand, pikepdf.Array):
            shown += b"".join(bytes(item) for item in operand if isinstance(item, pikepdf.String))
    return shown


def _decoded_size(stream: pikepdf.Stream, budget: int) -> int | None:
    """Bytes ``stream`` decodes to, or None when more than ``budget`` (or unmeasurable)."""
    raw = stream.read_raw_bytes()
    filters = stream.get("/Filter")
    names = (
        [str(filters)]
        if isinstance(filters, pikepdf.Name)
        else [str(f) for f in filters]
        if isinstance(filters, pikepdf.Array)
        else []
    )
    if not names:
        return len(raw) if len(raw) <= budget else None
    if names == ["/FlateDecode"]:
        return _inflated_size(raw, budget)
    worst = len(raw) * math.prod(_RATIOS.get(name, math.inf) for name in names)
    if worst <= budget:
        try:
            return len(stream.read_bytes())
        except (pikepdf.PdfError, RuntimeError, ValueError):
            return 0  # undecodable: the parsers report it as they read it
    return None


def _inflated_size(raw: bytes, budget: int) -> int | None:
    """Bytes the zlib data ``raw`` inflates to, counted a chunk at a time."""
    inflater = zlib.decompressobj()
    total = 0
    data = raw
    try:
        while data:
            total += len(inflater.decompress(data, _CHUNK))
            if total > budget:
                return None
            data = inflater.unconsumed_tail
            if inflater.eof:
                break
        total += len(inflater.flush(_CHUNK))
    except zlib.error:
        pass  # a broken stream: what inflated so far is what a reader gets
    return total if total <= budget else None
