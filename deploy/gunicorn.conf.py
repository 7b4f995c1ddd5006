"""gunicorn settings for pps: ``gunicorn -c deploy/gunicorn.conf.py wsgi:app``.

Every value can be changed from the environment without editing this file:

| variable | default | meaning |
|---|---|---|
| PPS_BIND | 127.0.0.1:8000 | address to listen on (comma-separated for several) |
| PPS_WORKERS | 2 x CPUs + 1, at most 8 | worker processes |
| PPS_THREADS | 4 | threads per worker |
| PPS_TIMEOUT | 30 | seconds a request may take before its worker is restarted |
| PPS_ACCESS_LOG | - (stdout) | access log file; empty for none |
| PPS_FORWARDED_ALLOW_IPS | 127.0.0.1,::1 | proxies whose X-Forwarded-* headers are trusted |
| PPS_LOG_LEVEL | info | gunicorn log level |

The load benchmark runs pps and a hello-world app under this same file, so whatever is
chosen here is what the ratios measure.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import sys
from typing import Any

from gunicorn.glogging import Logger
from gunicorn.util import parse_address
from gunicorn.workers.gthread import ThreadWorker

# Each worker opens its own database pool and Redis connection: nothing may be shared
# across fork, so the app is built in each worker, not in the arbiter.
preload_app = False
wsgi_app = "wsgi:app"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use (containers)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _int(name: str, default: int, most: int, least: int = 1) -> int:
    """A whole number from the environment, or a one-line stop naming the variable: a
    traceback before, and ``PPS_WORKERS=0`` started a server that listened with no worker
    to answer. ``most`` stops a typo's extra digits: ``PPS_WORKERS=40000`` forked that many
    processes."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = least - 1
    if value < least:
        raise SystemExit(f"pps: {name} must be a whole number of at least {least}, got {raw!r}")
    if value > most:
        raise SystemExit(f"pps: {name} must be at most {most}, got {raw!r}")
    return value


def _binds() -> list[str]:
    """``PPS_BIND``'s addresses; empty (``PPS_BIND=`` in an env file) is the default, as for
    the other settings: gunicorn read an empty address as 0.0.0.0:8000, every interface."""
    raw = os.environ.get("PPS_BIND", "")
    addresses = [address.strip() for address in raw.split(",") if address.strip()]
    for address in addresses:
        # A port out of range passed gunicorn's own check and killed its master with a
        # traceback (OverflowError) when it bound.
        try:
            parsed = parse_address(address)
        except RuntimeError as exc:
            raise SystemExit(f"pps: PPS_BIND cannot be used: {exc}") from None
        if isinstance(parsed, tuple) and not 0 <= parsed[1] <= 65535:
            raise SystemExit(f"pps: PPS_BIND must name ports from 0 to 65535, got {address!r}")
    return addresses or ["127.0.0.1:8000"]


bind = _binds()


