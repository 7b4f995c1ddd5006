"""Problems as codes with parameters: what the parser and the layout report, in no language.

A :class:`Problem` names what is wrong (``Code.VALUE_TOO_LONG``) and the facts that go into
its message (``limit=40, length=41``). The text comes from the message catalogues of
:mod:`pps.translations` by code: English for the API, the CLI and logs (``str(problem)``),
the reader's language in the editor (``problem.text(translations)``). A parameter that is
itself a :class:`Code` (such as the JSON kind of a wrong value) is translated too.
"""

from __future__ import annotations

import gettext
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pps.translations import DEFAULT_LOCALE, translations

__all__ = ["Code", "Problem", "english", "located"]


class Code(StrEnum):
    """Every problem code; the value is the message id in the catalogues."""

    # What JSON kind a wrong value is (a parameter of other messages).
    KIND_OBJECT = "kind.object"
    KIND_LIST = "kind.list"
    KIND_STRING = "kind.string"
    KIND_BOOLEAN = "kind.boolean"
    KIND_NUMBER = "kind.number"
    KIND_NULL = "kind.null"

    # A value for a DataKey (the editor, the API's draft files).
    VALUE_NOT_STRING = "value.not_string"
    VALUE_TOO_LONG = "value.too_long"
    VALUE_NOT_TEXT = "value.not_text"
    VALUE_REQUIRED = "value.required"
    VALUE_MISSING_GLYPHS = "value.missing_glyphs"
    VALUE_TOO_WIDE = "value.too_wide"
    VALUE_NO_FIT = "value.no_fit"
    VALUE_TOO_MANY_LINES = "value.too_many_lines"
    VALUE_QR_TOO_LONG = "value.qr_too_long"
    VALUE_IMAGE = "value.image"
    VALUE_IMAGE_CROP = "value.image_crop"
    VALUE_IMAGE_UNKNOWN = "value.image_unknown"
    VALUE_IMAGE_REFUSED = "value.image_refused"
    VALUE_CHOICE = "value.choice"

    # The template file itself.
    SPEC_NOT_JSON_OBJECT = "spec.not_json_object"
    SPEC_REQUIRED = "spec.required"
    SPEC_NON_EMPTY_STRING = "spec.non_empty_string"
    SPEC_TOO_LONG = "spec.too_long"
    SPEC_KEY_TOO_LONG = "spec.key_too_long"
    SPEC_IDENTIFIER = "spec.identifier"
    SPEC_STRING_LIST = "spec.string_list"
    SPEC_DUPLICATE_KEY = "spec.duplicate_key"
    SPEC_NOT_LISTED = "spec.not_listed"
    SPEC_NOT_OBJECT = "spec.not_object"
    SPEC_UNIT = "spec.unit"
    SPEC_SIZE_REQUIRED = "spec.size_required"
    SPEC_NON_EMPTY_LIST = "spec.non_empty_list"
    SPEC_TOO_MANY_PAGES = "spec.too_many_pages"
    SPEC_PAGE_COUNT = "spec.page_count"
    SPEC_NOT_LIST = "spec.not_list"
    SPEC_TOO_MANY_ELEMENTS = "spec.too_many_elements"
    SPEC_BACKGROUND = "spec.background"
    SPEC_PDF_ONLY = "spec.pdf_only"
    SPEC_CHOICE = "spec.choice"
    SPEC_BINDING = "spec.binding"
    SPEC_FIXED_TEXT = "spec.fixed_text"
    SPEC_DATA_KEY_ONLY = "spec.data_key_only"
    SPEC_NOT_STRING = "spec.not_string"
    SPEC_DEFAULT_TOO_LONG = "spec.default_too_long"
    SPEC_FONT = "spec.font"
    SPEC_MIN_SIZE = "spec.min_size"
    SPEC_FILL_OR_STROKE = "spec.fill_or_stroke"
    SPEC_OFF_PAGE = "spec.off_page"
    SPEC_UNKNOWN_KEY = "spec.unknown_key"
    SPEC_NOT_NUMBER = "spec.not_number"
    SPEC_NOT_FINITE = "spec.not_finite"
    SPEC_GREATER_THAN = "spec.greater_than"
    SPEC_AT_LEAST = "spec.at_least"
    SPEC_AT_MOST = "spec.at_most"
    SPEC_WHOLE_AT_LEAST = "spec.whole_at_least"
    SPEC_WHOLE_AT_MOST = "spec.whole_at_most"
    SPEC_BOOLEAN = "spec.boolean"
    SPEC_COLOR = "spec.color"
    SPEC_FILE_NAME_KIND = "spec.file_name_kind"
    SPEC_FILE_NAME = "spec.file_name"
    SPEC_SWATCH = "spec.swatch"
    SPEC_DUPLICATE_VALUE = "spec.duplicate_value"
    SPEC_UNKNOWN_VARIANT = "spec.unknown_variant"
    SPEC_PAGE_INDEX = "spec.page_index"
    SPEC_THUMBNAIL = "spec.thumbnail"
    SPEC_LOCALIZED = "spec.localized"
    SPEC_LANGUAGE = "spec.language"
    SPEC_MULTILINE_INPUT = "spec.multiline_input"
    SPEC_CHOICE_OWNER = "spec.choice_owner"
    SPEC_CHOICE_OPTIONS = "spec.choice_options"
    SPEC_CHOICE_DEFAULT = "spec.choice_default"
    SPEC_CHOICE_CLASH = "spec.choice_clash"
    SPEC_IMAGE_SOURCE = "spec.image_source"

    # A file beside the template (checked when a template is imported).
    FILE_UNUSABLE = "file.unusable"
    FILE_NOT_PDF = "file.not_pdf"
    FILE_MISSING_PAGE = "file.missing_page"
    FILE_ROTATED = "file.rotated"
    FILE_ENCRYPTED = "file.encrypted"
    FILE_UNREADABLE_PDF = "file.unreadable_pdf"
    FILE_EMPTY_TRIM = "file.empty_trim"
    FILE_SHAPE = "file.shape"
    FILE_NOT_IMAGE = "file.not_image"
    FILE_TOO_MANY_PIXELS = "file.too_many_pixels"
    FILE_UNREADABLE_IMAGE = "file.unreadable_image"

    # A template that cannot be rendered (a file that does not decode).
    TEMPLATE_UNRENDERABLE = "template.unrenderable"


@dataclass(frozen=True)
class Problem:
    """One problem: a stable ``code`` and the ``params`` its message is formatted with."""

    code: Code
    params: Mapping[str, Any] = field(default_factory=dict)

    def text(self, catalogue: gettext.NullTranslations, context: str | None = None) -> str:
        """The message in ``catalogue``'s language (``%(name)s`` placeholders, as gettext).

        With a ``context`` (gettext's ``msgctxt``, such as ``editor``) a message written for
        that audience wins over the general one where the catalogue has it.
        """
        params = {
            name: catalogue.gettext(value) if isinstance(value, Code) else value
            for name, value in self.params.items()
        }
        template = catalogue.gettext(self.code)
        if context is not None:
            specific = catalogue.pgettext(context, self.code)
            template = template if specific == self.code else specific
        return template % params

    def __str__(self) -> str:
        return english(self)


def english(problem: Problem) -> str:
    """The English message: what the API, the CLI and exceptions say."""
    return problem.text(translations(DEFAULT_LOCALE))


def located(path: str, problem: Problem) -> str:
    """``path: message`` in English, ``(template)`` standing for the file as a whole."""
    return f"{path or '(template)'}: {english(problem)}"
