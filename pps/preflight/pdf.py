"""Preflight of a customer's own print PDF (intents ``upload`` and ``upload-and-editor``).

:func:`accept_pdf` refuses what cannot become the draft's print file, naming each problem
(:class:`PdfRefused`): not a PDF, encrypted, another page count than the template's, pages
of another size, fonts not embedded, form XObjects nested deeper than the renderer draws
(:data:`~pps.render.xobjects.MAX_FORM_DEPTH`), content that decompresses or draws more than
:mod:`pps.render.pdf_budget` allows. What prints but a print shop would question
becomes a :class:`~pps.preflight.status.Finding`: fonts whose licence forbids embedding (OS/2
``fsType``), images below :data:`~pps.preflight.status.MIN_DPI` at their placed size, RGB
images in a template with ``"colorSpace": "cmyk"``.

Page size: a page with a TrimBox must have that trim (the template's size) and room for the
template's bleed around it inside its BleedBox (else MediaBox); a page without one must be
exactly trim + bleed, and then gets TrimBox and BleedBox set, so the renderer can align it.
Each length may be off by :data:`TOLERANCE_MM`. Rotated pages (``/Rotate``) are refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO

import pikepdf
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from pps.preflight.fonts import embedding_restricted
from pps.preflight.status import MIN_DPI, Finding
from pps.render import TemplateSpec
from pps.render.pdf import RENDER_LOCK
from pps.render.pdf_budget import ContentBudget
from pps.render.pdf_encryption import ENCRYPTED, LOCKED
from pps.render.pdf_errors import read_error
from pps.render.xobjects import MAX_FORM_DEPTH, survey_xobjects

__all__ = ["TOLERANCE_MM", "AcceptedPdf", "PdfRefused", "accept_pdf", "pdf_findings"]

#: How far a page's size may be off the template's, per length, in millimetres.
TOLERANCE_MM = 1.0
#: Fonts and form XObjects nest; this bounds the walk over a hostile file.
_MAX_DEPTH = 12
_PT_PER_MM = 72 / 25.4
_RGB_SPACES = frozenset({pdfium_c.FPDF_COLORSPACE_DEVICERGB, pdfium_c.FPDF_COLORSPACE_CALRGB})


class PdfRefused(Exception):
    """The PDF cannot be a print file; ``problems`` says why, one message each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class AcceptedPdf:
    data: bytes
    """The PDF as stored: the upload, with TrimBox and BleedBox set where they were missing."""
    findings: tuple[Finding, ...]


def accept_pdf(data: bytes, spec: TemplateSpec) -> AcceptedPdf:
    """Check ``data`` against the template; raise :class:`PdfRefused` naming each problem."""
    if not data.startswith(b"%PDF-"):
        raise PdfRefused(["The file is not a PDF (it does not start with %PDF-)."])
    try:
        pdf = pikepdf.open(BytesIO(data))
    except pikepdf.PasswordError:
        raise PdfRefused([LOCKED]) from None
    except (pikepdf.PikepdfError, ValueError) as exc:  # QpdfRuntimeError is no PdfError
        raise PdfRefused([f"The PDF cannot be read: {read_error(exc)}"]) from None
    with pdf:
        if pdf.is_encrypted:
            raise PdfRefused([ENCRYPTED])
        too_much = _content_problems(pdf)
        if too_much:  # before the font check decompresses any of it
            raise PdfRefused(too_much)
        problems = _page_problems(pdf, spec)
        problems += _nesting_problems(pdf)
        problems += _fonts(pdf)[0]
        if problems:
            raise PdfRefused(problems)
        out = BytesIO()
        pdf.save(out)
    body = out.getvalue()
    return AcceptedPdf(body, tuple(pdf_findings(body, spec)))


