"""The ``pps`` console script (also ``python -m pps``): the operator commands of
:mod:`pps.cli` on an app built from the environment.

Kept apart from :mod:`pps.cli` because the app registers those commands on itself
(``flask --app app pps ...``): the factory imports the commands, and only this entry point
imports both.
"""

from __future__ import annotations

import click
from flask import Flask
from flask.cli import ScriptInfo

from pps.app import create_app
from pps.cli import pps_group
from pps.platform.settings import SettingsError

__all__ = ["main"]


def main() -> None:
    """Run the ``pps`` command group on an app built from the ``PPS_*`` environment."""

    def build() -> Flask:
        try:
            return create_app()
        except SettingsError as exc:  # a readable line instead of a traceback
            raise click.ClickException(str(exc)) from None

    pps_group.main(prog_name="pps", obj=ScriptInfo(create_app=build, set_debug_flag=False))


if __name__ == "__main__":
    main()
