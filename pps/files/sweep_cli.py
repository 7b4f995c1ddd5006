"""``pps files sweep``: delete rendered files of deleted drafts and templates, and outdated ones.

Run by ``deploy/pps-sweep.timer`` (hourly); safe to run at any time and on any host that
sees the database and file storage. See :mod:`pps.files.sweep` for what goes.
"""

from __future__ import annotations

import json

import click
from flask import current_app
from flask.cli import AppGroup

from pps.files.sweep import sweep
from pps.platform.services import Services

__all__ = ["DEFAULT_MIN_AGE", "files_group"]

#: Seconds an outdated file is kept: far longer than a file link lives (PPS_FILE_LINK_TTL).
DEFAULT_MIN_AGE = 3600

files_group = AppGroup("files", help="Stored files: template files and rendered files.")


@files_group.command("sweep")
@click.option(
    "--min-age",
    type=click.IntRange(min=0),
    default=DEFAULT_MIN_AGE,
    show_default=True,
    help="Seconds an outdated file is kept (never less than PPS_FILE_LINK_TTL). "
    "Files of deleted drafts go whatever their age.",
)
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def files_sweep(min_age: int, dry_run: bool, as_json: bool) -> None:
    """Delete rendered files nobody can ask for any more (see pps/files/sweep.py)."""
    services: Services = current_app.extensions["pps"]
    # A link handed out for an outdated file must keep working until it expires.
    min_age = max(min_age, services.settings.file_link_ttl)
    report = sweep(services.repository, services.storage, min_age=min_age, dry_run=dry_run)
    if as_json:
        click.echo(
            json.dumps(
                {"deleted": report.deleted, "kept": report.kept, "dryRun": dry_run}, indent=2
            )
        )
        return
    verb = "Would delete" if dry_run else "Deleted"
    reasons = ", ".join(f"{count} ({reason})" for reason, count in sorted(report.deleted.items()))
    click.echo(
        f"{verb} {report.total} file(s){': ' + reasons if reasons else ''}; kept {report.kept}."
    )
