"""Draft files and template previews rendered on demand and cached in file storage. No Flask.

The renderer (:mod:`pps.render`) is pure: template + values + files -> bytes. This module
connects it to the service's records: a template's files come from file storage (where
``pps template import`` copied them), a draft's values are its ``apiDefaultValues``
overlaid by what the customer saved, and every result is stored under a key that names
what it was made from, so the second request for the same file is a storage lookup.

Two requests rendering the same key at once are harmless: both render the same bytes and
``storage.put`` replaces the file atomically, so a reader sees one complete copy or the other.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from collections.abc import Callable
from io import BytesIO
from typing import TypeVar, cast

from PIL import Image

from pps.file_keys import (
    DRAFT_FILE_KINDS,
    draft_file_key,
    template_asset_key,
    template_rendered_preview_key,
)
from pps.models import Draft, DraftRef, Template
from pps.render import (
    MAX_PIXELS,
    AssetError,
    Kind,
    RenderError,
    RenderOptionError,
    SpecError,
    TemplateSpec,
    cache_key,
    image_size,
    parse_spec,
    render_file,
)
from pps.render.assets import MAX_ASSET_BYTES, check_relative_name
from pps.storage import FileStorage, StoredFile

_T = TypeVar("_T")

__all__ = [
    "StorageAssets",
    "TemplateNotRenderable",
    "draft_values",
    "render_draft_file",
    "render_template_preview",
    "template_preview_file",
    "template_spec",
]


class TemplateNotRenderable(RenderError):
    """The stored template no longer parses (imported before validation got stricter)."""


class StorageAssets:
    """An :data:`~pps.render.AssetLoader` reading a template's files from file storage.

    Names are checked before they become storage keys, so a template can only ever read
    files below its own ``templates/<client>/<identifier>/assets/``.
    """

    def __init__(self, storage: FileStorage, client: str, identifier: str) -> None:
        self.storage = storage
        self.client = client
        self.identifier = identifier

    def __call__(self, name: str) -> bytes:
        problem = check_relative_name(name)
        if problem is not None:
            raise AssetError(f"{name!r}: {problem}")
        data = self.storage.read(template_asset_key(self.client, self.identifier, name))
        if data is None:
            raise AssetError(
                f"{name!r}: the template's file is missing from file storage; "
                "import the template again"
            )
        if len(data) > MAX_ASSET_BYTES:
            raise AssetError(f"{name!r}: is larger than {MAX_ASSET_BYTES} bytes")
        return data


def template_spec(template: Template) -> TemplateSpec:
    """The stored template as a :class:`TemplateSpec`; :class:`TemplateNotRenderable` if bad.

    Files are not opened here: the import checked them, and rendering reports a missing
    one as an :class:`AssetError`.
    """
    document = dict(template.spec)
    # Rows created without a file (tests, early imports) may lack these; the row has them.
    document.setdefault("name", template.name)
    if "pages" not in document:
        document.setdefault("pageCount", template.page_count)
        document.setdefault("dataKeys", list(template.data_keys))
    try:
        return parse_spec(document)
    except SpecError as exc:
        raise TemplateNotRenderable(
            f"template {template.identifier!r} cannot be rendered: {exc}"
        ) from None


def draft_values(draft: Draft) -> dict[str, object]:
    """The values a draft renders with: ``apiDefaultValues`` overlaid by the saved values."""
    return {**draft.api_default_values, **draft.values}


def rendered_draft_pdf(
    storage: FileStorage, draft: Draft | DraftRef, kind: str
) -> StoredFile | None:
    """The ``print`` or ``low-res`` PDF of the draft's current version if it was rendered
    already; its key needs only the draft, so a cached file is found without the template."""
    if kind == "image" or kind not in DRAFT_FILE_KINDS:
        return None
    key = draft_file_key(draft.client_identifier, draft.draft_hash, draft.version, kind)
    return storage.stat(key)


def render_draft_file(
    storage: FileStorage,
    draft: Draft,
    template: Template,
    kind: str,
    *,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
    spec: TemplateSpec | None = None,
) -> StoredFile:
    """The stored file of ``kind`` for the draft's current version, rendered if not yet there.

    ``page`` (counted from 0), ``width`` and ``height`` apply to ``image``. The key holds
    the draft's hash and version and, for images, the page and pixel size, so any change
    to the draft (which bumps its version) renders new files and never overwrites a file a
    link may still point at. Raises :class:`RenderError` subclasses: ``InvalidValues``
    naming each bad DataKey, ``RenderOptionError`` for a page or size out of range,
    ``AssetError`` for a missing template file, :class:`TemplateNotRenderable`.
    """
    if kind not in DRAFT_FILE_KINDS:
        raise RenderOptionError(f"kind must be one of {', '.join(DRAFT_FILE_KINDS)}, got {kind!r}")
    client = draft.client_identifier
    size: tuple[int, int] | None = None
    if kind == "image":
        spec = spec or template_spec(template)
        _check_page(spec, page)
        size = image_size(spec, width, height)
    key = draft_file_key(client, draft.draft_hash, draft.version, kind, page=page, size=size)

    def make() -> bytes:
        nonlocal spec
        spec = spec or template_spec(template)
        assets = StorageAssets(storage, client, template.identifier)
        body, _ = render_file(
            cast(Kind, kind),
            spec,
            draft_values(draft),
            assets,
            page=page,
            width=width,
            height=height,
        )
        return body

    return _cached(storage, key, make)


def render_template_preview(
    storage: FileStorage,
    template: Template,
    *,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
) -> StoredFile:
    """A PNG of the template's ``page`` filled with its defaults, cached in storage.

    Elements show their ``default`` or stay empty; DataKeys marked required are not
    insisted on here, since a catalogue picture has no customer yet. The key includes a
    hash of the template and the renderer version, so a changed template renders anew.
    """
    spec = _preview_spec(template_spec(template))
    _check_page(spec, page)
    size = image_size(spec, width, height)
    digest = cache_key("image", spec, {}, page=page, width=width, height=height)[:16]
    key = template_rendered_preview_key(
        template.client_identifier, template.identifier, page, size, digest
    )

    def make() -> bytes:
        assets = StorageAssets(storage, template.client_identifier, template.identifier)
        body, _ = render_file("image", spec, {}, assets, page=page, width=width, height=height)
        return body

    return _cached(storage, key, make)


def template_preview_file(
    storage: FileStorage,
    template: Template,
    *,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
) -> StoredFile:
    """What ``page-preview-thumb`` serves: the imported preview, else a rendered one.

    The imported preview stands for the first page: asked without a size it is served as
    imported, with ``width``/``height`` a resized copy is cached beside it (aspect ratio
    kept, as for rendered images). Other pages, and templates without an imported
    preview, are rendered from the template's defaults.
    """
    imported = template.preview_key
    if page == 0 and imported:
        stored = storage.stat(imported)
        if stored is not None:
            if width is None and height is None:
                return stored
            data = storage.read(imported)
            if data is not None:
                return _resized_preview(storage, template, data, width, height)
    return render_template_preview(storage, template, page=page, width=width, height=height)


# -- helpers -----------------------------------------------------------------------------


def _check_page(spec: TemplateSpec, page: int) -> None:
    if isinstance(page, bool) or not isinstance(page, int) or not 0 <= page < spec.page_count:
        raise RenderOptionError(
            f"page must be from 0 to {spec.page_count - 1} (counted from 0), got {page!r}"
        )


def _preview_spec(spec: TemplateSpec) -> TemplateSpec:
    """``spec`` with no DataKey required, so its defaults (or nothing) render."""
    fields = tuple(dataclasses.replace(field, required=False) for field in spec.fields)
    return dataclasses.replace(spec, fields=fields)


def _resized_preview(
    storage: FileStorage, template: Template, data: bytes, width: int | None, height: int | None
) -> StoredFile:
    original = _image(data, lambda image: image.size)
    size = fit_size(original[0] / original[1], width, height)
    digest = hashlib.sha256(data).hexdigest()[:16]
    key = template_rendered_preview_key(
        template.client_identifier, template.identifier, 0, size, digest
    )

    def make() -> bytes:
        def resize(image: Image.Image) -> bytes:
            mode = "RGBA" if "A" in image.getbands() else "RGB"
            out = BytesIO()
            image.convert(mode).resize(size, Image.Resampling.LANCZOS).save(out, "PNG")
            return out.getvalue()

        return _image(data, resize)

    return _cached(storage, key, make)


def _image(data: bytes, use: Callable[[Image.Image], _T]) -> _T:
    """``use(image)`` on the decoded ``data``; a broken or oversized image is an AssetError."""
    try:
        with warnings.catch_warnings():
            # As for template images: a decompression bomb is refused, not decoded.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:
                return use(image)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise AssetError("the template's preview image has too many pixels") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise AssetError(f"the template's preview image cannot be read: {exc}") from None


def fit_size(aspect: float, width: int | None, height: int | None) -> tuple[int, int]:
    """Pixel size for an image of ``aspect`` (width / height), by the rule of ``image_size``.

    One side given keeps the aspect ratio, both given fit inside; each side 1..MAX_PIXELS.
    """
    for name, value in (("width", width), ("height", height)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PIXELS
        ):
            raise RenderOptionError(
                f"{name} must be a whole number of pixels from 1 to {MAX_PIXELS}, got {value!r}"
            )
    if width is None and height is None:
        raise RenderOptionError("width or height is needed to resize")
    if width is None or (height is not None and width / height > aspect):
        assert height is not None
        w, h = height * aspect, float(height)
    else:
        w, h = float(width), width / aspect
    scale = min(1.0, MAX_PIXELS / w, MAX_PIXELS / h)
    return max(1, round(w * scale)), max(1, round(h * scale))


def _cached(storage: FileStorage, key: str, make: Callable[[], bytes]) -> StoredFile:
    """The file under ``key``, made and stored first when it is not there yet."""
    stored = storage.stat(key)
    if stored is not None:
        return stored
    body = make()
    storage.put(key, body)
    return storage.stat(key) or StoredFile(key=key, size=len(body), path=None)
