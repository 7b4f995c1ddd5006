"""``POST /api-ext/file``: what ``File\\Client::create`` sends (src/Client/File/Client.php:
Guzzle multipart, one part ``file`` with contents and filename) and what ``File::fromArray``
reads (``$data['identifier']``, a string, without a ``data`` wrapper: src/Client/File/File.php)."""

from __future__ import annotations

import io

import pikepdf
import pytest
from api_support import assert_error, snapshot
from conftest import ApiClient
from flask import Flask
from openpyxl import Workbook
from PIL import Image
from preflight_support import encrypted, print_pdf, with_content_bomb, with_form_fan_out
from vdata_support import multipart

from pps.platform.repository.sql import SqlRepository
from pps.render.decode import MAX_PDF_PAGES
from pps.render.pdf_encryption import ENCRYPTED, LOCKED
from pps.render.svg_budget import MAX_ELEMENTS, MAX_TEXT, budget_problem, parse_svg
from pps.uploads.svg import MAX_DEPTH, SvgRefused, sanitize_svg


def nested_svg(depth: int) -> bytes:
    """An ``<svg>`` holding ``<g>`` elements nested so that ``depth`` elements nest in all."""
    return (
        b'<svg xmlns="http://www.w3.org/2000/svg">'
        + b"<g>" * (depth - 1)
        + b"</g>" * (depth - 1)
        + b"</svg>"
    )


def fan_out_svg(levels: int, fan: int = 10) -> bytes:
    """``fan`` rectangles, then groups of ``fan`` ``<use>`` of the group before: about a
    kilobyte that svglib expands to ``fan ** levels`` shapes (and copies them as it goes)."""
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'viewBox="0 0 10 10"><defs>',
        '<g id="l0">' + '<rect width="1" height="1"/>' * fan + "</g>",
    ]
    for level in range(1, levels):
        parts.append(f'<g id="l{level}">' + f'<use xlink:href="#l{level - 1}"/>' * fan + "</g>")
    parts.append(f'</defs><use xlink:href="#l{levels - 1}"/></svg>')
    return "".join(parts).encode()


def png(width: int = 4, height: int = 4) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), "red").save(out, "PNG")
    return out.getvalue()


def xlsx() -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Name"])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def upload(api: ApiClient, name: str, data: bytes) -> object:
    return api.post("/api-ext/file", data=multipart(name, data), content_type="multipart/form-data")


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("logo.png", png(), "png"),
        ("photo.jpg", None, "jpeg"),
        ("data.csv", b"Name,City\nAda,London\n", "csv"),
        ("data.xlsx", None, "xlsx"),
        (
            "logo.svg",
            b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 2 1"><rect width="1"/></svg>',
            "svg",
        ),
        ("misnamed.txt", png(), "png"),  # content decides, not the name
    ],
)
def test_accepted_kinds(
    app: Flask, api: ApiClient, name: str, data: bytes | None, kind: str
) -> None:
    if data is None and kind == "jpeg":
        out = io.BytesIO()
        Image.new("RGB", (4, 4)).save(out, "JPEG")
        data = out.getvalue()
    elif data is None:
        data = xlsx()
    response = upload(api, name, data)
    assert response.status_code == 201, response.get_data(as_text=True)  # type: ignore[attr-defined]
    body = response.get_json()  # type: ignore[attr-defined]
    assert set(body) == {"identifier"} and isinstance(body["identifier"], str)
    record = app.extensions["pps"].uploads.get(
        app.extensions["pps"].repository.find_client_by_api_key(api.api_key).identifier,
        body["identifier"],
    )
    assert record is not None and record.kind == kind


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "PNG"),  # a PNG signature, broken inside
        (b"MZ\x90\x00\x03" + bytes(range(256)), "not UTF-8"),
        ("Name\nJosé\n".encode("latin-1"), "UTF-8"),
        (b"<html><script>alert(1)</script></html>", "not an SVG"),
        (b'<!DOCTYPE svg [<!ENTITY x "y">]><svg>&x;</svg>', "DTD"),
        (b"", "empty"),
    ],
)
def test_refused_with_a_reason(api: ApiClient, data: bytes, words: str) -> None:
    error = assert_error(upload(api, "file.png", data), 422, "file")
    assert words in error["message"], error


