"""Template + values -> PDF: the print file, the low-resolution proof, and the page to rasterize.

reportlab writes the pages (embedded, subset TrueType fonts; text as real text drawn with
``drawString``, so ``<b>`` or ``&amp;`` in a value stays literal). Background artwork is
then put underneath with pikepdf as a Form XObject: the artwork's own vector content,
never rasterized, except in the low-resolution proof when the artwork carries images.
``invariant=True`` and pikepdf's content-derived ID make the same input give the same bytes.
"""

from __future__ import annotations

import itertools
import math
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import IO

import pikepdf
from PIL import Image
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen.canvas import Canvas

from pps.render.assets import AssetLoader, Assets, as_loader, sniff
from pps.render.errors import AssetError, InvalidValues, RenderOptionError
from pps.render.fonts import DEFAULT_FONT, load_font
from pps.render.layout import MM, Prepared, prepare
from pps.render.media import resolve
from pps.render.model import (
    CMYK,
    Color,
    ColorBackground,
    ImageElement,
    LineElement,
    PdfBackground,
    QrElement,
    RectElement,
    TemplateSpec,
    TextElement,
)
from pps.render.pdf_budget import ContentBudget
from pps.render.pdf_errors import read_error
from pps.render.pdf_parts import PartsWriter
from pps.render.vector import draw_svg, is_svg, svg_size
from pps.render.xobjects import MAX_FORM_DEPTH, survey_xobjects

__all__ = ["LOW_RES_DPI", "render_low_res_pdf", "render_print_pdf", "render_records_pdf"]

#: Images in the proof are resampled to this resolution at their placed size.
LOW_RES_DPI = 100
#: Crop marks stand this far outside the trim (at least the bleed) and are this long, in mm.
CROP_MARK_OFFSET = 3.0
CROP_MARK_LENGTH = 5.0
#: pdfium is not thread-safe and reportlab's font state is shared: one render at a time per
#: process. Renders are CPU-bound under the GIL anyway, so this costs no throughput.
RENDER_LOCK = threading.RLock()


@dataclass(frozen=True)
class _Mode:
    bleed: bool  # MediaBox = trim + bleed (print); else MediaBox = trim
    crop_marks: bool
    low_res: bool
    #: Deflate the content streams and fonts. A PDF that is only rasterized in this process
    #: never travels: compressing it would take more than half of its composing time.
    compress: bool = True


@dataclass(frozen=True)
class _Artwork:
    """An artwork page's boxes (PDF units) and, for the proof, its raster stand-in."""

    trim: tuple[float, float, float, float]
    crop: tuple[float, float, float, float]
    has_images: bool


def render_print_pdf(
    spec: TemplateSpec, values: Mapping[str, object], assets: Assets, crop_marks: bool = False
) -> bytes:
    """The print-ready PDF: every page, MediaBox = trim + bleed, TrimBox and BleedBox set.

    With ``crop_marks`` the MediaBox grows by a slug holding the marks; TrimBox and
    BleedBox stay where they are. Raises ``InvalidValues`` naming each bad DataKey.
    """
    mode = _Mode(bleed=True, crop_marks=crop_marks, low_res=False)
    return compose(spec, values, as_loader(assets), range(len(spec.pages)), mode)


#: Records drawn into one reportlab document before its pages are copied to the output
#: (see :mod:`pps.render.pdf_parts`): what bounds the memory of a variable-data PDF.
RECORDS_PER_PART = 200
#: Characters beyond ASCII drawn first into every part (see :func:`_alphabets`). reportlab
#: embeds a TrueType font as subsets of 256 codes; ASCII and code 0 take 97 of the first, so
#: 159 more fill it and keep each face in one subset.
PRIMED_BEYOND_ASCII = 159
#: The characters primed first, after ASCII: Latin-1 and the punctuation of running text.
#: (En and em dash, the single and double quotation marks, bullet, ellipsis, euro, trade mark.)
_PRIMED_FIRST = [
    *range(0xA1, 0x100),
    *(0x2013, 0x2014, 0x2018, 0x2019, 0x201A, 0x201C, 0x201D, 0x201E),
    *(0x2022, 0x2026, 0x20AC, 0x2122),
]
_PRIMED_RANK = {code: rank for rank, code in enumerate(_PRIMED_FIRST)}


