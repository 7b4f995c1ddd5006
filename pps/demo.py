"""Demo data for ``pps demo`` (and so ``make run``): a client, templates, a user and a draft.

Idempotent: everything is made once and found again on later runs, also when two runs race
(the loser of a duplicate identifier reads the winner's row). Each run signs a new login
token, since every login token works only once. No Flask or click here: ``pps demo`` in
:mod:`pps.cli` prints what :func:`seed_demo` returns.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import jwt

from pps.auth.redirects import origin_of
from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository import DuplicateIdentifier, Repository
from pps.platform.settings import Settings
from pps.platform.storage import FileStorage
from pps.templates.files import TemplateFile, TemplateFileError, import_template, load_template_file

__all__ = [
    "DEMO_CLIENT",
    "DEMO_TEMPLATE_FILE",
    "EXAMPLES_DIR",
    "DemoData",
    "DemoError",
    "Example",
    "seed_demo",
]

DEMO_CLIENT = "DemoShop"
DEMO_CLIENT_NAME = "Demo shop"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "templates"
#: The demo draft's template: a card with pages, so the editor shows something to edit.
DEMO_TEMPLATE_FILE = EXAMPLES_DIR / "business-card" / "template.json"
DEMO_USER = {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.com"}
#: The demo draft's apiDefaultValues: those of these keys its template has.
DEMO_VALUES = {
    # examples/templates/business-card
    "name": "Ada Lovelace",
    "title": "Analyst Programmer",
    "phone": "+44 20 7946 0000",
    "email": "ada@example.com",
    "url": "https://example.com/ada",
    # the minimal demo-card.json and templates like it
    "firstName": "Ada",
    "lastName": "Lovelace",
    "jobTitle": "Analyst",
}
#: How long the printed demo login URL stays valid.
DEMO_LOGIN_TTL = 24 * 3600
#: A folder name that may serve as a template identifier (as ``pps client create`` allows).
_FOLDER_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,64}")


class DemoError(Exception):
    """The demo data could not be made; the message says what to do."""


@dataclass(frozen=True)
class Example:
    template: Template
    new: bool  # imported by this run


@dataclass(frozen=True)
class DemoData:
    client: Client
    template: Template
    examples: list[Example]
    user: User
    draft: Draft
    login_url: str
    expires_at: datetime
    #: Lines about example files that were skipped, for the operator.
    warnings: list[str]


def seed_demo(
    repository: Repository,
    storage: FileStorage,
    settings: Settings,
    spec: TemplateFile,
    examples_dir: Path,
) -> DemoData:
    """Make sure the demo data exists (``spec`` is the demo draft's template) and sign a
    fresh, single-use login URL for its draft."""
    warnings: list[str] = []
    client = _demo_client(repository, settings)
    # Examples first, so the demo template counts as imported now when it is one of them.
    examples = _demo_examples(repository, storage, client, examples_dir, warnings)
    template = _demo_template(repository, storage, client, spec)
    user, draft = _demo_user_and_draft(repository, client, template)
    now = int(time.time())
    expires = now + DEMO_LOGIN_TTL
    return DemoData(
        client=client,
        template=template,
        examples=examples,
        user=user,
        draft=draft,
        login_url=_login_url(settings, client, user, draft, now, expires),
        expires_at=datetime.fromtimestamp(expires, UTC),
        warnings=warnings,
    )


def _login_url(
    settings: Settings, client: Client, user: User, draft: Draft, now: int, expires: int
) -> str:
    # Finish and Cancel come back to this service's home page, standing in for the shop.
    callbacks = {
        name: base64.b64encode(f"{settings.base_url}/?returned={step}".encode()).decode()
        for name, step in (("callback", "finished"), ("callback_cancel", "cancelled"))
    }
    redirect = f"{settings.base_url}/editor/{draft.draft_hash}/edit?{urlencode(callbacks)}"
    token = jwt.encode(
        {
            "client": client.identifier,
            "user": user.identifier,
            "redirect": redirect,
            "iat": now,
            "exp": expires,
        },
        client.api_key,
        algorithm="HS256",
        # The reference product documents jti in the JOSE header; a fresh one per run.
        headers={"jti": secrets.token_urlsafe(16)},
    )
    return f"{settings.base_url}/auth?jwt={token}"


def _demo_client(repository: Repository, settings: Settings) -> Client:
    client = repository.get_client(DEMO_CLIENT)
    if client is not None:
        return client
    # Settings guarantee an http(s) base URL; it may carry a path, an origin does not.
    origin = origin_of(settings.base_url)
    try:
        return repository.create_client(
            DEMO_CLIENT_NAME, identifier=DEMO_CLIENT, allowed_origins=[origin] if origin else []
        )
    except DuplicateIdentifier:  # another 'pps demo' got there first
        client = repository.get_client(DEMO_CLIENT)
        assert client is not None
        return client


def _demo_template(
    repository: Repository, storage: FileStorage, client: Client, spec: TemplateFile
) -> Template:
    if spec.identifier is not None:
        existing = repository.get_template(client.identifier, spec.identifier)
        if existing is not None:
            return existing
    try:
        return import_template(repository, storage, client.identifier, spec)
    except DuplicateIdentifier:  # another 'pps demo' got there first
        assert spec.identifier is not None
        existing = repository.get_template(client.identifier, spec.identifier)
        assert existing is not None
        return existing


def _demo_examples(
    repository: Repository,
    storage: FileStorage,
    client: Client,
    directory: Path,
    warnings: list[str],
) -> list[Example]:
    """Import every ``<name>/template.json`` below ``directory``.

    Idempotent: an identifier the client has already is skipped. A file without an
    identifier gets its folder's name, so running again finds it. A broken example is
    reported in ``warnings`` and skipped rather than keeping the demo from starting.
    """
    results: list[Example] = []
    for path in sorted(directory.glob("*/template.json")):
        try:
            spec = load_template_file(path)
        except TemplateFileError as exc:
            warnings.append(f"Warning: example {path} was not imported:")
            warnings.extend(f"  {error}" for error in exc.errors)
            continue
        if spec.identifier is None:
            if not _FOLDER_IDENTIFIER.fullmatch(path.parent.name):
                warnings.append(f"Warning: example {path} needs an identifier; skipped.")
                continue
            spec = dataclasses.replace(spec, identifier=path.parent.name)
        assert spec.identifier is not None
        existing = repository.get_template(client.identifier, spec.identifier)
        if existing is not None:
            results.append(Example(existing, new=False))
            continue
        try:
            results.append(
                Example(import_template(repository, storage, client.identifier, spec), new=True)
            )
        except DuplicateIdentifier:  # another 'pps demo' got there first
            existing = repository.get_template(client.identifier, spec.identifier)
            assert existing is not None
            results.append(Example(existing, new=False))
    return results


def _demo_user_and_draft(
    repository: Repository, client: Client, template: Template
) -> tuple[User, Draft]:
    """The demo draft on ``template`` and its user, made when missing.

    Demo drafts carry the custom attribute ``demo``. The user of an earlier demo draft on
    another template (DemoCard, before the business card) gets a new draft on this one.
    """
    demo_user: User | None = None
    for draft in _demo_drafts(repository, client):
        user = repository.get_user(client.identifier, draft.user_identifier)
        if user is None:
            continue
        if draft.template_identifier == template.identifier:
            return user, draft
        demo_user = demo_user or user
    if demo_user is None:
        demo_user = repository.create_user(client.identifier, {**DEMO_USER, "locale": "en"})
    values = {key: value for key, value in DEMO_VALUES.items() if key in template.data_keys}
    new_draft = repository.create_draft(
        client.identifier,
        user_identifier=demo_user.identifier,
        template_identifier=template.identifier,
        intent="customize",
        api_default_values=values,
        custom_attributes={"demo": True},
    )
    if new_draft is None:  # the user or the template was deleted meanwhile
        raise DemoError("The demo data changed while it was made; run 'pps demo' again.")
    return demo_user, new_draft


def _demo_drafts(repository: Repository, client: Client) -> list[Draft]:
    """Every draft of the client marked ``demo``, oldest first."""
    found: list[Draft] = []
    page = 1
    while True:
        listed = repository.list_drafts(client.identifier, page=page, per_page=100)
        found += [draft for draft in listed.items if draft.custom_attributes.get("demo") is True]
        if page >= listed.last_page:
            return found
        page += 1
