"""The editor's interface language: gettext catalogues by message code, one per locale.

``locale=en|de`` on an editor URL picks the language and the session remembers it; anything
else falls back to English. Texts come from ``pps/translations/<locale>/LC_MESSAGES/
messages.po`` by code (``form.save``; a problem's ``value.too_long``); placeholders are
gettext's ``%(name)s``. Jinja escapes the result.

Flask-Babel is not used: it loads compiled ``.mo`` files only (see :mod:`pps.translations`
for why the catalogues are read from ``.po``) and picks one locale per request through a
global selector, while the editor passes its locale explicitly (query, session, user).
"""

from __future__ import annotations

from collections.abc import Mapping

from babel import Locale

from pps.render import Problem
from pps.translations import DEFAULT_LOCALE, LOCALES, translations

__all__ = [
    "DEFAULT_LOCALE",
    "EDITOR_CONTEXT",
    "LANGUAGE_NAMES",
    "LOCALES",
    "Translator",
    "normalize_locale",
]

#: Each language's name in itself ("Deutsch"), from Babel's CLDR data: a new catalogue
#: needs no entry here.
LANGUAGE_NAMES: Mapping[str, str] = {
    code: (Locale.parse(code).get_display_name(code) or code) for code in LOCALES
}
#: The gettext context (``msgctxt``) of problem messages worded for the editor's customers.
EDITOR_CONTEXT = "editor"


def normalize_locale(value: object) -> str | None:
    """``de``, ``de-DE``, ``de_at`` -> ``de``; None for anything this editor does not speak."""
    if not isinstance(value, str) or not value:
        return None
    language = value.replace("_", "-").split("-", 1)[0].strip().lower()
    return language if language in LOCALES else None


class Translator:
    """``t("form.save")`` in the current locale; codes missing there fall back to English."""

    def __init__(self, locale: str) -> None:
        self.locale = locale if locale in LOCALES else DEFAULT_LOCALE
        self._catalogue = translations(self.locale)

    def __call__(self, code: str, **params: object) -> str:
        text = self._catalogue.gettext(code)
        return text % params if params else text

    def problem(self, problem: Problem) -> str:
        """A problem with a value, in the interface language."""
        return problem.text(self._catalogue, context=EDITOR_CONTEXT)

    def knows(self, code: str) -> bool:
        """Whether ``code`` has a message (in this locale or the English fallback)."""
        return self._catalogue.gettext(code) != code
