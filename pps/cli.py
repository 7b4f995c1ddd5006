"""Operator commands: ``pps ...`` and ``flask --app app pps ...``.

Both entry points share one command tree. The commands are :class:`flask.cli.AppGroup`
commands, so each runs inside an app context: under ``flask`` the app comes from
``--app``, under the ``pps`` console script (:mod:`pps.__main__`) from
:func:`pps.app.create_app` (settings from the environment). Commands reach repository and
storage through ``current_app.extensions``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import alembic.util
import click
import sqlalchemy as sa
from flask import current_app
from flask.cli import AppGroup

from pps.auth.redirects import origin_of
from pps.clients.cli import (
    client_allow_host,
    client_proof_approval,
    client_rotate_webhook_secret,
    client_set_acl_url,
)
from pps.demo import DEMO_TEMPLATE_FILE, EXAMPLES_DIR, DemoError, seed_demo
from pps.files.sweep_cli import files_group
from pps.platform.models import Client, Template
from pps.platform.repository import DuplicateIdentifier
from pps.platform.repository.retention import prune
from pps.platform.repository.sql import database_revision, revision_known, upgrade_database
from pps.platform.services import Services
from pps.platform.storable_text import text_problem
from pps.processing.cli import worker
from pps.templates.files import (
    TemplateFileError,
    UnknownClient,
    import_template,
    load_template_file,
)

__all__ = ["pps_group"]

_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MAX_NAME = 200
#: Format characters that words of some scripts (Persian, Indic) and emoji need.
_JOINERS = frozenset("\u200c\u200d")


class PpsGroup(AppGroup):
    """An :class:`AppGroup` that reports database failures as one readable line, and
    refuses arguments that are not text before any command sees them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Bytes that are not UTF-8 reach Python as lone surrogates, which no name, key or
        # identifier can hold: stored or printed they failed with a traceback.
        for arg in args:
            if text_problem(arg) is not None:
                raise click.UsageError(
                    f"the argument {arg.encode('utf-8', 'backslashreplace').decode()!r} is "
                    "not valid UTF-8 text"
                )
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except sa.exc.DatabaseError as exc:
            # The usual causes: a wrong PPS_DATABASE_URL (a file that is no database), or
            # migrations not applied yet.
            raise click.ClickException(
                f"database error: {str(exc.orig).strip() or type(exc.orig).__name__}\n"
                "Check PPS_DATABASE_URL and run 'pps db upgrade'."
            ) from exc


@click.group("pps", cls=PpsGroup)
def pps_group() -> None:
    """Operate pps: the database, clients, templates and demo data."""


