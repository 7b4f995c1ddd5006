"""Deleting rendered files nobody can ask for any more. No Flask.

Rendered draft files hold what customers typed (names, phone numbers, e-mail addresses),
so they go with their draft: :func:`delete_draft_files` when the draft is deleted, and
:func:`sweep` (``pps files sweep``, run by ``deploy/pps-sweep.timer``) for the rest:

* files of drafts that no longer exist (a user deleted with their drafts, a render that
  finished after its draft was deleted), at once, their uploaded print PDFs included;
* files of older draft versions, once older than ``min_age`` (a link handed out for them
  stays valid ``PPS_FILE_LINK_TTL`` seconds);
* files of templates that no longer exist, and rendered template previews made from an
  older template or renderer version, once older than ``min_age`` (an import writes its
  files before the template's row).

A template's own files (assets, imported preview) are never touched while it exists.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pps.files.keys import draft_files_prefix
from pps.files.rendering import (
    TemplateNotRenderable,
    imported_preview_digest,
    template_preview_digest,
    template_spec,
)
from pps.files.uploaded import UPLOAD_FOLDER
from pps.platform.models import DraftRef, Template
from pps.platform.repository import Repository
from pps.platform.storage import FileStorage, ListedFile

__all__ = ["SweepReport", "delete_draft_files", "sweep"]

log = logging.getLogger(__name__)

_VERSION = re.compile(r"v([0-9]{1,18})(?:-[A-Za-z0-9_-]{1,64})?")  # keys.version_folder
_PREVIEW = re.compile(r"preview-p[0-9]+-[0-9]+x[0-9]+-([0-9a-f]{16})\.png")


def delete_draft_files(storage: FileStorage, client: str, draft_hash: str) -> int:
    """Delete every file rendered from the draft, of any version; how many there were."""
    return storage.delete_tree(draft_files_prefix(client, draft_hash))


@dataclass
class SweepReport:
    """What :func:`sweep` deleted, by reason, and how many files it kept."""

    deleted: dict[str, int] = field(default_factory=dict)
    kept: int = 0

    def count(self, reason: str) -> None:
        self.deleted[reason] = self.deleted.get(reason, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


def sweep(
    repository: Repository,
    storage: FileStorage,
    *,
    min_age: float,
    dry_run: bool = False,
    clock: Callable[[], float] = time.time,
) -> SweepReport:
    """Delete orphaned and outdated rendered files (see the module); a report of it."""
    report = SweepReport()
    cutoff = clock() - min_age
    drafts: dict[tuple[str, str], DraftRef | None] = {}
    for listed in storage.list_files("drafts"):
        reason = _draft_file_reason(repository, drafts, listed, cutoff)
        _settle(storage, listed, reason, report, dry_run)
    templates: dict[tuple[str, str], _TemplateState | None] = {}
    for listed in storage.list_files("templates"):
        reason = _template_file_reason(repository, storage, templates, listed, cutoff)
        _settle(storage, listed, reason, report, dry_run)
    return report


def _settle(
    storage: FileStorage, listed: ListedFile, reason: str | None, report: SweepReport, dry: bool
) -> None:
    if reason is None:
        report.kept += 1
        return
    report.count(reason)
    if not dry:
        storage.delete(listed.key)
        log.info("deleted %s (%s)", listed.key, reason)


def _draft_file_reason(
    repository: Repository,
    drafts: dict[tuple[str, str], DraftRef | None],
    listed: ListedFile,
    cutoff: float,
) -> str | None:
    """Why the draft file should go, or None to keep it."""
    parts = listed.key.split("/")
    if len(parts) != 5:  # drafts/<client>/<hash>/v<version>/<file>
        return None
    _, client, draft_hash, version_part, _ = parts
    version = _VERSION.fullmatch(version_part)
    if version is None and version_part != UPLOAD_FOLDER:
        return None
    if (client, draft_hash) not in drafts:
        drafts[client, draft_hash] = repository.get_draft_ref(client, draft_hash)
    ref = drafts[client, draft_hash]
    if ref is None:
        return "deleted draft"
    if version is None:  # the draft's uploaded print PDF
        return None
    if int(version.group(1)) < ref.version and listed.modified < cutoff:
        return "older draft version"
    return None


@dataclass(frozen=True)
class _TemplateState:
    template: Template
    digests: frozenset[str] | None
    """Digests of the template's current rendered previews; None when it cannot tell."""


def _template_file_reason(
    repository: Repository,
    storage: FileStorage,
    templates: dict[tuple[str, str], _TemplateState | None],
    listed: ListedFile,
    cutoff: float,
) -> str | None:
    parts = listed.key.split("/")
    if len(parts) < 4 or listed.modified >= cutoff:  # templates/<client>/<id>/<...>
        return None
    _, client, identifier = parts[:3]
    if (client, identifier) not in templates:
        templates[client, identifier] = _template_state(repository, storage, client, identifier)
    state = templates[client, identifier]
    if state is None:
        return "deleted template"
    if parts[3] != "rendered" or len(parts) != 5 or state.digests is None:
        return None
    preview = _PREVIEW.fullmatch(parts[4])
    if preview is not None and preview.group(1) not in state.digests:
        return "outdated template preview"
    return None


def _template_state(
    repository: Repository, storage: FileStorage, client: str, identifier: str
) -> _TemplateState | None:
    template = repository.get_template(client, identifier)
    if template is None:
        return None
    try:
        spec = template_spec(template)
    except TemplateNotRenderable:
        return _TemplateState(template, None)  # keep its pictures: nothing renders anew
    digests = {template_preview_digest(spec)}
    if template.preview_key:
        data = storage.read(template.preview_key)
        if data is not None:
            digests.add(imported_preview_digest(data))
    return _TemplateState(template, frozenset(digests))
