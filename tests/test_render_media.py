"""Image DataKeys and choices in the template format and the renderer (no service).

A bound image element draws the customer's upload (through the asset name the service's
loader serves) cropped into its box; a text element's ``choices`` let the customer pick a
font, colour or size from the template's list. The print PDF is read back with pypdf and
the PNG preview with Pillow.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from pypdf import PdfReader
from reportlab.pdfbase import pdfmetrics

from pps.preflight.template import check_template
from pps.render import SpecError, cache_key, check_values, parse_spec, render_file
from pps.render.media import parse_image_value, resolve, upload_asset
from pps.render.problems import Code

CARD_DIR = Path(__file__).resolve().parent.parent / "examples" / "templates" / "business-card"
CARD = json.loads((CARD_DIR / "template.json").read_text())
RED_CMYK = "0 .9 .85 .1 k"  # the card's "Red" name colour as reportlab writes it


def quadrants(width: int = 600, height: int = 300) -> bytes:
    """Red everywhere, blue in the lower-right quarter."""
    image = Image.new("RGB", (width, height), (255, 0, 0))
    image.paste(Image.new("RGB", (width // 2, height // 2), (0, 0, 255)), (width // 2, height // 2))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


SVG = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
    b'width="100" height="25"><rect width="100" height="25" fill="#00ff00"/></svg>'
)
UPLOADS = {"quad": quadrants(), "small": quadrants(60, 30), "vector": SVG}


def loader(name: str) -> bytes:
    for identifier, data in UPLOADS.items():
        if name == upload_asset(identifier):
            return data
    return (CARD_DIR / name).read_bytes()


@pytest.fixture(scope="module")
def card() -> Any:
    return parse_spec(CARD, CARD_DIR)


def logo(file: str, **crop: float) -> str:
    return json.dumps({"file": file, "crop": crop} if crop else {"file": file})


def pixel_at_logo(png: bytes, spec: Any) -> tuple[int, int, int]:
    """The colour in the middle of the logo's box on a page image."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    box = next(e for e in spec.pages[0].elements if getattr(e, "data_key", None) == "logo").box
    x = (box.x + box.width / 2) / spec.width * image.width
    y = (box.y + box.height / 2) / spec.height * image.height
    return image.getpixel((round(x), round(y)))  # type: ignore[return-value]


# -- the format ---------------------------------------------------------------------------


def test_the_business_card_offers_a_logo_and_choices(card: Any) -> None:
    kinds = {field.key: field.kind for field in card.fields}
    assert kinds["logo"] == "image" and kinds["name"] == "text"
    assert card.data_keys == ("name", "title", "phone", "email", "url", "logo")
    choices = {choice.key: choice for choice in card.choices}
    assert set(choices) == {"name.font", "name.color"}
    assert [o.value for o in choices["name.font"].options] == ["Vera-Bold", "Vera-BoldItalic"]
    assert [o.value for o in choices["name.color"].options] == ["Black", "Accent", "Red"]
    assert choices["name.color"].default == "Black"  # the element's own colour
    assert choices["name.font"].default == "Vera-Bold"


def spec_with(element: dict[str, Any]) -> dict[str, Any]:
    return {"name": "T", "size": {"width": 85, "height": 55}, "pages": [{"elements": [element]}]}


TEXT = {"type": "text", "dataKey": "name", "box": {"x": 1, "y": 1, "width": 50, "height": 8}}


@pytest.mark.parametrize(
    ("element", "path", "code"),
    [
        ({**TEXT, "choices": {"font": ["Vera-Bold"]}}, "choices.font", Code.SPEC_CHOICE_DEFAULT),
        ({**TEXT, "choices": {"size": []}}, "choices.size", Code.SPEC_CHOICE_OPTIONS),
        ({**TEXT, "choices": {"font": ["Vera", "Vera"]}}, "choices.font", Code.SPEC_CHOICE_OPTIONS),
        ({**TEXT, "choices": {"color": ["#000000", "red"]}}, "choices.color[1]", Code.SPEC_COLOR),
        ({**TEXT, "choices": {"weight": ["bold"]}}, "choices.weight", Code.SPEC_UNKNOWN_KEY),
        (
            {"type": "text", "text": "Hi", "box": TEXT["box"], "choices": {"size": [10]}},
            "choices",
            Code.SPEC_CHOICE_OWNER,
        ),
        ({"type": "image", "box": TEXT["box"]}, "", Code.SPEC_IMAGE_SOURCE),
        ({"type": "image", "file": "a.png", "required": True, "box": TEXT["box"]}, "required",
         Code.SPEC_DATA_KEY_ONLY),
    ],
)  # fmt: skip
def test_bad_choices_and_images_are_named(element: dict[str, Any], path: str, code: Code) -> None:
    with pytest.raises(SpecError) as raised:
        parse_spec(spec_with(element))
    where = "pages[0].elements[0]" + (f".{path}" if path else "")
    found = {(p, problem.code) for p, problem in raised.value.problems}
    assert (where, code) in found, found


