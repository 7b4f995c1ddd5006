"""What deploy/gunicorn.conf.py does to each worker once its app is loaded."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

from conftest import free_port
from server_support import ROOT, start_gunicorn, stop


def test_workers_freeze_the_loaded_app_out_of_the_collectors_sight(tmp_path: Path) -> None:
    """The ``post_worker_init`` hook calls ``gc.freeze()``: without it a full collection
    walks every object of the app, a pause of about 100 ms for every thread of the worker."""
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {key: value for key, value in os.environ.items() if not key.startswith("PPS_")}
    env["PPS_BIND"] = f"127.0.0.1:{port}"
    proc = start_gunicorn(
        env,
        port,
        log,
        "--workers",
        "1",
        "--pythonpath",
        str(ROOT / "tests"),
        app="gc_probe_app:app",
    )
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            frozen = int(response.read())
    finally:
        stop(proc)
    assert frozen > 1000, log.read_text()