class _CapturedPage:
    """Stands in for the client's socket while gunicorn writes its error page."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0

    def sendall(self, data: bytes) -> None:
        self.data += data


# What a pps error says for the statuses gunicorn answers itself; the same words as nginx's
# pages (deploy/nginx.conf) where both can refuse the same request.
_MESSAGES = {
    400: "The request is malformed.",
    403: "The request is forbidden.",
    414: "The request URL is too long.",
    417: "The request's Expect header cannot be met.",
    431: "A request header is too large.",
    500: "Internal error.",
    501: "This request framing is not supported.",
}


def _status_of(page: bytes) -> tuple[int, str]:
    """The status and reason of gunicorn's page (``HTTP/1.1 400 Bad Request``); 500 when
    none can be read from it."""
    parts = page.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return int(parts[1]), parts[2]
    return 500, "Internal Server Error"


class _JsonErrorsWorker(ThreadWorker):
    """gthread, with pps's JSON error body on the requests gunicorn refuses itself.

    nginx passes on requests gunicorn refuses (RFC 9110/9112): a control character in a
    header value, Content-Type twice, a method shorter than 3 or longer than 20 letters.
    gunicorn answered them with an HTML page, which shop clients cannot read (they read
    ``message``). Its status stays; its text, which may quote the request, is not sent.
    """

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        page = _CapturedPage()
        super().handle_error(req, page, addr, exc)  # gunicorn's status and its log lines
        status, reason = _status_of(page.data)
        body = json.dumps({"message": _MESSAGES.get(status, f"{reason}."), "success": False})
        answer = (
            f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        )
        try:
            client.sendall(answer.encode("latin-1"))
        except OSError:
            self.log.debug("Failed to send error message.")


# gthread rather than sync: requests mostly wait on PostgreSQL, Redis or the disk, and a
# few threads per worker overlap those waits at the cost of little memory. gthread also
# keeps idle keep-alive connections from nginx in its poller instead of tying up a worker
# (sync workers close every connection after one response). The cap keeps the number of
# database connections (up to one per busy thread) well below PostgreSQL's default 100;
# raise PPS_WORKERS on larger hosts or behind PgBouncer.
worker_class = _JsonErrorsWorker  # gthread, with JSON error pages
# At most 256 workers (2 x CPUs + 1 of a 128-CPU host), each a whole app with its own pools.
workers = _int("PPS_WORKERS", min(2 * _cpus() + 1, 8), most=256)
# Fewer threads than gthread's worker_connections (1000): at as many, a worker keeps no idle
# keep-alive connection at all.
threads = _int("PPS_THREADS", 4, most=999)

# Login and file tokens travel in the URL (/auth?jwt=..., /api-ext/files/...?jwt=...) and
# shops sign tokens of up to 8 KB; a longer request line or header gets gunicorn's HTML
# 414/431 page, which API clients cannot read. gunicorn silently lowers any request-line
# limit above 8190 bytes to 8190, too little for such a URL, so the only setting that fits
# is 0 (no limit of its own): nginx bounds the request line and each header line to 16 KB
# (large_client_header_buffers in deploy/nginx.conf) and answers longer ones with JSON.
# Without nginx in front (`make run`, local only) the request line is unbounded.
limit_request_line = 0
# One header line (name and value), e.g. an 8 KB token in a header or a cookie. Matches
# nginx's 16 KB buffer, so whatever nginx lets through gunicorn accepts.
limit_request_field_size = 16384
# How many header lines: nginx bounds them by size alone (all headers within four 16 KB
# buffers), so gunicorn's default of 100 refused with an HTML 431 what nginx let through;
# this is gunicorn's largest value. Without nginx (local only) it bounds them together
# with the line size above.
limit_request_fields = 32768

# nginx keeps upstream connections open for 4 s (deploy/nginx.conf); gunicorn waits a bit
# longer so that it is always nginx that closes an idle connection, never a race.
keepalive = 5
timeout = _int("PPS_TIMEOUT", 30, most=86400)  # a day, as the seconds of pps's settings
graceful_timeout = 30
# A heartbeat file on a RAM disk: a worker on a slow or busy disk is not mistaken for a
# hung one (Docker's /tmp is often overlayfs). gunicorn creates it with mkstemp, so a
# world-writable directory is safe here.
_SHM = "/dev/shm"  # noqa: S108
worker_tmp_dir = _SHM if os.path.isdir(_SHM) else None

# nginx runs on the same host and sets X-Forwarded-Proto; only trust it from loopback.
forwarded_allow_ips = os.environ.get("PPS_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# Only the header nginx sets names the scheme. gunicorn's default also reads
# X-Forwarded-Ssl and X-Forwarded-Protocol, which nginx passes on from the client: one
# that disagreed with nginx's X-Forwarded-Proto made gunicorn refuse the request.
secure_scheme_headers = {"X-FORWARDED-PROTO": "https"}

accesslog = os.environ.get("PPS_ACCESS_LOG", "-") or None
errorlog = "-"
_LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
loglevel = os.environ.get("PPS_LOG_LEVEL", "").strip().lower() or "info"
if loglevel not in _LOG_LEVELS:  # gunicorn took any word silently as info
    raise SystemExit(
        f"pps: PPS_LOG_LEVEL must be one of {', '.join(_LOG_LEVELS)}, got {loglevel!r}"
    )
# Remote address as nginx saw it, duration in ms and nginx's request id to join both logs.
# The path without its query string: /auth?jwt= and the file URLs carry tokens there, and a
# log must not hold anything that logs a user in or fetches a file.
access_log_format = (
    '%({x-forwarded-for}i)s %(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms '
    'rid=%({x-request-id}i)s ua="%(a)s"'
)
# The link of a /files/<link>/<name> URL fetches the file until PPS_FILE_LINK_TTL ends:
# logged as <link>, as in nginx's log.
_FILE_LINK = re.compile(r"^/files/[^/]*(?=/)")


class _PpsLogger(Logger):
    """gunicorn's logger, with the link of a file URL left out of the access log's path."""

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> Any:
        atoms = super().atoms(resp, req, environ, request_time)
        atoms["U"] = _FILE_LINK.sub("/files/<link>", atoms["U"] or "")
        return atoms


logger_class = _PpsLogger  # with statsd_host, subclass gunicorn.instrument.statsd.Statsd

# A query string in gunicorn's own log lines: from a "?" to the end of the URL (the next
# whitespace, bar the quote closing a quoted request line). ASCII whitespace only: a byte of
# a query read as Latin-1 (\xa0) is not the URL's end.
_QUERY = re.compile(r"\?\S*?(?=['\"]?(?:\s|$))", re.ASCII)


class _NoQueryInErrorLog(logging.Filter):
    """Drop the query string of URLs in gunicorn's error log, as the access logs do.

    gunicorn quotes the request line when it refuses one (a raw non-ASCII byte in the URL,
    which RFC 9112 forbids: ``Invalid request from ip=...: Invalid HTTP request line:
    'GET /auth?jwt=...'``) and the URL when a request fails outside pps's error handlers;
    such a login token never reached pps, so it was still unused and logged anyone in.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _QUERY.sub("?<query not logged>", message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


logging.getLogger("gunicorn.error").addFilter(_NoQueryInErrorLog())


# gunicorn 25+ opens a control socket under $HOME by default; two instances (pps and the
# benchmark's baseline) would fight over it, and a hardened unit has no writable $HOME.
control_socket_disable = True
proc_name = "pps"


def on_starting(server: Any) -> None:
    """Check pps's settings once, in the master, before it forks any worker.

    A bad setting stops the start here with one line and gunicorn's "App failed to load"
    status (4). Left to the workers, each printed the line, and when several failed at once
    gunicorn's master sometimes died of a traceback of its own ``HaltServer``, with status 1.
    Only the settings are read and the folders they name made: the database, Redis and
    storage clients are still opened in each worker (``preload_app`` is off). Another app
    run under this file (the benchmark's baseline, a test's probe) is not checked.
    """
    if getattr(server.app, "app_uri", None) != wsgi_app:
        return
    from pps.platform.settings import SettingsError, load_settings, prepare_folders

    try:
        prepare_folders(load_settings())
    except SettingsError as exc:
        print(f"pps: {exc}", file=sys.stderr, flush=True)
        if server.pidfile is not None:
            server.pidfile.unlink()
        raise SystemExit(server.APP_LOAD_ERROR) from None


def post_worker_init(worker: Any) -> None:
    """Move the loaded app out of the garbage collector's sight (``gc.freeze``), then let
    pps resume sending its outbox (:func:`pps.app.resume_outbox`) and, without Redis, look
    for batches whose job was lost (:func:`pps.app.resume_jobs`).

    A worker holds about 200,000 long-lived objects once the app is built (Flask,
    SQLAlchemy, reportlab, the templates). Every full collection walked all of them: a pause
    of about 110 ms, every few ten thousand requests, for every thread of the worker.
    Frozen, a full collection takes under a millisecond; objects made by requests are
    collected as before. ``bench/wsgi_auth.py`` with and without ``--no-gc-freeze`` shows it.

    The outbox: rows queued before a restart (webhook deliveries, notifications, downloads
    of a shop's PDF, retries among them) are sent by the first dispatcher that runs, and an
    app process otherwise starts one only with its own next event. Here, once per worker
    after the fork and before any request, each worker starts one when rows are pending;
    the outbox's leases keep the workers from sending the same attempt twice. Not in the
    master (threads do not survive a fork) and not for another app run under this file.
    """
    gc.freeze()
    if getattr(worker.app, "app_uri", None) != wsgi_app:
        return
    from pps.app import resume_jobs, resume_outbox

    resume_outbox(worker.wsgi)
    resume_jobs(worker.wsgi)
