"""Draft files and template previews rendered on demand and cached in file storage. No Flask.

The renderer (:mod:`pps.render`) is pure: template + values + files -> bytes. This module
connects it to the service's records: a template's files come from file storage (where
``pps template import`` copied them), a draft's values are its ``apiDefaultValues``
overlaid by what the customer saved, and every result is stored under a key that names
what it was made from, so the second request for the same file is a storage lookup.

Two requests rendering the same key at once are harmless: both render the same bytes and
``storage.put`` replaces the file atomically, so a reader sees one complete copy or the other.

A :class:`RenderPolicy` carries what the service imposes on top: image sizes from a short
list (:mod:`pps.files.image_sizes`), a pixel limit for the template's images, and a budget that is
charged for every render (never for a cached file). A file of the template that cannot be
decoded is reported as an :class:`AssetError`, never as the library's own exception.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import TypeVar, cast

from PIL import Image

from pps.files.image_sizes import stepped
from pps.files.keys import (
    DRAFT_FILE_KINDS,
    draft_file_key,
    draft_values_image_key,
    template_asset_key,
    template_rendered_preview_key,
)
from pps.files.uploaded import UploadAssets, uploaded_spec, uses_upload
from pps.platform.models import Draft, DraftRef, Template, TemplateRef
from pps.platform.storage import FileStorage, StoredFile
from pps.render import (
    MAX_PIXELS,
    RENDER_VERSION,
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
from pps.render.assets import MAX_ASSET_BYTES, AssetLoader, check_relative_name
from pps.render.decode import DECODE_ERRORS, DEFAULT_MAX_IMAGE_PIXELS, image_pixels_problem
from pps.render.pdf import render_records_pdf
from pps.render.text import as_texts
from pps.uploads.images import UploadedImages

_T = TypeVar("_T")

__all__ = [
    "NoUpload",
    "RenderPolicy",
    "StorageAssets",
    "TemplateNotRenderable",
    "decoded",
    "draft_assets",
    "draft_spec",
    "draft_values",
    "imported_preview_digest",
    "render_draft_file",
    "render_draft_values_image",
    "render_template_preview",
    "template_preview_digest",
    "template_preview_file",
    "template_spec",
]


class TemplateNotRenderable(RenderError):
    """The stored template no longer parses (imported before validation got stricter)."""


class NoUpload(RenderError):
    """A draft of intent ``upload`` has no uploaded PDF yet, so it has no files."""


@dataclass(frozen=True)
class RenderPolicy:
    """What the service asks of a render beyond the template and values.

    ``steps``: image sizes are rounded up to these (see :func:`pps.files.image_sizes.stepped`);
    None renders the size asked for. ``max_pixels``: a template image with more pixels is
    an :class:`AssetError` (``PPS_MAX_IMAGE_PIXELS``). ``spend``: called once before each
    render that is not served from storage; it raises to refuse (a rate limit).
    """

    steps: Sequence[int] | None = None
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
    spend: Callable[[], None] | None = None


_DEFAULT_POLICY = RenderPolicy()


def decoded(render: Callable[[], _T]) -> _T:
    """``render()``, with the decoding libraries' exceptions reported as :class:`AssetError`.

    A template imported before its files were decoded completely may hold a truncated
    image or a broken PDF; Pillow, pikepdf and pdfium then raise their own errors in the
    middle of a render, which must reach the caller as the template's fault, not as a 500.
    """
    try:
        return render()
    except RenderError:
        raise
    except DECODE_ERRORS as exc:
        raise AssetError(
            f"a file of the template cannot be decoded: {exc or type(exc).__name__}; "
            "import the template again with a fixed file"
        ) from exc


class StorageAssets:
    """An :data:`~pps.render.AssetLoader` reading a template's files from file storage.

    Names are checked before they become storage keys, so a template can only ever read
    files below its own ``templates/<client>/<identifier>/assets/``.
    """

    def __init__(
        self,
        storage: FileStorage,
        client: str,
        identifier: str,
        *,
        max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    ) -> None:
        self.storage = storage
        self.client = client
        self.identifier = identifier
        self.max_pixels = max_pixels

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
        # From the header alone: an image imported before the limit is not decoded at all.
        problem = image_pixels_problem(data, self.max_pixels)
        if problem is not None:
            raise AssetError(f"{name!r}: {problem}")
        return data


def template_spec(template: Template, variant: str | None = None) -> TemplateSpec:
    """The stored template as a :class:`TemplateSpec`; :class:`TemplateNotRenderable` if bad.

    ``variant`` resolves it for one of its variants (a draft's); None: the template's own
    look. Files are not opened here: the import checked them, and rendering reports a
    missing one as an :class:`AssetError`.
    """
    document = dict(template.spec)
    # Rows created without a file (tests, early imports) may lack these; the row has them.
    document.setdefault("name", template.name)
    if "pages" not in document:
        document.setdefault("pageCount", template.page_count)
        document.setdefault("dataKeys", list(template.data_keys))
    try:
        return parse_spec(document, variant=variant)
    except SpecError as exc:
        raise TemplateNotRenderable(
            f"template {template.identifier!r} cannot be rendered: {exc}"
        ) from None


def draft_spec(draft: Draft, template: Template) -> TemplateSpec:
    """What the draft renders: the template in the draft's variant, or with an uploaded PDF
    as its pages' artwork (:mod:`pps.files.uploaded`). ``upload`` without an upload is
    :class:`NoUpload`."""
    spec = template_spec(template, draft.variant_identifier)
    if uses_upload(draft):
        assert draft.upload_key is not None
        return uploaded_spec(spec, draft.intent, draft.upload_key)
    if draft.intent == "upload":
        raise NoUpload("no print PDF has been uploaded for this draft yet")
    return spec


def draft_assets(
    storage: FileStorage,
    draft: Draft,
    template: Template,
    *,
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
) -> AssetLoader:
    """The files the draft renders from: its template's, its upload if it has one, and the
    images its client uploaded (for image DataKeys); images of either kind with more than
    ``max_pixels`` are an :class:`AssetError`."""
    files: AssetLoader = StorageAssets(
        storage, draft.client_identifier, template.identifier, max_pixels=max_pixels
    )
    files = UploadedImages(storage, draft.client_identifier, files, max_pixels=max_pixels)
    if uses_upload(draft):
        assert draft.upload_key is not None
        return UploadAssets(storage, draft.upload_key, files)
    return files


def draft_values(draft: Draft) -> dict[str, object]:
    """The values a draft renders with: ``apiDefaultValues`` overlaid by the saved values,
    each as the text it prints as (shops send numbers, bools, even lists as defaults)."""
    return dict(as_texts({**draft.api_default_values, **draft.values}))


#: The rows of variable data of a draft, in order, read lazily (see ``variable_rows``).
Records = Callable[[], Iterable[Mapping[str, object]]]


def variable_rows(
    draft: Draft, stream: Callable[[str], Iterable[Mapping[str, object]]]
) -> Records | None:
    """The draft's rows for :func:`render_draft_file` (None without variable data)."""
    if draft.record_count <= 0:
        return None
    return lambda: stream(draft.draft_hash)


def rendered_draft_pdf(
    storage: FileStorage, draft: Draft | DraftRef, kind: str
) -> StoredFile | None:
    """The ``print`` or ``low-res`` PDF of the draft's current version if it was rendered
    already; its key needs only the draft, so a cached file is found without the template."""
    if kind == "image" or kind not in DRAFT_FILE_KINDS:
        return None
    key = draft_file_key(
        draft.client_identifier,
        draft.draft_hash,
        draft.version,
        kind,
        variant=draft.variant_identifier,
    )
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
    policy: RenderPolicy = _DEFAULT_POLICY,
    records: Records | None = None,
) -> StoredFile:
    """The stored file of ``kind`` for the draft's current version, rendered if not yet there.

    With ``records`` (variable data), the print PDF holds every page once per record, in
    order, each record drawn with the draft's values overlaid by its row, streamed into
    one document; the proof and images show the first record.

    ``page`` (counted from 0), ``width`` and ``height`` apply to ``image``, whose size
    follows ``policy.steps`` when given. The key holds
    the draft's hash and version and, for images, the page and pixel size, so any change
    to the draft (which bumps its version) renders new files and never overwrites a file a
    link may still point at. Raises :class:`RenderError` subclasses: ``InvalidValues``
    naming each bad DataKey, ``RenderOptionError`` for a page or size out of range,
    ``AssetError`` for a missing template file, :class:`TemplateNotRenderable`.
    """
    if kind not in DRAFT_FILE_KINDS:
        raise RenderOptionError(f"kind must be one of {', '.join(DRAFT_FILE_KINDS)}, got {kind!r}")
    client = draft.client_identifier
    if draft.intent == "upload" and kind == "print":
        # The customer's PDF is the print file, as uploaded (with its boxes completed).
        if draft.upload_key is None:
            raise NoUpload("no print PDF has been uploaded for this draft yet")
        uploaded = storage.stat(draft.upload_key)
        if uploaded is None:
            raise AssetError("the uploaded PDF is missing from file storage; upload it again")
        return uploaded
    size: tuple[int, int] | None = None
    if kind == "image":
        spec = spec or draft_spec(draft, template)
        _check_page(spec, page)
        width, height = _stepped_request(spec, width, height, policy)
        size = image_size(spec, width, height)
    key = draft_file_key(
        client,
        draft.draft_hash,
        draft.version,
        kind,
        page=page,
        size=size,
        variant=draft.variant_identifier,
    )

    def make() -> bytes:
        nonlocal spec
        spec = spec or draft_spec(draft, template)
        assets = draft_assets(storage, draft, template, max_pixels=policy.max_pixels)
        base = draft_values(draft)
        if records is not None and kind == "print":
            out = BytesIO()
            render_records_pdf(spec, ({**base, **row} for row in records()), assets, out)
            return out.getvalue()
        if records is not None:
            base = {**base, **next(iter(records()), {})}
        body, _ = render_file(
            cast(Kind, kind),
            spec,
            base,
            assets,
            page=page,
            width=width,
            height=height,
        )
        return body

    return _cached(storage, key, make, policy)