def pdf_findings(data: bytes, spec: TemplateSpec) -> list[Finding]:
    """Findings on an accepted PDF: fonts whose licence forbids embedding, image
    resolution and, in CMYK templates, RGB images; sorted by page."""
    with pikepdf.open(BytesIO(data)) as pdf:
        too_much = _content_problems(pdf)
        if too_much:  # stored before the limits: pdfium would parse it all
            return [Finding(1, too_much[0], "error")]
        findings = _fonts(pdf)[1]
    findings += _image_findings(data, spec)
    return sorted(findings, key=lambda finding: finding.page)


def _image_findings(data: bytes, spec: TemplateSpec) -> list[Finding]:
    findings: list[Finding] = []
    with RENDER_LOCK:  # pdfium is not thread-safe
        document = pdfium.PdfDocument(data)
        try:
            for index in range(len(document)):
                page = document[index]
                for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]):
                    assert isinstance(image, pdfium.PdfImage)
                    meta = image.get_metadata()
                    dpi = min(meta.horizontal_dpi, meta.vertical_dpi)
                    size = image.get_px_size()
                    if 0 < dpi < MIN_DPI:
                        findings.append(
                            Finding(
                                index + 1,
                                f"An image of {size[0]} x {size[1]} px has {dpi:.0f} dpi at its "
                                f"placed size; print needs at least {MIN_DPI} dpi.",
                                "warning",
                            )
                        )
                    if spec.color_space == "cmyk" and meta.colorspace in _RGB_SPACES:
                        findings.append(
                            Finding(
                                index + 1,
                                f"RGB in a CMYK template: an image of {size[0]} x {size[1]} px "
                                "is RGB; it will be converted by the printer and may shift.",
                                "warning",
                            )
                        )
        finally:
            document.close()
    return findings


def _page_problems(pdf: pikepdf.Pdf, spec: TemplateSpec) -> list[str]:
    count = len(pdf.pages)
    if count != spec.page_count:
        return [f"The PDF has {count} page(s); the template has {spec.page_count}."]
    problems: list[str] = []
    trim_w, trim_h, bleed = spec.width, spec.height, spec.bleed
    whole = f"{trim_w + 2 * bleed:g} x {trim_h + 2 * bleed:g} mm"
    for index, page in enumerate(pdf.pages):
        number = index + 1
        try:
            rotate = int(page.obj.get("/Rotate", 0))
        except (TypeError, ValueError):  # a name, a string, an array: a broken writer's
            problems.append(f"Page {number} has a /Rotate that is not a number.")
            continue
        if rotate % 360:
            problems.append(f"Page {number} is rotated (/Rotate); save it upright.")
            continue
        try:
            media = _box(page.mediabox)
            trim = outer = None
            if "/TrimBox" in page.obj:
                trim = _box(page.trimbox, "/TrimBox")
                outer = _box(page.bleedbox, "/BleedBox") if "/BleedBox" in page.obj else media
        except _NotABox as exc:
            problems.append(f"Page {number} has a {exc} that is not four numbers.")
            continue
        if trim is not None and outer is not None:
            size = (_mm(trim[2] - trim[0]), _mm(trim[3] - trim[1]))
            if not _near(size, (trim_w, trim_h)):
                problems.append(
                    f"Page {number} has a trim of {size[0]:.1f} x {size[1]:.1f} mm; "
                    f"the template's is {trim_w:g} x {trim_h:g} mm (±{TOLERANCE_MM:g} mm)."
                )
                continue
            room = min(
                trim[0] - outer[0], trim[1] - outer[1], outer[2] - trim[2], outer[3] - trim[3]
            )
            if _mm(room) < bleed - TOLERANCE_MM:
                problems.append(
                    f"Page {number} has {max(_mm(room), 0):.1f} mm of bleed; "
                    f"the template needs {bleed:g} mm on every side."
                )
            continue
        size = (_mm(media[2] - media[0]), _mm(media[3] - media[1]))
        if not _near(size, (trim_w + 2 * bleed, trim_h + 2 * bleed)):
            problems.append(
                f"Page {number} is {size[0]:.1f} x {size[1]:.1f} mm; the template needs "
                f"{whole} (trim {trim_w:g} x {trim_h:g} mm plus {bleed:g} mm bleed, "
                f"±{TOLERANCE_MM:g} mm), or a TrimBox of the trim size."
            )
            continue
        inset = bleed * _PT_PER_MM
        page.obj.TrimBox = pikepdf.Array(
            [media[0] + inset, media[1] + inset, media[2] - inset, media[3] - inset]
        )
        page.obj.BleedBox = pikepdf.Array(list(media))
    return problems


