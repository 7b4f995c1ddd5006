"""The editor's images, choices and variants: what the partial ``editor_media.html`` shows
and what the editor checks before saving them. No Flask.

* An image DataKey gets a file picker (and drag and drop), the uploaded image to crop
  (drag to move, a zoom slider, arrow keys) and a resolution check: under
  :data:`MIN_DPI` at the placed size the customer sees a warning (and preflight reports it).
  The crop always has the box's aspect ratio: zoom 1 is the largest such part of the
  image, centred; the value stored is ``{"file": id, "crop": {x, y, width, height}}``.
* A choice (:class:`~pps.render.model.Choice`) is a radio group (colours) or a select
  (fonts, sizes); its options are the template's only.
* The template's variants (those offered to the draft) are a radio group ``variant``.
Everything is in the server-rendered form, so it works without JavaScript.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from babel.numbers import format_decimal

from pps.editor.inputs import readable_key
from pps.editor.model import FieldView
from pps.platform.models import Draft
from pps.platform.repository.uploads import SqlUploadStore
from pps.platform.storage import FileStorage
from pps.preflight.status import MIN_DPI
from pps.render import TemplateSpec
from pps.render.media import ImageValue, parse_image_value
from pps.render.model import CMYK, RGB, Box, Color, ImageElement, Variant
from pps.render.problems import Code, Problem
from pps.uploads.images import image_size, media_problems
from pps.uploads.kinds import UnknownKind, sniff
from pps.web.i18n import Translator

__all__ = [
    "MIN_DPI",
    "ChoiceView",
    "ImageView",
    "MediaView",
    "OptionView",
    "VariantView",
    "default_crop",
    "effective_dpi",
    "image_kind_problem",
    "image_value",
    "media_view",
    "place_of",
    "refusal_reason",
    "saved_problems",
]


@dataclass(frozen=True)
class OptionView:
    value: str
    label: str
    swatch: str  # "#rrggbb" shown beside a colour ("" for fonts and sizes)
    checked: bool


@dataclass(frozen=True)
class ChoiceView:
    index: int
    key: str
    name: str
    prop: str
    label: str
    owner: str
    owner_label: str
    value: str
    free: bool
    options: list[OptionView]
    errors: list[str]

    @property
    def id(self) -> str:
        return f"f-{self.index}"


@dataclass(frozen=True)
class ImageView:
    index: int
    key: str
    name: str
    label: str
    value: str
    required: bool
    file: str  # the upload's identifier, "" when none
    pixel_width: float
    pixel_height: float
    box_width_mm: float
    box_height_mm: float
    page: int  # the first page (from 0) showing the image
    zoom: float
    center_x: float
    center_y: float
    dpi: int | None
    errors: list[str]

    @property
    def id(self) -> str:
        return f"f-{self.index}"

    @property
    def low(self) -> bool:
        return self.dpi is not None and self.dpi < MIN_DPI


@dataclass(frozen=True)
class VariantView:
    identifier: str
    name: str
    swatch: str
    checked: bool


@dataclass(frozen=True)
class ChoiceGroup:
    """The choices of one element (or DataKey), shown together under its name."""

    legend: str
    choices: list[ChoiceView]


@dataclass(frozen=True)
class MediaView:
    images: list[ImageView]
    choices: list[ChoiceView]
    variants: list[VariantView]

    @property
    def groups(self) -> list[ChoiceGroup]:
        groups: dict[str, ChoiceGroup] = {}
        for choice in self.choices:
            group = groups.setdefault(choice.owner, ChoiceGroup(choice.owner_label, []))
            group.choices.append(choice)
        return list(groups.values())

    def __bool__(self) -> bool:
        return bool(self.images or self.choices or self.variants)


def _hex(color: Color | None) -> str:
    """An approximate screen colour for a swatch (CMYK converted naively)."""
    if isinstance(color, RGB):
        return color.hex
    if isinstance(color, CMYK):
        k = 1 - color.k / 100
        channels = [round(255 * (1 - ink / 100) * k) for ink in (color.c, color.m, color.y)]
        return "#" + "".join(f"{value:02x}" for value in channels)
    return ""


def box_of(spec: TemplateSpec, key: str) -> Box | None:
    """The box of the first image element bound to ``key``."""
    placed = place_of(spec, key)
    return placed[1] if placed is not None else None


def place_of(spec: TemplateSpec, key: str) -> tuple[int, Box] | None:
    """The page (from 0) and box of the first image element bound to ``key``: what the
    shop's page is told of the image object (``findEditorObjects``, docs/embedding.md)."""
    for index, page in enumerate(spec.pages):
        for element in page.elements:
            if isinstance(element, ImageElement) and element.data_key == key:
                return index, element.box
    return None