def render_records_pdf(
    spec: TemplateSpec,
    records: Iterable[Mapping[str, object]],
    assets: Assets,
    out: IO[bytes],
    *,
    crop_marks: bool = False,
    records_per_part: int = RECORDS_PER_PART,
) -> int:
    """The print PDF of variable data: every page of the template once per record, in
    record order, written to ``out``; returns the number of records.

    ``records`` may be a generator over a database cursor: they are read ``records_per_part``
    at a time, each part drawn by reportlab into a PDF of its own and its pages appended to
    ``out`` at once (:class:`~pps.render.pdf_parts.PartsWriter`), so memory stays that of one
    part however many records follow. Each font is embedded once per document: when there is
    more than one part, every part first draws the same characters of each font into a form
    no page uses (:func:`_alphabets`), so every part has the same subsets with the same
    codes, and the writer keeps one copy. Layouts and QR matrices that repeat are served from
    :mod:`pps.render.layout`'s caches. A record that cannot be drawn raises
    :class:`InvalidValues` with its keys named ``row <n>.<DataKey>`` (records counted from 1);
    ``out`` then holds the parts written before it, so callers write to a buffer or a
    temporary file they drop on an error.
    """
    if records_per_part < 1:
        raise RenderOptionError("records_per_part must be at least 1")
    mode = _Mode(bleed=True, crop_marks=crop_marks, low_res=False)
    loader = as_loader(assets)
    rows = iter(records)
    with RENDER_LOCK:
        composer = _Composer(spec, loader, Prepared(texts={}, qrs={}), mode)
        part = list(itertools.islice(rows, records_per_part + 1))
        if not part:
            raise RenderOptionError("records must hold at least one record")
        alphabets = _alphabets(spec, loader) if len(part) > records_per_part else []
        writer = PartsWriter(out, {"Title": spec.name, "Creator": "pps"})
        count = 0
        while part:
            drawn = part[:records_per_part]
            data = composer.records_part(drawn, first_row=count + 1, alphabets=alphabets)
            count += len(drawn)
            with pikepdf.open(BytesIO(data)) as pdf:
                writer.add(pdf)
            part = part[records_per_part:] + list(itertools.islice(rows, records_per_part))
        writer.close()
    return count


def _printable(code: int) -> bool:
    return unicodedata.category(chr(code)) not in ("Cc", "Cf", "Cs", "Zl", "Zp")


def _alphabets(spec: TemplateSpec, loader: AssetLoader) -> list[tuple[str, str]]:
    """(reportlab font name, the characters to draw first) for each font a record may use:
    ASCII, then up to :data:`PRIMED_BEYOND_ASCII` more, Latin-1 and punctuation first.

    Every part of a document draws them in this order before anything else, so every part
    assigns them the same codes in the same subset and embeds byte-identical subsets, which
    the writer keeps once. A record with a character outside them starts a second subset in
    its part, which is then embedded per part that uses one: still correct, only larger.
    """
    names = {DEFAULT_FONT}
    for page in spec.pages:
        names.update(e.font for e in page.elements if isinstance(e, TextElement))
    for choice in spec.choices:
        if choice.property == "font":
            names.update(option.value for option in choice.options)
    alphabets = []
    for name in sorted(names):
        font = load_font(name, loader)
        known = font.face.charToGlyph
        ascii_codes = [code for code in range(0x20, 0x7F) if code in known]
        beyond = sorted(
            # reportlab draws a no-break space (U+00A0) with the space's code: not primed.
            (code for code in known if code > 0xA0 and _printable(code)),
            key=lambda code: (_PRIMED_RANK.get(code, len(_PRIMED_RANK)), code),
        )[:PRIMED_BEYOND_ASCII]
        alphabets.append((font.fontName, "".join(map(chr, ascii_codes + beyond))))
    return alphabets


