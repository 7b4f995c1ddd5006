"""The print PDF of variable data: one well-formed document, fonts embedded once.

Plain core calls (:func:`pps.render.pdf.render_records_pdf`), no Flask: the API path to it
is tested in ``test_variable_data``. (Peak memory against the number of records is what
``bench/vdata.py`` prints; reportlab keeps a document's pages until it is saved.)
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


def render(card: TemplateSpec, count: int) -> bytes:
    out = io.BytesIO()
    assert render_records_pdf(card, rows(count), CARD, out) == count
    return out.getvalue()


def test_fonts_are_embedded_once_per_document(card: TemplateSpec) -> None:
    data = render(card, 50)
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
        # The card's three faces (bold, italic, regular): one font object and one embedded
        # font file each for the whole document, not one per record.
        assert len(fonts) == 3, [str(f.get("/BaseFont")) for f in fonts]
        assert len(font_files) == 3
        used = {font.objgen for page in pdf.pages for font in page.Resources.Font.values()}
        assert used == {font.objgen for font in fonts}
    # Each record still shows its own row with those fonts.
    reader = PdfReader(io.BytesIO(data))
    for index in (0, 17, 49):
        text = reader.pages[index].extract_text()
        assert f"Ada Lovelace {index}" in text and f"ada{index}@example.org" in text


def test_the_records_pdf_is_well_formed_and_the_same_input_gives_the_same_bytes(
    card: TemplateSpec,
) -> None:
    data = render(card, 30)
    assert data == render(card, 30)
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
    data = render(card, 3)
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
