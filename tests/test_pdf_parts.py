"""The writer that appends the pages of PDF parts to one file (:mod:`pps.render.pdf_parts`).

Parts are made here with pikepdf, so each case shows one thing: page order, objects shared
between parts written once, content stream arrays kept, the same parts giving the same
bytes. The output is read back by qpdf (pikepdf), pypdf in strict mode and pdfium.
"""

from __future__ import annotations

import io
import zlib

import pikepdf
import pypdfium2
import pytest
from pypdf import PdfReader

from pps.render.pdf_parts import PartsWriter

#: A 2 x 2 grey image, the same bytes in every part.
IMAGE = zlib.compress(bytes([0, 128, 255, 64]))


def part(labels: list[str], *, split_contents: bool = False) -> pikepdf.Pdf:
    """A PDF with one page per label, each drawing the shared image and its label."""
    pdf = pikepdf.new()
    font = pdf.make_indirect(
        pikepdf.Dictionary(
            Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica
        )
    )
    image = pikepdf.Stream(pdf, IMAGE)
    image.Type, image.Subtype = pikepdf.Name.XObject, pikepdf.Name.Image
    image.Width, image.Height, image.BitsPerComponent = 2, 2, 8
    image.ColorSpace, image.Filter = pikepdf.Name.DeviceGray, pikepdf.Name.FlateDecode
    for label in labels:
        text = f"BT /F1 12 Tf 10 10 Td ({label}) Tj ET".encode()
        drawing = b"q 20 0 0 20 60 40 cm /Im1 Do Q"
        contents: pikepdf.Object
        if split_contents:
            contents = pikepdf.Array([pikepdf.Stream(pdf, text), pikepdf.Stream(pdf, drawing)])
        else:
            contents = pikepdf.Stream(pdf, text + b"\n" + drawing)
        page = pikepdf.Dictionary(
            Type=pikepdf.Name.Page,
            MediaBox=pikepdf.Array([0, 0, 200, 100.5]),
            Contents=contents,
            Resources=pikepdf.Dictionary(
                Font=pikepdf.Dictionary(F1=font), XObject=pikepdf.Dictionary(Im1=image)
            ),
        )
        pdf.pages.append(pikepdf.Page(page))
    return pdf


def joined(*parts: pikepdf.Pdf) -> bytes:
    out = io.BytesIO()
    writer = PartsWriter(out, {"Title": "Cards (ü)", "Creator": "pps"})
    for one in parts:
        writer.add(one)
    assert writer.page_count == sum(len(one.pages) for one in parts)
    writer.close()
    return out.getvalue()


def test_pages_of_every_part_follow_in_order_in_one_valid_file() -> None:
    data = joined(part(["a1", "a2"]), part(["b1"]), part(["c1", "c2", "c3"], split_contents=True))
    with pikepdf.open(io.BytesIO(data)) as pdf:
        assert pdf.get_warnings() == []
        assert pdf.check_pdf_syntax() == []
        assert len(pdf.pages) == 6
        assert str(pdf.docinfo.Title) == "Cards (ü)"
        assert [float(v) for v in pdf.pages[5].MediaBox] == [0, 0, 200, 100.5]
        assert isinstance(pdf.pages[5].obj.Contents, pikepdf.Array)  # kept as an array
        images = {page.Resources.XObject.Im1.objgen for page in pdf.pages}
        fonts = {page.Resources.Font.F1.objgen for page in pdf.pages}
        assert len(images) == 1 and len(fonts) == 1  # the same bytes in each part: once
    strict = PdfReader(io.BytesIO(data), strict=True)
    labels = [page.extract_text().strip() for page in strict.pages]
    assert labels == ["a1", "a2", "b1", "c1", "c2", "c3"]
    document = pypdfium2.PdfDocument(data)
    try:
        assert document[3].get_textpage().get_text_range().strip() == "c1"
        grey = document[3].render(scale=1).to_pil().convert("L")
        assert grey.getpixel((75, 45)) < 250  # the image is drawn, not only listed
    finally:
        document.close()


def test_the_same_parts_give_the_same_bytes_and_different_parts_a_different_id() -> None:
    first = joined(part(["a"]), part(["b"]))
    assert first == joined(part(["a"]), part(["b"]))
    other = joined(part(["a"]), part(["c"]))
    with pikepdf.open(io.BytesIO(first)) as one, pikepdf.open(io.BytesIO(other)) as two:
        assert bytes(one.trailer.ID[0]) != bytes(two.trailer.ID[0])


def test_a_file_without_pages_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one page"):
        PartsWriter(io.BytesIO(), {}).close()