def _content_problems(pdf: pikepdf.Pdf) -> list[str]:
    """Pages whose content decompresses, or whose forms draw one another, past what the
    renderer and the checks below may read (:mod:`pps.render.pdf_budget`)."""
    budget = ContentBudget()
    for index, page in enumerate(pdf.pages):
        problem = budget.problem(page)
        if problem is not None:
            return [f"Page {index + 1} cannot be drawn: {problem} (flatten the artwork)."]
    return []


def _nesting_problems(pdf: pikepdf.Pdf) -> list[str]:
    """Pages whose forms nest deeper than the renderer draws: every preview and print file
    of the draft would fail, so such a PDF is refused before it is stored."""
    problems: list[str] = []
    for index, page in enumerate(pdf.pages):
        depth = survey_xobjects(page.obj.get("/Resources")).depth
        if depth > MAX_FORM_DEPTH:
            problems.append(
                f"Page {index + 1} nests form XObjects {depth} levels deep; at most "
                f"{MAX_FORM_DEPTH} are accepted (flatten the artwork)."
            )
    return problems


def _fonts(pdf: pikepdf.Pdf) -> tuple[list[str], list[Finding]]:
    """Refusals for fonts not embedded, findings for fonts that may not be embedded."""
    problems: list[str] = []
    findings: list[Finding] = []
    seen: set[tuple[int, int]] = set()
    for index, page in enumerate(pdf.pages):
        for name, font in _page_fonts(page.obj, seen):
            program = _font_program(font)
            if program is None:
                problems.append(
                    f"Page {index + 1}: the font {name} is not embedded; embed every font "
                    "(a print shop cannot substitute it)."
                )
            elif program and embedding_restricted(program):
                findings.append(
                    Finding(
                        index + 1,
                        f"The font {name} may not be embedded: its licence (OS/2 fsType) "
                        "restricts embedding.",
                        "error",
                    )
                )
    return problems, findings


def _page_fonts(
    holder: pikepdf.Object, seen: set[tuple[int, int]], depth: int = 0
) -> Iterator[tuple[str, pikepdf.Dictionary]]:
    """Every font the resources of ``holder`` use, forms and Type3 glyphs included, once."""
    if depth > _MAX_DEPTH:
        return
    resources = _resources(holder)
    if resources is None:
        return
    fonts = resources.get("/Font")
    if isinstance(fonts, pikepdf.Dictionary):
        # Only fonts the content selects (Tf) print; reportlab, for one, lists an unused
        # Helvetica on every page. Type3 glyph procedures are checked whole.
        used = _selected_fonts(holder) if depth == 0 or isinstance(holder, pikepdf.Stream) else None
        for key in fonts.keys():  # noqa: SIM118 (pikepdf dictionaries iterate differently)
            if used is not None and key not in used:
                continue
            font = fonts[key]
            if not isinstance(font, pikepdf.Dictionary) or _visited(font, seen):
                continue
            name = str(font.get("/BaseFont", key)).lstrip("/")
            if font.get("/Subtype") == "/Type3":
                yield from _page_fonts(font, seen, depth + 1)  # glyphs are PDF content
                continue
            yield name, font
    xobjects = resources.get("/XObject")
    if isinstance(xobjects, pikepdf.Dictionary):
        for key in xobjects.keys():  # noqa: SIM118
            xobject = xobjects[key]
            if (
                isinstance(xobject, pikepdf.Stream)
                and xobject.get("/Subtype") == "/Form"
                and not _visited(xobject, seen)
            ):
                yield from _page_fonts(xobject, seen, depth + 1)