def render_low_res_pdf(spec: TemplateSpec, values: Mapping[str, object], assets: Assets) -> bytes:
    """A small proof: trim size, images resampled to :data:`LOW_RES_DPI`, text still text."""
    mode = _Mode(bleed=False, crop_marks=False, low_res=True)
    return compose(spec, values, as_loader(assets), range(len(spec.pages)), mode)


def render_page_pdf(
    spec: TemplateSpec,
    values: Mapping[str, object],
    loader: AssetLoader,
    page: int,
    *,
    allow_missing: bool = False,
) -> bytes:
    """One page at trim size with full-resolution content: what PNGs are rasterized from
    (uncompressed: it is read once, by pdfium, in this process)."""
    mode = _Mode(bleed=False, crop_marks=False, low_res=False, compress=False)
    return compose(spec, values, loader, [page], mode, allow_missing=allow_missing)


def compose(
    spec: TemplateSpec,
    values: Mapping[str, object],
    loader: AssetLoader,
    pages: Sequence[int],
    mode: _Mode,
    *,
    allow_missing: bool = False,
) -> bytes:
    """Draw ``pages`` of ``spec`` with ``values`` into one PDF."""
    with RENDER_LOCK:
        prepared = prepare(spec, values, loader, pages, allow_missing=allow_missing)
        return _Composer(resolve(spec, values), loader, prepared, mode).run(pages)


