"""Preflight: what a print shop checks before printing, reported on the draft. No Flask.

``preflightStatus`` and ``validationResults`` of a draft come from here:
:mod:`pps.preflight.status` (a finding's shape and the status it gives; the status values
are ``PREFLIGHT_*`` in :mod:`pps.platform.models`),
:mod:`pps.preflight.template` (a template's render model, values and files),
:mod:`pps.preflight.pdf` (a customer's own print PDF), :mod:`pps.preflight.run` (a draft).
"""

from __future__ import annotations

from pps.preflight.pdf import TOLERANCE_MM, AcceptedPdf, PdfRefused, accept_pdf
from pps.preflight.run import preflight_and_store, preflight_draft
from pps.preflight.status import MIN_DPI, Finding, status_of

__all__ = [
    "MIN_DPI",
    "TOLERANCE_MM",
    "AcceptedPdf",
    "Finding",
    "PdfRefused",
    "accept_pdf",
    "preflight_and_store",
    "preflight_draft",
    "status_of",
]
