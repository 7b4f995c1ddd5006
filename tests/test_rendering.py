"""pps.files.rendering: imported templates render from file storage, cached under their keys."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from api_support import make_draft
from pypdf import PdfReader

from pps.files.rendering import (
    StorageAssets,
    TemplateNotRenderable,
    draft_values,
    fit_size,
    render_draft_file,
    render_template_preview,
    rendered_draft_pdf,
    template_spec,
)
from pps.platform.models import Client, Draft, Template
from pps.platform.repository.sql import SqlRepository
from pps.platform.storage.local import LocalStorage
from pps.render import AssetError, InvalidValues, RenderOptionError
from pps.templates.files import import_template, load_template_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "templates"


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "files")


@pytest.fixture
def shop(repository: SqlRepository) -> Client:
    return repository.create_client("Shop")


@pytest.fixture
def postcard(repository: SqlRepository, storage: LocalStorage, shop: Client) -> Template:
    loaded = load_template_file(EXAMPLES / "postcard" / "template.json")
    return import_template(repository, storage, shop.identifier, loaded)


def draft_for(repository: SqlRepository, shop: Client, template: Template, **values: str) -> Draft:
    return make_draft(
        repository, shop, template=template, api_default_values=values, custom_attributes={}
    )


def test_storage_assets_read_only_the_templates_own_files(
    storage: LocalStorage, shop: Client, postcard: Template
) -> None:
    assets = StorageAssets(storage, shop.identifier, postcard.identifier)
    assert assets("artwork.pdf").startswith(b"%PDF-")
    for name in ("../other/assets/artwork.pdf", "/etc/passwd", "", "a//b"):
        with pytest.raises(AssetError):
            assets(name)
    with pytest.raises(AssetError, match="missing"):
        assets("nothing.pdf")


def test_an_imported_postcard_renders_from_storage(
    repository: SqlRepository, storage: LocalStorage, shop: Client, postcard: Template
) -> None:
    draft = draft_for(repository, shop, postcard, recipientName="Grace Hopper", city="Arlington")
    stored = render_draft_file(storage, draft, postcard, "print")
    assert stored.key == f"drafts/{shop.identifier}/{draft.draft_hash}/v{draft.version}/print.pdf"
    data = storage.read(stored.key)
    assert data is not None and stored.size == len(data)
    reader = PdfReader(io.BytesIO(data))
    assert len(reader.pages) == 2
    back = reader.pages[1].extract_text()
    assert "Grace Hopper" in back and "Arlington" in back
    assert "Greetings from the sea" in reader.pages[0].extract_text()  # the default

    image = render_draft_file(storage, draft, postcard, "image", page=1, height=105)
    assert image.key.endswith(f"/v{draft.version}/image-p1-148x105.png")
    assert render_draft_file(storage, draft, postcard, "image", page=1, height=105) == image


def test_a_rendered_pdf_is_found_from_the_draft_alone(
    repository: SqlRepository, storage: LocalStorage, shop: Client, postcard: Template
) -> None:
    draft = draft_for(repository, shop, postcard, recipientName="Grace Hopper")
    assert rendered_draft_pdf(storage, draft, "print") is None
    stored = render_draft_file(storage, draft, postcard, "print")
    assert rendered_draft_pdf(storage, draft, "print") == stored
    assert rendered_draft_pdf(storage, draft, "low-res") is None
    assert rendered_draft_pdf(storage, draft, "image") is None  # needs the template's size


def test_values_are_api_defaults_overlaid_by_saved_values(
    repository: SqlRepository, shop: Client, postcard: Template
) -> None:
    draft = draft_for(repository, shop, postcard, city="Paris", sender="Sam")
    saved = repository.update_draft(shop.identifier, draft.draft_hash, values={"city": "Rome"})
    assert saved is not None
    assert draft_values(saved) == {"city": "Rome", "sender": "Sam"}


def test_render_errors(
    repository: SqlRepository, storage: LocalStorage, shop: Client, postcard: Template
) -> None:
    draft = draft_for(repository, shop, postcard)  # recipientName is required
    with pytest.raises(InvalidValues) as info:
        render_draft_file(storage, draft, postcard, "print")
    assert info.value.key == "recipientName"
    with pytest.raises(RenderOptionError):
        render_draft_file(storage, draft, postcard, "image", page=2)
    with pytest.raises(RenderOptionError):
        render_draft_file(storage, draft, postcard, "image", width=0)
    assert not (storage.root / "drafts").exists()


def test_a_template_that_no_longer_parses(
    repository: SqlRepository, storage: LocalStorage, shop: Client
) -> None:
    template = repository.create_template(
        shop.identifier,
        name="Old",
        data_keys=[],
        custom_attributes={},
        page_count=1,
        spec={"pages": "not a list", "size": {"width": 10, "height": 10}},
    )
    with pytest.raises(TemplateNotRenderable, match="pages"):
        template_spec(template)


def test_an_old_template_row_renders_blank_pages(
    repository: SqlRepository, storage: LocalStorage, shop: Client
) -> None:
    template = repository.create_template(
        shop.identifier,
        name="Issue one",
        data_keys=["a"],
        custom_attributes={},
        page_count=2,
        spec={},
    )
    spec = template_spec(template)
    assert (spec.name, spec.page_count, spec.data_keys) == ("Issue one", 2, ("a",))
    preview = render_template_preview(storage, template, page=1, width=85)
    assert preview.key.startswith(
        f"templates/{shop.identifier}/{template.identifier}/rendered/preview-p1-85x55-"
    )


@pytest.mark.parametrize(
    ("aspect", "width", "height", "size"),
    [
        (2.0, 300, None, (300, 150)),
        (2.0, None, 100, (200, 100)),
        (2.0, 300, 100, (200, 100)),
        (2.0, 100, 300, (100, 50)),
        (0.5, 4000, None, (2000, 4000)),  # the long side is capped, the aspect kept
    ],
)
def test_fit_size(
    aspect: float, width: int | None, height: int | None, size: tuple[int, int]
) -> None:
    assert fit_size(aspect, width, height) == size
