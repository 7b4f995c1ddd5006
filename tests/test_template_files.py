"""Template files: every error reported by its path, and an import that is all or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pps.models import Template
from pps.repository import DuplicateIdentifier
from pps.repository.sql import SqlRepository
from pps.storage.local import LocalStorage
from pps.template_files import (
    PNG_SIGNATURE,
    TemplateFile,
    TemplateFileError,
    UnknownClient,
    import_template,
    load_template_file,
    preview_key,
)

PNG = PNG_SIGNATURE + b"\x00\x00\x00\rIHDR-not-a-real-image-but-the-signature-is-right"


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
        ({"name": "n", "pageCount": True}, "pageCount: must be a whole number of at least 1"),
        ({"name": "n", "pageCount": 1.5}, "pageCount: must be a whole number of at least 1"),
        ({"name": "n", "pageCount": "2"}, "pageCount: must be a whole number of at least 1"),
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
    assert len(stored_files(storage)) == 2


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
