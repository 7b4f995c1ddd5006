"""gunicorn entry point of the naive ``/auth`` (bench/naive.py) for ``load.py --scenario naive``.

Configured from the environment that bench/load.py sets: the Redis URL, and the one client
identifier and API key its login tokens are signed with.
"""

from __future__ import annotations

import os

from naive import naive_app

app = naive_app(
    os.environ["NAIVE_REDIS_URL"], {os.environ["NAIVE_CLIENT"]: os.environ["NAIVE_API_KEY"]}
)