def default_crop(size: tuple[float, float], box: Box, zoom: float = 1.0) -> dict[str, float]:
    """The largest part of an image of ``size`` with the box's aspect ratio, centred,
    divided by ``zoom``: what a fresh upload is placed as."""
    width, height = size
    aspect = box.width / box.height
    crop_w, crop_h = (
        (height * aspect, height) if width / height > aspect else (width, width / aspect)
    )
    crop_w, crop_h = crop_w / zoom, crop_h / zoom
    return {
        "x": round((width - crop_w) / 2, 2),
        "y": round((height - crop_h) / 2, 2),
        "width": round(crop_w, 2),
        "height": round(crop_h, 2),
    }


def image_value(identifier: str, crop: Mapping[str, float]) -> str:
    return json.dumps({"file": identifier, "crop": dict(crop)}, separators=(",", ":"))


def effective_dpi(crop_width_px: float, box: Box) -> int:
    """Pixels per inch of the crop at the box's width (the crop has the box's shape)."""
    return round(crop_width_px / (box.width / 25.4))


def image_kind_problem(data: bytes) -> str | None:
    """The message code saying why ``data`` cannot be a customer's image (before it is
    stored); None for PNG, JPEG and SVG, which :func:`pps.uploads.store.accept_upload` then
    checks completely. A code, not the sniffer's words: those are for a shop's developer
    ("not UTF-8 text ...: save CSV files as 'CSV UTF-8'" for a WebP photo), in English."""
    if not data:
        return "media.no_file"
    try:
        kind = sniff(data)
    except UnknownKind:
        return "media.not_an_image"
    return None if kind in ("png", "jpeg", "svg") else "media.not_an_image"


def refusal_reason(t: Translator, code: str, params: Mapping[str, float]) -> str:
    """Why an image was refused, for the customer in the page's language: the message
    ``code`` with its numbers as the locale writes them (``0,1``), byte counts (parameters
    named ``*_bytes``, :class:`pps.uploads.store.UploadRefused`) as kB or MB without the
    suffix. The check's own words are English, for a shop's developer."""
    shown: dict[str, str] = {}
    for name, value in params.items():
        if name.endswith("_bytes"):
            shown[name.removesuffix("_bytes")] = _file_size(value, t.locale)
        else:
            shown[name] = format_decimal(value, format="#,##0.#", locale=t.locale)
    return t(code, **shown)


def _file_size(size: float, locale: str) -> str:
    """``49 kB``, ``64 MB``, ``1,5 MB``: counted in 1024s, so that the default limit of
    64 x 1024 x 1024 bytes reads "64 MB"."""
    if size >= 1024 * 1024:
        return f"{format_decimal(size / (1024 * 1024), format='#,##0.#', locale=locale)} MB"
    return f"{format_decimal(max(1, round(size / 1024)), locale=locale)} kB"


def saved_problems(
    spec: TemplateSpec,
    values: Mapping[str, str],
    storage: FileStorage,
    records: SqlUploadStore,
    client: str,
) -> dict[str, list[Problem]]:
    """Uploads the client does not have and crops outside their image, per DataKey."""
    return media_problems(spec, values, storage, records, client)


