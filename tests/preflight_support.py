"""Real PDFs and images for the preflight and upload tests, made with reportlab, pikepdf, Pillow."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pikepdf
from PIL import Image
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen.canvas import Canvas

from pps.render.fonts import BUILTIN_FONTS

EMBEDDED_FONT = "PreflightVera"
pdfmetrics.registerFont(TTFont(EMBEDDED_FONT, str(BUILTIN_FONTS["Vera"])))


def print_pdf(
    pages: int = 2,
    *,
    width: float = 91,
    height: float = 61,
    font: str = EMBEDDED_FONT,
    text: str = "Customer artwork",
    fill: tuple[float, float, float] = (1, 0, 0),
    image: Image.Image | None = None,
    image_mm: float = 20,
) -> bytes:
    """A PDF of ``pages`` pages of ``width`` x ``height`` mm, filled with ``fill`` (RGB),
    with ``text`` in ``font`` (embedded TrueType, or a standard-14 name: not embedded)."""
    out = io.BytesIO()
    canvas = Canvas(out, pagesize=(width * mm, height * mm))
    for number in range(1, pages + 1):
        canvas.setFillColorRGB(*fill)
        canvas.rect(0, 0, width * mm, height * mm, stroke=0, fill=1)
        canvas.setFillColorRGB(1, 1, 1)
        canvas.setFont(font, 9)
        canvas.drawString(10 * mm, 10 * mm, f"{text} {number}")
        if image is not None:
            canvas.drawInlineImage(image, 30 * mm, 20 * mm, image_mm * mm, image_mm * mm)
        canvas.showPage()
    canvas.save()
    return out.getvalue()


def encrypted(data: bytes, user_password: str = "secret") -> bytes:  # noqa: S107
    with pikepdf.open(io.BytesIO(data)) as pdf:
        out = io.BytesIO()
        pdf.save(out, encryption=pikepdf.Encryption(owner="owner-pw", user=user_password))
    return out.getvalue()


def with_nested_forms(data: bytes, depth: int, page: int = 0) -> bytes:
    """``data`` with a chain of ``depth`` empty Form XObjects, each listed in the resources
    of the one before, added to the resources of page ``page`` (counted from 0)."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        inner: pikepdf.Stream | None = None
        for _ in range(depth):
            form = pdf.make_stream(b"")
            form.Type, form.Subtype, form.BBox = (
                pikepdf.Name.XObject,
                pikepdf.Name.Form,
                [0, 0, 1, 1],
            )
            if inner is not None:
                form.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(X=inner))
            inner = form
        target = pdf.pages[page].obj
        if "/Resources" not in target:
            target.Resources = pikepdf.Dictionary()
        if "/XObject" not in target.Resources:
            target.Resources.XObject = pikepdf.Dictionary()
        target.Resources.XObject.PpsNested = inner
        out = io.BytesIO()
        pdf.save(out)
    return out.getvalue()


def with_restricted_fonts(data: bytes) -> bytes:
    """``data`` with every embedded TrueType program's OS/2 fsType set to 2 (Restricted
    License embedding), as a font vendor marks fonts that must not be embedded."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        for page in pdf.pages:
            for _, font in page.obj.Resources.Font.items():
                descriptor = font.get("/FontDescriptor")
                if descriptor is None and "/DescendantFonts" in font:
                    descriptor = font.DescendantFonts[0].FontDescriptor
                if descriptor is None or "/FontFile2" not in descriptor:
                    continue
                program = bytearray(descriptor.FontFile2.read_bytes())
                count = int.from_bytes(program[4:6], "big")
                for index in range(count):
                    record = 12 + 16 * index
                    if program[record : record + 4] == b"OS/2":
                        offset = int.from_bytes(program[record + 8 : record + 12], "big")
                        program[offset + 8 : offset + 10] = (2).to_bytes(2, "big")
                descriptor.FontFile2.write(bytes(program))
        out = io.BytesIO()
        pdf.save(out)
    return out.getvalue()


def image_bytes(size: tuple[int, int], mode: str = "RGB", fmt: str = "PNG") -> bytes:
    color: Any = (0, 120, 200) if mode == "RGB" else (100, 20, 0, 10)
    out = io.BytesIO()
    Image.new(mode, size, color).save(out, fmt)
    return out.getvalue()


def write_template(folder: Path, document: dict[str, Any], files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    path = folder / "template.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def with_form_fan_out(data: bytes, levels: int, fan: int = 10, page: int = 0) -> bytes:
    """``data`` with page ``page`` drawing a form that draws the next ``fan`` times, for
    ``levels`` forms: ``fan ** levels`` rectangles from about two kilobytes."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        inner = pdf.make_stream(b"0 0 1 1 re f\n")
        inner.Type, inner.Subtype, inner.BBox = (
            pikepdf.Name.XObject,
            pikepdf.Name.Form,
            [0, 0, 1, 1],
        )
        for _ in range(levels):
            form = pdf.make_stream(b"q /X Do Q\n" * fan)
            form.Type, form.Subtype, form.BBox = (
                pikepdf.Name.XObject,
                pikepdf.Name.Form,
                [0, 0, 1, 1],
            )
            form.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(X=inner))
            inner = form
        target = pdf.pages[page]
        if "/Resources" not in target.obj:
            target.obj.Resources = pikepdf.Dictionary()
        if "/XObject" not in target.obj.Resources:
            target.obj.Resources.XObject = pikepdf.Dictionary()
        target.obj.Resources.XObject.PpsFanOut = inner
        target.contents_add(pdf.make_stream(b"q /PpsFanOut Do Q\n"))
        out = io.BytesIO()
        pdf.save(out)
    return out.getvalue()


