"""The print PDF of variable data: one well-formed document, fonts embedded once, written
part by part (:mod:`pps.render.pdf_parts`).

Plain core calls (:func:`pps.render.pdf.render_records_pdf`), no Flask: the API path to it
is tested in ``test_variable_data``. Small ``records_per_part`` values make a few records
span many parts. (Peak memory against the number of records is what ``bench/vdata.py``
prints: flat, since only one part is held at a time.)
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pikepdf
import pypdfium2
import pytest
import zxingcpp
from pypdf import PdfReader

from pps.render import TemplateSpec, parse_spec
from pps.render.errors import InvalidValues, RenderOptionError
from pps.render.pdf import render_records_pdf

ROOT = Path(__file__).resolve().parent.parent
CARD = ROOT / "examples" / "templates" / "business-card"


@pytest.fixture(scope="module")
def card() -> TemplateSpec:
    return parse_spec(json.loads((CARD / "template.json").read_text()), CARD)


def rows(count: int) -> Iterator[dict[str, str]]:
    """Every row different, so each record has its own texts and its own QR code."""
    for index in range(count):
        yield {
            "name": f"Ada Lovelace {index}",
            "email": f"ada{index}@example.org",
            "url": f"https://example.org/ada/{index}",
        }


def render(card: TemplateSpec, count: int, records_per_part: int = 200) -> bytes:
    out = io.BytesIO()
    written = render_records_pdf(card, rows(count), CARD, out, records_per_part=records_per_part)
    assert written == count
    return out.getvalue()


@pytest.mark.parametrize("records_per_part", [200, 7, 1])
def test_fonts_are_embedded_once_per_document(card: TemplateSpec, records_per_part: int) -> None:
    """In one part or in fifty: every part draws the same characters first, so every part
    embeds the same subsets, and the writer keeps one copy of each. Several parts prime
    every face a record may use, the name's font choice (bold oblique) too."""
    data = render(card, 50, records_per_part)
    faces = 3 if records_per_part >= 50 else 4
    with pikepdf.open(io.BytesIO(data)) as pdf:
        assert len(pdf.pages) == 50
        fonts = [
            obj
            for obj in pdf.objects
            if isinstance(obj, pikepdf.Dictionary) and obj.get("/Type") == "/Font"
        ]
        font_files = [
            obj
            for obj in pdf.objects
            if isinstance(obj, pikepdf.Dictionary)
            and any(key in obj for key in ("/FontFile", "/FontFile2", "/FontFile3"))
        ]
        # The card's faces (bold, italic, regular, and the choice): one font object and one
        # embedded font file each for the whole document, not one per record or part.
        assert len(fonts) == faces, [str(f.get("/BaseFont")) for f in fonts]
        assert len(font_files) == faces
        used = {font.objgen for page in pdf.pages for font in page.Resources.Font.values()}
        assert used == {font.objgen for font in fonts}
    # Each record still shows its own row with those fonts.
    reader = PdfReader(io.BytesIO(data))
    for index in (0, 17, 49):
        text = reader.pages[index].extract_text()
        assert f"Ada Lovelace {index}" in text and f"ada{index}@example.org" in text


@pytest.mark.parametrize("records_per_part", [200, 4])
def test_the_records_pdf_is_well_formed_and_the_same_input_gives_the_same_bytes(
    card: TemplateSpec, records_per_part: int
) -> None:
    data = render(card, 30, records_per_part)
    assert data == render(card, 30, records_per_part)
    assert data.startswith(b"%PDF-1.") and data.rstrip().endswith(b"%%EOF")
    with pikepdf.open(io.BytesIO(data)) as pdf:
        assert pdf.get_warnings() == []  # the cross-reference table is right
        assert pdf.check_pdf_syntax() == []
        first, last = pdf.pages[0], pdf.pages[-1]
        for page in (first, last):
            assert [float(v) for v in page.TrimBox] == pytest.approx(
                [8.504, 8.504, 249.449, 164.409], abs=1e-3
            )
            assert [float(v) for v in page.BleedBox] == [float(v) for v in page.MediaBox]
        assert str(pdf.docinfo["/Title"]) == card.name
    strict = PdfReader(io.BytesIO(data), strict=True)
    assert len(strict.pages) == 30
    document = pypdfium2.PdfDocument(data)
    try:
        assert "Ada Lovelace 29" in document[29].get_textpage().get_text_range()
    finally:
        document.close()


