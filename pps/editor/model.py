"""What the editor pages are made of, without routes: fields, values and the ways back.

The views in :mod:`pps.editor.web` translate HTTP to these functions and back. Nothing here
renders or saves; it only decides what the form shows, what a submitted form means, and
which callback a button may send the browser to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pps.auth.callbacks import CALLBACK_PARAMS, vetted_callbacks
from pps.auth.redirects import origin_of
from pps.editor.inputs import field_label, input_attributes
from pps.platform.models import Draft, Template
from pps.platform.storable_text import text_problem
from pps.render import Code, Field, Problem, TemplateSpec
from pps.render.model import MAX_VALUE_LENGTH
from pps.render.text import as_text
from pps.web.i18n import Translator

__all__ = [
    "VALUE_PREFIX",
    "Exit",
    "FieldView",
    "editor_fields",
    "field_views",
    "form_action_origins",
    "initial_values",
    "not_text",
    "page_keys",
    "resolve_exits",
    "submitted_values",
    "text_of",
]

#: Form fields holding values are named ``v:<DataKey>``, so a DataKey can never collide with
#: the form's own fields (``csrf_token``, ``action``), whatever the template calls it.
VALUE_PREFIX = "v:"

#: Which label each callback's button carries.
EXIT_LABELS = {
    "callback": "form.finish",
    "callback_cancel": "leave.cancel",
    "callback_halt": "leave.halt",
}

_CSP_ORIGIN = re.compile(r"https?://(?:[a-z0-9_.\-]+|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")


def editor_fields(
    template: Template | None, spec: TemplateSpec | None, draft: Draft
) -> list[Field]:
    """One field per DataKey: the template's (with its limits), then any the row lists.

    Rows imported before templates had pages list DataKeys the spec does not know; those
    get a plain field with only the global length limit. Without a template at all (it was
    deleted) the draft's own keys are shown, so the customer still sees their text.
    """
    fields: list[Field] = list(spec.fields) if spec is not None else []
    if spec is not None:  # the template's choices (fonts, colours, sizes) after its DataKeys
        fields += [
            Field(choice.key, None, False, choice.default, False, kind="choice")
            for choice in spec.choices
        ]
    known = {field.key for field in fields}
    if template is not None:
        extra: Iterable[str] = template.data_keys
    else:
        extra = sorted({*draft.api_default_values, *draft.values})
    for key in extra:
        if key not in known:
            known.add(key)
            fields.append(
                Field(key=key, max_length=None, required=False, default=None, multiline=False)
            )
    return fields


def text_of(value: Any) -> str | None:
    """A stored value as the text an input shows (shops send numbers as apiDefaultValues)."""
    return as_text(value)


def initial_values(draft: Draft, fields: Iterable[Field]) -> dict[str, str]:
    """``apiDefaultValues`` first, then saved values override; else the template's default.

    The template default is filled in rather than shown as a placeholder because the
    renderer draws it for a missing value: the input shows exactly what gets printed.
    """
    merged = {**draft.api_default_values, **draft.values}
    result: dict[str, str] = {}
    for field in fields:
        text = text_of(merged.get(field.key))
        result[field.key] = text if text is not None else (field.default or "")
    return result


def submitted_values(form: Mapping[str, str], fields: Iterable[Field]) -> dict[str, str]:
    """The values a form sent for ``fields``; fields the form did not send are left out.

    Browsers send line breaks in text areas as CRLF; they are stored as LF.
    """
    values: dict[str, str] = {}
    for field in fields:
        raw = form.get(VALUE_PREFIX + field.key)
        if raw is not None:
            values[field.key] = raw.replace("\r\n", "\n").replace("\r", "\n")
    return values


def not_text(values: Mapping[str, str]) -> dict[str, list[Problem]]:
    """Problems for values with a NUL character (or a lone surrogate): the form refuses
    them as the autosave and the API do, so a value reaches the draft the same way
    whichever of them it came through (PostgreSQL's text holds no NUL)."""
    return {
        key: [Problem(Code.VALUE_NOT_TEXT)]
        for key, value in values.items()
        if text_problem(value) is not None
    }


def over_global_limit(values: Mapping[str, str]) -> dict[str, list[Problem]]:
    """Problems for keys the renderer does not check (not in the spec): only the length."""
    return {
        key: [Problem(Code.VALUE_TOO_LONG, {"limit": MAX_VALUE_LENGTH, "length": len(value)})]
        for key, value in values.items()
        if len(value) > MAX_VALUE_LENGTH
    }


@dataclass(frozen=True)
class FieldView:
    """One input of the form, ready for the template (Jinja escapes every string).

    ``label``, ``help`` and ``placeholder`` are in the page's language (the template's
    words, else a readable form of the key); ``element`` is ``input`` or ``textarea``,
    with ``type``, ``inputmode`` and ``autocomplete`` for the right keyboard and autofill.
    """

    index: int
    key: str
    name: str
    value: str
    required: bool
    max_length: int | None
    multiline: bool
    hint: str
    errors: list[str]
    label: str = ""
    help: str = ""
    placeholder: str = ""
    element: str = "input"
    type: str = "text"
    inputmode: str = "text"
    autocomplete: str = "off"
    #: ``text`` fields are the form's inputs; ``image`` and ``choice`` fields are drawn by
    #: ``editor_media.html``.
    kind: str = "text"

    @property
    def id(self) -> str:
        return f"f-{self.index}"

    @property
    def described_by(self) -> str:
        ids = [f"{self.id}-error"]
        if self.hint:
            ids.insert(0, f"{self.id}-hint")
        if self.help:
            ids.insert(0, f"{self.id}-help")
        return " ".join(ids)


def field_views(
    fields: Iterable[Field],
    values: Mapping[str, str],
    errors: Mapping[str, list[Problem]],
    t: Translator,
) -> list[FieldView]:
    views = []
    for index, field in enumerate(fields):
        limit = min(field.max_length or MAX_VALUE_LENGTH, MAX_VALUE_LENGTH)
        hint = t("field.max_length", limit=limit) if field.max_length else ""
        html = input_attributes(field)
        views.append(
            FieldView(
                index=index,
                key=field.key,
                name=VALUE_PREFIX + field.key,
                value=values.get(field.key, ""),
                required=field.required,
                max_length=limit,
                multiline=html.element == "textarea",
                hint=hint,
                errors=[t.problem(problem) for problem in errors.get(field.key, [])],
                label=field_label(field, field.key, t.locale),
                help=field.help.get(t.locale) if field.help else "",
                placeholder=field.placeholder.get(t.locale) if field.placeholder else "",
                element=html.element,
                type=html.type,
                inputmode=html.inputmode,
                autocomplete=html.autocomplete,
                kind=field.kind,
            )
        )
    return views


def page_keys(spec: TemplateSpec, fields: list[Field]) -> list[list[int]]:
    """Per page, the indexes of the fields drawn on it (the script re-renders only those)."""
    index = {field.key: position for position, field in enumerate(fields)}
    pages = []
    for page in spec.pages:
        used = {getattr(element, "data_key", None) for element in page.elements}
        pages.append(sorted(index[key] for key in used if key in index))
    for choice in spec.choices:
        for page_index in {page for page, _ in choice.targets}:
            if choice.key in index:
                pages[page_index] = sorted({*pages[page_index], index[choice.key]})
    return pages


# -- the ways back to the shop -----------------------------------------------------------


@dataclass(frozen=True)
class Exit:
    """A button back to the shop: ``href`` when it may be followed, else ``reason``."""

    name: str
    label: str
    href: str | None
    reason: str | None


def resolve_exits(
    *,
    signed: Mapping[str, str] | None,
    from_query: Mapping[str, str],
    base_url: str,
    allowed_origins: Iterable[str],
    t: Translator,
) -> dict[str, Exit]:
    """``callback``, ``callback_cancel`` and ``callback_halt``, each followed or explained.

    Callbacks that came inside the signed ``redirect`` claim (kept in the session) are
    trusted whatever their origin; otherwise the query's must be on an origin the client
    allowed. A parameter that is absent takes its default (``callback_cancel`` that of
    ``callback``, ``callback_halt`` that of ``callback_cancel``); a parameter that is
    present but refused does not fall back: the shop asked for that place, so the button
    says it cannot go there rather than silently going somewhere else (a cancel must never
    land on the shop's "add to cart" callback).
    """
    trusted = bool(signed)
    raw = dict(signed) if signed else dict(from_query)
    raw = {name: url for name, url in raw.items() if name in CALLBACK_PARAMS}
    vetted = vetted_callbacks(
        raw, base_url=base_url, allowed_origins=allowed_origins, signed=trusted
    )
    # (href, problem, target) per name; the label is added last, so defaults can share.
    chain: dict[str, tuple[str | None, str | None, str | None]] = {}
    previous: tuple[str | None, str | None, str | None] = (None, "leave.none", None)
    for name in CALLBACK_PARAMS:
        if name in raw:
            href = vetted.get(name)
            if href is not None:
                current: tuple[str | None, str | None, str | None] = (href, None, None)
            else:
                origin = origin_of(raw[name])
                current = (
                    (None, "leave.refused", origin)
                    if origin
                    else (
                        None,
                        "leave.invalid",
                        None,
                    )
                )
        else:
            current = previous
        chain[name] = previous = current
    exits = {}
    for name, (href, problem, target) in chain.items():
        label = t(EXIT_LABELS[name])
        reason = None if problem is None else t(problem, label=label, target=target)
        exits[name] = Exit(name=name, label=label, href=href, reason=reason)
    return exits


def form_action_origins(exits: Iterable[Exit]) -> list[str]:
    """Origins a form on the page may end up at: Chromium checks CSP ``form-action`` on the
    redirect after a POST, so the finish and halt callbacks' origins must be listed."""
    origins: list[str] = []
    for exit_ in exits:
        origin = origin_of(exit_.href) if exit_.href else None
        # Only plain origins reach the header: nothing that could end or extend a directive.
        if origin and _CSP_ORIGIN.fullmatch(origin) and origin not in origins:
            origins.append(origin)
    return origins


#: Drafts whose last visited step the session remembers. A customer works on the draft the
#: shop logged them in for and perhaps a few more; each remembered draft costs about 70
#: bytes of cookie, and browsers drop cookies over 4 KB, so the oldest are forgotten.
REMEMBERED_DRAFTS = 12


def remembered(
    editor: Mapping[str, Any], draft_hash: str, entry: Mapping[str, Any]
) -> dict[str, Any]:
    """The session's editor entries with ``entry`` for ``draft_hash``, newest last.

    Entries holding the login's grant (``callbacks`` from the signed ``redirect``; one per
    login) are always kept: forgetting them would take the shop's buttons away. Of the
    others, the :data:`REMEMBERED_DRAFTS` most recently changed stay.
    """
    kept = {key: value for key, value in editor.items() if key != draft_hash}
    kept[draft_hash] = dict(entry)
    plain = [key for key, value in kept.items() if not _holds_grant(value)]
    for key in plain[: max(0, len(plain) - REMEMBERED_DRAFTS)]:
        del kept[key]
    return kept


def _holds_grant(entry: Any) -> bool:
    return isinstance(entry, dict) and "callbacks" in entry
