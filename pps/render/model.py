"""The template model: frozen dataclasses a parsed template is made of, and its limits.

Units: lengths in millimetres, font sizes and stroke widths in points (as in DTP tools).
Coordinates start at the top-left corner of the trim area and grow right and down, so a
designer can read them off a layout; negative values reach into the bleed. Plain data
only: :mod:`pps.render.parsing` builds it from JSON, the renderer reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pps.render.fonts import is_font_file

__all__ = [
    "ASPECT_TOLERANCE",
    "AUTOCOMPLETE_TOKENS",
    "BLACK",
    "CHOICE_PROPERTIES",
    "CMYK",
    "DEFAULT_SIZE",
    "INPUT_TYPES",
    "MAX_BLEED_MM",
    "MAX_ELEMENTS",
    "MAX_FONT_PT",
    "MAX_HELP_LENGTH",
    "MAX_KEY_LENGTH",
    "MAX_LABEL_LENGTH",
    "MAX_NAME_LENGTH",
    "MAX_PAGES",
    "MAX_PAGE_MM",
    "MAX_STROKE_PT",
    "MAX_SWATCHES",
    "MAX_VALUE_LENGTH",
    "MAX_VARIANTS",
    "RGB",
    "Box",
    "Choice",
    "ChoiceOption",
    "Color",
    "ColorBackground",
    "Crop",
    "Element",
    "Field",
    "ImageElement",
    "InputType",
    "LineElement",
    "Localized",
    "Page",
    "PdfBackground",
    "Point",
    "QrElement",
    "RectElement",
    "TemplateSpec",
    "TextElement",
    "Theme",
    "Variant",
]

#: Old templates without a size are business-card sized (width, height in mm).
DEFAULT_SIZE = (85.0, 55.0)
#: No single value is rendered beyond this many characters, whatever the template says.
MAX_VALUE_LENGTH = 10_000
MAX_PAGES = 100
MAX_ELEMENTS = 500
#: PDF viewers refuse pages beyond 200 inches (14 400 pt).
MAX_PAGE_MM = 5000.0
MAX_BLEED_MM = 50.0
MAX_FONT_PT = 1000.0
MAX_STROKE_PT = 100.0
MAX_NAME_LENGTH = 200
MAX_KEY_LENGTH = 200
MAX_VARIANTS = 100
MAX_SWATCHES = 100
#: A DataKey's ``label`` and ``placeholder`` (per language), and its ``help`` text.
MAX_LABEL_LENGTH = 200
MAX_HELP_LENGTH = 1000
#: What a DataKey's input is for: the editor picks the input, keyboard and autofill by it.
InputType = Literal["text", "multiline", "email", "phone", "url", "number", "date", "image"]
INPUT_TYPES: tuple[InputType, ...] = (
    "text",
    "multiline",
    "email",
    "phone",
    "url",
    "number",
    "date",
    "image",
)
#: The HTML autofill field names a template may give a DataKey as ``autocomplete``.
AUTOCOMPLETE_TOKENS = (
    "off",
    "name",
    "honorific-prefix",
    "given-name",
    "additional-name",
    "family-name",
    "honorific-suffix",
    "nickname",
    "organization-title",
    "organization",
    "street-address",
    "address-line1",
    "address-line2",
    "address-line3",
    "address-level1",
    "address-level2",
    "postal-code",
    "country-name",
    "email",
    "tel",
    "url",
    "bday",
)
#: Artwork is placed scaled uniformly; a different shape would be distorted or cropped.
ASPECT_TOLERANCE = 0.01


@dataclass(frozen=True)
class RGB:
    """A screen colour, 0-255 per channel, written ``#RRGGBB`` in templates."""

    red: int
    green: int
    blue: int

    @property
    def hex(self) -> str:
        return f"#{self.red:02x}{self.green:02x}{self.blue:02x}"


@dataclass(frozen=True)
class CMYK:
    """A process colour, 0-100 per ink, passed to the PDF as DeviceCMYK for print."""

    c: float
    m: float
    y: float
    k: float


Color = RGB | CMYK
BLACK = RGB(0, 0, 0)


