"""The message catalogues: every code has an English and a German message, and they agree.

Walks :class:`pps.render.problems.Code` and every message id of the ``.po`` files, formats
each message with the placeholders it declares, and checks that the editor's templates and
views only ask for codes the catalogues have.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import pps.web.i18n
from pps.render import Code, InvalidValues, Problem, SpecError
from pps.render.problems import english
from pps.translations import LOCALES, catalog, catalog_path, translations
from pps.web.i18n import Translator

WEB = Path(pps.web.i18n.__file__).resolve().parent
EDITOR = WEB.parent / "editor"
_PLACEHOLDER = re.compile(r"%\((\w+)\)([-#0 +]*\d*(?:\.\d+)?[sdgf])")


def messages(locale: str) -> dict[tuple[str | None, str], str]:
    """``(context, code) -> text`` of a catalogue, without its header."""
    return {
        (message.context, str(message.id)): str(message.string)
        for message in catalog(locale)
        if message.id
    }


def placeholders(text: str) -> dict[str, str]:
    return {name: conversion[-1] for name, conversion in _PLACEHOLDER.findall(text)}


def sample(kind: str) -> object:
    return {"s": "x", "d": 7, "g": 2.5, "f": 1.25}[kind]


def test_the_catalogues_are_read_from_the_package() -> None:
    for locale in LOCALES:
        path = catalog_path(locale)
        assert path.parts[-3:] == (locale, "LC_MESSAGES", "messages.po")
        assert path.is_file()
    with pytest.raises(LookupError):
        catalog_path("fr")


@pytest.mark.parametrize("code", list(Code))
def test_every_problem_code_has_an_english_and_a_german_message(code: Code) -> None:
    for locale in LOCALES:
        text = messages(locale).get((None, code.value))
        assert text, f"{code.value} has no message in {locale}"
        assert text != code.value
    english_text = messages("en")[None, code.value]
    german_text = messages("de")[None, code.value]
    if code is not Code.KIND_NULL:  # JSON's null is null in every language
        assert german_text != english_text, f"{code.value} is not translated"


def test_both_catalogues_hold_the_same_codes_with_the_same_placeholders() -> None:
    english_messages, german_messages = messages("en"), messages("de")
    assert set(english_messages) == set(german_messages)
    problem_codes = {code.value for code in Code}
    for (context, code), text in english_messages.items():
        assert placeholders(german_messages[context, code]) == placeholders(text), code
        if context is None and code.split(".")[0] in {"kind", "value", "spec", "file"}:
            assert code in problem_codes, f"{code} is in the catalogue but not a Code"
        for locale_messages in (english_messages, german_messages):
            params = {name: sample(kind) for name, kind in placeholders(text).items()}
            formatted = locale_messages[context, code] % params
            assert "%(" not in formatted


def test_a_problem_reads_in_each_language_from_its_code() -> None:
    problem = Problem(Code.VALUE_TOO_LONG, {"limit": 40, "length": 41})
    assert english(problem) == str(problem) == "must be at most 40 characters, got 41"
    assert Translator("en").problem(problem) == "must be at most 40 characters (now 41)"
    assert Translator("de").problem(problem) == "darf höchstens 40 Zeichen lang sein (jetzt 41)"
    assert Translator("fr").locale == "en"
    kind = Problem(Code.SPEC_NOT_OBJECT, {"kind": Code.KIND_LIST})
    assert str(kind) == "must be an object, got a list"
    assert kind.text(translations("de")) == "muss ein Objekt sein, ist aber eine Liste"


def test_errors_carry_codes_and_english_text() -> None:
    spec_error = SpecError([("size.width", Problem(Code.SPEC_GREATER_THAN, {"limit": 0.0}))])
    assert spec_error.errors == ["size.width: must be greater than 0"]
    assert spec_error.problems[0][1].code is Code.SPEC_GREATER_THAN
    invalid = InvalidValues({"name": [Problem(Code.VALUE_REQUIRED)]})
    assert invalid.errors == {"name": ["is required"]}
    assert str(invalid) == "name: is required"
    assert invalid.problems["name"][0].code is Code.VALUE_REQUIRED


def test_the_editor_only_asks_for_codes_the_catalogues_have() -> None:
    asked: set[str] = set()
    for template in (WEB / "templates").glob("editor*.html"):
        asked.update(re.findall(r"\bt\('([\w.]+)'", template.read_text()))
    for module in ("web.py", "model.py"):
        source = (EDITOR / module).read_text()
        asked.update(re.findall(r'"((?:form|leave|state|step|preview)\.\w+)"', source))
    asked.update(f"state.{state}" for state in ("init", "edited", "finished"))
    assert len(asked) > 20
    known = {code for context, code in messages("en") if context is None}
    assert asked - known == set()
    german = Translator("de")
    for code in asked:
        assert german.knows(code)


def test_no_message_is_translated_by_pattern_matching() -> None:
    """Translation goes by code: the editor's i18n module has no regular expressions."""
    source = inspect.getsource(pps.web.i18n)
    assert "import re" not in source
    assert "re.compile" not in source
