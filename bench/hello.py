"""The baseline: the smallest Flask app, served under the same gunicorn config as pps.

``gunicorn -c deploy/gunicorn.conf.py --pythonpath bench hello:app``
"""

from flask import Flask

app = Flask(__name__)


@app.get("/")
def index() -> str:
    return "Hello, World!"
