"""Template files: every error reported by its path, and an import that is all or nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pps.platform.models import Template
from pps.platform.repository import DuplicateIdentifier
from pps.platform.repository.sql import SqlRepository
from pps.platform.storage.local import LocalStorage
from pps.templates.files import (
    PNG_SIGNATURE,
    TemplateFile,
    TemplateFileError,
    UnknownClient,
    import_template,
    load_template_file,
    preview_key,
)


def _small_png() -> bytes:
    """A real PNG: the import decodes every file it copies, the preview included."""
    out = io.BytesIO()
    Image.new("RGB", (8, 4), (0, 128, 255)).save(out, "PNG")
    return out.getvalue()


PNG = _small_png()
assert PNG.startswith(PNG_SIGNATURE)


def write(directory: Path, document: Any, name: str = "template.json") -> Path:
    path = directory / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def errors_of(path: Path) -> list[str]:
    with pytest.raises(TemplateFileError) as info:
        load_template_file(path)
    return info.value.errors


# -- the format --------------------------------------------------------------------------


def test_minimal_file_gets_defaults(tmp_path: Path) -> None:
    loaded = load_template_file(write(tmp_path, {"name": "Card"}))
    assert loaded == TemplateFile(
        name="Card",
        identifier=None,
        data_keys=(),
        custom_attributes={},
        page_count=1,
        spec={"name": "Card"},
        preview=None,
    )


def test_full_file_keeps_unknown_keys_in_spec(tmp_path: Path) -> None:
    (tmp_path / "card.png").write_bytes(PNG)
    document = {
        "name": "Card",
        "identifier": "Card_2024-a",
        "dataKeys": ["firstName", "email"],
        "customAttributes": {"format": "A6", "nested": {"x": [1, 2]}},
        "pageCount": 2,
        "preview": "card.png",
        # A later issue adds these; they must survive the import untouched.
        "size": {"width": 85, "height": 55, "unit": "mm"},
        "pages": [{"elements": []}, {"elements": []}],
    }
    loaded = load_template_file(write(tmp_path, document))
    assert loaded.identifier == "Card_2024-a"
    assert loaded.data_keys == ("firstName", "email")
    assert loaded.custom_attributes == {"format": "A6", "nested": {"x": [1, 2]}}
    assert loaded.page_count == 2
    assert loaded.preview == PNG
    assert loaded.spec == document


def test_every_error_is_reported_with_its_path(tmp_path: Path) -> None:
    document = {
        "name": "",
        "identifier": "no spaces allowed",
        "dataKeys": ["a", "b", "", 3, "a"],
        "customAttributes": [],
        "pageCount": 0,
    }
    errors = errors_of(write(tmp_path, document))
    assert [error.split(":")[0] for error in errors] == [
        "name",
        "identifier",
        "dataKeys[2]",
        "dataKeys[3]",
        "dataKeys[4]",
        "customAttributes",
        "pageCount",
    ]
    assert errors[2] == 'dataKeys[2]: must be a non-empty string, got ""'
    assert errors[3] == "dataKeys[3]: must be a non-empty string, got 3"
    assert errors[4] == "dataKeys[4]: duplicates dataKeys[0] ('a')"


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({}, "name: is required"),
        ({"name": None}, "name: must be a non-empty string, got null"),
        ({"name": "x" * 201}, "name: must be at most 200 characters, got 201"),
        ({"name": "n", "identifier": "x" * 65}, "identifier: must be 1 to 64"),
        ({"name": "n", "identifier": 12345678}, "identifier: must be 1 to 64"),
        ({"name": "n", "dataKeys": "firstName"}, "dataKeys: must be a list of strings"),
        ({"name": "n", "dataKeys": [" "]}, "dataKeys[0]: must be a non-empty string"),
        ({"name": "n", "customAttributes": "x"}, "customAttributes: must be an object"),
        ({"name": "n", "pageCount": True}, "pageCount: must be a whole number"),
        ({"name": "n", "pageCount": 1.5}, "pageCount: must be a whole number"),
        ({"name": "n", "pageCount": "2"}, "pageCount: must be a whole number"),
        ({"name": "n", "preview": 5}, "preview: must be a path relative to the template file"),
        ([], "(template): must be a JSON object, got a list"),
    ],
)
def test_single_errors(tmp_path: Path, document: Any, expected: str) -> None:
    errors = errors_of(write(tmp_path, document))
    assert len(errors) == 1
    assert errors[0].startswith(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "x",}', "(template): not valid JSON"),
        ('{"name": "x", "pageCount": NaN}', "(template): not valid JSON"),
        ("", "(template): not valid JSON"),
        # Past a float: stored, it answered as Infinity, which no JSON decoder reads.
        ('{"name": "x", "customAttributes": {"a": 1e999}}', "(template): not valid JSON"),
        ('{"name": "x", "customAttributes": {"a": -1e999}}', "(template): not valid JSON"),
        # Too deep to decode, and deep enough to break every answer listing it.
        ('{"name": "x", "customAttributes": {"a": ' + "[" * 5000 + "]" * 5000 + "}}", "(template)"),
        (
            '{"name": "x", "customAttributes": {"a": ' + "[" * 40 + "]" * 40 + "}}",
            "(template): nested",
        ),
    ],
)
def test_file_that_is_not_json(tmp_path: Path, text: str, expected: str) -> None:
    assert errors_of(write(tmp_path, text))[0].startswith(expected)


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"name": "Gru\u00df"}'.encode("latin-1"))
    assert errors_of(path) == ["(template): is not UTF-8 text"]


def test_missing_file(tmp_path: Path) -> None:
    assert errors_of(tmp_path / "nope.json")[0].startswith("(template): cannot be read")


# -- the preview -------------------------------------------------------------------------


@pytest.mark.parametrize("preview", ["../outside.png", "sub/../../outside.png"])
def test_preview_outside_the_directory_is_refused(tmp_path: Path, preview: str) -> None:
    (tmp_path / "outside.png").write_bytes(PNG)
    directory = tmp_path / "templates"
    (directory / "sub").mkdir(parents=True)
    errors = errors_of(write(directory, {"name": "n", "preview": preview}))
    assert errors == [f"preview: {preview!r} lies outside the template file's directory"]


def test_absolute_preview_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "card.png").write_bytes(PNG)
    document = {"name": "n", "preview": str(tmp_path / "card.png")}
    assert errors_of(write(tmp_path, document))[0].startswith(
        "preview: must be a path relative to the template file"
    )


def test_preview_symlink_leaving_the_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(PNG)
    directory = tmp_path / "templates"
    directory.mkdir()
    (directory / "card.png").symlink_to(tmp_path / "secret.png")
    errors = errors_of(write(directory, {"name": "n", "preview": "card.png"}))
    assert errors == ["preview: 'card.png' lies outside the template file's directory"]


def test_a_preview_name_too_long_for_the_file_system_is_an_error(tmp_path: Path) -> None:
    """Looking the file up fails with ENAMETOOLONG, which was a traceback."""
    preview = "a" * 300 + ".png"
    errors = errors_of(write(tmp_path, {"name": "n", "preview": preview}))
    assert errors == [f"preview: {preview!r} cannot be read: File name too long"]


def test_preview_that_is_not_png_is_refused(tmp_path: Path) -> None:
    (tmp_path / "card.png").write_bytes(b"\xff\xd8\xff\xe0 a JPEG in disguise")
    errors = errors_of(write(tmp_path, {"name": "n", "preview": "card.png"}))
    assert errors == ["preview: 'card.png' is not a PNG file"]


def test_missing_preview_is_refused(tmp_path: Path) -> None:
    errors = errors_of(write(tmp_path, {"name": "n", "preview": "card.png"}))
    assert errors == ["preview: 'card.png' does not exist or is not a file"]


def test_preview_errors_come_with_the_others(tmp_path: Path) -> None:
    errors = errors_of(write(tmp_path, {"pageCount": -1, "preview": "../x.png"}))
    assert [error.split(":")[0] for error in errors] == ["name", "pageCount", "preview"]


def test_demo_template_is_valid() -> None:
    demo = Path(__file__).resolve().parent.parent / "examples" / "templates" / "demo-card.json"
    loaded = load_template_file(demo)
    assert loaded.identifier == "DemoCard"
    assert loaded.preview is not None and loaded.preview.startswith(PNG_SIGNATURE)


# -- importing ---------------------------------------------------------------------------


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "files")


def template_with_preview(tmp_path: Path, **extra: Any) -> TemplateFile:
    (tmp_path / "card.png").write_bytes(PNG)
    return load_template_file(write(tmp_path, {"name": "Card", "preview": "card.png", **extra}))


def stored_files(storage: LocalStorage) -> list[str]:
    return sorted(
        str(path.relative_to(storage.root)) for path in storage.root.rglob("*") if path.is_file()
    )


def test_import_stores_row_and_preview(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    template = template_with_preview(tmp_path, identifier="Card1", dataKeys=["a"])
    created = import_template(repository, storage, client.identifier, template)
    key = preview_key(client.identifier, "Card1")
    assert created.identifier == "Card1"
    assert created.preview_key == key
    assert created.data_keys == ("a",)
    assert created.spec["preview"] == "card.png"
    assert storage.read(key) == PNG
    # The preview is also one of the template's files, under its own name.
    assert stored_files(storage) == [
        f"templates/{client.identifier}/Card1/assets/card.png",
        f"templates/{client.identifier}/Card1/preview.png",
    ]


def test_import_without_identifier_draws_one(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    created = import_template(
        repository, storage, client.identifier, template_with_preview(tmp_path)
    )
    assert len(created.identifier) == 8 and created.identifier.isalnum()
    assert created.preview_key == preview_key(client.identifier, created.identifier)
    assert storage.read(created.preview_key) == PNG


def test_import_for_unknown_client_writes_nothing(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    before = repository.list_templates(None).total
    with pytest.raises(UnknownClient):
        import_template(repository, storage, "nobody", template_with_preview(tmp_path))
    assert repository.list_templates(None).total == before
    assert stored_files(storage) == []


def test_duplicate_identifier_keeps_the_existing_preview(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    first = template_with_preview(tmp_path, identifier="Card1")
    import_template(repository, storage, client.identifier, first)
    other = tmp_path / "other"
    other.mkdir()
    (other / "card.png").write_bytes(PNG + b"-second")
    second = load_template_file(
        write(other, {"name": "Second", "identifier": "Card1", "preview": "card.png"})
    )
    with pytest.raises(DuplicateIdentifier):
        import_template(repository, storage, client.identifier, second)
    assert [t.name for t in repository.list_templates(client.identifier).items] == ["Card"]
    assert storage.read(preview_key(client.identifier, "Card1")) == PNG


def test_same_identifier_for_two_clients(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    template = template_with_preview(tmp_path, identifier="Card1")
    for name in ("Shop A", "Shop B"):
        client = repository.create_client(name)
        assert (
            import_template(repository, storage, client.identifier, template).identifier == "Card1"
        )
    assert len(stored_files(storage)) == 4  # preview.png and assets/card.png, twice


class FailingInsert:
    """The real repository, except that inserting a template fails like a lost connection."""

    def __init__(self, repository: SqlRepository) -> None:
        self._repository = repository

    def __getattr__(self, name: str) -> Any:
        return getattr(self._repository, name)

    def create_template(self, *args: Any, **kwargs: Any) -> Template:
        raise ConnectionError("database went away")


def test_failed_insert_leaves_no_stray_preview(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    failing: Any = FailingInsert(repository)
    with pytest.raises(ConnectionError):
        import_template(failing, storage, client.identifier, template_with_preview(tmp_path))
    assert repository.list_templates(client.identifier).items == []
    assert stored_files(storage) == []


# -- the renderer's format: pages, elements and their files ------------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "templates"


def real_png() -> bytes:
    from io import BytesIO

    from PIL import Image

    out = BytesIO()
    Image.new("RGB", (40, 20), (0, 128, 255)).save(out, "PNG")
    return out.getvalue()


def template_with_files(directory: Path) -> dict[str, Any]:
    """A postcard-shaped template naming an artwork PDF, an image, a font and a preview."""
    from pps.render import BUILTIN_FONTS

    (directory / "art").mkdir(parents=True, exist_ok=True)
    (directory / "fonts").mkdir(exist_ok=True)
    (directory / "art" / "artwork.pdf").write_bytes(
        (EXAMPLES / "postcard" / "artwork.pdf").read_bytes()
    )
    (directory / "logo.png").write_bytes(real_png())
    (directory / "fonts" / "Body.ttf").write_bytes(BUILTIN_FONTS["Vera"].read_bytes())
    (directory / "card.png").write_bytes(real_png())
    return {
        "name": "Postcard",
        "identifier": "Post1",
        "preview": "card.png",
        "size": {"width": 148, "height": 105},
        "bleed": 3,
        "pages": [
            {
                "background": {"pdf": "art/artwork.pdf", "page": 0},
                "elements": [
                    {
                        "type": "image",
                        "file": "logo.png",
                        "box": {"x": 5, "y": 5, "width": 20, "height": 10},
                    },
                    {
                        "type": "text",
                        "dataKey": "headline",
                        "font": "fonts/Body.ttf",
                        "default": "Hi",
                        "box": {"x": 5, "y": 20, "width": 100, "height": 10},
                    },
                ],
            },
            {
                "background": {"pdf": "art/artwork.pdf", "page": 1},
                "elements": [
                    {
                        "type": "qr",
                        "dataKey": "url",
                        "box": {"x": 5, "y": 5, "width": 20, "height": 20},
                    },
                    {"type": "line", "from": {"x": 0, "y": 50}, "to": {"x": 148, "y": 50}},
                ],
            },
        ],
    }


def test_data_keys_and_page_count_come_from_the_pages(tmp_path: Path) -> None:
    loaded = load_template_file(write(tmp_path, template_with_files(tmp_path)))
    assert loaded.data_keys == ("headline", "url")  # derived from the elements, in order
    assert loaded.page_count == 2
    assert sorted(loaded.assets) == ["art/artwork.pdf", "card.png", "fonts/Body.ttf", "logo.png"]
    assert loaded.assets["logo.png"] == (tmp_path / "logo.png").read_bytes()


BOX = {"x": 0, "y": 0, "width": 10, "height": 10}


def test_every_kind_of_error_in_the_format_is_reported_by_its_path(tmp_path: Path) -> None:
    document = {
        "name": "Broken",
        "size": {"width": 148, "height": 105},
        "bleed": -1,
        "pageCount": 3,
        "pages": [
            {
                "elements": [
                    {"type": "text", "dataKey": "name", "box": BOX, "color": "red"},
                    {"type": "circle", "box": BOX},
                    {"type": "text", "dataKey": "name", "box": {**BOX, "width": 0}},
                    {"type": "image", "file": "../secret.png", "box": BOX},
                    {"type": "text", "dataKey": "a", "box": BOX, "maxLength": 2, "default": "abc"},
                    {"type": "rect", "box": BOX},
                    {"type": "qr", "box": BOX},
                ],
            },
            {"background": {"color": "#12345"}},
        ],
        "preview": "missing.png",
    }
    errors = errors_of(write(tmp_path, document))
    assert sorted(error.split(": ", 1)[0] for error in errors) == [
        "bleed",
        "pageCount",
        "pages[0].elements[0].color",
        "pages[0].elements[1].type",
        "pages[0].elements[2].box.width",
        "pages[0].elements[3].file",
        "pages[0].elements[4].default",
        "pages[0].elements[5]",
        "pages[0].elements[6]",
        "pages[1].background.color",
        "preview",
    ]
    assert errors[-1].startswith("preview: ")  # the preview is checked after the format
    assert "pages[0].elements[2].box.width: must be greater than 0" in errors
    assert "preview: 'missing.png' does not exist or is not a file" in errors


def test_every_kind_of_file_error_is_reported_by_its_path(tmp_path: Path) -> None:
    (tmp_path / "fake.pdf").write_bytes(b"not a pdf")
    (tmp_path / "two-pages.pdf").write_bytes((EXAMPLES / "postcard" / "artwork.pdf").read_bytes())
    (tmp_path / "photo.png").write_bytes(b"GIF89a")
    (tmp_path / "font.ttf").write_bytes(b"OTTO" + b"\x00" * 64)
    document = {
        "name": "Broken files",
        "dataKeys": ["name"],
        "size": {"width": 148, "height": 105},
        "pages": [
            {
                "background": {"pdf": "fake.pdf"},
                "elements": [
                    {"type": "text", "dataKey": "name", "box": BOX},
                    {"type": "text", "dataKey": "email", "box": BOX},
                    {"type": "image", "file": "photo.png", "box": BOX},
                    {"type": "image", "file": "nowhere.png", "box": BOX},
                    {"type": "text", "text": "x", "font": "font.ttf", "box": BOX},
                ],
            },
            {"background": {"pdf": "two-pages.pdf", "page": 5}},
        ],
    }
    errors = errors_of(write(tmp_path, document))
    assert sorted(error.split(": ", 1)[0] for error in errors) == [
        "pages[0].background.pdf",
        "pages[0].elements[1].dataKey",
        "pages[0].elements[2].file",
        "pages[0].elements[3].file",
        "pages[0].elements[4].font",
        "pages[1].background.pdf",
    ]
    assert "pages[0].background.pdf: 'fake.pdf' is not a PDF file" in errors


def test_file_errors_after_an_invalid_element_keep_their_index(tmp_path: Path) -> None:
    (tmp_path / "photo.png").write_bytes(b"GIF89a")
    document = {
        "name": "Broken",
        "size": {"width": 85, "height": 55},
        "pages": [
            {
                "elements": [
                    {"type": "circle", "box": BOX},
                    {"type": "image", "file": "photo.png", "box": BOX},
                ]
            }
        ],
    }
    paths = [error.split(": ", 1)[0] for error in errors_of(write(tmp_path, document))]
    assert "pages[0].elements[1].file" in paths


def test_an_invalid_file_writes_nothing(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    document = template_with_files(tmp_path)
    document["pages"][0]["elements"][0]["box"]["width"] = -1
    with pytest.raises(TemplateFileError):
        import_template(
            repository, storage, client.identifier, load_template_file(write(tmp_path, document))
        )
    assert repository.list_templates(client.identifier).items == []
    assert stored_files(storage) == []


def test_import_copies_every_file_the_template_names(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    loaded = load_template_file(write(tmp_path, template_with_files(tmp_path)))
    created = import_template(repository, storage, client.identifier, loaded)
    base = f"templates/{client.identifier}/Post1"
    assert stored_files(storage) == [
        f"{base}/assets/art/artwork.pdf",
        f"{base}/assets/card.png",
        f"{base}/assets/fonts/Body.ttf",
        f"{base}/assets/logo.png",
        f"{base}/preview.png",
    ]
    for name in ("art/artwork.pdf", "fonts/Body.ttf", "logo.png"):
        assert storage.read(f"{base}/assets/{name}") == (tmp_path / name).read_bytes()
    assert created.data_keys == ("headline", "url")
    assert created.page_count == 2
    assert created.preview_key == f"{base}/preview.png"


class FailingStorage(LocalStorage):
    """Local storage whose third write fails like a full disk."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.writes = 0

    def put(self, key: str, data: bytes) -> None:
        self.writes += 1
        if self.writes == 3:
            raise OSError(28, "No space left on device")
        super().put(key, data)


