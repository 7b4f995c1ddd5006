"""The one module that builds the app: ``gunicorn wsgi:app``."""

from pps.app import create_app

app = create_app()