def _selected_fonts(holder: pikepdf.Object) -> set[str]:
    """Names of the fonts the content of a page or form shows text with.

    A font selected (``Tf``) but never used to show text prints nothing: reportlab, for
    one, selects Helvetica at the start of every page. The font is graphics state, so
    ``q``/``Q`` save and restore it.
    """
    content = holder if isinstance(holder, pikepdf.Stream) else pikepdf.Page(holder)
    names: set[str] = set()
    current: str | None = None
    saved: list[str | None] = []
    for instruction in pikepdf.parse_content_stream(content, "Tf q Q Tj TJ ' \""):
        if not isinstance(instruction, pikepdf.ContentStreamInstruction):
            continue  # inline images show no text
        operands, op = instruction.operands, str(instruction.operator)
        if op == "Tf" and operands and isinstance(operands[0], pikepdf.Name):
            current = str(operands[0])
        elif op == "q":
            saved.append(current)
        elif op == "Q":
            current = saved.pop() if saved else current
        elif current is not None:  # a text-showing operator
            names.add(current)
    return names


def _resources(holder: pikepdf.Object) -> pikepdf.Dictionary | None:
    """``/Resources`` of a page or form; a page may inherit them from its page tree."""
    node: pikepdf.Object | None = holder
    for _ in range(_MAX_DEPTH):
        if not isinstance(node, pikepdf.Dictionary | pikepdf.Stream):
            return None
        resources = node.get("/Resources")
        if isinstance(resources, pikepdf.Dictionary):
            return resources
        node = node.get("/Parent")
    return None


def _font_program(font: pikepdf.Dictionary) -> bytes | None:
    """The embedded font file's bytes (b"" when not an sfnt), None when none is embedded."""
    if font.get("/Subtype") == "/Type0":
        descendants = font.get("/DescendantFonts")
        if not isinstance(descendants, pikepdf.Array) or not len(descendants):
            return None
        descendant = descendants[0]
        if not isinstance(descendant, pikepdf.Dictionary):
            return None
        font = descendant
    descriptor = font.get("/FontDescriptor")
    if not isinstance(descriptor, pikepdf.Dictionary):
        return None
    for key in ("/FontFile2", "/FontFile3", "/FontFile"):
        stream = descriptor.get(key)
        if isinstance(stream, pikepdf.Stream):
            if key == "/FontFile2" or stream.get("/Subtype") == "/OpenType":
                try:
                    return bytes(stream.read_bytes())
                except pikepdf.PdfError:
                    return b""
            return b""  # Type 1 or bare CFF: embedded, no OS/2 table to read
    return None


def _visited(obj: pikepdf.Object, seen: set[tuple[int, int]]) -> bool:
    if not obj.is_indirect:
        return False
    key = obj.objgen
    if key in seen:
        return True
    seen.add(key)
    return False


class _NotABox(Exception):
    """A page box that is not an array of four numbers; the message names the box."""


def _box(box: pikepdf.Object, name: str = "/MediaBox") -> tuple[float, float, float, float]:
    """``box`` as (left, bottom, right, top); :class:`_NotABox` naming ``name`` otherwise.

    pikepdf answers a missing or broken MediaBox with a default, but a TrimBox or
    BleedBox as the file has it.
    """
    try:
        x0, y0, x1, y1 = (float(value) for value in box)
    except (TypeError, ValueError):
        raise _NotABox(name) from None
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def _mm(points: float) -> float:
    return points / _PT_PER_MM


def _near(size: tuple[float, float], wanted: tuple[float, float]) -> bool:
    return all(abs(a - b) <= TOLERANCE_MM for a, b in zip(size, wanted, strict=True))
