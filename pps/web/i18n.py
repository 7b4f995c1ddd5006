"""The editor's interface language: a small dictionary per locale, no gettext machinery.

``locale=en|de`` on an editor URL picks the language and the session remembers it; anything
else falls back to English. Messages are ``str.format`` templates; Jinja escapes the result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = ["DEFAULT_LOCALE", "LOCALES", "Translator", "normalize_locale", "translate_problem"]

DEFAULT_LOCALE = "en"

_EN: dict[str, str] = {
    "editor.title": "Personalize",
    "editor.design": "Design {hash}",
    "editor.steps": "Editor steps",
    "editor.skip": "Skip to the editor",
    "step.edit": "Edit",
    "step.preview": "Preview",
    "state.label": "Status",
    "state.init": "not edited yet",
    "state.edited": "edited",
    "state.finished": "finished",
    "fields.legend": "Your texts",
    "fields.none": "This template has nothing to personalize.",
    "field.required": "required",
    "field.max_length": "at most {limit} characters",
    "form.save": "Save",
    "form.save_preview": "Save and preview",
    "form.finish": "Finish and return to shop",
    "form.halt": "Save and continue later",
    "form.saved": "Your changes are saved.",
    "form.errors": "Please correct the marked fields. Nothing was saved.",
    "form.finished": "This design is finished. You can still change it; "
    "saving again marks it as edited.",
    "preview.title": "Preview",
    "preview.live": "Live preview",
    "preview.hint": "The preview follows your typing. Save to keep your changes.",
    "preview.page": "Page {page} of {pages}",
    "preview.alt": "Preview of page {page} of {pages}",
    "preview.updating": "Updating the preview…",
    "preview.updated": "Preview updated.",
    "preview.failed": "The preview could not be updated: {reason}",
    "preview.busy": "Too many preview requests; the preview will catch up in a moment.",
    "preview.back": "Back to editing",
    "leave.cancel": "Cancel and return to shop",
    "leave.halt": "Continue later (back to shop)",
    "leave.refused": "{label}: not available, because {target} was not confirmed by the shop.",
    "leave.invalid": "{label}: not available, because the shop's address for it "
    "is not a web address.",
    "leave.none": "{label}: not available, because the shop gave no address to return to.",
    "language": "Language",
    "problem.required": "is required",
    "problem.too_long": "must be at most {limit} characters (now {length})",
    "problem.other": "{message}",
    "problem.general": "The design as a whole",
}

_DE: dict[str, str] = {
    "editor.title": "Gestalten",
    "editor.design": "Entwurf {hash}",
    "editor.steps": "Schritte des Editors",
    "editor.skip": "Zum Editor springen",
    "step.edit": "Bearbeiten",
    "step.preview": "Vorschau",
    "state.label": "Status",
    "state.init": "noch nicht bearbeitet",
    "state.edited": "bearbeitet",
    "state.finished": "fertiggestellt",
    "fields.legend": "Ihre Texte",
    "fields.none": "Diese Vorlage hat nichts zum Personalisieren.",
    "field.required": "Pflichtfeld",
    "field.max_length": "höchstens {limit} Zeichen",
    "form.save": "Speichern",
    "form.save_preview": "Speichern und Vorschau",
    "form.finish": "Fertigstellen und zurück zum Shop",
    "form.halt": "Speichern und später weitermachen",
    "form.saved": "Ihre Änderungen sind gespeichert.",
    "form.errors": "Bitte korrigieren Sie die markierten Felder. Es wurde nichts gespeichert.",
    "form.finished": "Dieser Entwurf ist fertiggestellt. Sie können ihn noch ändern; "
    "nach dem Speichern gilt er wieder als bearbeitet.",
    "preview.title": "Vorschau",
    "preview.live": "Live-Vorschau",
    "preview.hint": "Die Vorschau folgt Ihrer Eingabe. "
    "Speichern Sie, um Ihre Änderungen zu behalten.",
    "preview.page": "Seite {page} von {pages}",
    "preview.alt": "Vorschau von Seite {page} von {pages}",
    "preview.updating": "Die Vorschau wird aktualisiert…",
    "preview.updated": "Vorschau aktualisiert.",
    "preview.failed": "Die Vorschau konnte nicht aktualisiert werden: {reason}",
    "preview.busy": "Zu viele Vorschau-Anfragen; die Vorschau folgt gleich.",
    "preview.back": "Zurück zum Bearbeiten",
    "leave.cancel": "Abbrechen und zurück zum Shop",
    "leave.halt": "Später weitermachen (zurück zum Shop)",
    "leave.refused": "{label}: nicht möglich, weil {target} vom Shop nicht bestätigt wurde.",
    "leave.invalid": "{label}: nicht möglich, weil die Adresse des Shops keine Webadresse ist.",
    "leave.none": "{label}: nicht möglich, weil der Shop keine Rücksprungadresse angegeben hat.",
    "language": "Sprache",
    "problem.required": "ist ein Pflichtfeld",
    "problem.too_long": "darf höchstens {limit} Zeichen lang sein (jetzt {length})",
    "problem.other": "{message}",
    "problem.general": "Der Entwurf insgesamt",
}

LOCALES: Mapping[str, Mapping[str, str]] = {"en": _EN, "de": _DE}
LANGUAGE_NAMES = {"en": "English", "de": "Deutsch"}

_TOO_LONG = re.compile(r"must be at most (?P<limit>\d+) characters, got (?P<length>\d+)")


def normalize_locale(value: object) -> str | None:
    """``de``, ``de-DE``, ``de_at`` -> ``de``; None for anything this editor does not speak."""
    if not isinstance(value, str) or not value:
        return None
    language = value.replace("_", "-").split("-", 1)[0].strip().lower()
    return language if language in LOCALES else None


class Translator:
    """``t("form.save")`` in the current locale; missing keys fall back to English."""

    def __init__(self, locale: str) -> None:
        self.locale = locale if locale in LOCALES else DEFAULT_LOCALE
        self._messages = LOCALES[self.locale]

    def __call__(self, key: str, **params: object) -> str:
        template = self._messages.get(key) or _EN.get(key) or key
        return template.format(**params) if params else template

    def problem(self, message: str) -> str:
        return translate_problem(message, self)


def translate_problem(message: str, t: Callable[..., str]) -> str:
    """The renderer's English message about a value, in the interface language when known."""
    if message == "is required":
        return t("problem.required")
    match = _TOO_LONG.fullmatch(message)
    if match:
        return t("problem.too_long", limit=match["limit"], length=match["length"])
    return t("problem.other", message=message)
