"""The message catalogues: one gettext ``messages.po`` per locale, keyed by message code.

``<locale>/LC_MESSAGES/messages.po`` holds every text the service shows a person: the
problems of :mod:`pps.render.problems` (English is also what the API and the CLI print) and
the editor's interface. The English catalogue is the source text; other locales fall back
to it for a code they lack.

The ``.po`` files are read at run time (Babel's ``read_po``, then ``write_mo`` into memory
for a ``gettext``-compatible :class:`babel.support.Translations`) instead of being compiled
to ``.mo`` during the build: ``make install`` is an editable install that runs no build step,
so a fresh clone works with no compiled file in git and no ``pybabel compile`` to forget.
The locales are the folders found here: adding a language is adding its ``messages.po``.
Reading the two small files costs a few milliseconds once per process.
"""

from __future__ import annotations

import functools
from io import BytesIO
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

__all__ = [
    "DEFAULT_LOCALE",
    "DOMAIN",
    "LOCALES",
    "catalog",
    "catalog_path",
    "found_locales",
    "translations",
]

DOMAIN = "messages"
DEFAULT_LOCALE = "en"

_HERE = Path(__file__).resolve().parent


def found_locales(root: Path = _HERE) -> tuple[str, ...]:
    """English first, then every other folder holding a catalogue, by name.

    Adding a language is adding ``<locale>/LC_MESSAGES/messages.po`` (gettext's layout):
    nothing else lists the locales.
    """
    found = sorted(
        path.parent.parent.name
        for path in root.glob(f"*/LC_MESSAGES/{DOMAIN}.po")
        if path.parent.parent.name != DEFAULT_LOCALE
    )
    return (DEFAULT_LOCALE, *found)


#: Every locale with a catalogue; the first is the source language and the fallback.
LOCALES = found_locales()


def catalog_path(locale: str) -> Path:
    """Where the ``.po`` file of ``locale`` lives (``LookupError`` for an unknown locale)."""
    if locale not in LOCALES:
        raise LookupError(f"no message catalogue for locale {locale!r}")
    return _HERE / locale / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def catalog(locale: str) -> Catalog:
    """The parsed catalogue of ``locale``, as Babel reads it (for tools and tests)."""
    with catalog_path(locale).open("rb") as file:
        return read_po(file, locale=locale, domain=DOMAIN)


@functools.cache
def translations(locale: str) -> Translations:
    """``gettext`` for ``locale``, falling back to English for a missing code."""
    buffer = BytesIO()
    write_mo(buffer, catalog(locale))
    buffer.seek(0)
    result = Translations(fp=buffer, domain=DOMAIN)
    if locale != DEFAULT_LOCALE:
        result.add_fallback(translations(DEFAULT_LOCALE))
    return result
