"""Nested Form XObjects in background artwork: measured without recursion, each form once,
and refused by the renderer (and the template file check) beyond ``MAX_FORM_DEPTH``."""

from __future__ import annotations

import json
import sys
from io import BytesIO
from pathlib import Path

import pikepdf
import pytest
from preflight_support import with_form_fan_out, with_pattern_fan_out, with_type3_text

from pps.render import AssetError, parse_spec, render_low_res_pdf, render_png, render_print_pdf
from pps.render.decode import asset_problem
from pps.render.pdf_budget import ContentBudget
from pps.render.xobjects import MAX_FORM_DEPTH, survey_xobjects

POSTCARD_DIR = Path(__file__).resolve().parent.parent / "examples" / "templates" / "postcard"
ARTWORK = (POSTCARD_DIR / "artwork.pdf").read_bytes()


def form(pdf: pikepdf.Pdf, *inner: pikepdf.Object) -> pikepdf.Stream:
    """An empty Form XObject listing ``inner`` in its resources."""
    stream = pdf.make_stream(b"")
    stream.Type, stream.Subtype, stream.BBox = pikepdf.Name.XObject, pikepdf.Name.Form, [0, 0, 1, 1]
    if inner:
        names = {f"/X{index}": xobject for index, xobject in enumerate(inner)}
        stream.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(names))
    return stream


def image(pdf: pikepdf.Pdf) -> pikepdf.Stream:
    stream = pdf.make_stream(b"\x00\x00\x00")
    stream.Type, stream.Subtype = pikepdf.Name.XObject, pikepdf.Name.Image
    stream.Width, stream.Height, stream.BitsPerComponent = 1, 1, 8
    stream.ColorSpace = pikepdf.Name.DeviceRGB
    return stream


def chain(
    pdf: pikepdf.Pdf, depth: int, innermost: pikepdf.Object | None = None
) -> list[pikepdf.Stream]:
    """``depth`` forms, each listing the next; the first is the outermost."""
    forms = [form(pdf, innermost) if innermost is not None else form(pdf)]
    for _ in range(depth - 1):
        forms.append(form(pdf, forms[-1]))
    return forms[::-1]


def resources(*xobjects: pikepdf.Object) -> pikepdf.Dictionary:
    names = {f"/P{index}": xobject for index, xobject in enumerate(xobjects)}
    return pikepdf.Dictionary(XObject=pikepdf.Dictionary(names))


def test_a_chain_deeper_than_python_recurses_is_measured() -> None:
    pdf = pikepdf.new()
    depth = sys.getrecursionlimit() * 3
    survey = survey_xobjects(resources(chain(pdf, depth)[0]))
    assert (survey.has_images, survey.depth) == (False, depth)


def test_images_are_found_at_any_depth() -> None:
    pdf = pikepdf.new()
    assert survey_xobjects(resources(chain(pdf, 2000, image(pdf))[0])).has_images
    assert survey_xobjects(resources(image(pdf))).depth == 0
    assert survey_xobjects(pikepdf.Dictionary()).depth == 0
    assert survey_xobjects(None).depth == 0


def test_a_chain_entered_from_its_middle_first_still_counts_in_full() -> None:
    """The page lists every form of a chain directly as well: a walk that only marked forms
    as seen would stop at depth 1; the chain still nests 500 deep."""
    pdf = pikepdf.new()
    forms = chain(pdf, 500)
    assert survey_xobjects(resources(*forms[::-1])).depth == 500
    assert survey_xobjects(resources(*forms)).depth == 500


def test_shared_forms_are_walked_once() -> None:
    """Twenty levels of forms each listing the next level twice: 2**20 paths, 20 forms."""
    pdf = pikepdf.new()
    level = form(pdf)
    for _ in range(19):
        level = form(pdf, level, level)
    assert survey_xobjects(resources(level, level)).depth == 20


def test_cycles_end() -> None:
    pdf = pikepdf.new()
    first = form(pdf)
    second = form(pdf, first)
    first.Resources = resources(second, first)
    assert survey_xobjects(resources(first)).depth == 2