#: A PDF header over a body without a trailer, and one whose page tree has no /Kids.
BROKEN_PDFS = [
    b"%PDF-1.4\n garbage",
    b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R/Size 2>>\n%%EOF",
    # No trailer, and a page tree listing an integer beside its page: the reader gives up
    # on its /Count with an error of another class than its usual one (it was a 500).
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Kids[3 0 R 4]>>endobj\n"
    b"3 0 obj<</Type/Page>>endobj\n4 0 obj<</Type/Catalog>>endobj\n",
]


@pytest.mark.parametrize("data", BROKEN_PDFS)
def test_a_broken_pdf_is_refused_in_words_without_internals(api: ApiClient, data: bytes) -> None:
    """The reader's own message names the in-memory stream it read from (its Python repr,
    with a memory address that differs on every call): the shop hears the reason alone."""
    error = assert_error(upload(api, "file.pdf", data), 422, "file")
    text = str(error)
    assert "cannot be read as PDF: " in error["message"], error
    assert "BytesIO" not in text and " at 0x" not in text and "stream <" not in text, error


def test_pixel_limit(app_config: dict[str, object]) -> None:
    from pps.app import create_app

    app = create_app({**app_config, "max_image_pixels": 100})
    from conftest import ApiClient as Api

    repo = app.extensions["pps"].repository
    tenant = repo.create_client("Pixels")
    error = assert_error(
        upload(Api(app.test_client(), tenant.api_key), "big.png", png(20, 20)), 422, "file"
    )
    assert "pixels" in error["message"]
    app.extensions["pps"].close()


def test_missing_part_and_json(api: ApiClient) -> None:
    assert_error(api.post("/api-ext/file", json={"file": "x"}), 422, "file")
    assert_error(
        api.post("/api-ext/file", data={"other": "x"}, content_type="multipart/form-data"),
        422,
        "file",
    )


def test_svg_is_stored_clean() -> None:
    dirty = (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'onload="alert(1)"><script>alert(2)</script><style>@import url(http://x)</style>'
        '<rect width="5" height="5" fill="url(http://evil/x)" onclick="x()"/>'
        '<circle r="2" fill="url(#g)"/><image xlink:href="http://evil/p.png"/>'
        '<use xlink:href="http://evil/s.svg#a"/><use xlink:href="#local"/>'
        '<foreignObject><div>x</div></foreignObject><text x="1">Hi</text></svg>'
    )
    clean = sanitize_svg(dirty).decode()
    for bad in (
        "script",
        "onload",
        "onclick",
        "@import",
        "evil",
        "image",
        "foreignObject",
        "style",
    ):
        assert bad not in clean, (bad, clean)
    assert 'fill="url(#g)"' in clean and 'href="#local"' in clean and ">Hi<" in clean


SVG_HEAD = '<svg xmlns="http://www.w3.org/2000/svg"'


