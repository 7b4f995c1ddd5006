"""The template format: parsing, every kind of error with its path, and value validation."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from reportlab.pdfgen.canvas import Canvas

from pps.render import SpecError, parse_spec, validate_values
from pps.render.fonts import BUILTIN_FONTS
from pps.render.model import CMYK, RGB, ColorBackground, PdfBackground, QrElement, TextElement

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "templates"


def write_pdf(path: Path, width_mm: float, height_mm: float, pages: int = 1) -> None:
    canvas = Canvas(str(path), pagesize=(width_mm * 72 / 25.4, height_mm * 72 / 25.4))
    canvas.setPageCompression(1)
    for _ in range(pages):
        canvas.rect(10, 10, 50, 50, fill=1)
        canvas.showPage()
    canvas.save()


def write_png(path: Path, size: tuple[int, int] = (20, 10)) -> None:
    Image.new("RGB", size, (200, 30, 30)).save(path, "PNG")


def template(**overrides: Any) -> dict[str, Any]:
    """A valid two-page template using every element kind; files are made by ``files()``."""
    base: dict[str, Any] = {
        "name": "Everything",
        "size": {"width": 100, "height": 50},
        "bleed": 2,
        "pages": [
            {
                "background": {"pdf": "art.pdf", "page": 1},
                "elements": [
                    {"type": "text", "dataKey": "name", "box": box(5, 5, 60, 8), "size": 12},
                    {"type": "qr", "dataKey": "url", "box": box(70, 5, 20, 20)},
                    {"type": "image", "file": "logo.png", "box": box(5, 30, 10, 10)},
                    {"type": "rect", "box": box(0, 0, 100, 3), "fill": "#ff0000"},
                    {"type": "line", "from": {"x": 0, "y": 45}, "to": {"x": 100, "y": 45}},
                ],
            },
            {
                "background": {"color": {"c": 0, "m": 10, "y": 20, "k": 0}},
                "elements": [
                    {"type": "text", "text": "Fixed", "box": box(5, 5, 60, 8), "font": "brand.ttf"},
                    {"type": "text", "dataKey": "name", "box": box(5, 20, 60, 8)},
                ],
            },
        ],
    }
    base.update(overrides)
    return base


def box(x: float, y: float, width: float, height: float) -> dict[str, float]:
    return {"x": x, "y": y, "width": width, "height": height}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    write_pdf(tmp_path / "art.pdf", 100, 50, pages=2)
    write_png(tmp_path / "logo.png")
    shutil.copy(BUILTIN_FONTS["Vera"], tmp_path / "brand.ttf")
    return tmp_path


def errors_of(data: Any, base_dir: Path | None = None) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_spec(data, base_dir)
    assert str(caught.value) == "; ".join(caught.value.errors)
    return caught.value.errors


# --- what parses -------------------------------------------------------------------------


def test_a_full_template_parses_into_typed_elements(files: Path) -> None:
    spec = parse_spec(template(), files)

    assert (spec.width, spec.height, spec.bleed, spec.page_count) == (100, 50, 2, 2)
    assert spec.data_keys == ("name", "url")
    assert spec.pages[0].background == PdfBackground(file="art.pdf", page=1)
    assert spec.pages[1].background == ColorBackground(CMYK(0, 10, 20, 0))
    first = spec.pages[0].elements[0]
    assert isinstance(first, TextElement)
    assert (first.data_key, first.size, first.color, first.align) == (
        "name",
        12,
        RGB(0, 0, 0),
        "left",
    )
    assert isinstance(spec.pages[0].elements[1], QrElement)
    assert spec.files == ("art.pdf", "brand.ttf", "logo.png")


def test_data_keys_are_derived_in_order_of_first_use() -> None:
    data = template()
    data["pages"][0]["elements"].reverse()
    assert parse_spec(data).data_keys == ("url", "name")


def test_listed_data_keys_win_and_may_include_unused_keys() -> None:
    spec = parse_spec(template(dataKeys=["url", "name", "extra"]))
    assert spec.data_keys == ("url", "name", "extra")
    assert spec.field("extra") is not None


def test_an_element_key_missing_from_listed_data_keys_is_an_error() -> None:
    assert errors_of(template(dataKeys=["name"])) == [
        "pages[0].elements[1].dataKey: 'url' is not listed in dataKeys"
    ]


def test_old_minimal_files_become_blank_pages_of_the_default_size() -> None:
    spec = parse_spec({"name": "Old", "dataKeys": ["a", "b"], "customAttributes": {"x": 1}})
    assert (spec.width, spec.height, spec.bleed) == (85, 55, 0)
    assert spec.page_count == 1 and spec.pages[0].elements == ()
    assert spec.data_keys == ("a", "b")
    assert dict(spec.custom_attributes) == {"x": 1}

    two = parse_spec({"name": "Old", "pageCount": 2, "preview": "p.png", "identifier": "Old-1"})
    assert two.page_count == 2 and two.identifier == "Old-1"


def test_rules_of_a_key_used_twice_are_merged() -> None:
    data = template()
    data["pages"][0]["elements"][0].update(maxLength=30, default="Ann")
    data["pages"][1]["elements"][1].update(maxLength=20, required=True)
    field = parse_spec(data).field("name")
    assert field is not None
    assert (field.max_length, field.required, field.default) == (20, True, "Ann")


def test_digest_follows_the_json_not_its_key_order() -> None:
    data = template()
    shuffled = json.loads(json.dumps(dict(reversed(list(data.items())))))
    assert parse_spec(data).digest == parse_spec(shuffled).digest
    assert parse_spec(data).digest != parse_spec(template(bleed=3)).digest


@pytest.mark.parametrize("name", ["business-card", "postcard"])
def test_the_examples_parse_with_their_files(name: str) -> None:
    data = json.loads((EXAMPLES / name / "template.json").read_text())
    spec = parse_spec(data, EXAMPLES / name)
    assert spec.data_keys == tuple(data["dataKeys"])
    assert spec.page_count == data["pageCount"] == len(data["pages"])


@pytest.mark.parametrize("name", ["business-card", "postcard"])
def test_the_examples_import_with_the_minimal_importer_too(name: str) -> None:
    from pps.templates.files import load_template_file

    path = EXAMPLES / name / "template.json"
    imported = load_template_file(path)
    spec = parse_spec(imported.spec, path.parent)
    assert imported.data_keys == spec.data_keys
    assert imported.page_count == spec.page_count
    assert imported.name == spec.name


# --- every kind of error, with its path ----------------------------------------------------


def edit(path: str, value: Any) -> dict[str, Any]:
    """``template()`` with the value at a dotted path (``pages.0.elements.2.box``) replaced."""
    data = template()
    *parents, last = path.split(".")
    target: Any = data
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is _DELETE:
        del target[int(last) if last.isdigit() else last]
    elif last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value
    return data


_DELETE = object()
E = "pages[0].elements"


@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        ("name", "  ", 'name: must be a non-empty string, got "  "'),
        ("name", _DELETE, "name: is required"),
        ("identifier", "no spaces", "identifier: must be 1 to 64 letters"),
        ("dataKeys", ["name", "name"], "dataKeys[1]: duplicates dataKeys[0] ('name')"),
        ("customAttributes", [], "customAttributes: must be an object, got a list"),
        ("size", _DELETE, "size: is required when pages are given"),
        ("size.width", 0, "size.width: must be greater than 0"),
        ("size.height", 6000, "size.height: must be at most 5000"),
        # A JSON integer has no size limit; beyond any float it is still out of range.
        pytest.param("size.width", 10**400, "size.width: must be at most 5000", id="10**400"),
        pytest.param(
            "pages.0.elements.0.box.x",
            -(10**400),
            f"{E}[0].box.x: must be at least -5000",
            id="-10**400",
        ),
        ("size.unit", "in", 'size.unit: must be "mm" (the only unit), got "in"'),
        ("bleed", -1, "bleed: must be at least 0"),
        ("bleed", "3", 'bleed: must be a number, got "3"'),
        ("pageCount", 3, "pageCount: must equal the number of pages (2), got 3"),
        ("pages", [], "pages: must be a non-empty list"),
        ("pages.0.background", {"color": "#fff"}, "pages[0].background.color: must be '#RRGGBB'"),
        (
            "pages.0.background",
            {"pdf": "art.pdf", "color": "#ffffff"},
            "pages[0].background: must have either",
        ),
        (
            "pages.0.background.page",
            -1,
            "pages[0].background.page: must be a whole number of at least 0",
        ),
        ("pages.0.elements", {}, "pages[0].elements: must be a list, got an object"),
        ("pages.0.elements.0.box.width", 0, f"{E}[0].box.width: must be greater than 0"),
        ("pages.0.elements.0.box.height", -2, f"{E}[0].box.height: must be greater than 0"),
        ("pages.0.elements.0.box.x", True, f"{E}[0].box.x: must be a number, got true"),
        ("pages.0.elements.0.box", _DELETE, f"{E}[0].box: is required"),
        ("pages.0.elements.0.type", "circle", f"{E}[0].type: must be one of text, qr, image"),
        ("pages.0.elements.0.type", {"text": 1}, f"{E}[0].type: must be one of text, qr, image"),
        ("pages.0.elements.0.type", ["text"], f"{E}[0].type: must be one of text, qr, image"),
        ("pages.0.elements.0.colour", "#000000", f"{E}[0].colour: is not a known key here"),
        ("pages.0.elements.0.color", "red", f"{E}[0].color: must be '#RRGGBB' or a CMYK object"),
        (
            "pages.0.elements.0.color",
            {"c": 0, "m": 101, "y": 0, "k": 0},
            f"{E}[0].color.m: must be at most 100",
        ),
        ("pages.0.elements.0.color", {"c": 0, "m": 0, "y": 0}, f"{E}[0].color.k: is required"),
        (
            "pages.0.elements.0.align",
            "justify",
            f"{E}[0].align: must be one of left, center, right",
        ),
        ("pages.0.elements.0.size", 0, f"{E}[0].size: must be greater than 0"),
        ("pages.0.elements.0.shrinkToFit", "yes", f"{E}[0].shrinkToFit: must be true or false"),
        (
            "pages.0.elements.0.maxLength",
            0,
            f"{E}[0].maxLength: must be a whole number of at least 1",
        ),
        (
            "pages.0.elements.0.maxLength",
            2.5,
            f"{E}[0].maxLength: must be a whole number of at least 1",
        ),
        ("pages.0.elements.0.default", 5, f"{E}[0].default: must be a string, got a number"),
        ("pages.0.elements.0.text", "also fixed", f"{E}[0]: must have either 'dataKey' or a fixed"),
        ("pages.0.elements.0.dataKey", "", f"{E}[0].dataKey: must be a non-empty string"),
        ("pages.0.elements.0.font", "Comic Sans", f"{E}[0].font: must be a built-in font"),
        ("pages.0.elements.0.font", "../fonts/x.ttf", f"{E}[0].font: must stay inside"),
        (
            "pages.0.elements.0.maxLength",
            10**6,
            f"{E}[0].maxLength: must be a whole number of at most",
        ),
        ("pages.0.elements.1.errorCorrection", "X", f"{E}[1].errorCorrection: must be one of L, M"),
        ("pages.0.elements.2.file", "/etc/passwd", f"{E}[2].file: must be relative"),
        ("pages.0.elements.2.file", "a/../../b.png", f"{E}[2].file: must stay inside"),
        ("pages.0.elements.2.fit", "tile", f"{E}[2].fit: must be one of contain, cover, stretch"),
        ("pages.0.elements.3.fill", None, f"{E}[3]: needs a 'fill' or a 'stroke' colour"),
        ("pages.0.elements.3.strokeWidth", 0, f"{E}[3].strokeWidth: must be greater than 0"),
        ("pages.0.elements.4.from", {"x": 1}, f"{E}[4].from.y: is required"),
        ("pages.0.elements.4.width", -1, f"{E}[4].width: must be greater than 0"),
        ("pages.0.elements.4", "line", f"{E}[4]: must be an object, got a string"),
        ("pages.0.elements.4.to.x", float("inf"), f"{E}[4].to.x: must be a finite number"),
    ],
)
def test_each_kind_of_error_is_named_by_its_path(path: str, value: Any, error: str) -> None:
    errors = errors_of(edit(path, value))
    assert any(message.startswith(error) for message in errors), errors


def test_all_errors_are_collected_not_just_the_first() -> None:
    data = template(bleed=-1)
    data["pages"][0]["elements"][0]["box"]["width"] = 0
    data["pages"][0]["elements"][3]["fill"] = "#12"
    data["pages"][1]["elements"][0]["font"] = "Unknown"
    errors = errors_of(data)
    assert errors == [
        "bleed: must be at least 0",
        "pages[0].elements[0].box.width: must be greater than 0",
        "pages[0].elements[3].fill: must be '#RRGGBB' or a CMYK object, got \"#12\"",
        "pages[1].elements[0].font: must be a built-in font (Vera, Vera-Bold, Vera-Italic, "
        'Vera-BoldItalic) or a .ttf file beside the template, got "Unknown"',
    ]


def test_a_template_that_is_not_an_object_is_refused() -> None:
    assert errors_of(["name"]) == ["(template): must be a JSON object, got a list"]


# --- referenced files ----------------------------------------------------------------------


def test_missing_files_are_named_by_path(tmp_path: Path) -> None:
    errors = errors_of(template(), tmp_path)
    assert errors == [
        "pages[0].background.pdf: 'art.pdf': does not exist or is not a file",
        "pages[0].elements[2].file: 'logo.png': does not exist or is not a file",
        "pages[1].elements[0].font: 'brand.ttf': does not exist or is not a file",
    ]


def test_files_are_only_opened_when_a_base_dir_is_given() -> None:
    assert parse_spec(template()).files == ("art.pdf", "brand.ttf", "logo.png")


def test_file_signatures_must_match(files: Path) -> None:
    (files / "art.pdf").write_bytes((files / "logo.png").read_bytes())
    (files / "logo.png").write_bytes(b"GIF89a not allowed")
    (files / "brand.ttf").write_bytes(b"OTTO" + b"\0" * 100)
    errors = errors_of(template(), files)
    assert errors == [
        "pages[0].background.pdf: 'art.pdf' is not a PDF file",
        "pages[0].elements[2].file: 'logo.png' is not a PNG or JPEG file",
        "pages[1].elements[0].font: 'brand.ttf': is an OpenType font with PostScript (CFF) "
        "outlines; only TrueType outlines embed",
    ]


def test_a_truncated_image_or_font_is_refused(files: Path) -> None:
    png = (files / "logo.png").read_bytes()
    (files / "logo.png").write_bytes(png[:40])
    (files / "brand.ttf").write_bytes(b"\x00\x01\x00\x00" + b"\x00" * 64)
    errors = errors_of(template(), files)
    assert errors[0].startswith("pages[0].elements[2].file: 'logo.png' cannot be read as an image")
    assert errors[1].startswith("pages[1].elements[0].font: 'brand.ttf': cannot be used as a font")


def test_unreadable_files_are_refused_without_the_readers_internals(files: Path) -> None:
    """pikepdf and Pillow name a file read from memory by the stream's Python repr (an
    address that differs on every run): the operator reads the reason alone."""
    (files / "art.pdf").write_bytes(b"%PDF-1.4\n garbage")
    (files / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    errors = errors_of(template(), files)
    assert errors == [
        "pages[0].background.pdf: 'art.pdf' cannot be read as PDF: unable to find trailer "
        "dictionary while recovering damaged file",
        "pages[0].elements[2].file: 'logo.png' cannot be read as an image: its header is not "
        "one of a PNG or JPEG",
    ]


def test_artwork_whose_page_tree_the_reader_gives_up_on_is_refused(files: Path) -> None:
    """No trailer, and a page tree listing an integer beside its page: pikepdf raises its
    QpdfRuntimeError, which is no PdfError (it was a traceback)."""
    (files / "art.pdf").write_bytes(
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Kids[3 0 R 4]>>endobj\n"
        b"3 0 obj<</Type/Page>>endobj\n4 0 obj<</Type/Catalog>>endobj\n"
    )
    assert errors_of(template(), files) == [
        "pages[0].background.pdf: 'art.pdf' cannot be read as PDF: /Count is wrong after "
        "flattening pages tree"
    ]


def test_a_missing_artwork_page_is_named(files: Path) -> None:
    data = edit("pages.0.background.page", 2)
    assert errors_of(data, files) == [
        "pages[0].background.pdf: 'art.pdf' has 2 page(s); page 2 does not exist (counted from 0)"
    ]


def test_artwork_of_another_shape_is_refused(files: Path) -> None:
    write_pdf(files / "art.pdf", 100, 100, pages=2)
    (error,) = errors_of(template(), files)
    assert error.startswith("pages[0].background.pdf: 'art.pdf' page 1 is 100.0 x 100.0 mm")


def test_a_symlink_out_of_the_folder_is_refused(
    files: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.png"
    write_png(outside)
    (files / "logo.png").unlink()
    (files / "logo.png").symlink_to(outside)
    assert errors_of(template(), files) == [
        "pages[0].elements[2].file: 'logo.png': lies outside the template's folder"
    ]


def test_a_fixed_text_or_default_that_cannot_fit_is_refused(files: Path) -> None:
    data = template()
    data["pages"][1]["elements"][0]["text"] = "W" * 80
    data["pages"][0]["elements"][0]["default"] = "M" * 60
    errors = errors_of(data, files)
    assert errors[0].startswith("pages[0].elements[0].default: is too long for its box")
    assert errors[1].startswith("pages[1].elements[0].text: is too long for its box")


def test_an_element_wholly_outside_the_page_and_its_bleed_is_refused_at_import(
    files: Path,
) -> None:
    """Nothing of it would print: a customer's text bound to it was dropped without a word.
    Reaching into the bleed, or partly off the page, is fine; templates imported before
    still parse (the check needs the template's folder, as the file checks do)."""
    data = template()
    elements = data["pages"][0]["elements"]
    elements[0]["box"] = box(500, 5, 60, 8)  # the name, right of a 100 mm page
    elements[3]["box"] = box(-10, 0, 7.5, 3)  # the rect, left of the 2 mm bleed
    elements[4]["from"], elements[4]["to"] = {"x": 0, "y": 60}, {"x": 100, "y": 70}
    data["pages"][1]["elements"][1]["box"] = box(-1.9, -1.9, 1, 1)  # in the bleed: fine
    where = "lies wholly outside the page and its bleed (x from -2 to 102 mm, y from -2 to 52 mm)"
    assert errors_of(data, files) == [
        f"pages[0].elements[0].box: {where}; nothing of it would print",
        f"pages[0].elements[3].box: {where}; nothing of it would print",
        f"pages[0].elements[4]: {where}; nothing of it would print",
    ]
    assert parse_spec(data).pages[0].elements[0].box.x == 500  # stored ones still render


def test_checks_after_parsing_name_the_element_index_in_the_file(files: Path) -> None:
    data = template(dataKeys=["name"])
    first = data["pages"][0]["elements"]
    first.insert(0, {"type": "circle", "box": box(0, 0, 1, 1)})
    second = data["pages"][1]["elements"]
    second.insert(0, {"type": "text", "dataKey": "name", "box": box(0, 0, -1, 1)})
    (files / "logo.png").write_bytes(b"GIF89a")
    paths = [error.split(": ", 1)[0] for error in errors_of(data, files)]
    # qr moved from elements[1] to [2], image from [2] to [3], the font text from [0] to [1].
    assert "pages[0].elements[2].dataKey" in paths
    assert "pages[0].elements[3].file" in paths
    (files / "logo.png").unlink()
    write_png(files / "logo.png")
    data["pages"][1]["elements"][1]["text"] = "W" * 80
    paths = [error.split(": ", 1)[0] for error in errors_of(data, files)]
    assert "pages[1].elements[1].text" in paths


def test_a_default_longer_than_max_length_is_refused() -> None:
    data = edit("pages.0.elements.0.maxLength", 3)
    data["pages"][0]["elements"][0]["default"] = "four"
    assert errors_of(data) == ["pages[0].elements[0].default: is longer than maxLength (3)"]


# --- values for the editor -----------------------------------------------------------------


@pytest.fixture
def card() -> Any:
    base = EXAMPLES / "business-card"
    return parse_spec(json.loads((base / "template.json").read_text()), base)


def test_valid_values_have_no_errors(card: Any) -> None:
    values = {"name": "Ada Lovelace", "title": "Analyst", "url": "https://example.org"}
    assert validate_values(card, values) == {}


def test_values_over_max_length_are_reported_per_key(card: Any) -> None:
    errors = validate_values(card, {"name": "x" * 41, "phone": "1" * 31})
    assert errors == {
        "name": ["must be at most 40 characters, got 41"],
        "phone": ["must be at most 30 characters, got 31"],
    }


def test_required_values_must_not_be_blank(card: Any) -> None:
    assert validate_values(card, {"name": "   "}) == {"name": ["is required"]}
    # A missing key falls back to the template's default, which is not blank.
    assert validate_values(card, {}) == {}


def test_values_must_be_strings(card: Any) -> None:
    assert validate_values(card, {"phone": 12345}) == {"phone": ["must be a string, got int"]}


def test_a_value_too_wide_for_a_box_that_does_not_shrink(card: Any) -> None:
    (message,) = validate_values(card, {"phone": "M" * 25})["phone"]
    assert message.startswith("is too long for its box (")


def test_a_value_that_cannot_shrink_enough(card: Any) -> None:
    (message,) = validate_values(card, {"name": "W" * 40})["name"]
    assert message == "does not fit its box even at the smallest size (7 pt)"


def test_characters_the_font_lacks_are_reported(card: Any) -> None:
    assert validate_values(card, {"title": "漢字"}) == {
        "title": ["contains characters the font cannot show: 字漢"]
    }


def test_qr_capacity_is_checked() -> None:
    data = template()
    spec = parse_spec(data)
    (message,) = validate_values(spec, {"url": "x" * 3000})["url"]
    assert message.startswith("is too long for a QR code (3000 bytes")


def test_ten_thousand_values_and_a_huge_value_give_clean_errors(card: Any) -> None:
    values: dict[str, object] = {f"key{index}": "v" * 10 for index in range(10_000)}
    values["title"] = "x" * (5 * 1024 * 1024)
    errors = validate_values(card, values)
    assert errors == {"title": [f"must be at most 60 characters, got {5 * 1024 * 1024}"]}


def test_a_huge_value_without_max_length_hits_the_hard_limit() -> None:
    spec = parse_spec(template())
    errors = validate_values(spec, {"name": "x" * 3_000_000})
    assert errors == {"name": ["must be at most 10000 characters, got 3000000"]}


def test_fit_checks_for_shipped_fonts_need_the_assets(files: Path) -> None:
    data = {
        "name": "Shipped font",
        "size": {"width": 50, "height": 20},
        "pages": [
            {
                "elements": [
                    {
                        "type": "text",
                        "dataKey": "name",
                        "box": box(0, 0, 50, 10),
                        "font": "brand.ttf",
                    }
                ]
            }
        ],
    }
    spec = parse_spec(data, files)
    # Without the template's files the font cannot be measured: left to render time.
    assert validate_values(spec, {"name": "W" * 200}) == {}
    (message,) = validate_values(spec, {"name": "W" * 200}, files)["name"]
    assert message.startswith("is too long for its box")


def test_template_is_not_mutated_by_parsing() -> None:
    data = template()
    before = copy.deepcopy(data)
    parse_spec(data)
    assert data == before
