"""The renderer: print PDF boxes, embedded fonts, literal text, vector artwork, PNG sizes.

PDFs are read back with pypdf and pikepdf, which the renderer does not use for writing, so
the checks do not share the writer's assumptions.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import pikepdf
import pytest
from PIL import Image
from pypdf import PdfReader
from reportlab.pdfgen.canvas import Canvas

from pps.render import (
    AssetError,
    InvalidValues,
    RenderOptionError,
    TemplateSpec,
    cache_key,
    parse_spec,
    render_file,
    render_low_res_pdf,
    render_png,
    render_print_pdf,
)
from pps.render.fonts import BUILTIN_FONTS

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "templates"
CARD_DIR = EXAMPLES / "business-card"
POSTCARD_DIR = EXAMPLES / "postcard"
MM = 72 / 25.4
CARD_VALUES = {
    "name": "Ada Lovelace",
    "title": "Analyst of Engines",
    "phone": "+44 20 7946 0000",
    "email": "ada@example.org",
    "url": "https://example.org/ada",
}


def load(directory: Path) -> TemplateSpec:
    return parse_spec(json.loads((directory / "template.json").read_text()), directory)


@pytest.fixture(scope="module")
def card() -> TemplateSpec:
    return load(CARD_DIR)


@pytest.fixture(scope="module")
def postcard() -> TemplateSpec:
    return load(POSTCARD_DIR)


def reader(data: bytes) -> PdfReader:
    return PdfReader(BytesIO(data))


def box(page: Any, name: str) -> list[float]:
    return [float(value) for value in page[name]]


def mm_box(*values: float) -> Any:
    """A box given in mm, compared to a page box in points within 0.01 pt."""
    return pytest.approx([value * MM for value in values], abs=0.01)


def font_sizes(data: bytes, page: int = 0) -> list[float]:
    content = reader(data).pages[page].get_contents()
    assert content is not None
    return [float(size) for size in re.findall(rb"/F[\w+]+ ([\d.]+) Tf", content.get_data())]


def lines(data: bytes, page: int = 0) -> list[str]:
    return reader(data).pages[page].extract_text().splitlines()


def image_xobjects(pdf: pikepdf.Pdf) -> list[pikepdf.Object]:
    return [
        obj
        for obj in pdf.objects
        if isinstance(obj, pikepdf.Stream) and obj.get("/Subtype") == pikepdf.Name.Image
    ]


# --- print PDF -----------------------------------------------------------------------------


def test_print_pdf_page_boxes_are_trim_plus_bleed(card: TemplateSpec) -> None:
    page = reader(render_print_pdf(card, CARD_VALUES, CARD_DIR)).pages[0]
    assert box(page, "/MediaBox") == mm_box(0, 0, 91, 61)
    assert box(page, "/BleedBox") == mm_box(0, 0, 91, 61)
    assert box(page, "/TrimBox") == mm_box(3, 3, 88, 58)


def test_crop_marks_widen_the_media_box_only(card: TemplateSpec) -> None:
    plain = reader(render_print_pdf(card, CARD_VALUES, CARD_DIR)).pages[0]
    marked = reader(render_print_pdf(card, CARD_VALUES, CARD_DIR, crop_marks=True)).pages[0]
    trim, bleed, media = (box(marked, key) for key in ("/TrimBox", "/BleedBox", "/MediaBox"))
    assert trim[2] - trim[0] == pytest.approx(85 * MM, abs=0.01)
    assert trim[3] - trim[1] == pytest.approx(55 * MM, abs=0.01)
    assert trim[0] - bleed[0] == pytest.approx(3 * MM, abs=0.01)
    assert media[2] - media[0] > box(plain, "/MediaBox")[2]
    assert bleed[0] > 0  # the marks sit outside the bleed


def test_every_page_is_in_the_print_pdf(postcard: TemplateSpec) -> None:
    pdf = reader(render_print_pdf(postcard, {"recipientName": "Bo"}, POSTCARD_DIR))
    assert len(pdf.pages) == 2
    for page in pdf.pages:
        assert box(page, "/MediaBox") == mm_box(0, 0, 154, 111)


def test_extracted_text_equals_the_values(card: TemplateSpec) -> None:
    assert lines(render_print_pdf(card, CARD_VALUES, CARD_DIR)) == [
        CARD_VALUES[key] for key in ("name", "title", "phone", "email", "url")
    ]


def test_defaults_fill_missing_values(card: TemplateSpec) -> None:
    assert lines(render_print_pdf(card, {}, CARD_DIR))[0] == "Alex Example"


def test_markup_in_values_appears_literally(card: TemplateSpec) -> None:
    values = dict(CARD_VALUES, name="<b>Ada</b> &amp; Co", title='<font color="red">x</font>')
    text = lines(render_print_pdf(card, values, CARD_DIR))
    assert text[:2] == ["<b>Ada</b> &amp; Co", '<font color="red">x</font>']


def test_fonts_are_embedded_as_subsets(card: TemplateSpec) -> None:
    page = reader(render_print_pdf(card, CARD_VALUES, CARD_DIR)).pages[0]
    fonts = [font.get_object() for font in page["/Resources"]["/Font"].values()]
    assert len(fonts) == 3  # Vera, Vera-Bold, Vera-Italic; no unembedded Helvetica
    for font in fonts:
        assert re.fullmatch(r"/[A-Z]{6}\+\S+", str(font["/BaseFont"])), font["/BaseFont"]
        descriptor = font["/FontDescriptor"].get_object()
        assert "/FontFile2" in descriptor
        assert "/ToUnicode" in font  # text can be searched and copied


def test_text_and_qr_are_vector(card: TemplateSpec) -> None:
    data = render_print_pdf(card, CARD_VALUES, CARD_DIR)
    with pikepdf.open(BytesIO(data)) as pdf:
        assert image_xobjects(pdf) == []
        content = pdf.pages[0].Contents.read_bytes()
    assert b"Tj" in content
    assert content.count(b" re") > 50  # QR modules as rectangles
    assert b" k" in content  # CMYK colours stay CMYK


def test_same_input_gives_the_same_bytes(card: TemplateSpec, postcard: TemplateSpec) -> None:
    values = {"recipientName": "Bo"}
    assert render_print_pdf(card, CARD_VALUES, CARD_DIR) == render_print_pdf(
        card, dict(CARD_VALUES), CARD_DIR
    )
    assert render_print_pdf(postcard, values, POSTCARD_DIR) == render_print_pdf(
        postcard, values, POSTCARD_DIR
    )
    assert render_low_res_pdf(postcard, values, POSTCARD_DIR) == render_low_res_pdf(
        postcard, values, POSTCARD_DIR
    )
    assert render_png(card, CARD_VALUES, CARD_DIR, width=300) == render_png(
        card, CARD_VALUES, CARD_DIR, width=300
    )
    assert render_print_pdf(card, CARD_VALUES, CARD_DIR) != render_print_pdf(
        card, dict(CARD_VALUES, name="Someone Else"), CARD_DIR
    )


def test_an_old_template_renders_blank_pages() -> None:
    spec = parse_spec({"name": "Old", "dataKeys": ["a"], "customAttributes": {}, "pageCount": 2})
    pdf = reader(render_print_pdf(spec, {"a": "ignored"}, Path("/nonexistent")))
    assert len(pdf.pages) == 2
    assert box(pdf.pages[0], "/MediaBox") == mm_box(0, 0, 85, 55)
    with Image.open(BytesIO(render_png(spec, {}, Path("/nonexistent"), page=1))) as image:
        assert image.size == (502, 325)
        assert image.getcolors() == [(502 * 325, (255, 255, 255))]


def test_spec_pickles_for_a_job_queue(card: TemplateSpec) -> None:
    import pickle

    assert pickle.loads(pickle.dumps(card)) == card  # noqa: S301  (our own bytes)


# --- long values ---------------------------------------------------------------------------


def test_a_long_value_shrinks_when_the_template_allows(card: TemplateSpec) -> None:
    short = font_sizes(render_print_pdf(card, CARD_VALUES, CARD_DIR))
    long_name = "Augusta Ada King, Countess of Lovelace"
    shrunk = font_sizes(render_print_pdf(card, dict(CARD_VALUES, name=long_name), CARD_DIR))
    assert 13.0 in short
    assert 13.0 not in shrunk
    assert any(7 <= size < 13 for size in shrunk)
    assert long_name in lines(render_print_pdf(card, dict(CARD_VALUES, name=long_name), CARD_DIR))


def test_a_value_too_wide_without_shrink_is_refused(card: TemplateSpec) -> None:
    with pytest.raises(InvalidValues) as caught:
        render_print_pdf(card, dict(CARD_VALUES, phone="M" * 25), CARD_DIR)
    assert caught.value.key == "phone"
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith("phone: is too long for its box")


def test_a_value_that_cannot_shrink_enough_is_refused(card: TemplateSpec) -> None:
    with pytest.raises(InvalidValues) as caught:
        render_png(card, dict(CARD_VALUES, name="W" * 40), CARD_DIR)
    assert caught.value.errors == {
        "name": ["does not fit its box even at the smallest size (7 pt)"]
    }


def test_values_over_max_length_and_missing_required_are_refused(
    card: TemplateSpec, postcard: TemplateSpec
) -> None:
    with pytest.raises(InvalidValues) as caught:
        render_print_pdf(card, dict(CARD_VALUES, name="x" * 41), CARD_DIR)
    assert caught.value.errors == {"name": ["must be at most 40 characters, got 41"]}
    with pytest.raises(InvalidValues) as caught:
        render_low_res_pdf(postcard, {}, POSTCARD_DIR)
    assert caught.value.errors == {"recipientName": ["is required"]}


def test_multiline_text_wraps_and_shrinks(postcard: TemplateSpec) -> None:
    message = "A day at sea. " * 12
    data = render_print_pdf(postcard, {"recipientName": "Bo", "message": message}, POSTCARD_DIR)
    text = lines(data, page=1)
    wrapped = [line for line in text if "sea" in line or "day" in line]
    assert len(wrapped) > 3
    assert " ".join(wrapped).split() == message.split()
    longer = render_print_pdf(
        postcard, {"recipientName": "Bo", "message": "A day at sea. " * 42}, POSTCARD_DIR
    )
    assert min(font_sizes(longer, page=1)) < 11


def test_ten_thousand_values_render_quickly(card: TemplateSpec) -> None:
    values: dict[str, object] = {f"unused{index}": "x" * 20 for index in range(10_000)}
    values.update(CARD_VALUES)
    started = time.perf_counter()
    data = render_print_pdf(card, values, CARD_DIR)
    assert time.perf_counter() - started < 5
    assert lines(data)[0] == "Ada Lovelace"


def test_a_value_of_several_megabytes_is_a_clean_error(
    card: TemplateSpec, postcard: TemplateSpec
) -> None:
    huge = "x" * (4 * 1024 * 1024)
    with pytest.raises(InvalidValues) as caught:
        render_png(card, dict(CARD_VALUES, email=huge), CARD_DIR)
    assert caught.value.key == "email"
    with pytest.raises(InvalidValues) as caught:
        render_print_pdf(postcard, {"recipientName": "Bo", "message": huge}, POSTCARD_DIR)
    assert caught.value.errors == {"message": [f"must be at most 600 characters, got {len(huge)}"]}


def test_non_string_values_are_refused(card: TemplateSpec) -> None:
    with pytest.raises(InvalidValues) as caught:
        render_print_pdf(card, dict(CARD_VALUES, phone=["a"]), CARD_DIR)
    assert caught.value.errors == {"phone": ["must be a string, got list"]}


# --- background artwork --------------------------------------------------------------------


def test_background_artwork_stays_vector(postcard: TemplateSpec) -> None:
    data = render_print_pdf(postcard, {"recipientName": "Bo"}, POSTCARD_DIR)
    with (
        pikepdf.open(BytesIO(data)) as pdf,
        pikepdf.open(POSTCARD_DIR / "artwork.pdf") as art,
    ):
        assert image_xobjects(pdf) == []
        for index, page in enumerate(pdf.pages):
            (form,) = page.Resources.XObject.values()
            assert form.Subtype == pikepdf.Name.Form
            # The artwork's own drawing operators, unchanged, inside the Form XObject.
            assert form.read_bytes() == art.pages[index].Contents.read_bytes()
            first = page.obj.Contents[0].read_bytes()
            assert first.startswith(b"q ") and b"Do Q" in first  # drawn first: underneath
            # Its bleed is kept: the form is clipped at the artwork's CropBox, not its trim.
            assert [float(v) for v in form.BBox] == [float(v) for v in art.pages[index].cropbox]


def test_postcard_text_is_on_top_of_the_artwork(postcard: TemplateSpec) -> None:
    data = render_print_pdf(postcard, {"recipientName": "Bo", "headline": "Hi"}, POSTCARD_DIR)
    assert lines(data) == ["Hi"]
    assert lines(data, page=1) == [
        "Wish you were here! The water is",
        "warm and the days are long.",
        "Sam",
        "Bo",
    ]


def make_artwork_with_image(path: Path) -> None:
    photo = BytesIO()
    Image.effect_noise((600, 400), 80).convert("RGB").save(photo, "PNG")
    canvas = Canvas(str(path), pagesize=(100 * MM, 50 * MM), invariant=True)
    from reportlab.lib.utils import ImageReader

    canvas.drawImage(ImageReader(BytesIO(photo.getvalue())), 0, 0, 100 * MM, 50 * MM)
    canvas.showPage()
    canvas.save()


@pytest.fixture(scope="module")
def photo_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[TemplateSpec, Path]:
    tmp_path = tmp_path_factory.mktemp("photo")
    Image.effect_noise((800, 600), 60).convert("RGB").save(tmp_path / "photo.png", "PNG")
    make_artwork_with_image(tmp_path / "art.pdf")
    shutil.copy(BUILTIN_FONTS["Vera"], tmp_path / "brand.ttf")
    data = {
        "name": "Photo",
        "size": {"width": 100, "height": 50},
        "bleed": 2,
        "pages": [
            {
                "background": {"pdf": "art.pdf", "page": 0},
                "elements": [
                    {
                        "type": "image",
                        "file": "photo.png",
                        "box": {"x": 5, "y": 5, "width": 40, "height": 30},
                    },
                    {
                        "type": "text",
                        "dataKey": "caption",
                        "font": "brand.ttf",
                        "box": {"x": 50, "y": 5, "width": 45, "height": 10},
                    },
                ],
            }
        ],
    }
    return parse_spec(data, tmp_path), tmp_path


def test_low_res_is_trim_size_small_and_keeps_text(
    photo_template: tuple[TemplateSpec, Path],
) -> None:
    spec, base = photo_template
    print_pdf = render_print_pdf(spec, {"caption": "Sunset"}, base)
    low = render_low_res_pdf(spec, {"caption": "Sunset"}, base)
    assert len(low) * 4 < len(print_pdf)
    page = reader(low).pages[0]
    assert box(page, "/MediaBox") == mm_box(0, 0, 100, 50)
    assert lines(low) == ["Sunset"]
    with pikepdf.open(BytesIO(low)) as pdf:
        widths = sorted(int(image.Width) for image in image_xobjects(pdf))
    # The photo at 40 mm and the artwork at 100 mm, both resampled to 100 dpi.
    assert widths == [158, 394]


def test_print_keeps_artwork_images_inside_the_form(
    photo_template: tuple[TemplateSpec, Path],
) -> None:
    spec, base = photo_template
    with pikepdf.open(BytesIO(render_print_pdf(spec, {"caption": "x"}, base))) as pdf:
        assert sorted(int(image.Width) for image in image_xobjects(pdf)) == [600, 800]
        (form,) = (v for v in pdf.pages[0].Resources.XObject.values() if v.Subtype == "/Form")
        assert len(form.Resources.XObject) == 1


def test_a_shipped_font_is_embedded(photo_template: tuple[TemplateSpec, Path]) -> None:
    spec, base = photo_template
    page = reader(render_print_pdf(spec, {"caption": "Sunset"}, base)).pages[0]
    (font,) = (font.get_object() for font in page["/Resources"]["/Font"].values())
    assert "/FontFile2" in font["/FontDescriptor"].get_object()


def test_assets_can_come_from_a_loader(card: TemplateSpec, postcard: TemplateSpec) -> None:
    files = {"artwork.pdf": (POSTCARD_DIR / "artwork.pdf").read_bytes()}
    from_loader = render_print_pdf(postcard, {"recipientName": "Bo"}, files.__getitem__)
    assert from_loader == render_print_pdf(postcard, {"recipientName": "Bo"}, POSTCARD_DIR)


def test_a_missing_asset_at_render_time_is_an_asset_error(postcard: TemplateSpec) -> None:
    def loader(name: str) -> bytes:
        raise AssetError(f"{name!r}: not in storage")

    with pytest.raises(AssetError, match=r"'artwork\.pdf': not in storage"):
        render_print_pdf(postcard, {"recipientName": "Bo"}, loader)
    with pytest.raises(AssetError, match="does not exist"):
        render_print_pdf(postcard, {"recipientName": "Bo"}, POSTCARD_DIR / "nowhere")


# --- PNG -----------------------------------------------------------------------------------


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(BytesIO(data)) as image:
        return image.size


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (850, None, (850, 550)),
        (None, 110, (170, 110)),
        (400, 400, (400, 259)),  # fit inside: width limits
        (1000, 100, (155, 100)),  # fit inside: height limits
        (None, None, (502, 325)),  # 150 dpi
        (4000, None, (4000, 2588)),
        (1, None, (1, 1)),
    ],
)
def test_png_size_keeps_the_aspect_ratio(
    card: TemplateSpec, width: int | None, height: int | None, expected: tuple[int, int]
) -> None:
    assert png_size(render_png(card, CARD_VALUES, CARD_DIR, width=width, height=height)) == expected


def test_png_shows_the_page(card: TemplateSpec) -> None:
    with Image.open(BytesIO(render_png(card, CARD_VALUES, CARD_DIR, width=170))) as image:
        assert image.mode == "RGB"
        red, _green, blue = image.getpixel((2, 50))  # type: ignore[misc]
        assert blue > red and blue > 60  # the blue bar at the left edge
        assert image.getpixel((160, 5)) == (255, 255, 255)


def test_a_thumbnail_may_leave_required_keys_empty(postcard: TemplateSpec) -> None:
    with pytest.raises(InvalidValues):
        render_png(postcard, {}, POSTCARD_DIR, page=1, width=100)
    body, _ = render_file("image", postcard, {}, POSTCARD_DIR, width=100, allow_missing=True)
    assert png_size(body) == (100, 71)


def test_png_of_each_page(postcard: TemplateSpec) -> None:
    front = render_png(postcard, {"recipientName": "Bo"}, POSTCARD_DIR, page=0, width=296)
    back = render_png(postcard, {"recipientName": "Bo"}, POSTCARD_DIR, page=1, width=296)
    assert png_size(front) == png_size(back) == (296, 210)
    assert front != back


@pytest.mark.parametrize("page", [2, -1, 100, True])
def test_an_unknown_page_is_refused(postcard: TemplateSpec, page: Any) -> None:
    with pytest.raises(RenderOptionError, match="page must be from 0 to 1"):
        render_png(postcard, {"recipientName": "Bo"}, POSTCARD_DIR, page=page)


@pytest.mark.parametrize(
    ("width", "height"),
    [(0, None), (100_000, None), (None, 0), (None, 4001), (-5, 10), (2.5, None)],
)
def test_png_sizes_out_of_range_are_refused(card: TemplateSpec, width: Any, height: Any) -> None:
    with pytest.raises(RenderOptionError, match="from 1 to 4000"):
        render_png(card, CARD_VALUES, CARD_DIR, width=width, height=height)
    with pytest.raises(ValueError, match="from 1 to 4000"):
        render_file("image", card, CARD_VALUES, CARD_DIR, width=width, height=height)


# --- the cache-friendly API ----------------------------------------------------------------


def test_render_file_returns_bytes_and_content_type(card: TemplateSpec) -> None:
    body, kind = render_file("print", card, CARD_VALUES, CARD_DIR)
    assert kind == "application/pdf" and body.startswith(b"%PDF-")
    body, kind = render_file("low-res", card, CARD_VALUES, CARD_DIR)
    assert kind == "application/pdf" and body.startswith(b"%PDF-")
    body, kind = render_file("image", card, CARD_VALUES, CARD_DIR, width=100)
    assert kind == "image/png" and png_size(body) == (100, 65)
    with pytest.raises(RenderOptionError):
        render_file("svg", card, CARD_VALUES, CARD_DIR)  # type: ignore[arg-type]


def test_cache_key_follows_what_changes_the_output(card: TemplateSpec) -> None:
    key = cache_key("print", card, CARD_VALUES)
    assert key == cache_key("print", card, dict(CARD_VALUES, unrelated="x"))
    assert key != cache_key("print", card, dict(CARD_VALUES, name="Other"))
    assert key != cache_key("print", card, CARD_VALUES, crop_marks=True)
    assert key != cache_key("low-res", card, CARD_VALUES)
    assert cache_key("image", card, CARD_VALUES, width=100) == cache_key(
        "image", card, CARD_VALUES, width=100, height=1000
    )
    assert cache_key("image", card, CARD_VALUES, width=100) != cache_key(
        "image", card, CARD_VALUES, width=101
    )


def test_the_render_package_does_not_import_flask() -> None:
    import subprocess
    import sys

    code = "import sys, pps.render; sys.exit('flask' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
