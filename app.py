"""``flask --app app ...``: the application factory lives in :mod:`pps.app`."""

from pps.app import create_app_or_stop as create_app

__all__ = ["create_app"]