class _Composer:
    def __init__(
        self, spec: TemplateSpec, loader: AssetLoader, prepared: Prepared, mode: _Mode
    ) -> None:
        self.spec = spec
        self.loader = loader
        self.prepared = prepared
        self.mode = mode
        self.files: dict[str, bytes] = {}
        self.artwork: dict[tuple[str, int], _Artwork] = {}
        self.underlays: list[tuple[int, PdfBackground, tuple[float, ...]]] = []
        self.width = spec.width * MM
        self.height = spec.height * MM
        self.bleed = spec.bleed * MM if mode.bleed else 0.0
        marks = max(spec.bleed, CROP_MARK_OFFSET) + CROP_MARK_LENGTH + 1 if mode.crop_marks else 0
        # The trim area's lower-left corner on the page.
        self.margin = max(self.bleed, marks * MM)

    def run(self, pages: Sequence[int]) -> bytes:
        buffer = BytesIO()
        canvas = self.open(buffer)
        for out_index, page_index in enumerate(pages):
            self.draw(canvas, out_index, page_index)
        canvas.save()
        data = buffer.getvalue()
        return self._underlay(data) if self.underlays else data

    def open(self, out: IO[bytes]) -> Canvas:
        # The initial font is written into every page; reportlab's default (Helvetica) would
        # be an unembedded font that preflight checks flag even though nothing uses it.
        initial = load_font(DEFAULT_FONT, None).fontName
        canvas = Canvas(
            out,
            invariant=True,
            pageCompression=1 if self.mode.compress else 0,
            initialFontName=initial,  # type: ignore[arg-type]  # the stubs say float: a typo
        )
        canvas.setTitle(self.spec.name)
        canvas.setCreator("pps")
        return canvas

    def draw(self, canvas: Canvas, out_index: int, page_index: int) -> None:
        """Page ``page_index`` of the template as page ``out_index`` of the output."""
        m, w, h, b = self.margin, self.width, self.height, self.bleed
        canvas.setPageSize((w + 2 * m, h + 2 * m))
        canvas.setTrimBox((m, m, m + w, m + h))
        canvas.setBleedBox((m - b, m - b, m + w + b, m + h + b))
        self._page(canvas, out_index, page_index)
        if self.mode.crop_marks:
            self._crop_marks(canvas)
        canvas.showPage()

    def records_part(
        self,
        records: Sequence[Mapping[str, object]],
        *,
        first_row: int,
        alphabets: Sequence[tuple[str, str]],
    ) -> bytes:
        """One part of :func:`render_records_pdf`: ``records`` (the first is row
        ``first_row``) as one PDF, every font first given ``alphabets`` (see there)."""
        base = self.spec
        pages = range(len(base.pages))
        self.underlays = []
        canvas = self.open(buffer := BytesIO())
        if alphabets:
            # Drawn into a form no page shows, before any page: the subsets and their codes
            # are then the same in every part, whatever the records use first.
            canvas.beginForm("PpsAlphabet")
            for font_name, characters in alphabets:
                canvas.setFont(font_name, 1)
                canvas.drawString(0, 0, characters)
            canvas.endForm()
        for offset, record in enumerate(records):
            try:
                self.prepared = prepare(base, record, self.loader, pages)
                self.spec = resolve(base, record)
            except InvalidValues as exc:
                row = first_row + offset
                raise InvalidValues(
                    {f"row {row}.{key}": found for key, found in exc.problems.items()}
                ) from None
            for page_index in pages:
                self.draw(canvas, offset * len(pages) + page_index, page_index)
        self.spec = base
        canvas.save()
        data = buffer.getvalue()
        return self._underlay(data) if self.underlays else data

    # --- one page ---

    def _page(self, canvas: Canvas, out_index: int, page_index: int) -> None:
        page = self.spec.pages[page_index]
        background = page.background
        m, b = self.margin, self.bleed
        if isinstance(background, ColorBackground):
            _fill(canvas, background.color)
            canvas.rect(m - b, m - b, self.width + 2 * b, self.height + 2 * b, stroke=0, fill=1)
        elif isinstance(background, PdfBackground):
            art = self._artwork(background)
            matrix = self._placement(art)
            if self.mode.low_res and art.has_images:
                self._raster_artwork(canvas, background, art, matrix)
            else:
                self.underlays.append((out_index, background, matrix))
        for index, element in enumerate(page.elements):
            where = (page_index, index)
            canvas.saveState()
            if isinstance(element, TextElement):
                self._text(canvas, element, where)
            elif isinstance(element, QrElement):
                self._qr(canvas, element, where)
            elif isinstance(element, ImageElement):
                self._image(canvas, element)
            elif isinstance(element, RectElement):
                self._rect(canvas, element)
            elif isinstance(element, LineElement):
                _stroke(canvas, element.color)
                canvas.setLineWidth(element.width)
                canvas.line(
                    self._x(element.start.x),
                    self._y(element.start.y),
                    self._x(element.end.x),
                    self._y(element.end.y),
                )
            canvas.restoreState()

    def _x(self, mm: float) -> float:
        return self.margin + mm * MM

    def _y(self, mm: float) -> float:
        """Template y (down from the trim's top edge) -> PDF y (up from the page's bottom)."""
        return self.margin + self.height - mm * MM

    def _text(self, canvas: Canvas, element: TextElement, where: tuple[int, int]) -> None:
        layout = self.prepared.texts.get(where)
        if layout is None or not layout.lines:
            return
        font, size, box = layout.font, layout.size, element.box
        ascent = font.face.ascent / 1000 * size
        descent = font.face.descent / 1000 * size
        leading = size * element.line_height
        block = (len(layout.lines) - 1) * leading + ascent - descent
        top, bottom = self._y(box.y), self._y(box.y + box.height)
        if element.valign == "top":
            baseline = top - ascent
        elif element.valign == "bottom":
            baseline = bottom + block - ascent
        else:
            baseline = (top + bottom) / 2 + block / 2 - ascent
        canvas.setFont(font.fontName, size)
        _fill(canvas, element.color)
        for line in layout.lines:
            if element.align == "center":
                canvas.drawCentredString(self._x(box.x + box.width / 2), baseline, line)
            elif element.align == "right":
                canvas.drawRightString(self._x(box.x + box.width), baseline, line)
            else:
                canvas.drawString(self._x(box.x), baseline, line)
            baseline -= leading

    def _qr(self, canvas: Canvas, element: QrElement, where: tuple[int, int]) -> None:
        matrix = self.prepared.qrs.get(where)
        if matrix is None:
            return
        box, quiet = element.box, element.quiet_zone
        side = min(box.width, box.height) * MM
        module = side / (len(matrix) + 2 * quiet)
        left = self._x(box.x) + (box.width * MM - side) / 2 + quiet * module
        top = self._y(box.y) - (box.height * MM - side) / 2 - quiet * module
        # One path of horizontal runs: a single fill, so no hairline seams between modules.
        # Drawn in module units (one module = 1 x 1, the first row on top): the runs are
        # small integers, a third of the bytes of page coordinates (of a part's memory, see
        # render_records_pdf, the page streams are most).
        canvas.translate(left, top - len(matrix) * module)
        canvas.scale(module, module)
        path = canvas.beginPath()
        last_row = len(matrix) - 1
        for row_index, row in enumerate(matrix):
            col = 0
            while col < len(row):
                if not row[col]:
                    col += 1
                    continue
                start = col
                while col < len(row) and row[col]:
                    col += 1
                path.rect(start, last_row - row_index, col - start, 1)
        _fill(canvas, element.color)
        canvas.drawPath(path, stroke=0, fill=1)

    def _image(self, canvas: Canvas, element: ImageElement) -> None:
        """The image (or its ``crop``) fitted into the box as ``fit`` says, clipped to both."""
        if element.file is None:
            return  # a customer's image not given yet, and no stand-in
        box = element.box
        data = self._file(element.file)
        svg = is_svg(data)
        if not svg and sniff(data) not in ("png", "jpeg"):
            raise AssetError(f"{element.file!r}: is not a PNG, JPEG or SVG file")
        reader: ImageReader | None = None
        try:
            if svg:
                pixel_width, pixel_height = svg_size(data)
            else:
                reader = ImageReader(BytesIO(data))
                pixel_width, pixel_height = reader.getSize()
        except Exception as exc:  # reportlab and svglib wrap the parsers' errors in their own
            raise AssetError(f"{element.file!r}: cannot be read as an image: {exc}") from None
        crop = element.crop
        cx, cy, cw, ch = (0.0, 0.0, float(pixel_width), float(pixel_height))
        if crop is not None:
            # Within the image: a crop reaching past an edge is cut back to it.
            cx = min(max(crop.x, 0.0), pixel_width - 1.0)
            cy = min(max(crop.y, 0.0), pixel_height - 1.0)
            cw, ch = min(crop.width, pixel_width - cx), min(crop.height, pixel_height - cy)
        x, y = self._x(box.x), self._y(box.y + box.height)
        w, h = box.width * MM, box.height * MM
        if element.fit == "stretch":
            sx, sy = w / cw, h / ch
        else:
            pick = min if element.fit == "contain" else max
            sx = sy = pick(w / cw, h / ch)
        shown_w, shown_h = cw * sx, ch * sy
        left = x + (w - shown_w) / 2  # where the crop's top-left corner lands
        top = y + (h + shown_h) / 2
        draw_w, draw_h = pixel_width * sx, pixel_height * sy
        if crop is None:
            image_x, image_y = x + (w - draw_w) / 2, y + (h - draw_h) / 2
            if element.fit == "cover":
                self._clip(canvas, x, y, w, h)
        else:
            image_x, image_y = left - cx * sx, top + cy * sy - draw_h
            clip_x0, clip_y0 = max(x, left), max(y, top - shown_h)
            clip_x1, clip_y1 = min(x + w, left + shown_w), min(y + h, top)
            self._clip(canvas, clip_x0, clip_y0, clip_x1 - clip_x0, clip_y1 - clip_y0)
        if svg:
            draw_svg(canvas, data, image_x, image_y, draw_w, draw_h)
            return
        assert reader is not None
        if self.mode.low_res:
            reader = ImageReader(BytesIO(_downsample(data, draw_w, draw_h)))
        canvas.drawImage(reader, image_x, image_y, draw_w, draw_h, mask="auto")

    @staticmethod
    def _clip(canvas: Canvas, x: float, y: float, w: float, h: float) -> None:
        clip = canvas.beginPath()
        clip.rect(x, y, w, h)
        canvas.clipPath(clip, stroke=0, fill=0)

    def _rect(self, canvas: Canvas, element: RectElement) -> None:
        box = element.box
        if element.fill is not None:
            _fill(canvas, element.fill)
        if element.stroke is not None:
            _stroke(canvas, element.stroke)
            canvas.setLineWidth(element.stroke_width)
        canvas.rect(
            self._x(box.x),
            self._y(box.y + box.height),
            box.width * MM,
            box.height * MM,
            stroke=int(element.stroke is not None),
            fill=int(element.fill is not None),
        )

    def _crop_marks(self, canvas: Canvas) -> None:
        """Hairlines in registration colour at each trim corner, outside the bleed."""
        m, w, h = self.margin, self.width, self.height
        offset = max(self.spec.bleed, CROP_MARK_OFFSET) * MM
        length = CROP_MARK_LENGTH * MM
        canvas.saveState()
        canvas.setStrokeColorCMYK(1, 1, 1, 1)
        canvas.setLineWidth(0.25)
        for x, sx in ((m, -1), (m + w, 1)):
            for y, sy in ((m, -1), (m + h, 1)):
                canvas.line(x + sx * offset, y, x + sx * (offset + length), y)
                canvas.line(x, y + sy * offset, x, y + sy * (offset + length))
        canvas.restoreState()

    # --- artwork ---

    def _file(self, name: str) -> bytes:
        if name not in self.files:
            self.files[name] = self.loader(name)
        return self.files[name]

    def _artwork(self, background: PdfBackground) -> _Artwork:
        key = (background.file, background.page)
        if key not in self.artwork:
            with _open_pdf(background.file, self._file(background.file)) as pdf:
                page = _artwork_page(pdf, background)
                too_much = ContentBudget().problem(page)
                if too_much is not None:  # an artwork stored before the limits
                    raise AssetError(
                        f"{background.file!r}: page {background.page + 1} cannot be drawn: "
                        f"{too_much}"
                    )
                survey = survey_xobjects(page.obj.get("/Resources"))
                if survey.depth > MAX_FORM_DEPTH:
                    # Copying or drawing the page would recurse as deep as its forms nest.
                    raise AssetError(
                        f"{background.file!r}: page {background.page + 1} nests form XObjects "
                        f"{survey.depth} levels deep; at most {MAX_FORM_DEPTH} can be drawn"
                    )
                self.artwork[key] = _Artwork(
                    trim=_box(page.trimbox), crop=_box(page.cropbox), has_images=survey.has_images
                )
        return self.artwork[key]

    def _placement(self, art: _Artwork) -> tuple[float, ...]:
        """The matrix mapping the artwork's trim box onto the template's trim area."""
        x0, y0, x1, y1 = art.trim
        scale = min(self.width / (x1 - x0), self.height / (y1 - y0))
        e = self.margin + (self.width - scale * (x1 - x0)) / 2 - scale * x0
        f = self.margin + (self.height - scale * (y1 - y0)) / 2 - scale * y0
        return (scale, 0.0, 0.0, scale, e, f)

    def _raster_artwork(
        self,
        canvas: Canvas,
        background: PdfBackground,
        art: _Artwork,
        matrix: tuple[float, ...],
    ) -> None:
        """The proof's stand-in for artwork full of images: one small JPEG of the page."""
        import pypdfium2 as pdfium

        scale = matrix[0]
        x0, y0, x1, y1 = art.crop
        pdf = pdfium.PdfDocument(self._file(background.file))
        try:
            bitmap = pdf[background.page].render(
                scale=scale * LOW_RES_DPI / 72, fill_color=(255, 255, 255, 255)
            )
            image = bitmap.to_pil().convert("RGB")
        finally:
            pdf.close()
        out = BytesIO()
        image.save(out, "JPEG", quality=70)
        canvas.drawImage(
            ImageReader(out),
            scale * x0 + matrix[4],
            scale * y0 + matrix[5],
            scale * (x1 - x0),
            scale * (y1 - y0),
        )

    def _underlay(self, data: bytes) -> bytes:
        """Put each artwork page under its page as a Form XObject, keeping it vector."""
        sources: dict[str, pikepdf.Pdf] = {}
        forms: dict[tuple[str, int], pikepdf.Object] = {}
        try:
            with pikepdf.open(BytesIO(data)) as pdf:
                for out_index, background, matrix in self.underlays:
                    key = (background.file, background.page)
                    if key not in forms:
                        if background.file not in sources:
                            sources[background.file] = _open_pdf(
                                background.file, self._file(background.file)
                            )
                        art = _artwork_page(sources[background.file], background)
                        form = art.as_form_xobject()
                        # Keep the artwork's bleed: clip at its CropBox, not its TrimBox.
                        form.BBox = pikepdf.Array(art.cropbox)
                        forms[key] = pdf.copy_foreign(form)
                    target = pdf.pages[out_index]
                    # A fixed name (add_resource's own are random) keeps the output reproducible.
                    name = pikepdf.Name(f"/PpsArt{out_index}")
                    target.add_resource(forms[key], pikepdf.Name.XObject, name)
                    numbers = " ".join(_num(value) for value in matrix)
                    target.contents_add(f"q {numbers} cm {name} Do Q\n".encode(), prepend=True)
                out = BytesIO()
                pdf.save(out, deterministic_id=True)
                return out.getvalue()
        finally:
            for source in sources.values():
                source.close()


