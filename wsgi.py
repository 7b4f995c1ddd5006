"""The one module that builds the app: ``gunicorn wsgi:app``."""

import sys

from pps.app import create_app
from pps.platform.settings import SettingsError

#: The exit status gunicorn reads as "the app cannot be loaded": it stops instead of
#: starting worker after worker; other servers just see a failure.
APP_LOAD_ERROR = 4

try:
    app = create_app()
except SettingsError as exc:  # one line naming the setting, not a traceback per worker
    print(f"pps: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(APP_LOAD_ERROR) from None