@pytest.mark.parametrize(
    ("svg", "words"),
    [
        (f'{SVG_HEAD}><rect width="1" height="1"/></svg>', "has no size"),
        (f'{SVG_HEAD} viewBox="0 0 0 0"><rect width="5" height="5"/></svg>', "has no size"),
        (f'{SVG_HEAD} width="10zz" height="10"><rect width="5" height="5"/></svg>', "drawn"),
        (f'{SVG_HEAD} width="1e-300" height="1e-300"><rect width="1"/></svg>', "cannot be drawn"),
        (f'{SVG_HEAD} width="-10" height="10"><rect width="5" height="5"/></svg>', "positive"),
        (f'{SVG_HEAD} width="10" height="nan"><rect width="5" height="5"/></svg>', "positive"),
        (f'{SVG_HEAD} width="inf" height="10"><rect width="5" height="5"/></svg>', "positive"),
        (f'{SVG_HEAD} viewBox="0 0 -10 -10"><rect width="5" height="5"/></svg>', "positive"),
        (
            f'{SVG_HEAD} width="10" height="10">'
            '<rect width="5" height="5" style="stroke:#000;stroke-width:1e999"/></svg>',
            "cannot be drawn",
        ),
    ],
)
def test_svg_that_cannot_be_drawn_is_refused_and_nothing_is_stored(
    app: Flask, api: ApiClient, repo: SqlRepository, svg: str, words: str
) -> None:
    """Valid XML that svglib or reportlab cannot draw: accepted, every file of a draft
    using it would fail to render, blamed on the template."""
    before = snapshot(repo)
    error = assert_error(upload(api, "logo.svg", svg.encode()), 422, "file")
    assert words in error["message"], error
    assert "uploads/" not in error["message"]  # no storage key in the answer
    assert snapshot(repo) == before


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1001, 50_000])  # 50_000: 350 KB
def test_svg_nested_too_deep_is_refused_and_nothing_is_stored(
    app: Flask, api: ApiClient, repo: SqlRepository, depth: int
) -> None:
    """Rebuilding and serialising an SVG recurse once per level: deeper than ``MAX_DEPTH``
    it is a 422 naming ``file`` like any SVG that cannot be used, before any of that runs."""
    before = snapshot(repo)
    error = assert_error(upload(api, "deep.svg", nested_svg(depth)), 422, "file")
    # Deeper than there may be elements, the file is refused for its elements first.
    limit = f"more than {MAX_DEPTH} levels" if depth <= MAX_ELEMENTS else "10000 elements"
    assert limit in error["message"], error
    assert snapshot(repo) == before
    uploads = app.extensions["pps"].storage.root / "uploads"
    assert not uploads.exists() or not any(uploads.rglob("*.*"))


def test_svg_nesting_up_to_the_limit_is_kept() -> None:
    clean = sanitize_svg(nested_svg(MAX_DEPTH).decode()).decode()
    assert clean.count("<g") == MAX_DEPTH - 1
    with pytest.raises(SvgRefused, match="nested"):
        sanitize_svg(nested_svg(MAX_DEPTH + 1).decode())


def test_svg_use_fan_out_is_refused_and_nothing_is_stored(
    app: Flask, api: ApiClient, repo: SqlRepository
) -> None:
    """1.2 KB of ``<use>`` elements naming groups of ``<use>`` elements: svglib would copy
    and draw tens of thousands of shapes, for every render. Counted first, it is a 422."""
    data = fan_out_svg(4)
    assert len(data) < 1300
    before = snapshot(repo)
    error = assert_error(upload(api, "laughs.svg", data), 422, "file")
    assert f"more than {MAX_ELEMENTS} elements once its <use>" in error["message"], error
    assert snapshot(repo) == before
    uploads = app.extensions["pps"].storage.root / "uploads"
    assert not uploads.exists() or not any(uploads.rglob("*.*"))


def test_svg_with_references_within_the_limits_is_kept(api: ApiClient) -> None:
    response = upload(api, "pattern.svg", fan_out_svg(3))  # some 2,500 elements drawn
    assert response.status_code == 201, response.get_data(as_text=True)  # type: ignore[attr-defined]


def _svg(body: str) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'viewBox="0 0 10 10">{body}</svg>'
    )


PATH_10K = "M0 0" + " L1 1" * 2500  # 10,004 characters of path data


