"""``flask --app app ...``: the application factory lives in :mod:`pps.app`."""

from collections.abc import Mapping
from typing import Any

import click
from flask import Flask

from pps.app import create_app as build_app
from pps.platform.settings import SettingsError

__all__ = ["create_app"]


class SettingsStop(SettingsError, click.ClickException):
    """A :class:`SettingsError` that click prints as one line (flask printed a traceback);
    callers in Python still catch it as a SettingsError."""

    def __init__(self, message: str) -> None:
        click.ClickException.__init__(self, message)


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """:func:`pps.app.create_app`, stopping ``flask --app app`` with one line on a bad
    setting."""
    try:
        return build_app(config)
    except SettingsError as exc:
        raise SettingsStop(str(exc)) from None