def render_draft_values_image(
    storage: FileStorage,
    draft: Draft,
    template: Template,
    spec: TemplateSpec,
    values: Mapping[str, str],
    *,
    page: int,
    width: int,
    policy: RenderPolicy = _DEFAULT_POLICY,
    allow_missing: bool = False,
) -> StoredFile:
    """A page of the draft rendered from ``values`` (what the editor shows), cached.

    The key holds the draft's version and a digest of the values, so showing the same
    draft again is a storage lookup even when its stored values are not plain text.
    ``allow_missing`` draws required values that are empty as empty (the editor shows every
    page while the customer has not filled them in yet); the same values render the same
    bytes either way or not at all, so the key does not need it.
    """
    _check_page(spec, page)
    size = image_size(spec, width, None)
    digest = cache_key("image", spec, values, page=page, width=width)[:16]
    key = draft_values_image_key(
        draft.client_identifier,
        draft.draft_hash,
        draft.version,
        page,
        size,
        digest,
        variant=draft.variant_identifier,
    )

    def make() -> bytes:
        assets = draft_assets(storage, draft, template, max_pixels=policy.max_pixels)
        body, _ = render_file(
            "image", spec, values, assets, page=page, width=width, allow_missing=allow_missing
        )
        return body

    return _cached(storage, key, make, policy)


