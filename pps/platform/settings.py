"""Every setting of pps, read from ``PPS_*`` environment variables in one place.

docs/settings.md has a table of them; keep the two in step.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import redis
import sqlalchemy as sa


class SettingsError(ValueError):
    """A setting is missing or malformed; pps refuses to start with it."""


@dataclass(frozen=True)
class Settings:
    """Typed settings; build with :func:`load_settings`."""

    base_url: str = "http://127.0.0.1:8000"
    secret_key: str = ""
    instance_path: Path = field(default_factory=lambda: Path("instance").resolve())
    database_url: str = ""
    redis_url: str = ""
    files_dir: Path | None = None
    file_link_ttl: int = 60
    jwt_leeway: int = 30
    nonce_ttl: int = 30 * 24 * 3600
    client_cache_ttl: float = 5.0
    max_body_bytes: int = 1024 * 1024
    max_upload_bytes: int = 64 * 1024 * 1024
    #: What all uploaded files of one client may take together; 0: no budget.
    client_storage_bytes: int = 20 * 1024**3
    development: bool = False
    x_accel_prefix: str = ""
    worker_mode: str = "auto"
    notify_allow_private: bool = False
    notify_timeout: float = 5.0
    notify_attempts: int = 5
    notify_backoff: float = 1.0
    #: One download of a customer PDF a shop names by URL (``fileURL``), in all.
    upload_fetch_timeout: float = 60.0
    job_retries: int = 8
    job_retry_backoff: float = 15.0
    #: Seconds a finished batch processing (and a spent notification key) is kept; 0: ever.
    processing_retention: int = 30 * 24 * 3600
    max_image_pixels: int = 40_000_000
    renders_per_minute: int = 600
    redis_timeout: float = 2.0
    database_timeout: float = 3.0
    max_variable_rows: int = 10_000
    # Webhooks (pps.webhooks) and the remote ACL (pps.acl).
    webhook_timeout: float = 10.0
    webhook_attempts: int = 6
    webhook_backoff: float = 5.0
    webhook_concurrency: int = 8
    webhook_per_client: int = 2
    webhook_poll: float = 1.0
    webhook_limit: int = 20
    acl_timeout: float = 2.0

    @property
    def secure_cookies(self) -> bool:
        return self.base_url.lower().startswith("https://")

    @property
    def resolved_files_dir(self) -> Path:
        return self.files_dir if self.files_dir is not None else self.instance_path / "files"

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.instance_path / 'pps.sqlite3'}"


_INT_SETTINGS = {
    "file_link_ttl": "PPS_FILE_LINK_TTL",
    "jwt_leeway": "PPS_JWT_LEEWAY",
    "nonce_ttl": "PPS_NONCE_TTL",
    "max_body_bytes": "PPS_MAX_BODY_BYTES",
    "max_upload_bytes": "PPS_MAX_UPLOAD_BYTES",
    "max_image_pixels": "PPS_MAX_IMAGE_PIXELS",
    "renders_per_minute": "PPS_RENDERS_PER_MINUTE",
    "max_variable_rows": "PPS_MAX_VARIABLE_ROWS",
    "job_retries": "PPS_JOB_RETRIES",
    "processing_retention": "PPS_PROCESSING_RETENTION",
}
_FLOAT_SETTINGS = {
    "notify_timeout": "PPS_NOTIFY_TIMEOUT",
    "notify_backoff": "PPS_NOTIFY_BACKOFF",
    "upload_fetch_timeout": "PPS_UPLOAD_FETCH_TIMEOUT",
    "job_retry_backoff": "PPS_JOB_RETRY_BACKOFF",
    "redis_timeout": "PPS_REDIS_TIMEOUT",
    "database_timeout": "PPS_DATABASE_TIMEOUT",
}
#: Webhook deliveries and remote ACL questions (pps.webhooks, pps.acl).
_OUTBOUND_SETTINGS = {
    "webhook_timeout": "PPS_WEBHOOK_TIMEOUT",
    "webhook_attempts": "PPS_WEBHOOK_ATTEMPTS",
    "webhook_backoff": "PPS_WEBHOOK_BACKOFF",
    "webhook_concurrency": "PPS_WEBHOOK_CONCURRENCY",
    "webhook_per_client": "PPS_WEBHOOK_PER_CLIENT",
    "webhook_poll": "PPS_WEBHOOK_POLL",
    "webhook_limit": "PPS_WEBHOOK_LIMIT",
    "acl_timeout": "PPS_ACL_TIMEOUT",
}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
#: ``auto``: RQ when PPS_REDIS_URL names Redis, else a thread; ``rq`` insists on Redis.
WORKER_MODES = ("auto", "rq", "thread")
#: Largest whole number a setting takes: beyond it seconds overflow dates, C ints and
#: Redis expiries, and no size or count of pps comes near it (2 GiB, 68 years).
MAX_INT = 2**31 - 1
#: Longest time in seconds a float setting takes: a day. Beyond it a timeout no longer
#: bounds anything, and huge ones overflowed socket timeouts and PostgreSQL's
#: ``statement_timeout`` at the first request instead of at start.
MAX_SECONDS = 86400.0
#: Shortest retention of finished processings (0 aside): a day, so that a shop polling
#: the status of a batch after a night, or a job retried after an outage, finds it.
MIN_RETENTION = 86400
#: Largest storage budget a client may have (1 PiB): sums of sizes stay far within 64 bits.
MAX_STORAGE_BYTES = 2**50
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_SHOWN = 60


def _shown(raw: str) -> str:
    """``raw`` quoted for a one-line message: cut short, with bytes that are not UTF-8
    escaped (``repr`` shows them as ``\\udcXX``)."""
    return repr(raw if len(raw) <= _SHOWN else raw[:_SHOWN] + "...")


def _text(env: Mapping[str, str], name: str, default: str = "") -> str:
    """The raw value of ``name``; bytes that are not UTF-8 (lone surrogates here) are an
    error, as every value ends up in URLs, paths, keys or the database."""
    raw = env.get(name, default)
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        shown = "" if name == "PPS_SECRET_KEY" else f": {_shown(raw)}"  # never echo a secret
        raise SettingsError(f"{name} is not valid UTF-8 text{shown}") from None
    return raw


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = _text(env, name).strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise SettingsError(
        f"{name} must be one of 1, true, yes, on, 0, false, no, off; got {_shown(raw)}"
    )


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = _text(env, name).strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(
            f"{name} must be a whole number of seconds or bytes, got {_shown(raw)}"
        ) from exc
    if value < 0:
        raise SettingsError(f"{name} must not be negative, got {value}")
    if value > MAX_INT:
        raise SettingsError(f"{name} must be at most {MAX_INT}, got {_shown(raw)}")
    return value


def _storage_bytes(env: Mapping[str, str], default: int) -> int:
    """``PPS_CLIENT_STORAGE_BYTES``: beyond :data:`MAX_INT`, as budgets are gigabytes."""
    name = "PPS_CLIENT_STORAGE_BYTES"
    raw = _text(env, name).strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_STORAGE_BYTES:
        raise SettingsError(
            f"{name} must be a whole number of bytes from 0 (no budget) to "
            f"{MAX_STORAGE_BYTES}, got {_shown(raw)}"
        )
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = _text(env, name).strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be a number of seconds, got {_shown(raw)}") from exc
    if not 0 <= value <= MAX_SECONDS:
        raise SettingsError(
            f"{name} must be a number of seconds from 0 to {MAX_SECONDS:g}, got {_shown(raw)}"
        )
    return value


def _base_url(env: Mapping[str, str], default: str) -> str:
    raw = _text(env, "PPS_BASE_URL", default).strip()
    url = raw.rstrip("/")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        # urlsplit itself refuses a malformed [IPv6] host (http://[::1): a traceback then.
        parts, host = urlsplit(""), None
    if (
        parts.scheme.lower() not in ("http", "https")
        or not host
        or parts.query
        or parts.fragment
        or "?" in url
        or "#" in url
        or any(char.isspace() or ord(char) < 32 for char in url)
    ):
        raise SettingsError(
            "PPS_BASE_URL must be an http:// or https:// URL with a host and no query, "
            f"like https://print.example, got {_shown(raw)}"
        )
    return url


def _database_url(env: Mapping[str, str]) -> str:
    raw = _text(env, "PPS_DATABASE_URL").strip()
    if not raw:
        return raw
    try:
        sa.engine.make_url(raw).get_dialect().import_dbapi()
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ValueError, ImportError) as exc:
        raise SettingsError(
            "PPS_DATABASE_URL is not a database URL pps can use (like "
            "postgresql+psycopg://user:password@host/db or sqlite:////path/pps.sqlite3): "
            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from None
    return raw


def _redis_url(env: Mapping[str, str]) -> str:
    raw = _text(env, "PPS_REDIS_URL").strip()
    lowered = raw.lower()
    if not raw:
        return raw
    if lowered.startswith(_REDIS_SCHEMES):
        problem = _redis_url_problem(raw)
        if problem is not None:
            raise SettingsError(f"PPS_REDIS_URL is not a Redis URL pps can use: {problem}")
        return raw
    if lowered.startswith("sqlite:///") and raw[len("sqlite:///") :] not in ("", ":memory:"):
        return raw
    raise SettingsError(
        "PPS_REDIS_URL must be empty, a redis://, rediss:// or unix:// URL, or sqlite:///path "
        f"of a file, got {_shown(raw)}"
    )


def _redis_url_problem(url: str) -> str | None:
    """Why redis-py cannot use ``url``, or None. A port that is not one, or a query value
    it cannot read, failed only when the app connected: a traceback from every command and
    every gunicorn worker. A database number that is not one redis-py ignores, so a typo
    (``/l0``) used database 0, another application's perhaps."""
    try:
        redis.ConnectionPool.from_url(url)  # parses only: no connection is made
    except ValueError as exc:
        return str(exc)
    parts = urlsplit(url)
    if parts.scheme.lower() == "unix" and not parts.path:
        # The app started, and every call that needs Redis answered 503.
        return "a unix:// URL names the socket's path, like unix:///run/redis/redis-server.sock"
    database = unquote(parts.path).replace("/", "")
    is_number = database.isascii() and database.isdigit()
    if parts.scheme.lower() != "unix" and database and not is_number:
        return f"the database number {_shown(database)} is not a whole number"
    return None