def test_each_record_s_qr_code_scans_as_its_own_url_and_its_page_stream_stays_small(
    card: TemplateSpec,
) -> None:
    """The QR path is drawn in module units (``cm`` once, then small integer runs): what a
    record keeps in memory until the document is saved is mostly its page stream."""
    data = render(card, 3, records_per_part=2)
    document = pypdfium2.PdfDocument(data)
    try:
        for index in range(3):
            image = document[index].render(scale=600 / 72).to_pil()
            found = [code.text for code in zxingcpp.read_barcodes(image)]
            assert found == [f"https://example.org/ada/{index}"]
    finally:
        document.close()
    with pikepdf.open(io.BytesIO(data)) as pdf:
        stream = pdf.pages[0].Contents.read_bytes()
    # Three texts, a rule, the accent bar and a QR code of 25 x 25 modules; in page
    # coordinates the QR runs alone took 5 kB.
    assert len(stream) < 3500, len(stream)


def test_records_keep_their_order_and_row_numbers_across_parts(card: TemplateSpec) -> None:
    data = render(card, 23, records_per_part=5)
    reader = PdfReader(io.BytesIO(data))
    names = [page.extract_text().split("\n")[0] for page in reader.pages]
    assert names == [f"Ada Lovelace {index}" for index in range(23)]
    bad = [*rows(9), {"name": "x" * 41}]  # the name's maxLength is 40: row 10, in part 3
    with pytest.raises(InvalidValues) as refused:
        render_records_pdf(card, bad, CARD, io.BytesIO(), records_per_part=4)
    assert list(refused.value.problems) == ["row 10.name"]
    with pytest.raises(RenderOptionError):
        render_records_pdf(card, [], CARD, io.BytesIO())
    with pytest.raises(RenderOptionError):
        render_records_pdf(card, rows(1), CARD, io.BytesIO(), records_per_part=0)


def test_characters_beyond_the_primed_ones_still_print_in_every_part(card: TemplateSpec) -> None:
    """Latin-1 and Latin Extended-A are primed; "∞" and "≈" (mathematical operators, last
    of the font's characters) are not: a part that uses one gets a second subset of its
    own, and the text is still right on every page."""
    names = ["Zoë Ørsted ∞", "Łukasz Čech", "Ada Lovelace", "Bo ≈ Ćwik"]
    records = [
        {"name": name, "email": "a@example.org", "url": "https://example.org"} for name in names
    ]
    out = io.BytesIO()
    render_records_pdf(card, records, CARD, out, records_per_part=1)
    data = out.getvalue()
    reader = PdfReader(io.BytesIO(data))
    assert [page.extract_text().split("\n")[0] for page in reader.pages] == names
    with pikepdf.open(io.BytesIO(data)) as pdf:
        assert pdf.check_pdf_syntax() == []
        bold = [
            {
                (str(font.BaseFont), font.objgen)
                for font in page.Resources.Font.values()
                if str(font.BaseFont).endswith("VeraSans-Bold")
            }
            for page in pdf.pages
        ]
    primed = set.intersection(*bold)
    assert len(primed) == 1 and next(iter(primed))[0].startswith("/AAAAAA+")  # shared by all
    # One second subset (AAAAAB) in each part that wrote "∞" or "≈", and only there.
    second = [{name for name, _ in fonts - primed} for fonts in bold]
    assert second == [{"/AAAAAB+BitstreamVeraSans-Bold"}, set(), set(), second[0]]


def test_artwork_is_copied_once_for_all_parts() -> None:
    """The postcard's PDF artwork is a Form XObject under each page; every part has its own
    copy, and the writer keeps one per artwork page for the whole document."""
    postcard_dir = ROOT / "examples" / "templates" / "postcard"
    postcard = parse_spec(json.loads((postcard_dir / "template.json").read_text()), postcard_dir)
    records = [{"recipientName": f"Bo {index}"} for index in range(9)]
    out = io.BytesIO()
    assert render_records_pdf(postcard, records, postcard_dir, out, records_per_part=2) == 9
    with pikepdf.open(io.BytesIO(out.getvalue())) as pdf:
        assert len(pdf.pages) == 18  # two pages a record
        forms = {
            xobject.objgen
            for page in pdf.pages
            for name, xobject in page.Resources.XObject.items()
            if name.startswith("/PpsArt")
        }
        assert len(forms) == 2  # front and back artwork, once each
        assert pdf.check_pdf_syntax() == []
    text = PdfReader(io.BytesIO(out.getvalue())).pages[17].extract_text()
    assert "Bo 8" in text