def render_template_preview(
    storage: FileStorage,
    template: Template,
    *,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
    policy: RenderPolicy = _DEFAULT_POLICY,
) -> StoredFile:
    """A PNG of the template's ``page`` filled with its defaults, cached in storage.

    Elements show their ``default`` or stay empty; DataKeys marked required are not
    insisted on here, since a catalogue picture has no customer yet. The key includes
    :func:`template_preview_digest`, so a changed template renders anew.
    """
    spec = _preview_spec(template_spec(template))
    _check_page(spec, page)
    width, height = _stepped_request(spec, width, height, policy)
    size = image_size(spec, width, height)
    key = template_rendered_preview_key(
        template.client_identifier, template.identifier, page, size, template_preview_digest(spec)
    )

    def make() -> bytes:
        assets = StorageAssets(
            storage,
            template.client_identifier,
            template.identifier,
            max_pixels=policy.max_pixels,
        )
        body, _ = render_file("image", spec, {}, assets, page=page, width=width, height=height)
        return body

    return _cached(storage, key, make, policy)


def template_preview_digest(spec: TemplateSpec) -> str:
    """What a rendered template preview is made from: renderer version and template.

    Page and size are in the key beside it, so one digest covers every picture of the
    template, and ``pps files sweep`` can tell a current picture from an outdated one.
    The spec's digest is of its JSON, so the template's spec and its preview variant
    (nothing required) give the same digest.
    """
    return hashlib.sha256(f"{RENDER_VERSION}:{spec.digest}".encode()).hexdigest()[:16]


