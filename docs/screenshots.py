"""Redraw the README's editor pictures from a real run of the customer journey.

Runs ``tests/test_browser_journey.py`` (pps under gunicorn, the test's shop, Debian's
Chromium) with ``PPS_UPDATE_DOC_SCREENSHOTS=1``: at the step where the card shows the typed
name, the cropped logo and the picked colour, the test writes ``docs/img/editor-desktop.png``
(1280 x 900) and ``docs/img/editor-phone.png`` (390 x 844), the viewport only, PNG optimized
to stay under 250 KB each. Usage, from the checkout: ``.venv/bin/python docs/screenshots.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    started = time.time()
    env = {**os.environ, "PPS_UPDATE_DOC_SCREENSHOTS": "1"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_browser_journey.py",
        "-k",
        "whole_journey",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        return done.returncode
    for name in ("editor-desktop.png", "editor-phone.png"):
        path = ROOT / "docs" / "img" / name
        if not path.exists() or path.stat().st_mtime < started:
            print(f"{path.relative_to(ROOT)} was not written (was the test skipped?)")
            return 1
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
