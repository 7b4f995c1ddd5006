"""Preflight: what a print shop checks before printing, reported on the draft. No Flask.

``preflightStatus`` and ``validationResults`` of a draft come from here:
:mod:`pps.preflight.status` (the status values and a finding's shape),
:mod:`pps.preflight.template` (a template's render model, values and files),
:mod:`pps.preflight.pdf` (a customer's own print PDF), :mod:`pps.preflight.run` (a draft).
"""

from __future__ import annotations

from pps.preflight.pdf import TOLERANCE_MM, AcceptedPdf, PdfRefused, accept_pdf
from pps.preflight.run import preflight_and_store, preflight_draft
from pps.preflight.status import (
    ERRORS,
    MIN_DPI,
    NOT_CHECKED,
    PASSED,
    STATUS_NAMES,
    WARNINGS,
    Finding,
    status_of,
)

__all__ = [
    "ERRORS",
    "MIN_DPI",
    "NOT_CHECKED",
    "PASSED",
    "STATUS_NAMES",
    "TOLERANCE_MM",
    "WARNINGS",
    "AcceptedPdf",
    "Finding",
    "PdfRefused",
    "accept_pdf",
    "preflight_and_store",
    "preflight_draft",
    "status_of",
]