def test_failed_file_write_leaves_no_row_and_no_stray_files(
    tmp_path: Path, repository: SqlRepository
) -> None:
    client = repository.create_client("Shop")
    storage = FailingStorage(tmp_path / "files")
    loaded = load_template_file(write(tmp_path, template_with_files(tmp_path)))
    with pytest.raises(OSError, match="No space"):
        import_template(repository, storage, client.identifier, loaded)
    assert repository.list_templates(client.identifier).items == []
    assert stored_files(storage) == []


def test_failed_insert_leaves_no_stray_assets(
    tmp_path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    failing: Any = FailingInsert(repository)
    loaded = load_template_file(write(tmp_path, template_with_files(tmp_path)))
    with pytest.raises(ConnectionError):
        import_template(failing, storage, client.identifier, loaded)
    assert repository.list_templates(client.identifier).items == []
    assert stored_files(storage) == []


@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("*/template.json")), ids=lambda p: p.parent.name
)
def test_example_templates_import(
    path: Path, repository: SqlRepository, storage: LocalStorage
) -> None:
    client = repository.create_client("Shop")
    loaded = load_template_file(path)
    created = import_template(repository, storage, client.identifier, loaded)
    assert created.page_count == len(loaded.spec["pages"])
    for name in loaded.assets:
        assert storage.read(f"templates/{client.identifier}/{created.identifier}/assets/{name}")