@dataclass(frozen=True)
class Box:
    """A rectangle in mm from the trim area's top-left corner."""

    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class TextElement:
    """One line (or, with ``multiline``, a wrapped block) of text, bound or fixed."""

    box: Box
    data_key: str | None
    text: str | None
    font: str
    size: float
    color: Color
    align: Literal["left", "center", "right"]
    valign: Literal["top", "middle", "bottom"]
    shrink_to_fit: bool
    min_size: float
    max_length: int | None
    required: bool
    default: str | None
    multiline: bool
    line_height: float


@dataclass(frozen=True)
class QrElement:
    """A QR code drawn as vector squares, centred in its box (square: the smaller side)."""

    box: Box
    data_key: str | None
    text: str | None
    color: Color
    error_correction: Literal["L", "M", "Q", "H"]
    quiet_zone: int
    max_length: int | None
    required: bool
    default: str | None


@dataclass(frozen=True)
class Crop:
    """The part of an image that is placed, in the image's own pixels from its top-left."""

    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class ImageElement:
    """A PNG or JPEG shipped with the template, or (with ``data_key``) the customer's image.

    A bound element draws the file named by its DataKey's value (an upload, see
    :mod:`pps.render.media`) and ``file``, if any, while there is none. ``crop`` is set
    only on a resolved spec: the part of the image that is fitted into the box.
    """

    box: Box
    file: str | None
    fit: Literal["contain", "cover", "stretch"]
    data_key: str | None = None
    required: bool = False
    crop: Crop | None = None


@dataclass(frozen=True)
class RectElement:
    box: Box
    fill: Color | None
    stroke: Color | None
    stroke_width: float


@dataclass(frozen=True)
class LineElement:
    start: Point
    end: Point
    color: Color
    width: float


Element = TextElement | QrElement | ImageElement | RectElement | LineElement


@dataclass(frozen=True)
class PdfBackground:
    """A page of a PDF shipped with the template, placed as vector artwork.

    The artwork page's TrimBox (else CropBox, else MediaBox) is aligned with the template's
    trim area, so artwork made with bleed fills the bleed too.
    """

    file: str
    page: int


@dataclass(frozen=True)
class ColorBackground:
    color: Color


@dataclass(frozen=True)
class Page:
    background: PdfBackground | ColorBackground | None
    elements: tuple[Element, ...]


@dataclass(frozen=True)
class Localized:
    """A text a template gives in several languages: ``{"en": "Name", "de": "Name"}``.

    A plain string in the template is the text for every language (stored under ``""``).
    Language codes are lower case (``de``, ``de-at``).
    """

    texts: Mapping[str, str]

    def get(self, locale: str, fallback: str = "en") -> str:
        """The text for ``locale`` (``de-at``, then ``de``), else the plain one, else
        ``fallback``'s, else the first given: a label is never missing when one was given."""
        language = locale.lower().split("-", 1)[0]
        for key in (locale.lower(), language, "", fallback):
            if key in self.texts:
                return self.texts[key]
        return next(iter(self.texts.values()), "")


@dataclass(frozen=True)
class Field:
    """What the editor needs for one DataKey, merged over every element bound to it.

    ``label``, ``help``, ``placeholder``, ``input_type`` and ``autocomplete`` come from the
    template's ``fields`` object; without them the editor derives what it shows from the key.
    ``kind`` is ``image`` for a DataKey of image elements (its value names an upload),
    ``choice`` for a template's :class:`Choice` shown among the fields (not a DataKey).
    """

    key: str
    max_length: int | None
    required: bool
    default: str | None
    multiline: bool
    label: Localized | None = None
    help: Localized | None = None
    placeholder: Localized | None = None
    input_type: InputType | None = None
    autocomplete: str | None = None
    kind: Literal["text", "image", "choice"] = "text"


CHOICE_PROPERTIES: tuple[Literal["font", "color", "size"], ...] = ("font", "color", "size")


@dataclass(frozen=True)
class ChoiceOption:
    """One option: ``value`` is what a draft stores, ``label`` what the editor shows;
    ``color`` is set for colours, ``size`` for sizes, ``value`` is the font for fonts."""

    value: str
    label: str
    color: Color | None = None
    size: float | None = None