def _services() -> Services:
    services: Services = current_app.extensions["pps"]
    return services


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def _timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    for row in (headers, *rows):
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def _check_identifier(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> str | None:
    # Identifiers end up in Redis keys and storage paths, so only a safe alphabet is allowed.
    if value is not None and not _IDENTIFIER.fullmatch(value):
        raise click.BadParameter("use 1 to 64 letters, digits, '-' or '_'")
    return value


def _check_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    value = value.strip()
    if not value:
        raise click.BadParameter("must not be empty")
    if len(value) > _MAX_NAME:
        raise click.BadParameter(f"must be at most {_MAX_NAME} characters")
    if any(
        unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") and char not in _JOINERS
        for char in value
    ):
        # A line break in a name drew a forged row into 'pps client list'.
        raise click.BadParameter("must not contain line breaks or other control characters")
    return value


def normalise_origin(value: str) -> str:
    """``scheme://host[:port]`` of an http(s) origin, lowercased, default port dropped.

    Raises :class:`ValueError` for anything that is not exactly an origin: a browser's
    ``Origin`` header never has a path, query or user info, so neither may this.
    """
    origin = origin_of(value)
    if origin is None:
        raise ValueError("must be an http or https origin like https://shop.example[:port]")
    parts = urlsplit(value)
    if parts.path not in ("", "/") or "?" in value or "#" in value:
        raise ValueError(f"must be an origin without a path, query or fragment, like {origin}")
    return origin


def _check_origins(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    origins: list[str] = []
    for value in values:
        try:
            origin = normalise_origin(value)
        except ValueError as exc:
            raise click.BadParameter(f"{value!r} {exc}") from None
        if origin not in origins:
            origins.append(origin)
    return tuple(origins)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


# -- db ----------------------------------------------------------------------------------


@pps_group.group("db")
def db_group() -> None:
    """The database schema."""


@db_group.command("upgrade")
@click.argument("revision", default="head")
def db_upgrade(revision: str) -> None:
    """Apply the migrations (to the newest revision unless REVISION is given)."""
    if not revision.strip():
        raise click.BadParameter("must not be empty", param_hint="REVISION")
    url = _services().settings.resolved_database_url
    try:
        upgrade_database(url, revision)
    except alembic.util.CommandError as exc:
        if revision_known(revision):  # then it is the database's revision pps does not know
            raise click.ClickException(
                f"cannot upgrade the database: {exc} (was it migrated by a newer pps?)"
            ) from None
        raise click.BadParameter(str(exc), param_hint="REVISION") from None
    shown = sa.engine.make_url(url).render_as_string(hide_password=True)
    click.echo(f"Database {shown} is at revision {database_revision(url)}.")


@db_group.command("prune")
def db_prune() -> None:
    """Delete finished batch processings and spent notification keys older than
    PPS_PROCESSING_RETENTION (0 keeps everything).

    ``pps worker`` does this hourly on its own; the hourly ``deploy/pps-sweep.timer`` runs
    it too, for installations without Redis, whose batches run in the app and have no worker.
    """
    retention = _services().settings.processing_retention
    if retention <= 0:
        click.echo("PPS_PROCESSING_RETENTION is 0: every record is kept.")
        return
    pruned = prune(current_app.extensions["pps"].repository.engine, retention)
    click.echo(
        f"Deleted {pruned.processings} finished processings and "
        f"{pruned.notification_keys} spent notification keys."
    )


# -- clients -----------------------------------------------------------------------------


@pps_group.group("client")
def client_group() -> None:
    """Clients: the shops that use pps, each with its API key."""


def _client_json(client: Client) -> dict[str, Any]:
    return {
        "identifier": client.identifier,
        "name": client.name,
        "createdAt": _timestamp(client.created_at),
        "allowedOrigins": list(client.allowed_origins),
        "active": client.active,
    }


@client_group.command("create")
@click.option("--name", required=True, callback=_check_name, help="Shown to operators.")
@click.option(
    "--identifier", callback=_check_identifier, help="Default: 8 random letters and digits."
)
@click.option(
    "--allow-origin",
    "allowed_origins",
    multiple=True,
    callback=_check_origins,
    metavar="URL",
    help="Origin (scheme://host[:port]) the shop's pages are served from. Repeatable.",
)
@json_option
def client_create(
    name: str, identifier: str | None, allowed_origins: tuple[str, ...], as_json: bool
) -> None:
    """Create a client and print its identifier and API key."""
    try:
        client = _services().repository.create_client(
            name, identifier=identifier, allowed_origins=allowed_origins
        )
    except DuplicateIdentifier:
        raise click.ClickException(
            f"a client with identifier {identifier!r} exists already"
        ) from None
    if as_json:
        _echo_json({"identifier": client.identifier, "apiKey": client.api_key})
        return
    click.echo(f"Created client {client.identifier} ({client.name}).")
    click.echo(f"identifier: {client.identifier}")
    click.echo(f"API key:    {client.api_key}")
    click.echo("Keep the key secret: it signs the shop's login tokens.")


@client_group.command("list")
@json_option
def client_list(as_json: bool) -> None:
    """List every client (API keys are not shown; see 'rotate-key')."""
    clients = _services().repository.list_clients()
    if as_json:
        _echo_json([_client_json(client) for client in clients])
        return
    rows = [
        (
            client.identifier + ("" if client.active else " (disabled)"),
            client.name,
            client.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            " ".join(client.allowed_origins) or "-",
        )
        for client in clients
    ]
    _table(("IDENTIFIER", "NAME", "CREATED", "ALLOWED ORIGINS"), rows)


@client_group.command("rotate-key")
@click.argument("identifier")
@json_option
def client_rotate_key(identifier: str, as_json: bool) -> None:
    """Give a client a new API key; the old one stops working."""
    client = _services().repository.rotate_api_key(identifier)
    if client is None:
        raise click.ClickException(f"no client {identifier!r}; see 'pps client list'")
    if as_json:
        _echo_json({"identifier": client.identifier, "apiKey": client.api_key})
        return
    click.echo(f"New API key of {client.identifier}: {client.api_key}")
    ttl = _services().settings.client_cache_ttl
    click.echo(f"The old key stops working within {ttl:g} s (PPS_CLIENT_CACHE_TTL).")


client_group.add_command(client_set_acl_url)
client_group.add_command(client_allow_host)
client_group.add_command(client_rotate_webhook_secret)
client_group.add_command(client_proof_approval)


# -- templates ---------------------------------------------------------------------------


@pps_group.group("template")
def template_group() -> None:
    """Templates: the masters a shop's drafts are made from."""


@template_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--client", "client_id", required=True, help="Identifier of the owning client.")
@json_option
def template_import(file: Path, client_id: str, as_json: bool) -> None:
    """Import a template file (JSON; see pps/templates/files.py) for a client.

    Every problem in the file is reported with its path; nothing is imported then.
    """
    ctx = click.get_current_context()
    services = _services()
    try:
        spec = load_template_file(file, max_image_pixels=services.settings.max_image_pixels)
    except TemplateFileError as exc:
        click.echo(
            f"Error: {exc.source} is not a valid template file; nothing was imported:", err=True
        )
        for error in exc.errors:
            click.echo(f"  {error}", err=True)
        ctx.exit(1)
    try:
        template = import_template(services.repository, services.storage, client_id, spec)
    except (UnknownClient, DuplicateIdentifier) as exc:
        raise click.ClickException(f"{exc}; nothing was imported") from None
    except OSError as exc:  # file storage full or not writable; the import rolled back
        raise click.ClickException(
            f"cannot store the template's files: {exc}; nothing was imported"
        ) from None
    if as_json:
        _echo_json({"identifier": template.identifier})
        return
    files = f" with {_plural(len(spec.assets), 'file')}" if spec.assets else ""
    click.echo(
        f"Imported template {template.identifier} ({template.name}) for client {client_id}{files}."
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _template_json(template: Template) -> dict[str, Any]:
    return {
        "client": template.client_identifier,
        "identifier": template.identifier,
        "name": template.name,
        "pageCount": template.page_count,
        "dataKeys": list(template.data_keys),
        "customAttributes": template.custom_attributes,
        "hasPreview": template.preview_key is not None,
        "updatedAt": _timestamp(template.updated_at),
    }


@template_group.command("list")
@click.option("--client", "client_id", help="Only this client's templates.")
@json_option
def template_list(client_id: str | None, as_json: bool) -> None:
    """List templates, of one client or of all."""
    repository = _services().repository
    if client_id is not None and repository.get_client(client_id) is None:
        raise click.ClickException(f"no client {client_id!r}; see 'pps client list'")
    templates = repository.list_templates(client_id).items
    if as_json:
        _echo_json([_template_json(template) for template in templates])
        return
    rows = [
        (
            template.client_identifier,
            template.identifier,
            template.name,
            str(template.page_count),
            ", ".join(template.data_keys) or "-",
        )
        for template in templates
    ]
    _table(("CLIENT", "IDENTIFIER", "NAME", "PAGES", "DATA KEYS"), rows)


# -- demo --------------------------------------------------------------------------------


def _check_examples_dir(examples_dir: Path) -> None:
    """An ``--examples`` folder given on the command line must hold examples: a typo would
    otherwise import nothing without a word. The default folder ships with the repository
    only, so an installed package runs the demo without it."""
    source = click.get_current_context().get_parameter_source("examples_dir")
    if source is not click.core.ParameterSource.COMMANDLINE:
        return
    if not any(examples_dir.glob("*/template.json")):
        raise click.BadParameter(
            f"{examples_dir} holds no <name>/template.json file.", param_hint="'--examples'"
        )


@pps_group.command("demo")
@click.option(
    "--template",
    "template_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEMO_TEMPLATE_FILE,
    show_default=True,
    help="Template file of the demo draft's template (imported unless the client has it).",
)
@click.option(
    "--examples",
    "examples_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=EXAMPLES_DIR,
    show_default=True,
    help="Folder whose <name>/template.json files are imported for the demo client too.",
)
@json_option
def demo(template_file: Path, examples_dir: Path, as_json: bool) -> None:
    """Make sure demo data exists and print a fresh, single-use login URL.

    Creates (once) client DemoShop, imports the example templates (those already there are
    skipped) and the demo template (the business card example), and creates a user and a
    draft on the demo template; running it again reuses them all. Each run prints a new
    login URL, since every login token works only once.
    """
    _check_examples_dir(examples_dir)
    try:
        spec = load_template_file(template_file)
    except TemplateFileError as exc:
        raise click.ClickException(str(exc)) from None
    services = _services()
    try:
        data = seed_demo(
            services.repository, services.storage, services.settings, spec, examples_dir
        )
    except DemoError as exc:
        raise click.ClickException(str(exc)) from None
    for line in data.warnings:
        click.echo(line, err=True)
    client, template, examples = data.client, data.template, data.examples
    expires_at = _timestamp(data.expires_at)
    if as_json:
        _echo_json(
            {
                "client": client.identifier,
                "apiKey": client.api_key,
                "template": template.identifier,
                "examples": [
                    {
                        "identifier": example.template.identifier,
                        "name": example.template.name,
                        "pageCount": example.template.page_count,
                        "new": example.new,
                    }
                    for example in examples
                ],
                "user": data.user.identifier,
                "draft": data.draft.draft_hash,
                "loginUrl": data.login_url,
                "expiresAt": expires_at,
            }
        )
        return
    if not client.active:
        click.echo(
            f"Warning: client {client.identifier} is disabled; its key is refused.", err=True
        )
    click.echo("Demo data is ready (running 'pps demo' again reuses it):")
    click.echo(f"  client    {client.identifier} ({client.name})")
    click.echo(f"  API key   {client.api_key}")
    click.echo(f"  template  {template.identifier} ({template.name})")
    click.echo(f"  user      {data.user.identifier}")
    click.echo(f"  draft     {data.draft.draft_hash}")
    if examples:
        click.echo("")
        click.echo(f"Example templates of {client.identifier} (from {examples_dir}):")
        rows = [
            (
                example.template.identifier,
                example.template.name,
                _plural(example.template.page_count, "page"),
                "imported now" if example.new else "",
            )
            for example in examples
        ]
        width = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            cells = [cell.ljust(width[i]) for i, cell in enumerate(row[:3])]
            click.echo(("  " + "  ".join(cells) + "  " + row[3]).rstrip())
    click.echo("")
    click.echo(
        f"Open this URL to log in as the demo user and edit the draft. It works ONCE and "
        f"until {expires_at}; run 'pps demo' again for a fresh one:"
    )
    click.echo(f"  {data.login_url}")


pps_group.add_command(worker)  # pps worker: batch print-file jobs (pps/processing/cli.py)
pps_group.add_command(files_group)  # pps files sweep (pps/files/sweep_cli.py)