# -- every file decoded before it is accepted --------------------------------------------


def one_image(file: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "Logo card",
        "size": {"width": 85, "height": 55},
        "pages": [{"elements": [{"type": "image", "file": file, "box": BOX}]}],
        **extra,
    }


def truncated_png() -> bytes:
    """Every chunk intact (CRCs right: ``verify()`` passes), the pixel data cut in half."""
    import struct
    import zlib

    from PIL import ImageDraw

    image = Image.new("RGB", (120, 80), (255, 255, 255))
    ImageDraw.Draw(image).ellipse((10, 10, 110, 70), fill=(200, 30, 30))
    out = io.BytesIO()
    image.save(out, "PNG")
    data, pos, parts = out.getvalue(), 8, [out.getvalue()[:8]]
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IDAT":
            body = body[: len(body) // 2]
        parts.append(struct.pack(">I", len(body)) + kind + body)
        parts.append(struct.pack(">I", zlib.crc32(kind + body)))
        pos += 12 + length
    return b"".join(parts)


def test_a_name_with_a_dot_part_is_refused_with_the_plain_name(tmp_path: Path) -> None:
    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "logo.png").write_bytes(real_png())
    (tmp_path / "card.png").write_bytes(real_png())
    document = one_image("./art/logo.png", preview="./card.png")
    assert errors_of(write(tmp_path, document)) == [
        "pages[0].elements[0].file: must not contain '.' parts; write 'art/logo.png'",
        "preview: './card.png' must not contain '.' parts; write 'card.png'",
    ]
    assert errors_of(write(tmp_path, one_image("art/./logo.png")))[0].endswith(
        "write 'art/logo.png'"
    )