def test_any_colour_and_shared_choices() -> None:
    data = spec_with({**TEXT, "color": "#112233", "choices": {"color": "any", "size": [8, 10]}})
    data["pages"][0]["elements"].append(
        {**TEXT, "box": {"x": 1, "y": 20, "width": 50, "height": 8}, "choices": {"size": [8, 10]}}
    )
    spec = parse_spec(data)
    color, size = spec.choice("name.color"), spec.choice("name.size")
    assert color is not None and color.free and color.default == "#112233"
    assert size is not None and size.targets == ((0, 0), (0, 1))
    assert check_values(spec, {"name.color": "#abcdef", "name.size": "8"}) == {}
    assert Code.VALUE_CHOICE in {
        p.code for p in check_values(spec, {"name.color": "blue", "name.size": "9"})["name.size"]
    }


def test_a_size_sent_as_a_number_is_the_option_it_prints_as() -> None:
    """A shop's PHP array keeps 12 an int; every DataKey value is read as its text."""
    spec = parse_spec(spec_with({**TEXT, "choices": {"size": [8, 10, 10.5]}}))
    for value in (10.5, "10.5", 8, 8.0):
        assert check_values(spec, {"name.size": value}) == {}, value
    picked = resolve(spec, {"name.size": 10.5}).pages[0].elements[0]
    assert picked.size == 10.5  # type: ignore[union-attr]
    for value in (9, True, [8], {"size": 8}):
        problems = check_values(spec, {"name.size": value})["name.size"]
        assert problems[0].code == Code.VALUE_CHOICE, value


def test_a_data_key_cannot_be_both_an_image_and_a_text() -> None:
    data = spec_with(TEXT)
    data["pages"][0]["elements"].append({"type": "image", "dataKey": "name", "box": TEXT["box"]})
    with pytest.raises(SpecError):
        parse_spec(data)


# -- values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("quad", True),
        ({"file": "quad"}, True),
        ('{"file": "quad", "crop": {"x": 0, "y": 0, "width": 10, "height": 5}}', True),
        ("../etc/passwd", False),
        ("{not json", False),
        ({"file": "quad", "crop": {"x": 0, "y": 0, "width": 0, "height": 5}}, False),
        ({"file": "quad", "crop": {"x": 0, "y": 0}}, False),
        ({"file": "quad", "crop": {"x": 10**400, "y": 0, "width": 1, "height": 1}}, False),
        (
            '{"file": "quad", "crop": {"x": 0, "y": 0, "width": 1, "height": 1%s}}' % ("0" * 400),
            False,
        ),
        ({"file": "quad", "extra": 1}, False),
        (["quad"], False),
    ],
)
def test_image_values(value: object, ok: bool) -> None:
    parsed = parse_image_value(value)
    assert (getattr(parsed, "file", None) == "quad") is ok


def test_values_are_checked(card: Any) -> None:
    problems = check_values(card, {"logo": "not an id!", "name.color": "Pink"}, loader)
    assert problems["logo"][0].code == Code.VALUE_IMAGE
    assert problems["name.color"][0].code == Code.VALUE_CHOICE
    assert "Black, Accent, Red" in str(problems["name.color"][0])
    assert check_values(card, {"logo": "quad", "name.color": "red", "name.font": ""}, loader) == {}


# -- rendering ----------------------------------------------------------------------------


def test_the_print_pdf_holds_the_uploaded_image_in_full(card: Any) -> None:
    values = {"logo": logo("quad", x=300, y=150, width=300, height=150)}
    pdf, _ = render_file("print", card, values, loader)
    images = list(PdfReader(io.BytesIO(pdf)).pages[0].images)
    assert len(images) == 1
    # The original pixels are embedded (print quality); the crop is a clip, not a resample.
    assert images[0].image is not None and images[0].image.size == (600, 300)
    without, _ = render_file("print", card, {}, loader)
    assert list(PdfReader(io.BytesIO(without)).pages[0].images) == []


def test_the_crop_decides_what_the_box_shows(card: Any) -> None:
    blue = render_file("image", card, {"logo": logo("quad", x=300, y=150, width=300, height=150)},
                       loader, width=850)[0]  # fmt: skip
    red = render_file("image", card, {"logo": logo("quad", x=0, y=0, width=300, height=150)},
                      loader, width=850)[0]  # fmt: skip
    whole = render_file("image", card, {"logo": "quad"}, loader, width=850)[0]
    assert pixel_at_logo(blue, card)[2] > 200 and pixel_at_logo(blue, card)[0] < 60
    assert pixel_at_logo(red, card)[0] > 200 and pixel_at_logo(red, card)[2] < 60
    # The whole image, centred: its middle is where the four quarters meet.
    assert whole != blue != red