def imported_preview_digest(data: bytes) -> str:
    """The digest in the keys of resized copies of an imported preview."""
    return hashlib.sha256(data).hexdigest()[:16]


def template_preview_file(
    storage: FileStorage,
    template: Template | TemplateRef,
    *,
    page: int = 0,
    width: int | None = None,
    height: int | None = None,
    policy: RenderPolicy = _DEFAULT_POLICY,
    load_template: Callable[[], Template] | None = None,
) -> StoredFile:
    """What ``page-preview-thumb`` serves: the imported preview, else a rendered one.

    The imported preview stands for the first page: asked without a size it is served as
    imported, with ``width``/``height`` a resized copy is cached beside it (aspect ratio
    kept, as for rendered images). Other pages, and templates without an imported
    preview, are rendered from the template's defaults.

    ``template`` may be a :class:`~pps.platform.models.TemplateRef` (the point lookup a
    preview link makes): the whole template, spec included, is then read with
    ``load_template`` only when a picture has to be rendered from it.
    """
    imported = template.preview_key
    if page == 0 and imported:
        stored = storage.stat(imported)
        if stored is not None:
            if width is None and height is None:
                return stored
            data = storage.read(imported)
            if data is not None:
                return _resized_preview(storage, template, data, width, height, policy)
    if not isinstance(template, Template):
        if load_template is None:
            raise TypeError("a TemplateRef needs load_template to render from the template")
        template = load_template()
    return render_template_preview(
        storage, template, page=page, width=width, height=height, policy=policy
    )


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


def _stepped_request(
    spec: TemplateSpec, width: int | None, height: int | None, policy: RenderPolicy
) -> tuple[int | None, int | None]:
    """``(width, height)`` to render with: as asked, or the stepped size of the request."""
    if policy.steps is None or (width is None and height is None):
        return width, height
    return stepped(image_size(spec, width, height), policy.steps)


def _resized_preview(
    storage: FileStorage,
    template: Template | TemplateRef,
    data: bytes,
    width: int | None,
    height: int | None,
    policy: RenderPolicy,
) -> StoredFile:
    original = _image(data, lambda image: image.size)
    aspect = original[0] / original[1]
    size = fit_size(aspect, width, height)
    if policy.steps is not None:
        size = fit_size(aspect, *stepped(size, policy.steps))  # one side: aspect decides
    digest = imported_preview_digest(data)
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

    return _cached(storage, key, make, policy)


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


def _cached(
    storage: FileStorage, key: str, make: Callable[[], bytes], policy: RenderPolicy
) -> StoredFile:
    """The file under ``key``, made and stored first when it is not there yet."""
    stored = storage.stat(key)
    if stored is not None:
        return stored
    if policy.spend is not None:
        policy.spend()
    body = decoded(make)
    storage.put(key, body)
    return storage.stat(key) or StoredFile(key=key, size=len(body), path=None)