def with_content_bomb(data: bytes, megabytes: int, page: int = 0) -> bytes:
    """``data`` with ``megabytes`` of path operators added to page ``page``'s content,
    Flate-compressed to a few kilobytes."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        pdf.pages[page].contents_add(pdf.make_stream(b"0 0 m\n" * (megabytes * 1024 * 1024 // 6)))
        out = io.BytesIO()
        pdf.save(out, compress_streams=True)
    return out.getvalue()


def with_type3_text(
    data: bytes,
    text: bytes,
    procedures: dict[str, bytes],
    *,
    differences: list[object] | None = None,
    fan_out: int = 0,
    page: int = 0,
) -> bytes:
    """``data`` with ``text`` shown on page ``page`` in a Type3 font whose glyph
    procedures are ``procedures`` (by glyph name), codes named by ``differences`` (default:
    the procedures in order from ``A``). With ``fan_out`` levels, the font's resources hold
    a form ``/X`` drawing ``10 ** fan_out`` rectangles through forms, as with_form_fan_out."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        names = [pikepdf.Name(f"/{name}") for name in procedures]
        font = pikepdf.Dictionary(
            Type=pikepdf.Name.Font,
            Subtype=pikepdf.Name.Type3,
            FontBBox=[0, 0, 1000, 1000],
            FontMatrix=[0.001, 0, 0, 0.001, 0, 0],
            CharProcs=pikepdf.Dictionary(
                {f"/{name}": pdf.make_stream(body) for name, body in procedures.items()}
            ),
            Encoding=pikepdf.Dictionary(
                Type=pikepdf.Name.Encoding, Differences=differences or [65, *names]
            ),
            FirstChar=0,
            LastChar=255,
            Widths=[1000] * 256,
        )
        if fan_out:
            with pikepdf.open(io.BytesIO(with_form_fan_out(print_pdf(1), fan_out))) as fanned:
                drawn = pdf.copy_foreign(fanned.pages[0].obj.Resources.XObject.PpsFanOut)
            font.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(X=drawn))
        target = pdf.pages[page]
        target.add_resource(pdf.make_indirect(font), pikepdf.Name.Font, pikepdf.Name("/PpsT3"))
        shown = b"BT /PpsT3 10 Tf 10 10 Td " + bytes(pikepdf.String(text).unparse()) + b" Tj ET\n"
        target.contents_add(pdf.make_stream(shown))
        out = io.BytesIO()
        pdf.save(out, compress_streams=True)
    return out.getvalue()


def with_pattern_fan_out(data: bytes, levels: int, step: float = 10, page: int = 0) -> bytes:
    """``data`` with page ``page`` filled with a tiling pattern of ``step`` points whose
    cell draws the form fan-out of with_form_fan_out (``10 ** levels`` rectangles)."""
    fanned_bytes = with_form_fan_out(print_pdf(1), levels)
    with pikepdf.open(io.BytesIO(data)) as pdf, pikepdf.open(io.BytesIO(fanned_bytes)) as fanned:
        cell = pdf.make_stream(b"/X Do\n")
        cell.Type, cell.PatternType, cell.PaintType, cell.TilingType = (
            pikepdf.Name.Pattern,
            1,
            1,
            1,
        )
        cell.BBox, cell.XStep, cell.YStep = [0, 0, step, step], step, step
        drawn = pdf.copy_foreign(fanned.pages[0].obj.Resources.XObject.PpsFanOut)
        cell.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(X=drawn))
        target = pdf.pages[page]
        target.add_resource(cell, pikepdf.Name.Pattern, pikepdf.Name("/PpsPattern"))
        target.contents_add(pdf.make_stream(b"q /Pattern cs /PpsPattern scn 0 0 100 100 re f Q\n"))
        out = io.BytesIO()
        pdf.save(out, compress_streams=True)
    return out.getvalue()
