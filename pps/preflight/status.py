"""What a preflight reports: findings, their severities and the draft's ``preflightStatus``.

The status values live in :data:`pps.platform.models.PREFLIGHT_STATUSES` (the API's schemas
document them from there):

====  ============  ===========================================================
 -1   not checked   the draft was never checked, or ``disablePreflight`` is set
  0   passed        nothing found
  1   warnings      only warnings (printable, but a print shop would ask)
  2   errors        at least one error (the print file is wrong or cannot be made)
====  ============  ===========================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pps.platform.models import (
    PREFLIGHT_ERRORS,
    PREFLIGHT_NOT_CHECKED,
    PREFLIGHT_PASSED,
    PREFLIGHT_STATUSES,
    PREFLIGHT_WARNINGS,
)

__all__ = [
    "ERRORS",
    "MIN_DPI",
    "NOT_CHECKED",
    "PASSED",
    "STATUS_NAMES",
    "WARNINGS",
    "Finding",
    "Severity",
    "status_of",
]

NOT_CHECKED = PREFLIGHT_NOT_CHECKED
PASSED = PREFLIGHT_PASSED
WARNINGS = PREFLIGHT_WARNINGS
ERRORS = PREFLIGHT_ERRORS
STATUS_NAMES = PREFLIGHT_STATUSES
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
    """ERRORS if any finding is an error, WARNINGS if any is a warning, else PASSED."""
    severities = {finding.severity for finding in findings}
    if "error" in severities:
        return ERRORS
    if "warning" in severities:
        return WARNINGS
    return PASSED