def variant_problem(spec: TemplateSpec, draft: Draft, identifier: str) -> Problem | None:
    offered = _offered(spec, draft)
    if any(item.identifier == identifier for item in offered):
        return None
    names = ", ".join(item.identifier for item in offered) or "none"
    return Problem(Code.VALUE_CHOICE, {"options": names, "got": repr(identifier)})


def _offered(spec: TemplateSpec, draft: Draft) -> Sequence[Variant]:
    available = draft.available_variants
    return [v for v in spec.variants if available is None or v.identifier in available]


def media_view(
    spec: TemplateSpec,
    draft: Draft,
    fields: Sequence[FieldView],
    storage: FileStorage,
    records: SqlUploadStore,
    t: Translator,
) -> MediaView:
    """The partial's content, from the page's field views (their values and errors)."""
    images: list[ImageView] = []
    choices: list[ChoiceView] = []
    for field in fields:
        if field.kind == "image":
            images.append(_image_view(spec, draft, field, storage, records))
        elif field.kind == "choice":
            choice_view = _choice_view(spec, field, t)
            if choice_view is not None:
                choices.append(choice_view)
    variants = [
        VariantView(
            identifier=item.identifier,
            name=item.name,
            swatch=item.thumbnail_value if item.thumbnail_type == "color" else "",
            checked=item.identifier == (draft.variant_identifier or ""),
        )
        for item in _offered(spec, draft)
    ]
    return MediaView(images=images, choices=choices, variants=variants)


def _image_view(
    spec: TemplateSpec,
    draft: Draft,
    field: FieldView,
    storage: FileStorage,
    records: SqlUploadStore,
) -> ImageView:
    key, value = field.key, field.value
    page, box = place_of(spec, key) or (0, Box(0, 0, 1, 1))
    parsed = parse_image_value(value)
    file, size, zoom, center, dpi = "", (0.0, 0.0), 1.0, (0.5, 0.5), None
    if isinstance(parsed, ImageValue):
        record = records.get(draft.client_identifier, parsed.file)
        data = storage.read(record.storage_key) if record is not None else None
        measured = image_size(data) if data is not None else None
        if measured is not None:
            file, size = parsed.file, measured
            full = default_crop(size, box)
            crop = parsed.crop
            if crop is not None:
                zoom = max(1.0, full["width"] / crop.width)
                center = ((crop.x + crop.width / 2) / size[0], (crop.y + crop.height / 2) / size[1])
                width_px = crop.width
            else:
                width_px = full["width"]
            dpi = (
                None if data is None or data.lstrip()[:1] == b"<" else effective_dpi(width_px, box)
            )
    return ImageView(
        index=field.index,
        key=key,
        name=field.name,
        label=field.label or key,
        value=value,
        required=field.required,
        file=file,
        pixel_width=size[0],
        pixel_height=size[1],
        box_width_mm=box.width,
        box_height_mm=box.height,
        page=page,
        zoom=round(zoom, 3),
        center_x=round(center[0], 4),
        center_y=round(center[1], 4),
        dpi=dpi,
        errors=field.errors,
    )


def _choice_view(spec: TemplateSpec, field: FieldView, t: Translator) -> ChoiceView | None:
    key = field.key
    choice = spec.choice(key)
    if choice is None:
        return None
    value = field.value or choice.default
    picked = choice.find(value)
    options = [
        OptionView(
            value=option.value,
            label=option.label,
            swatch=_hex(option.color),
            checked=picked is not None and option.value == picked.value,
        )
        for option in choice.options
    ]
    owner = key.rsplit(".", 1)[0]
    # The element's DataKey as the template labels it in the page's language.
    owner_field = spec.field(owner)
    owner_name = (
        owner_field.label.get(t.locale)
        if owner_field is not None and owner_field.label is not None
        else readable_key(owner)
    )
    return ChoiceView(
        index=field.index,
        key=key,
        name=field.name,
        prop=choice.property,
        label=t(f"media.{choice.property}"),
        owner=owner,
        owner_label=t("media.choice", element=owner_name),
        value=value,
        free=choice.free,
        options=options,
        errors=field.errors,
    )