def _secret_key(key: str) -> None:
    """A key an operator forgot to replace, or one a guesser finds, is refused like none."""
    if not key:
        return
    if len(key.strip()) < 16:
        raise SettingsError("PPS_SECRET_KEY must be at least 16 characters long")
    if (key.startswith("<") and key.endswith(">")) or "token_urlsafe" in key:
        raise SettingsError(
            "PPS_SECRET_KEY still holds the example's placeholder; set it to the output of "
            "python -c 'import secrets; print(secrets.token_urlsafe(48))'"
        )
    if len(set(key)) < 8:
        raise SettingsError(
            "PPS_SECRET_KEY repeats a few characters; set it to a long random string"
        )


def load_settings(
    env: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None
) -> Settings:
    """Read settings from ``env`` (default: ``os.environ``), then apply ``overrides``.

    ``overrides`` uses the field names of :class:`Settings` (``create_app(config=...)``
    passes its mapping here), so tests never have to touch the process environment.
    """
    env = os.environ if env is None else env
    defaults = Settings()
    files_dir = _text(env, "PPS_FILES_DIR").strip()
    x_accel_prefix = _text(env, "PPS_X_ACCEL_PREFIX").strip()
    if x_accel_prefix and not x_accel_prefix.startswith("/"):
        raise SettingsError(
            "PPS_X_ACCEL_PREFIX must start with '/', like /_pps_files, "
            f"got {_shown(x_accel_prefix)}"
        )
    values: dict[str, Any] = {
        "base_url": _base_url(env, defaults.base_url),
        "secret_key": _text(env, "PPS_SECRET_KEY"),
        "instance_path": Path(_text(env, "PPS_INSTANCE_PATH").strip() or "instance").resolve(),
        "database_url": _database_url(env),
        "redis_url": _redis_url(env),
        "files_dir": Path(files_dir).resolve() if files_dir else None,
        "development": _flag(env, "PPS_DEVELOPMENT"),
        "x_accel_prefix": x_accel_prefix,
        "worker_mode": _text(env, "PPS_WORKER_MODE").strip().lower() or defaults.worker_mode,
        "notify_allow_private": _flag(env, "PPS_NOTIFY_ALLOW_PRIVATE"),
        "notify_attempts": _int(env, "PPS_NOTIFY_ATTEMPTS", defaults.notify_attempts),
        "client_storage_bytes": _storage_bytes(env, defaults.client_storage_bytes),
        "client_cache_ttl": _float(env, "PPS_CLIENT_CACHE_TTL", defaults.client_cache_ttl),
    }
    for attr, name in _FLOAT_SETTINGS.items():
        values[attr] = _float(env, name, getattr(defaults, attr))
    for attr, name in _INT_SETTINGS.items():
        values[attr] = _int(env, name, getattr(defaults, attr))
    for attr, name in _OUTBOUND_SETTINGS.items():
        read = _float if isinstance(getattr(defaults, attr), float) else _int
        values[attr] = read(env, name, getattr(defaults, attr))
    known = {f.name for f in fields(Settings)}
    for key, value in (overrides or {}).items():
        if key not in known:
            raise SettingsError(f"unknown setting {key!r}")
        values[key] = value
    settings = Settings(**values)
    for attr in (
        "file_link_ttl",
        "nonce_ttl",
        "max_body_bytes",
        "max_image_pixels",
        "max_upload_bytes",
        "max_variable_rows",
    ):
        if getattr(settings, attr) < 1:
            raise SettingsError(f"{attr} must be at least 1, got {getattr(settings, attr)}")
    if settings.worker_mode not in WORKER_MODES:
        raise SettingsError(
            f"PPS_WORKER_MODE must be one of {', '.join(WORKER_MODES)}, "
            f"got {settings.worker_mode!r}"
        )
    if settings.worker_mode == "rq" and not settings.redis_url.lower().startswith(_REDIS_SCHEMES):
        raise SettingsError("PPS_WORKER_MODE=rq needs PPS_REDIS_URL to name a Redis server")
    if settings.notify_attempts < 1 or settings.notify_timeout <= 0:
        raise SettingsError("PPS_NOTIFY_ATTEMPTS must be at least 1 and PPS_NOTIFY_TIMEOUT > 0")
    if settings.upload_fetch_timeout <= 0:
        raise SettingsError("PPS_UPLOAD_FETCH_TIMEOUT must be more than 0")
    if (
        min(
            settings.webhook_attempts,
            settings.webhook_concurrency,
            settings.webhook_per_client,
            settings.webhook_limit,
        )
        < 1
        or min(settings.webhook_timeout, settings.webhook_poll, settings.acl_timeout) <= 0
    ):
        raise SettingsError(
            "PPS_WEBHOOK_ATTEMPTS, _CONCURRENCY, _PER_CLIENT and _LIMIT must be at least 1; "
            "PPS_WEBHOOK_TIMEOUT, _POLL and PPS_ACL_TIMEOUT more than 0"
        )
    if settings.job_retries < 0 or settings.job_retry_backoff < 0:
        raise SettingsError("PPS_JOB_RETRIES and PPS_JOB_RETRY_BACKOFF must not be negative")
    if 0 < settings.processing_retention < MIN_RETENTION:
        raise SettingsError(
            f"PPS_PROCESSING_RETENTION must be 0 (keep for ever) or at least {MIN_RETENTION} "
            f"seconds (a day), got {settings.processing_retention}"
        )
    if settings.redis_timeout <= 0 or settings.database_timeout <= 0:
        raise SettingsError("PPS_REDIS_TIMEOUT and PPS_DATABASE_TIMEOUT must be more than 0")
    if not settings.base_url.startswith(("http://", "https://")):
        raise SettingsError(
            f"PPS_BASE_URL must start with http:// or https://, got {settings.base_url!r}"
        )
    _secret_key(settings.secret_key)
    return _with_secret_key(settings)


