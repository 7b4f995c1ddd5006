"""Whether a PDF is encrypted, in the words every upload of a PDF refuses it with.

A PDF encrypted with an empty user password opens without asking for one, so the
decoding checks pass it; but a print file must not carry encryption (a print shop's
tools may refuse it or its owner's restrictions), so uploads refuse both kinds alike.
"""

from __future__ import annotations

from io import BytesIO

import pikepdf

__all__ = ["ENCRYPTED", "LOCKED", "encryption_problem"]

#: The PDF opens without a password (an empty user password) but is encrypted.
ENCRYPTED = "The PDF is encrypted; upload it without encryption."
#: The PDF needs a password to open.
LOCKED = "The PDF is encrypted; upload it without a password."


def encryption_problem(data: bytes) -> str | None:
    """:data:`LOCKED` or :data:`ENCRYPTED` for an encrypted PDF, else None
    (a file that does not open as PDF is left to the checks that decode it)."""
    try:
        with pikepdf.open(BytesIO(data)) as pdf:
            return ENCRYPTED if pdf.is_encrypted else None
    except pikepdf.PasswordError:
        return LOCKED
    except (pikepdf.PikepdfError, ValueError, OSError):  # QpdfRuntimeError is no PdfError
        return None