def test_a_truncated_png_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(truncated_png())
    (tmp_path / "card.png").write_bytes(truncated_png())
    errors = errors_of(write(tmp_path, one_image("logo.png", preview="card.png")))
    assert [error.split(" cannot")[0] for error in errors] == [
        "files: 'logo.png'",
        "preview: 'card.png'",
    ]
    assert all("cannot be decoded as an image" in error for error in errors)


def test_images_over_the_pixel_limit_are_refused_before_decoding(tmp_path: Path) -> None:
    (tmp_path / "small.png").write_bytes(real_png())  # 40 x 20 = 800 pixels
    assert load_template_file(write(tmp_path, one_image("small.png")), max_image_pixels=800)
    errors = errors_of_limit(write(tmp_path, one_image("small.png")), 799)
    assert errors == [
        "files: 'small.png' is 40 x 20 pixels (0.0 megapixels), more than the limit of "
        "0.000799 megapixels (PPS_MAX_IMAGE_PIXELS); scale it down: print needs about "
        "300 pixels per inch of its placed size"
    ]
    # The default is well below the 80 megapixels that took 2 GB per render.
    big = Image.new("L", (6400, 6400))  # 41 megapixels, one byte each
    big.save(tmp_path / "big.png")
    default_errors = errors_of(write(tmp_path, one_image("big.png")))
    assert "41.0 megapixels" in default_errors[0]
    assert "limit of 40 megapixels" in default_errors[0]


