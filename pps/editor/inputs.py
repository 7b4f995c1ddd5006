"""How one DataKey is asked for: its label, the HTML input, keyboard and autofill hints.

The template may say all of it (``fields`` in the template file, see
:mod:`pps.render.field_info`); what it leaves out is derived here, so a template without
``fields`` still gets a readable label (``recipientName`` -> "Recipient name") and the
phone keyboard that fits the key (``email``, ``phone``, ``url``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pps.render import Field
from pps.render.model import InputType

__all__ = ["InputAttributes", "field_label", "input_attributes", "input_type_of", "readable_key"]

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_\-. ]+")
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\b|[0-9_\-.\s]|$)|[A-Z]?[a-z]+|[0-9]+|[A-Z]+")


def readable_key(key: str) -> str:
    """``recipientName`` -> "Recipient name", ``first_name`` -> "First name", ``URL`` -> "URL".

    Only the first word is capitalised (sentence case); words written in capitals stay so.
    A key with other characters (``<b>tagline</b>``, ``Straße``) is shown as it is: taking
    it apart could lose what it says.
    """
    words = _WORD.findall(key)
    if not words or not _PLAIN_KEY.fullmatch(key):
        return key
    shown = [word if word.isupper() and len(word) > 1 else word.lower() for word in words]
    first = shown[0]
    shown[0] = first if first.isupper() else first[:1].upper() + first[1:]
    return " ".join(shown)


def field_label(field: Field | None, key: str, locale: str) -> str:
    """What DataKey ``key`` is called in ``locale``: the label of its template ``field``,
    else :func:`readable_key`. One rule, so that the form, the shop's frame and a review's
    list of what to correct name a field alike."""
    if field is not None and field.label is not None:
        return field.label.get(locale)
    return readable_key(key)


#: Key words that say what a plain text field holds: (words, input type, autocomplete).
#: Checked in order against the key's words in lower case; the first match wins.
_GUESSES: tuple[tuple[frozenset[str], InputType | None, str], ...] = (
    (frozenset({"email", "mail", "e-mail"}), "email", "email"),
    (frozenset({"phone", "tel", "telephone", "mobile", "fax", "telefon"}), "phone", "tel"),
    (frozenset({"url", "website", "web", "homepage", "link"}), "url", "url"),
    (frozenset({"title", "position", "role", "job"}), None, "organization-title"),
    (frozenset({"company", "organization", "organisation", "firm"}), None, "organization"),
    (frozenset({"street", "address"}), None, "street-address"),
    (frozenset({"city", "town"}), None, "address-level2"),
    (frozenset({"zip", "postcode", "postal"}), None, "postal-code"),
    (frozenset({"country"}), None, "country-name"),
    (frozenset({"name"}), None, "name"),
)
#: The autofill field each input type implies when the template names none.
_AUTOCOMPLETE = {"email": "email", "phone": "tel", "url": "url"}


def _guess(key: str) -> tuple[InputType | None, str | None]:
    words = {word.lower() for word in _WORD.findall(key)}
    for names, input_type, autocomplete in _GUESSES:
        if words & names:
            return input_type, autocomplete
    return None, None


def input_type_of(field: Field) -> InputType:
    """The template's ``inputType``; else multi-line for multiline text, else from the key."""
    if field.input_type is not None:
        return field.input_type
    if field.multiline:
        return "multiline"
    guessed, _ = _guess(field.key)
    return guessed or "text"


@dataclass(frozen=True)
class InputAttributes:
    """The attributes of the input element: ``element`` is ``input`` or ``textarea``."""

    element: str
    type: str
    inputmode: str
    autocomplete: str


# input type -> (element, HTML type, inputmode)
_HTML: dict[str, tuple[str, str, str]] = {
    "text": ("input", "text", "text"),
    "multiline": ("textarea", "", "text"),
    "email": ("input", "email", "email"),
    "phone": ("input", "tel", "tel"),
    "url": ("input", "text", "url"),
    "number": ("input", "text", "decimal"),
    "date": ("input", "date", ""),
    "image": ("input", "text", "url"),
}


def input_attributes(field: Field) -> InputAttributes:
    """Element, ``type``, ``inputmode`` and ``autocomplete`` for ``field``.

    Numbers and web addresses use ``type=text`` with the number or URL keyboard: the value
    is printed as typed, and ``type=number`` would refuse ``1,5`` and ``type=url`` the
    ``www.example.com`` cards usually show. An ``image`` DataKey holds a reference to an
    uploaded file or an image URL, asked for the same way.
    """
    kind = input_type_of(field)
    element, html_type, inputmode = _HTML[kind]
    autocomplete = field.autocomplete
    if autocomplete is None:
        autocomplete = _AUTOCOMPLETE.get(kind) or _guess(field.key)[1] or "off"
    return InputAttributes(
        element=element, type=html_type, inputmode=inputmode, autocomplete=autocomplete
    )