@pytest.mark.parametrize(
    ("svg", "words"),
    [
        # A group that uses itself, and two that use each other: SVG calls both an error.
        (_svg('<g id="a"><use href="#a"/></g>'), "refers to itself"),
        (_svg('<g id="a"><use href="#b"/></g><g id="b"><use href="#a"/></g>'), "itself"),
        (_svg('<clipPath id="c"><rect clip-path="url(#c)"/></clipPath>'), "itself"),
        # Every nested <svg> draws the <defs> below it again: 50 x 250 elements.
        (
            _svg("<svg>" * 50 + "<defs>" + "<rect/>" * 250 + "</defs>" + "</svg>" * 50),
            f"more than {MAX_ELEMENTS} elements",
        ),
        # A clip path is rebuilt for every element clipped by it.
        (
            _svg(
                '<clipPath id="c">'
                + "<rect/>" * 200
                + "</clipPath>"
                + '<rect clip-path="url(#c)"/>' * 60
            ),
            "elements",
        ),
        # Path data used 201 times.
        (
            _svg(f'<path id="p" d="{PATH_10K}"/>' + '<use href="#p"/>' * 200),
            f"more than {MAX_TEXT} characters",
        ),
        # A gradient that names another, whose stops are followed for every shape it fills.
        (
            _svg(
                '<linearGradient id="g0">' + "<stop/>" * 1000 + "</linearGradient>"
                '<linearGradient id="g1" xlink:href="#g0"/>' + '<rect fill="url(#g1)"/>' * 20
            ),
            "elements",
        ),
        # The same id twice: the larger element counts, whichever svglib finds.
        (_svg('<g id="x"/><g id="x">' + "<rect/>" * 100 + "</g>" + '<use href="#x"/>' * 100), "el"),
    ],
)
def test_svg_drawing_budget(svg: str, words: str) -> None:
    problem = budget_problem(parse_svg(svg))
    assert problem is not None and words in problem, problem


def test_svg_drawing_budget_counts_long_chains_without_recursion() -> None:
    chain = "".join(f'<g id="a{n}"><use href="#a{n - 1}"/></g>' for n in range(1, 4000))
    problem = budget_problem(parse_svg(_svg('<defs><g id="a0"/>' + chain + "</defs>")))
    assert problem is not None and "elements" in problem
    assert budget_problem(parse_svg(_svg('<rect id="r"/>' + '<use href="#r"/>' * 4000))) is None


def test_svg_of_too_many_elements_is_refused_while_parsing() -> None:
    with pytest.raises(SvgRefused, match=f"more than {MAX_ELEMENTS} elements"):
        sanitize_svg(_svg("<rect/>" * MAX_ELEMENTS))
    assert sanitize_svg(_svg("<rect/>" * (MAX_ELEMENTS - 1)))


@pytest.mark.parametrize(
    ("bomb", "words"),
    [
        (lambda data: with_form_fan_out(data, 5), "form XObjects more than 100000 times"),
        (lambda data: with_content_bomb(data, 40), "decompresses to more than 32 MB"),
    ],
)
def test_pdf_that_draws_too_much_is_refused_and_nothing_is_stored(
    app: Flask, api: ApiClient, repo: SqlRepository, bomb: object, words: str
) -> None:
    """Checking a PDF opens every page in pdfium, which parses each form once per use:
    forms drawing forms are counted first, as is content that inflates a thousandfold."""
    before = snapshot(repo)
    data = bomb(print_pdf(1))  # type: ignore[operator]
    error = assert_error(upload(api, "bomb.pdf", data), 422, "file")
    assert "on page 1" in error["message"] and words in error["message"], error
    assert snapshot(repo) == before


def photo(kind: str, orientation: int, mode: str = "RGB") -> bytes:
    """40 x 20 pixels, red on the left half, tagged with an EXIF ``orientation``."""
    image = Image.new("RGB", (40, 20), "white")
    image.paste(Image.new("RGB", (20, 20), "red"), (0, 0))
    image = image.convert(mode)
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    image.save(out, kind, exif=exif.tobytes())
    return out.getvalue()


@pytest.mark.parametrize(
    ("kind", "mode"), [("JPEG", "RGB"), ("JPEG", "CMYK"), ("PNG", "RGB"), ("PNG", "P")]
)
def test_a_photo_turned_by_its_exif_orientation_is_stored_upright(
    app: Flask, api: ApiClient, kind: str, mode: str
) -> None:
    """Browsers show a photo turned by its EXIF orientation (6: 90 degrees clockwise), and
    the editor's crop is measured on that picture; the renderer reads pixels as stored."""
    response = upload(api, "phone.jpg", photo(kind, 6, mode))
    assert response.status_code == 201, response.get_data(as_text=True)  # type: ignore[attr-defined]
    identifier = response.get_json()["identifier"]  # type: ignore[attr-defined]
    stored = next((app.extensions["pps"].storage.root / "uploads").rglob(f"{identifier}/file.*"))
    with Image.open(stored) as image:
        assert image.size == (20, 40)
        assert image.getexif().get(0x0112) in (None, 1)
        top = image.convert("RGB").getpixel((10, 5))
        bottom = image.convert("RGB").getpixel((10, 35))
    assert top[1] < 80 and bottom[1] > 200, (top, bottom)  # red on top: turned clockwise