@dataclass(frozen=True)
class Choice:
    """A property of text elements the customer picks from a list the template gives.

    Stored among the draft's values under ``key`` (``<dataKey or element id>.<property>``);
    the element's own font, colour or size is the ``default``. ``free`` (colours only,
    ``"any"`` in the template) also accepts any ``#RRGGBB``. ``targets`` are the
    (page, element) indexes the choice applies to.
    """

    key: str
    property: Literal["font", "color", "size"]
    options: tuple[ChoiceOption, ...]
    default: str
    free: bool
    targets: tuple[tuple[int, int], ...]

    def find(self, value: str) -> ChoiceOption | None:
        """The option ``value`` names (colours case-insensitively), or None."""
        for option in self.options:
            if option.value == value or (
                self.property == "color" and option.value.lower() == value.lower()
            ):
                return option
        if self.property == "size":
            try:
                number = float(value)
            except ValueError:
                return None
            return next((item for item in self.options if item.size == number), None)
        return None


@dataclass(frozen=True)
class Variant:
    """A look of the template (a colour variant): named swatches and backgrounds it swaps.

    ``id`` and ``identifier`` are what the API shows (the reference's variant id is an int);
    ``thumbnail_type`` is ``color`` (``thumbnail_value`` ``#RRGGBB``) or ``image`` (a URL).
    ``swatches`` replace the template's swatches of the same name; ``backgrounds`` replace
    the background of a page (by index, counted from 0).
    """

    id: int
    identifier: str
    name: str
    version: int
    thumbnail_type: Literal["color", "image"]
    thumbnail_value: str
    swatches: dict[str, Color]
    backgrounds: dict[int, PdfBackground | ColorBackground]


@dataclass(frozen=True)
class Theme:
    """A named set of a template's variants offered together (its first one is the default)."""

    identifier: str
    name: str
    variants: tuple[str, ...]


@dataclass(frozen=True)
class TemplateSpec:
    """A validated template; ``digest`` identifies its JSON for cache keys.

    Plain data (a dict, tuples, frozen dataclasses), so it pickles for a job queue.
    """

    name: str
    identifier: str | None
    data_keys: tuple[str, ...]
    custom_attributes: dict[str, Any]
    page_count: int
    width: float
    height: float
    bleed: float
    pages: tuple[Page, ...]
    fields: tuple[Field, ...]
    digest: str
    variants: tuple[Variant, ...] = ()
    themes: tuple[Theme, ...] = ()
    variant: str | None = None
    """The identifier of the variant this spec is resolved for; None: the template's own."""
    #: ``colorSpace`` of the template: "cmyk" makes preflight flag RGB images and colours.
    color_space: Literal["cmyk", "rgb"] | None = None
    #: What the customer may pick per element (fonts, colours, sizes); see :class:`Choice`.
    choices: tuple[Choice, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the template refers to, sorted: what an importer must copy along."""
        names: set[str] = set()
        for page in self.pages:
            if isinstance(page.background, PdfBackground):
                names.add(page.background.file)
            for element in page.elements:
                if isinstance(element, ImageElement) and element.file is not None:
                    names.add(element.file)
                elif isinstance(element, TextElement) and is_font_file(element.font):
                    names.add(element.font)
        for choice in self.choices:
            if choice.property == "font":
                names.update(o.value for o in choice.options if is_font_file(o.value))
        for variant in self.variants:
            for background in variant.backgrounds.values():
                if isinstance(background, PdfBackground):
                    names.add(background.file)
        return tuple(sorted(names))

    def find_variant(self, identifier: str) -> Variant | None:
        return next((item for item in self.variants if item.identifier == identifier), None)

    def find_theme(self, identifier: str) -> Theme | None:
        return next((item for item in self.themes if item.identifier == identifier), None)

    def field(self, key: str) -> Field | None:
        return next((field for field in self.fields if field.key == key), None)

    def choice(self, key: str) -> Choice | None:
        return next((choice for choice in self.choices if choice.key == key), None)