def _with_secret_key(settings: Settings) -> Settings:
    """Production refuses to start without a secret; development keeps one in the instance."""
    if settings.secret_key:
        return settings
    if not settings.development:
        raise SettingsError(
            "PPS_SECRET_KEY is not set. Set it to a long random string "
            "(python -c 'import secrets; print(secrets.token_urlsafe(48))'), "
            "or set PPS_DEVELOPMENT=1 to have one generated into the instance folder."
        )
    key_file = settings.instance_path / "secret_key"
    prepare_folder("PPS_INSTANCE_PATH", settings.instance_path)
    try:
        key = _development_key(key_file)
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(
            f"PPS_SECRET_KEY is not set and the development key {key_file} cannot be made "
            f"or read: {exc}"
        ) from None
    if len(key) < 16:
        # An empty key signed every session with "": sessions failed, or were forgeable.
        raise SettingsError(
            f"PPS_SECRET_KEY is not set and the development key {key_file} holds fewer "
            "than 16 characters; delete the file to have a new one generated"
        )
    return replace(settings, secret_key=key)


def _development_key(key_file: Path) -> str:
    """The key in ``key_file``, generated first if there is none."""
    if not key_file.exists():
        # Written aside and linked into place, so that several workers starting at once
        # all end up reading the same complete key.
        draft = key_file.with_name(f".secret_key.{os.getpid()}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(48))
        try:
            os.link(draft, key_file)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return key_file.read_text().strip()


def prepare_folders(settings: Settings) -> None:
    """Create the instance and files folders, or stop the start saying which and why: the
    bare OSError came as a traceback (a path through a file, a folder of another user)."""
    prepare_folder("PPS_INSTANCE_PATH", settings.instance_path)
    name = "PPS_FILES_DIR" if settings.files_dir is not None else "PPS_INSTANCE_PATH"
    prepare_folder(name, settings.resolved_files_dir)
    check_database_folder(settings)


def check_database_folder(settings: Settings) -> None:
    """Stop the start when the folder of a SQLite database file is missing or not writable.

    SQLite opens the file at the first request, and writes its journal files (``-wal``,
    ``-shm``) beside it: a start with such a folder answered every request with 503. The
    folder of a ``PPS_DATABASE_URL`` is not created, so that a mistyped path stops the
    start instead of starting on a new, empty database; the default one is the instance
    folder, created just before.
    """
    url = sa.engine.make_url(settings.resolved_database_url)
    database = url.database
    if url.get_backend_name() != "sqlite" or database in (None, "", ":memory:"):
        return
    if url.query.get("uri"):  # a file: URI (in memory, read-only...): SQLite's own syntax
        return
    name = "PPS_DATABASE_URL" if settings.database_url else "PPS_INSTANCE_PATH"
    folder = str(Path(database).absolute().parent)
    if not os.path.isdir(folder):
        what = (
            "is not a folder; correct the URL"
            if os.path.exists(folder)
            else "does not exist; create it or correct the URL"
        )
        raise SettingsError(f"{name}: the folder {folder!r} of the SQLite database {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SettingsError(
            f"{name}: the folder {folder!r} of the SQLite database is not writable by this "
            f"user (uid {os.getuid()})"
        )


def prepare_folder(name: str, path: Path) -> None:
    """Make ``path`` (named by setting ``name``) exist as a folder this process can write."""
    if path.exists() and not path.is_dir():
        raise SettingsError(f"{name}: {str(path)!r} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(
            f"{name}: cannot create the folder {str(path)!r}: {exc.strerror or exc}"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise SettingsError(
            f"{name}: the folder {str(path)!r} is not writable by this user (uid {os.getuid()})"
        )