def test_an_svg_is_drawn_as_vectors(card: Any) -> None:
    pdf, _ = render_file("print", card, {"logo": "vector"}, loader)
    page = PdfReader(io.BytesIO(pdf)).pages[0]
    assert list(page.images) == []
    assert b"0 1 0 rg" in page.get_contents().get_data()  # type: ignore[union-attr]
    png, _ = render_file("image", card, {"logo": "vector"}, loader, width=850)
    assert pixel_at_logo(png, card)[1] > 200


def test_choices_change_the_print_pdf(card: Any) -> None:
    values = {"name": "Ada", "name.color": "Red", "name.font": "Vera-BoldItalic"}
    pdf, _ = render_file("print", card, values, loader)
    page = PdfReader(io.BytesIO(pdf)).pages[0]
    content = page.get_contents().get_data()  # type: ignore[union-attr]
    assert RED_CMYK.encode() in content
    fonts = {str(font["/BaseFont"]) for font in page["/Resources"]["/Font"].values()}
    assert any(
        "VeraBI" in name or "BoldOblique" in name or "BoldItalic" in name for name in fonts
    ), fonts
    plain, _ = render_file("print", card, {"name": "Ada"}, loader)
    assert RED_CMYK.encode() not in PdfReader(io.BytesIO(plain)).pages[0].get_contents().get_data()  # type: ignore[union-attr]


def test_choices_are_part_of_the_cache_key(card: Any) -> None:
    assert cache_key("print", card, {"name.color": "Red"}) != cache_key("print", card, {})


def test_a_spec_without_media_resolves_to_itself() -> None:
    spec = parse_spec(spec_with(TEXT))
    assert resolve(spec, {"name": "x"}) is spec


def test_preflight_warns_about_a_small_crop(card: Any) -> None:
    sharp = resolve(card, {"logo": "quad"})
    # 600 x 300 px in 24 x 6 mm: the 24 mm wide placement gives 635 dpi.
    assert [f for f in check_template(sharp, loader) if "dpi" in f.message] == []
    small = resolve(card, {"logo": logo("quad", x=0, y=0, width=80, height=20)})
    warnings = [f for f in check_template(small, loader) if "dpi" in f.message]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    vector = resolve(card, {"logo": "vector"})
    assert [f for f in check_template(vector, loader) if "Image" in f.message] == []


def test_the_template_alone_still_renders_as_before(card: Any) -> None:
    original = copy.deepcopy(CARD)
    for element in original["pages"][0]["elements"]:
        element.pop("choices", None)
    original["pages"][0]["elements"] = [
        e for e in original["pages"][0]["elements"] if e.get("dataKey") != "logo"
    ]
    original["dataKeys"] = ["name", "title", "phone", "email", "url"]
    original["fields"].pop("logo")  # its words go with the DataKey
    plain = parse_spec(original, CARD_DIR)
    before = render_file("image", plain, {}, loader, width=850)[0]
    assert render_file("image", card, {}, loader, width=850)[0] == before


def test_a_font_file_offered_as_a_choice_is_checked_at_import(tmp_path: Path) -> None:
    (tmp_path / "bad.ttf").write_bytes(b"not a font")
    data = spec_with({**TEXT, "font": "Vera", "choices": {"font": ["Vera", "bad.ttf"]}})
    with pytest.raises(SpecError) as raised:
        parse_spec(data, tmp_path)
    assert [path for path, _ in raised.value.problems] == ["choices.name.font"]
    assert "bad.ttf" in parse_spec(data).files


def test_svg_text_is_set_in_standard_fonts_only(card: Any) -> None:
    """Families an SVG names are never looked up on the machine (``fc-match``, font files):
    one process per family made an SVG naming many slow to draw, registered fonts in
    reportlab for good, and made the print file depend on the machine's fonts."""
    families = ["DejaVu Sans", "Liberation Serif", "FreeMono", "Noto Sans", "Pps Unknown 1"]
    texts = "".join(
        f'<text x="1" y="{n + 5}" font-family="{family}">Hi</text>'
        for n, family in enumerate(families)
    )
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="25">'
        f'{texts}<text x="1" y="20" font-family="serif">Hi</text></svg>'
    ).encode()
    before = set(pdfmetrics.getRegisteredFontNames())
    UPLOADS["fonts"] = svg
    try:
        pdf, _ = render_file("print", card, {"logo": "fonts"}, loader)
    finally:
        del UPLOADS["fonts"]
    # reportlab registers its standard fonts as they are first used; nothing else is new.
    assert set(pdfmetrics.getRegisteredFontNames()) - before <= set(pdfmetrics.standardFonts)
    fonts = {
        str(font.get("/BaseFont"))
        for font in PdfReader(io.BytesIO(pdf)).pages[0]["/Resources"]["/Font"].values()
    }
    assert {"/Helvetica", "/Times-Roman"} <= fonts, fonts
    assert not any("DejaVu" in font or "Liberation" in font for font in fonts), fonts
