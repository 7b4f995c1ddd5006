"""What the browser routes share: the app's services, reached through Flask's app context."""

from __future__ import annotations

from flask import current_app

from pps.services import Services


def services() -> Services:
    return current_app.extensions["pps"]  # type: ignore[no-any-return]