def nested_artwork(depth: int) -> bytes:
    """The postcard's artwork with ``depth`` nested forms listed on its first page."""
    with pikepdf.open(BytesIO(ARTWORK)) as pdf:
        page_resources = pdf.pages[0].obj.Resources
        if "/XObject" not in page_resources:
            page_resources.XObject = pikepdf.Dictionary()
        page_resources.XObject.PpsNested = chain(pdf, depth)[0]
        out = BytesIO()
        pdf.save(out)
    return out.getvalue()


def postcard_renders(artwork: bytes) -> list[bytes]:
    spec = parse_spec(json.loads((POSTCARD_DIR / "template.json").read_text()), POSTCARD_DIR)
    files = {"artwork.pdf": artwork}
    values = {"recipientName": "Bo"}
    return [
        render_print_pdf(spec, values, files.__getitem__),
        render_low_res_pdf(spec, values, files.__getitem__),
        render_png(spec, values, files.__getitem__, width=200),
    ]


def test_artwork_nested_up_to_the_limit_renders() -> None:
    artwork = nested_artwork(MAX_FORM_DEPTH)
    assert asset_problem(artwork) is None
    assert all(postcard_renders(artwork))


@pytest.mark.parametrize("depth", [MAX_FORM_DEPTH + 1, 1000])
def test_artwork_nested_deeper_is_an_asset_error(depth: int) -> None:
    artwork = nested_artwork(depth)
    assert asset_problem(artwork) == (
        f"nests form XObjects {depth} levels deep; at most {MAX_FORM_DEPTH} can be drawn"
    )
    with pytest.raises(AssetError, match=f"'artwork.pdf': page 1 nests form XObjects {depth}"):
        postcard_renders(artwork)


def test_artwork_drawing_forms_too_often_is_an_asset_error() -> None:
    """Forms that draw forms ten times each: counted before pdfium parses every copy."""
    artwork = with_form_fan_out(ARTWORK, 5)
    problem = asset_problem(artwork)
    assert problem is not None and "form XObjects more than 100000 times" in problem
    with pytest.raises(AssetError, match=r"'artwork\.pdf': page 1 cannot be drawn: a page draws"):
        postcard_renders(artwork)
    assert all(postcard_renders(with_form_fan_out(ARTWORK, 4)))


def one_page(content: bytes) -> tuple[pikepdf.Pdf, pikepdf.Page]:
    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=(10, 10))
    page = pdf.pages[0]
    page.obj.Contents = pdf.make_stream(content)
    return pdf, page


def test_a_form_that_draws_itself_is_refused() -> None:
    pdf, page = one_page(b"/F Do")
    drawn = pdf.make_indirect(form(pdf))
    drawn.write(b"/F Do")
    drawn.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(F=drawn))
    page.obj.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(F=drawn))
    assert (
        ContentBudget().problem(page)
        == "a form XObject, tiling pattern or Type3 glyph draws itself"
    )
    # Listed in its own resources but not drawn: nothing is drawn twice.
    drawn.write(b"")
    assert ContentBudget().problem(page) is None


def test_content_is_measured_per_page_and_per_document() -> None:
    _, page = one_page(b"0 0 m\n" * 200)
    assert ContentBudget(page_limit=1200, limit=2400).problem(page) is None
    assert "a page's content" in (ContentBudget(page_limit=1000).problem(page) or "")
    budget = ContentBudget(page_limit=1200, limit=2000)
    assert budget.problem(page) is None
    assert "its pages decompresses to more than" in (budget.problem(page) or "")


def test_a_filter_whose_output_cannot_be_bounded_is_refused_when_large() -> None:
    _, page = one_page(b"")
    page.obj.Contents.write(b"x" * 2000, filter=pikepdf.Name.LZWDecode)
    # Up to 2,731 bytes a byte: 2,000 bytes of LZW may be 5 MB, more than the page may hold.
    assert ContentBudget(page_limit=1_000_000).problem(page) is not None
    assert ContentBudget(page_limit=10_000_000).problem(page) is None


