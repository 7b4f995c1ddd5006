"""What deploy/gunicorn.conf.py does to each worker once its app is loaded."""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

from conftest import free_port, wait_for_port
from server_support import BIN, GUNICORN_CONF, ROOT, stop


def test_workers_freeze_the_loaded_app_out_of_the_collectors_sight(tmp_path: Path) -> None:
    """The ``post_worker_init`` hook calls ``gc.freeze()``: without it a full collection
    walks every object of the app, a pause of about 100 ms for every thread of the worker."""
    port = free_port()
    log = tmp_path / "gunicorn.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                str(BIN / "gunicorn"),
                "-c",
                str(GUNICORN_CONF),
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--pythonpath",
                str(ROOT / "tests"),
                "gc_probe_app:app",
            ],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_port(port, timeout=30)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            frozen = int(response.read())
    finally:
        stop(proc)
    assert frozen > 1000, log.read_text()