def _open_pdf(name: str, data: bytes) -> pikepdf.Pdf:
    try:
        return pikepdf.open(BytesIO(data))
    except (pikepdf.PdfError, ValueError) as exc:
        raise AssetError(f"{name!r}: cannot be read as PDF: {read_error(exc)}") from None


def _artwork_page(pdf: pikepdf.Pdf, background: PdfBackground) -> pikepdf.Page:
    if background.page >= len(pdf.pages):
        raise AssetError(f"{background.file!r}: has no page {background.page} (counted from 0)")
    return pdf.pages[background.page]


def _box(array: pikepdf.Array) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(value) for value in array)
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def _downsample(data: bytes, width_pt: float, height_pt: float) -> bytes:
    """The image resampled to :data:`LOW_RES_DPI` at its placed size (never enlarged)."""
    with Image.open(BytesIO(data)) as image:
        image.load()
        target = (
            max(1, math.ceil(width_pt / 72 * LOW_RES_DPI)),
            max(1, math.ceil(height_pt / 72 * LOW_RES_DPI)),
        )
        small: Image.Image = image
        if image.width > target[0] or image.height > target[1]:
            size = (min(image.width, target[0]), min(image.height, target[1]))
            small = image.resize(size, Image.Resampling.LANCZOS)
        out = BytesIO()
        if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
            small.convert("RGBA").save(out, "PNG")
        else:
            small.convert("CMYK" if image.mode == "CMYK" else "RGB").save(out, "JPEG", quality=70)
        return out.getvalue()


def _fill(canvas: Canvas, color: Color) -> None:
    if isinstance(color, CMYK):
        canvas.setFillColorCMYK(color.c / 100, color.m / 100, color.y / 100, color.k / 100)
    else:
        canvas.setFillColorRGB(color.red / 255, color.green / 255, color.blue / 255)


def _stroke(canvas: Canvas, color: Color) -> None:
    if isinstance(color, CMYK):
        canvas.setStrokeColorCMYK(color.c / 100, color.m / 100, color.y / 100, color.k / 100)
    else:
        canvas.setStrokeColorRGB(color.red / 255, color.green / 255, color.blue / 255)


def _num(value: float) -> str:
    text = f"{value:.5f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"
