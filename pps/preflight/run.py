"""Preflight of a draft record: which checks apply, and storing what they found. No Flask.

Run on every change a customer or shop makes (editor save and finish, API update,
upload); a new draft is -1 until its first change. ``disablePreflight`` on the draft skips
it (status -1, no results).
Checks are synchronous: a template's files are read from storage and images only
by their headers, so a check costs about what rendering one page's layout does.
"""

from __future__ import annotations

from pps.files.rendering import (
    StorageAssets,
    TemplateNotRenderable,
    decoded,
    draft_values,
    template_spec,
)
from pps.files.uploaded import uploaded_spec, uses_upload
from pps.platform.models import PREFLIGHT_NOT_CHECKED, Draft, JsonObject, Template
from pps.platform.repository import Repository
from pps.platform.storage import FileStorage
from pps.preflight.pdf import pdf_findings
from pps.preflight.status import Finding, status_of
from pps.preflight.template import check_template, check_values
from pps.render import RenderError
from pps.render.assets import AssetLoader
from pps.render.decode import DEFAULT_MAX_IMAGE_PIXELS
from pps.render.media import resolve
from pps.uploads.images import UploadedImages

__all__ = ["preflight_and_store", "preflight_draft"]


def preflight_draft(
    storage: FileStorage,
    draft: Draft,
    template: Template | None,
    *,
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
) -> tuple[int, list[JsonObject]]:
    """``(preflightStatus, validationResults)`` for the draft as it is now; an image with
    more than ``max_pixels`` (``PPS_MAX_IMAGE_PIXELS``) is an error, as it is to a render."""
    if draft.disable_preflight:
        return PREFLIGHT_NOT_CHECKED, []
    findings = _findings(storage, draft, template, max_pixels)
    return status_of(findings), [finding.as_json() for finding in findings]


def preflight_and_store(
    repository: Repository,
    storage: FileStorage,
    draft: Draft,
    *,
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
) -> Draft:
    """Check the draft, store the outcome for its version, and return it as stored."""
    template = repository.get_template(draft.client_identifier, draft.template_identifier)
    status, results = preflight_draft(storage, draft, template, max_pixels=max_pixels)
    if repository.set_preflight(
        draft.client_identifier, draft.draft_hash, draft.version, status, results
    ):
        return repository.get_draft(draft.client_identifier, draft.draft_hash) or draft
    return draft  # changed meanwhile: that change brings its own check


def _findings(
    storage: FileStorage, draft: Draft, template: Template | None, max_pixels: int
) -> list[Finding]:
    if template is None:
        return [Finding(1, "The draft's template no longer exists.", "error")]
    try:
        spec = template_spec(template, draft.variant_identifier)
    except TemplateNotRenderable as exc:
        return [Finding(1, str(exc), "error")]
    files: AssetLoader = UploadedImages(
        storage,
        draft.client_identifier,
        StorageAssets(storage, draft.client_identifier, template.identifier, max_pixels=max_pixels),
        max_pixels=max_pixels,
    )
    if draft.intent == "upload" and not uses_upload(draft):
        return [Finding(1, "No print PDF has been uploaded yet.", "error")]
    findings: list[Finding] = []
    if uses_upload(draft):
        assert draft.upload_key is not None
        data = storage.read(draft.upload_key)
        if data is None:
            return [Finding(1, "The uploaded PDF is missing from file storage.", "error")]
        findings += decoded(lambda: pdf_findings(data, spec))
        spec = uploaded_spec(spec, draft.intent, draft.upload_key)
    checked = spec
    try:
        # The customer's images (and chosen fonts) are checked as placed.
        findings += check_template(resolve(checked, draft_values(draft)), files)
        findings += decoded(lambda: check_values(checked, draft_values(draft), files))
    except RenderError as exc:  # a template font that cannot be read
        findings.append(Finding(1, f"The template cannot be checked: {exc}", "error"))
    return findings