def budget_problem(data: bytes, page_limit: int = 1000) -> str | None:
    with pikepdf.open(BytesIO(data)) as pdf:
        return ContentBudget(page_limit=page_limit).problem(pdf.pages[0])


def test_a_type3_glyph_is_counted_each_time_it_is_shown() -> None:
    """pdfium draws a Type3 glyph's procedure anew for each glyph: 100 bytes shown 9 times
    are 900 bytes of content, shown 10 times more than 1000."""
    blank = one_page_pdf()
    glyph = {"g": b"0 0 m 1 1 l f\n" * 7 + b"%" * 2}  # 100 bytes
    assert len(glyph["g"]) == 100
    assert budget_problem(with_type3_text(blank, b"A" * 9, glyph)) is None
    problem = budget_problem(with_type3_text(blank, b"A" * 10, glyph))
    assert problem is not None and "Type3 glyphs are drawn each time" in problem
    # A code the Differences do not name counts as the font's largest procedure.
    glyphs = {"small": b"%", "big": b"%" * 100}
    assert budget_problem(with_type3_text(blank, b"A" * 10, glyphs)) is None
    assert budget_problem(with_type3_text(blank, b"Z" * 10, glyphs)) is not None


def test_forms_a_type3_glyph_draws_are_counted_per_glyph() -> None:
    """A glyph drawing 11,111 forms (four levels of ten) shown 9 times stays within the
    100,000 forms a page may draw; shown 10 times it does not."""
    blank = one_page_pdf()
    glyph = {"g": b"/X Do\n"}
    assert budget_problem(with_type3_text(blank, b"A" * 9, glyph, fan_out=4), 10**9) is None
    problem = budget_problem(with_type3_text(blank, b"A" * 10, glyph, fan_out=4), 10**9)
    assert problem is not None and "form XObjects more than 100000 times" in problem


def test_a_type3_glyph_that_shows_itself_is_refused() -> None:
    glyph = {"g": b"BT /PpsT3 1 Tf (A) Tj ET\n"}
    data = with_type3_text(one_page_pdf(), b"A", glyph)
    with pikepdf.open(BytesIO(data)) as pdf:
        font = pdf.pages[0].obj.Resources.Font.PpsT3
        font.Resources = pikepdf.Dictionary(Font=pikepdf.Dictionary(PpsT3=font))
        assert (
            ContentBudget().problem(pdf.pages[0])
            == "a form XObject, tiling pattern or Type3 glyph draws itself"
        )


def test_a_type3_bomb_is_refused_by_the_file_check() -> None:
    """1.3 KB: a glyph of 100 KB of path shown 20,000 times, 2 GB that pdfium drew for
    minutes in a page preview; the upload and template checks never draw, so it passed."""
    data = with_type3_text(
        one_page_pdf(), b"A" * 20_000, {"g": b"0 0 m 1000 1000 l 0 1000 l f\n" * 3500}
    )
    problem = asset_problem(data)
    assert problem is not None and "on page 1" in problem and "Type3 glyphs" in problem


def one_page_pdf() -> bytes:
    pdf, _ = one_page(b"")
    out = BytesIO()
    pdf.save(out)
    return out.getvalue()


def test_forms_a_tiling_pattern_draws_are_counted() -> None:
    """2 KB: a pattern whose cell draws a million forms took pdfium 5.6 s and 1.6 GB to
    fill a page preview; the upload and template checks never fill, so it passed."""
    assert budget_problem(with_pattern_fan_out(one_page_pdf(), 4), 10**9) is None
    problem = budget_problem(with_pattern_fan_out(one_page_pdf(), 5), 10**9)
    assert problem is not None and "form XObjects more than 100000 times" in problem
    problem = asset_problem(with_pattern_fan_out(one_page_pdf(), 6))
    assert problem is not None and "on page 1" in problem