def test_a_photo_without_orientation_is_stored_as_sent(app: Flask, api: ApiClient) -> None:
    data = photo("JPEG", 1)
    response = upload(api, "photo.jpg", data)
    identifier = response.get_json()["identifier"]  # type: ignore[attr-defined]
    stored = next((app.extensions["pps"].storage.root / "uploads").rglob(f"{identifier}/file.*"))
    assert stored.read_bytes() == data


def test_a_photo_whose_exif_cannot_be_read_is_stored_as_sent(app: Flask, api: ApiClient) -> None:
    """Its pixels decode; only the EXIF block's TIFF header is broken, so it names no
    orientation (browsers show such a photo as stored). Reading it was a 500 (when the
    JFIF header gives the resolution, Pillow reads the EXIF block only when asked)."""
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    Image.new("RGB", (40, 20), "red").save(out, "JPEG", exif=exif.tobytes(), dpi=(300, 300))
    data = out.getvalue()
    assert data.count(b"Exif\x00\x00MM") + data.count(b"Exif\x00\x00II") == 1
    broken = data.replace(b"Exif\x00\x00MM", b"Exif\x00\x00LM").replace(
        b"Exif\x00\x00II", b"Exif\x00\x00LI"
    )
    response = upload(api, "photo.jpg", broken)
    assert response.status_code == 201, response.get_data(as_text=True)  # type: ignore[attr-defined]
    identifier = response.get_json()["identifier"]  # type: ignore[attr-defined]
    stored = next((app.extensions["pps"].storage.root / "uploads").rglob(f"{identifier}/file.*"))
    assert stored.read_bytes() == broken


def blank_pdf(pages: int, declared: int | None = None) -> bytes:
    pdf = pikepdf.new()
    for _ in range(pages):
        pdf.add_blank_page(page_size=(10, 10))
    out = io.BytesIO()
    pdf.save(out, object_stream_mode=pikepdf.ObjectStreamMode.disable)
    if declared is None:
        return out.getvalue()
    # Written over the saved count (pikepdf writes the true one); readers mend the offsets.
    return out.getvalue().replace(f"/Count {pages}".encode(), f"/Count {declared}".encode())


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (blank_pdf(MAX_PDF_PAGES + 1), f"has {MAX_PDF_PAGES + 1} pages"),
        # The page tree's count is believed when it is too high: nothing else is read.
        (blank_pdf(1, declared=10**9), f"has {10**9} pages"),
        # ... and checked against the pages when it says too few.
        (blank_pdf(MAX_PDF_PAGES + 1, declared=1), f"has {MAX_PDF_PAGES + 1} pages"),
    ],
)
def test_pdf_of_too_many_pages_is_refused(api: ApiClient, data: bytes, words: str) -> None:
    """Every page is opened by pikepdf and pdfium to be checked: 64 MB hold 700,000."""
    error = assert_error(upload(api, "pages.pdf", data), 422, "file")
    assert words in error["message"] and f"at most {MAX_PDF_PAGES}" in error["message"], error


def test_pdf_of_as_many_pages_as_allowed_is_kept(api: ApiClient) -> None:
    response = upload(api, "pages.pdf", blank_pdf(MAX_PDF_PAGES))
    assert response.status_code == 201, response.get_data(as_text=True)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("user_password", "message"), [("", ENCRYPTED), ("secret", LOCKED)])
def test_an_encrypted_pdf_is_refused_as_a_draft_upload_refuses_it(
    api: ApiClient, repo: SqlRepository, user_password: str, message: str
) -> None:
    """An empty user password opens the PDF without asking, so decoding it succeeds; it is
    still encrypted, and refused in the draft upload's words."""
    before = snapshot(repo)
    data = encrypted(print_pdf(1), user_password=user_password)
    error = assert_error(upload(api, "locked.pdf", data), 422, "file")
    assert error["errors"]["file"] == [message], error
    assert snapshot(repo) == before
