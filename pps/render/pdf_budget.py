"""How much content a PDF page draws once its forms are drawn, counted before anyone draws.

pdfium parses a Form XObject anew for every ``Do`` that draws it, and qpdf decompresses a
content stream whole before tokenizing it. So two kilobytes of forms that each draw the
next ten times make pdfium parse a million copies (gigabytes of memory, from the upload
check on: pdfium parses a page's forms when it opens the page), and a few kilobytes of
Flate-compressed ``0 0 m`` inflate to hundreds of megabytes. :class:`ContentBudget`
measures the decompressed content a page draws, each form counted once per ``Do`` that
reaches it, and refuses more than :data:`MAX_CONTENT_BYTES` a page
(:data:`MAX_DOCUMENT_CONTENT_BYTES` a document), more than :data:`MAX_FORM_DRAWS` forms
drawn, or a form that draws itself.

Every stream is measured before it is decompressed: Flate (nearly every PDF) is inflated
in chunks and counted, never held whole; other filters are decoded only when even their
worst ratio keeps them within the limit. Each form's content is tokenized once (for its
``Do`` operators alone) and the walk uses an explicit stack, so the check costs about one
pass over the file's content, however often its forms are drawn.
"""

from __future__ import annotations

import math
import zlib

import pikepdf

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
        draws = _draws(page, page_resources) if own else []
        # Depth first over the forms drawn, with an explicit stack: a form is finished,
        # its cost known, once everything it draws is. Costs are (bytes, forms drawn).
        cost: dict[_Key, tuple[int, int]] = {}
        pending: dict[_Key, tuple[int, list[pikepdf.Stream]]] = {}
        stack = list(draws)
        while stack:
            form = stack[-1]
            key = form.objgen
            if key in cost:
                stack.pop()
                continue
            if key not in pending:
                size = self._measure(form)
                inner = _draws(form, form.get("/Resources", page_resources)) if size else []
                pending[key] = (size, inner)
                if any(other.objgen in pending for other in inner):
                    raise _TooMuch("a form XObject draws itself")
                stack.extend(other for other in inner if other.objgen not in cost)
                continue
            stack.pop()
            size, inner = pending.pop(key)
            size += sum(cost[other.objgen][0] for other in inner)
            count = len(inner) + sum(cost[other.objgen][1] for other in inner)
            cost[key] = (min(size, self.page_limit + 1), min(count, MAX_FORM_DRAWS + 1))
        size = own + sum(cost[form.objgen][0] for form in draws)
        count = len(draws) + sum(cost[form.objgen][1] for form in draws)
        if count > MAX_FORM_DRAWS:
            raise _TooMuch(
                f"a page draws form XObjects more than {MAX_FORM_DRAWS} times, counting "
                "the forms drawn by forms"
            )
        if size > self.page_limit:
            raise _TooMuch(
                f"a page draws more than {self.page_limit // _MB} MB of content once its "
                "form XObjects are drawn each time they are used"
            )


def _draws(holder: pikepdf.Page | pikepdf.Stream, resources: object) -> list[pikepdf.Stream]:
    """The forms the content of ``holder`` draws, once per ``Do``; names of images, of
    nothing, or of something that is not a form draw no content and are left out."""
    xobjects = resources.get("/XObject") if isinstance(resources, pikepdf.Dictionary) else None
    if not isinstance(xobjects, pikepdf.Dictionary):
        return []
    try:
        instructions = pikepdf.parse_content_stream(holder, "Do")
    except (pikepdf.PdfError, RuntimeError, ValueError):
        return []  # content that cannot be read draws nothing; the readers report it
    forms: list[pikepdf.Stream] = []
    for instruction in instructions:
        if not isinstance(instruction, pikepdf.ContentStreamInstruction):
            continue
        operands = instruction.operands
        if len(operands) != 1 or not isinstance(operands[0], pikepdf.Name):
            continue
        target = xobjects.get(operands[0])
        if isinstance(target, pikepdf.Stream) and target.get("/Subtype") == "/Form":
            forms.append(target)
    return forms


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