def errors_of_limit(path: Path, max_image_pixels: int) -> list[str]:
    with pytest.raises(TemplateFileError) as info:
        load_template_file(path, max_image_pixels=max_image_pixels)
    return info.value.errors


def test_a_truncated_pdf_is_refused(tmp_path: Path) -> None:
    artwork = (EXAMPLES / "postcard" / "artwork.pdf").read_bytes()
    # pikepdf recovers the first half (the parser's check passes); pdfium does not.
    (tmp_path / "art.pdf").write_bytes(artwork[: len(artwork) // 2])
    document = {
        "name": "Broken",
        "size": {"width": 148, "height": 105},
        "pages": [{"background": {"pdf": "art.pdf"}}],
    }
    errors = errors_of(write(tmp_path, document))
    assert len(errors) == 1 and errors[0].startswith("files: 'art.pdf' cannot be"), errors


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"name": "Card\ud800"}, "name"),
        ({"name": "Card", "customAttributes": {"a": ["ok", "\udfff"]}}, "customAttributes.a[1]"),
        ({"name": "Card", "customAttributes": {"k\ud800": 1}}, "customAttributes (a key)"),
        ({"name": "Card", "dataKeys": ["first\ud800"]}, "dataKeys[0]"),
        (one_image("logo\ud800.png"), "pages[0].elements[0].file"),
        ({"name": "Card", "preview": "card\udc00.png"}, "preview"),
        (
            {
                "name": "Card",
                "size": {"width": 85, "height": 55},
                "pages": [{"elements": [{"type": "text", "dataKey": "k\ud800", "box": BOX}]}],
            },
            "pages[0].elements[0].dataKey",
        ),
    ],
)
def test_a_lone_surrogate_anywhere_is_refused(
    tmp_path: Path, document: dict[str, Any], path: str
) -> None:
    # json.dumps writes "\ud800" as the escape a hand-written file would hold.
    errors = errors_of(write(tmp_path, document))
    assert errors == [
        f"{path}: contains a lone UTF-16 surrogate; the file must be valid Unicode text"
    ]


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"name": "Card\u0000"}, "name"),
        ({"name": "Card", "customAttributes": {"a": ["ok", "x\u0000"]}}, "customAttributes.a[1]"),
        ({"name": "Card", "customAttributes": {"k\u0000": 1}}, "customAttributes (a key)"),
        ({"name": "Card", "dataKeys": ["first\u0000"]}, "dataKeys[0]"),
        (
            {
                "name": "Card",
                "size": {"width": 85, "height": 55},
                "pages": [{"elements": [{"type": "text", "dataKey": "k\u0000", "box": BOX}]}],
            },
            "pages[0].elements[0].dataKey",
        ),
    ],
)
def test_a_nul_character_anywhere_is_refused(
    tmp_path: Path, document: dict[str, Any], path: str
) -> None:
    """As the API refuses it in every text: PostgreSQL's text cannot hold it (the import
    failed there as a database error), and a DataKey with it has a form field no browser
    sends back."""
    errors = errors_of(write(tmp_path, document))
    assert errors == [f"{path}: contains a NUL character (\\u0000), which cannot be stored"]
