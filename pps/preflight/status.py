"""What a preflight reports: findings, their severities and the draft's ``preflightStatus``.

The status values live in :mod:`pps.platform.models` (``PREFLIGHT_*`` and
``PREFLIGHT_STATUSES``; the API's schemas document them from there):

====  ============  ===========================================================
 -1   not checked   the draft was never checked, or ``disablePreflight`` is set
  0   ok            nothing found
  1   warnings      only warnings (printable, but a print shop would ask)
  2   errors        at least one error (the print file is wrong or cannot be made)
====  ============  ===========================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pps.platform.models import PREFLIGHT_ERRORS, PREFLIGHT_OK, PREFLIGHT_WARNINGS

__all__ = ["MIN_DPI", "Finding", "Severity", "status_of"]

#: Images print sharp from this resolution at their placed size; below it is a warning.
MIN_DPI = 300

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem: on ``page`` (counted from 1) of record ``row`` (None: every record)."""

    page: int
    message: str
    severity: Severity
    row: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The SDK's ``ValidationResult``: ``{row, page, message, severity}``."""
        return {
            "row": self.row,
            "page": self.page,
            "message": self.message,
            "severity": self.severity,
        }


def status_of(findings: Iterable[Finding]) -> int:
    """PREFLIGHT_ERRORS if any finding is an error, PREFLIGHT_WARNINGS if any is a warning,
    else PREFLIGHT_OK."""
    severities = {finding.severity for finding in findings}
    if "error" in severities:
        return PREFLIGHT_ERRORS
    if "warning" in severities:
        return PREFLIGHT_WARNINGS
    return PREFLIGHT_OK
