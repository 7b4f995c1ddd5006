"""The repository on SQLAlchemy Core: SQLite by default, PostgreSQL in production.

Core rather than the ORM: the hot paths (client and user lookups at ``/auth``) are single
indexed selects, and plain rows mapped to frozen records keep writes explicit: every write
is one transaction, so a failed request leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, RowMapping

from pps.platform import ids
from pps.platform.models import (
    DRAFT_FLAGS,
    Client,
    Draft,
    DraftRef,
    DraftVariant,
    JsonObject,
    Template,
    TemplateRef,
    User,
    UserGroup,
)
from pps.platform.repository import (
    USER_FIELDS,
    DuplicateIdentifier,
    NotAMember,
    Page,
    ReplacedUpload,
    VersionConflict,
    deadline,
)
from pps.platform.repository.draft_lock import lock_draft, lock_drafts
from pps.platform.repository.lookups import PointLookup, readers_for
from pps.platform.repository.tables import clients, drafts, templates, user_groups, users

T = TypeVar("T")
_ATTEMPTS = 5
_SQLITE_TIMEOUT = 15.0
"""Seconds a SQLite connection waits for a lock before it gives up."""
MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back without a zone; they were stored as UTC."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _impossible(*identifiers: str) -> bool:
    """True when an identifier cannot name a stored record.

    PostgreSQL text cannot hold NUL, and the driver raises instead of finding nothing; an
    identifier that came in over the wire (a URL, a JWT claim) must be "not found", not a 500.
    """
    return any("\x00" in identifier for identifier in identifiers)


def key_hash(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


# Point lookups on the hot paths (/auth, file links, every API call) are built once: building
# a select and its cache key on every call cost more than running it.
_CLIENT_BY_ID = clients.select().where(clients.c.identifier == sa.bindparam("identifier"))
_CLIENT_BY_KEY_HASH = clients.select().where(
    clients.c.api_key_hash == sa.bindparam("key_hash"), clients.c.disabled_at.is_(None)
)
_USER_BY_ID = users.select().where(
    users.c.identifier == sa.bindparam("identifier"),
    users.c.client_identifier == sa.bindparam("client"),
)
# "Is there no such user": a row only when the user is missing. Every /auth asks, and for
# the usual answer (the user exists) Python's sqlite3 then steps the statement once and
# resets it, instead of stepping it twice and fetching a row: each of those calls lets
# another thread take the GIL.
_USER_MISSING: sa.Select[Any] = sa.select(sa.literal_column("1")).where(
    ~sa.exists().where(
        users.c.identifier == sa.bindparam("identifier"),
        users.c.client_identifier == sa.bindparam("client"),
    )
)
_TEMPLATE_BY_ID = templates.select().where(
    templates.c.identifier == sa.bindparam("identifier"),
    templates.c.client_identifier == sa.bindparam("client"),
)
_DRAFT_BY_HASH = drafts.select().where(
    drafts.c.draft_hash == sa.bindparam("draft_hash"),
    drafts.c.client_identifier == sa.bindparam("client"),
)
_TEMPLATE_REF: sa.Select[Any] = sa.select(templates.c.page_count, templates.c.preview_key).where(
    templates.c.identifier == sa.bindparam("identifier"),
    templates.c.client_identifier == sa.bindparam("client"),
)
_DRAFT_REF: sa.Select[Any] = sa.select(
    drafts.c.user_identifier,
    drafts.c.version,
    drafts.c.remote_acl,
    drafts.c.variant_identifier,
).where(
    drafts.c.draft_hash == sa.bindparam("draft_hash"),
    drafts.c.client_identifier == sa.bindparam("client"),
)


def server_timeouts(timeout: float) -> dict[str, Any]:
    """Engine arguments that bound a request's wait for a server database to ``timeout``.

    ``PPS_DATABASE_TIMEOUT`` is split between the waits a request meets in turn (a pool
    wait or a pre-ping, then a connect or a statement): a quarter for a free pooled
    connection (``pool_timeout``), two thirds for connecting (``connect_timeout``, whole
    seconds, at least 2: libpq's floor) or for one statement (``statement_timeout``,
    enforced by the server). A server that stopped accepting connections then costs one
    connect timeout, a server that is down a refused connect, and ``pool_pre_ping``
    replaces connections that a restart closed without a failed request. Failures surface
    as SQLAlchemy's ``OperationalError``/``TimeoutError``, which the web layer answers
    with 503.

    The server enforces its statement timeout only while it runs; a server whose every
    process stopped would leave the client waiting. The client's own deadlines
    (:mod:`pps.platform.repository.deadline`, set in :func:`create_engine`) close the
    connection after five sixths of ``timeout`` for a statement (after the server's own
    timeout would have answered) and after a quarter for the pool's pre-ping (leaving the
    rest for connecting afresh). Quarters, not thirds: a third plus a two-thirds connect is
    the whole budget, and with the request's own work a frozen server's 503 came after
    3.02-3.03 s of a 3 s timeout (tests/test_faults_postgres.py); now after about 2.75 s.
    """
    connect = max(2, math.ceil(timeout * 2 / 3))
    statement_ms = max(1, round(timeout * 2000 / 3))
    return {
        "pool_pre_ping": True,
        "pool_timeout": timeout / 4,
        "connect_args": {
            "connect_timeout": connect,
            "options": f"-c statement_timeout={statement_ms}",
        },
    }


#: Seconds ``pps db upgrade`` (an engine without ``timeout``) waits for a connection.
MIGRATION_CONNECT_TIMEOUT = 10


def create_engine(url: str, *, timeout: float | None = None) -> Engine:
    """An engine with the settings each backend needs to serve several workers at once.

    ``timeout`` bounds waits on a server database (see :func:`server_timeouts`); None, for
    migrations, sets no statement timeout, only :data:`MIGRATION_CONNECT_TIMEOUT`. SQLite
    keeps its own lock timeout either way.
    """
    if url.startswith("sqlite"):
        engine = sa.create_engine(
            url, connect_args={"check_same_thread": False, "timeout": _SQLITE_TIMEOUT}
        )

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    if timeout is None:
        # Migrations may run long, so no statement timeout; but a server that takes the
        # connection and never answers (a hung host) held `pps db upgrade` without end.
        return sa.create_engine(
            url,
            pool_pre_ping=True,
            pool_size=5,
            max_overflow=10,
            connect_args={"connect_timeout": MIGRATION_CONNECT_TIMEOUT},
        )
    engine = sa.create_engine(url, pool_size=5, max_overflow=10, **server_timeouts(timeout))
    if engine.dialect.driver == "psycopg":
        deadline.guard(engine, limit=timeout * 5 / 6, ping_limit=timeout / 4)
    return engine


#: Key of the PostgreSQL advisory lock that lets one ``pps db upgrade`` run at a time.
MIGRATION_LOCK_KEY = 0x707073_6D6967  # "pps" "mig"


def migration_lock_file(database: str) -> str:
    """The file a SQLite database's migrations lock (``flock``) while they run."""
    return f"{database}.migrate-lock"


def upgrade_database(url: str, revision: str = "head") -> None:
    """Apply the Alembic migrations up to ``revision`` (``pps db upgrade``)."""
    from alembic import command
    from alembic.config import Config

    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(config, revision)


def revision_known(revision: str) -> bool:
    """Whether ``revision`` names migrations of this pps (``head``, ``base``, ``0003``...)."""
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    try:
        ScriptDirectory(str(MIGRATIONS_DIR)).get_revisions(revision)
    except CommandError:
        return False
    return True


def database_revision(url: str) -> str:
    """The migration the database at ``url`` is at (``base`` for none): what ``pps db
    upgrade`` reports, since upgrading to an older revision than the current one changes
    nothing."""
    from alembic.runtime.migration import MigrationContext

    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            heads = MigrationContext.configure(connection).get_current_heads()
    finally:
        engine.dispose()
    from alembic.script import ScriptDirectory

    newest = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    shown = ", ".join(heads) or "base"
    return f"{shown} (head)" if tuple(heads) == (newest,) else shown


def _client(row: RowMapping) -> Client:
    return Client(
        identifier=row["identifier"],
        name=row["name"],
        api_key=row["api_key"],
        allowed_origins=tuple(row["allowed_origins"] or ()),
        created_at=_aware(row["created_at"]) or utcnow(),
        disabled_at=_aware(row["disabled_at"]),
    )


def _user(row: RowMapping) -> User:
    return User(
        identifier=row["identifier"],
        client_identifier=row["client_identifier"],
        locale=row["locale"],
        salutation=row["salutation"],
        title=row["title"],
        first_name=row["first_name"],
        last_name=row["last_name"],
        email=row["email"],
        custom_attributes=dict(row["custom_attributes"] or {}),
        created_at=_aware(row["created_at"]),
        updated_at=_aware(row["updated_at"]),
        user_group_identifier=row["user_group_identifier"],
    )


def _variant_columns(variant: DraftVariant | None) -> dict[str, Any]:
    return {
        "variant_id": None if variant is None else variant.id,
        "variant_identifier": None if variant is None else variant.identifier,
        "variant_version": None if variant is None else variant.version,
    }


def _template(row: RowMapping) -> Template:
    return Template(
        identifier=row["identifier"],
        client_identifier=row["client_identifier"],
        name=row["name"],
        data_keys=tuple(row["data_keys"] or ()),
        custom_attributes=dict(row["custom_attributes"] or {}),
        page_count=row["page_count"],
        spec=dict(row["spec"] or {}),
        preview_key=row["preview_key"],
        created_at=_aware(row["created_at"]) or utcnow(),
        updated_at=_aware(row["updated_at"]) or utcnow(),
    )


def _draft(row: RowMapping) -> Draft:
    return Draft(
        draft_hash=row["draft_hash"],
        client_identifier=row["client_identifier"],
        user_identifier=row["user_identifier"],
        template_identifier=row["template_identifier"],
        intent=row["intent"],
        state=row["state"],
        values=dict(row["values"] or {}),
        api_default_values=dict(row["api_default_values"] or {}),
        custom_attributes=dict(row["custom_attributes"] or {}),
        version=row["version"],
        created_at=_aware(row["created_at"]) or utcnow(),
        updated_at=_aware(row["updated_at"]) or utcnow(),
        record_count=row["record_count"],
        user_group_identifier=row["user_group_identifier"],
        variant=None
        if row["variant_identifier"] is None
        else DraftVariant(
            id=row["variant_id"],
            identifier=row["variant_identifier"],
            version=row["variant_version"],
        ),
        available_variants=None
        if row["available_variants"] is None
        else tuple(row["available_variants"]),
        theme=row["theme"],
        locked=bool(row["locked"]),
        disable_preflight=bool(row["disable_preflight"]),
        remote_acl=bool(row["remote_acl"]),
        preflight_status=row["preflight_status"],
        validation_results=tuple(row["validation_results"] or ()),
        upload_key=row["upload_key"],
        upload_size=int(row["upload_size"] or 0),
        proof_approved_at=_aware(row["proof_approved_at"]),
        proof_approved_version=row["proof_approved_version"],
    )


def _flags(flags: Mapping[str, bool] | None) -> dict[str, bool]:
    """The draft options of ``flags`` (keys of DRAFT_FLAGS); anything else is a bug."""
    flags = dict(flags or {})
    unknown = set(flags) - set(DRAFT_FLAGS)
    if unknown:
        raise ValueError(f"not draft flags: {sorted(unknown)}")
    return {name: bool(value) for name, value in flags.items()}


class SqlRepository:
    """:class:`pps.platform.repository.Repository` on SQLAlchemy Core."""

    def __init__(self, url: str, *, timeout: float | None = None) -> None:
        self.url = url
        self.engine = create_engine(url, timeout=timeout)
        self._readers = readers_for(self.engine.url, timeout=_SQLITE_TIMEOUT)
        self._user_missing = PointLookup(self.engine, _USER_MISSING, self._readers)
        self._draft_ref = PointLookup(self.engine, _DRAFT_REF, self._readers)
        self._template_ref = PointLookup(self.engine, _TEMPLATE_REF, self._readers)

    def close(self) -> None:
        if self._readers is not None:
            self._readers.close()
        self.engine.dispose()

    def _insert_with_fresh_id(
        self, table: sa.Table, column: str, make_id: Callable[[], str], values: dict[str, Any]
    ) -> str:
        """Insert with a random identifier, drawing again on the (rare) collision.

        Any other integrity error (a foreign key that vanished, a duplicate API key) is
        re-raised: retrying cannot fix it.
        """
        for _ in range(_ATTEMPTS):
            identifier = make_id()
            try:
                with self.engine.begin() as conn:
                    conn.execute(table.insert().values({column: identifier, **values}))
                return identifier
            except sa.exc.IntegrityError:
                with self.engine.connect() as conn:
                    taken = conn.execute(
                        sa.select(sa.literal(1)).where(table.c[column] == identifier)
                    ).first()
                if taken is None:
                    raise
        raise RuntimeError(f"could not draw a free {column} after {_ATTEMPTS} attempts")

    # -- clients --------------------------------------------------------------------------
    def create_client(
        self,
        name: str,
        *,
        identifier: str | None = None,
        api_key: str | None = None,
        allowed_origins: Sequence[str] = (),
    ) -> Client:
        key = api_key or ids.api_key()
        values = {
            "name": name,
            "api_key": key,
            "api_key_hash": key_hash(key),
            "allowed_origins": list(allowed_origins),
            "created_at": utcnow(),
            "disabled_at": None,
        }
        try:
            if identifier is None:
                identifier = self._insert_with_fresh_id(
                    clients, "identifier", ids.client_identifier, values
                )
            else:
                with self.engine.begin() as conn:
                    conn.execute(clients.insert().values(identifier=identifier, **values))
        except sa.exc.IntegrityError as exc:
            if identifier is not None and self.get_client(identifier) is not None:
                raise DuplicateIdentifier(f"client identifier {identifier!r} is taken") from exc
            raise DuplicateIdentifier("this API key belongs to another client") from exc
        client = self.get_client(identifier)
        assert client is not None
        return client

    def get_client(self, identifier: str) -> Client | None:
        if _impossible(identifier):
            return None
        with self.engine.connect() as conn:
            row = conn.execute(_CLIENT_BY_ID, {"identifier": identifier}).mappings().first()
        return _client(row) if row else None

    def find_client_by_api_key(self, api_key: str) -> Client | None:
        with self.engine.connect() as conn:
            row = (
                conn.execute(_CLIENT_BY_KEY_HASH, {"key_hash": key_hash(api_key)})
                .mappings()
                .first()
            )
        if row is None:
            return None
        client = _client(row)
        # The hash lookup narrows the search; the secret itself is compared in constant time.
        if not hmac.compare_digest(client.api_key.encode("utf-8"), api_key.encode("utf-8")):
            return None
        return client

    def list_clients(self) -> list[Client]:
        with self.engine.connect() as conn:
            rows = conn.execute(clients.select().order_by(clients.c.created_at)).mappings().all()
        return [_client(row) for row in rows]

    def rotate_api_key(self, identifier: str) -> Client | None:
        if _impossible(identifier):
            return None
        key = ids.api_key()
        with self.engine.begin() as conn:
            result = conn.execute(
                clients.update()
                .where(clients.c.identifier == identifier)
                .values(api_key=key, api_key_hash=key_hash(key))
            )
        return self.get_client(identifier) if result.rowcount else None

    # -- users ----------------------------------------------------------------------------
    def create_user(self, client: str, fields: Mapping[str, Any]) -> User:
        now = utcnow()
        values: dict[str, Any] = {name: fields.get(name) for name in USER_FIELDS}
        values["custom_attributes"] = dict(fields.get("custom_attributes") or {})
        values.update(client_identifier=client, created_at=now, updated_at=now)
        identifier = self._insert_with_fresh_id(users, "identifier", ids.user_identifier, values)
        user = self.get_user(client, identifier)
        assert user is not None
        return user

    def _get_user(self, conn: Connection, client: str, identifier: str) -> User | None:
        if _impossible(client, identifier):
            return None
        row = conn.execute(_USER_BY_ID, {"identifier": identifier, "client": client})
        found = row.mappings().first()
        return _user(found) if found else None

    @staticmethod
    def _lock_user(
        conn: Connection, client: str, identifier: str, *, removing: bool = False
    ) -> bool:
        """Whether the user exists, holding it until the transaction ends, so a concurrent
        delete or merge cannot slip in before this transaction's writes.

        The row is written (to what it holds) rather than read ``FOR UPDATE``: the write
        takes the lock on both backends (PostgreSQL: the row; SQLite: the database), while
        SQLite's driver begins a transaction only at the first write, so a check by SELECT
        would run outside it and a user deleted meanwhile made the writes fail on the
        foreign key (a 500) or a second merge report success.

        ``removing``: the transaction deletes the user, so rows that name it are held off
        too. On PostgreSQL the write's lock does not block the KEY SHARE lock of a foreign
        key check: a draft inserted for a merge's source between the move of its drafts
        and its delete was deleted by the cascade after its create had answered 201.
        ``FOR UPDATE`` waits for inserts under way (whose drafts are then moved) and makes
        later ones find the user gone (SQLite's write lock covers this already).
        """
        if _impossible(client, identifier):
            return False
        this_user = sa.and_(users.c.identifier == identifier, users.c.client_identifier == client)
        touched = conn.execute(
            users.update().where(this_user).values(updated_at=users.c.updated_at)
        )
        if touched.rowcount == 1 and removing:
            conn.execute(sa.select(users.c.identifier).where(this_user).with_for_update())
        return touched.rowcount == 1

    def get_user(self, client: str, identifier: str) -> User | None:
        with self.engine.connect() as conn:
            return self._get_user(conn, client, identifier)

    def user_exists(self, client: str, identifier: str) -> bool:
        if _impossible(client, identifier):
            return False
        return not self._user_missing.found({"identifier": identifier, "client": client})

    def update_user(self, client: str, identifier: str, fields: Mapping[str, Any]) -> User | None:
        if _impossible(client, identifier):
            return None
        changes = {name: fields[name] for name in USER_FIELDS if name in fields}
        if "custom_attributes" in changes:
            changes["custom_attributes"] = dict(changes["custom_attributes"] or {})
        with self.engine.begin() as conn:
            result = conn.execute(
                users.update()
                .where(users.c.identifier == identifier, users.c.client_identifier == client)
                .values(**changes, updated_at=utcnow())
            )
            if not result.rowcount:
                return None
            return self._get_user(conn, client, identifier)

    def delete_user(self, client: str, identifier: str) -> bool:
        if _impossible(client, identifier):
            return False
        with self.engine.connect() as conn, conn.begin() as transaction:
            # The user first, then its drafts, as claims and merges take them: locked in
            # the other order, a claim moving drafts to this user deadlocked with it. The
            # drafts in hash order, as a claim of them takes them (see .draft_lock).
            if not self._lock_user(conn, client, identifier, removing=True):
                transaction.rollback()
                return False
            owned = sa.and_(
                drafts.c.user_identifier == identifier, drafts.c.client_identifier == client
            )
            lock_drafts(conn, owned, deleting=True)
            conn.execute(drafts.delete().where(owned))
            conn.execute(
                users.delete().where(
                    users.c.identifier == identifier, users.c.client_identifier == client
                )
            )
            return True

    def merge_users(self, client: str, target: str, source: str) -> bool:
        if target == source:
            return self.get_user(client, target) is not None
        with self.engine.connect() as conn, conn.begin() as transaction:
            # Always in the same order, so two merges cannot deadlock.
            for identifier in sorted((target, source)):
                if not self._lock_user(conn, client, identifier, removing=identifier == source):
                    transaction.rollback()
                    return False
            # The source's drafts in hash order, as a claim of them takes them.
            moved = sa.and_(
                drafts.c.user_identifier == source, drafts.c.client_identifier == client
            )
            lock_drafts(conn, moved)
            conn.execute(
                drafts.update().where(moved).values(user_identifier=target, updated_at=utcnow())
            )
            conn.execute(
                users.delete().where(
                    users.c.identifier == source, users.c.client_identifier == client
                )
            )
        return True

    # -- user groups ----------------------------------------------------------------------
    def create_user_group(self, client: str) -> UserGroup:
        identifier = self._insert_with_fresh_id(
            user_groups,
            "identifier",
            ids.user_identifier,  # same format as a user: 8 mixed-case letters and digits
            {"client_identifier": client, "created_at": utcnow()},
        )
        group = self.get_user_group(client, identifier)
        assert group is not None
        return group

    def get_user_group(self, client: str, identifier: str) -> UserGroup | None:
        if _impossible(client, identifier):
            return None
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    user_groups.select().where(
                        user_groups.c.identifier == identifier,
                        user_groups.c.client_identifier == client,
                    )
                )
                .mappings()
                .first()
            )
        if row is None:
            return None
        return UserGroup(
            identifier=row["identifier"],
            client_identifier=row["client_identifier"],
            created_at=_aware(row["created_at"]) or utcnow(),
        )

    # -- templates ------------------------------------------------------------------------
    def create_template(
        self,
        client: str,
        *,
        name: str,
        data_keys: Sequence[str],
        custom_attributes: JsonObject,
        page_count: int,
        spec: JsonObject,
        identifier: str | None = None,
        preview_key: str | None = None,
    ) -> Template:
        now = utcnow()
        values = {
            "client_identifier": client,
            "name": name,
            "data_keys": list(data_keys),
            "custom_attributes": dict(custom_attributes),
            "page_count": page_count,
            "spec": spec,
            "preview_key": preview_key,
            "created_at": now,
            "updated_at": now,
        }
        if identifier is None:
            identifier = self._insert_with_fresh_id(
                templates, "identifier", ids.template_identifier, values
            )
        else:
            try:
                with self.engine.begin() as conn:
                    conn.execute(templates.insert().values(identifier=identifier, **values))
            except sa.exc.IntegrityError as exc:
                raise DuplicateIdentifier(
                    f"template identifier {identifier!r} is taken for client {client!r}"
                ) from exc
        template = self.get_template(client, identifier)
        assert template is not None
        return template

    def get_template(self, client: str, identifier: str) -> Template | None:
        if _impossible(client, identifier):
            return None
        with self.engine.connect() as conn:
            row = (
                conn.execute(_TEMPLATE_BY_ID, {"identifier": identifier, "client": client})
                .mappings()
                .first()
            )
        return _template(row) if row else None

    def get_template_ref(self, client: str, identifier: str) -> TemplateRef | None:
        if _impossible(client, identifier):
            return None
        row = self._template_ref.first({"identifier": identifier, "client": client})
        if row is None:
            return None
        page_count, preview_key = row
        return TemplateRef(
            identifier=identifier,
            client_identifier=client,
            page_count=page_count,
            preview_key=preview_key,
        )

    def list_templates(
        self, client: str | None, page: int = 1, per_page: int | None = None
    ) -> Page[Template]:
        query = templates.select().order_by(templates.c.created_at, templates.c.identifier)
        count = sa.select(sa.func.count()).select_from(templates)
        if client is not None:
            query = query.where(templates.c.client_identifier == client)
            count = count.where(templates.c.client_identifier == client)
        return self._page(query, count, page, per_page, _template)

    def _page(
        self,
        query: sa.Select[Any],
        count: sa.Select[Any],
        page: int,
        per_page: int | None,
        convert: Callable[[RowMapping], T],
    ) -> Page[T]:
        page = max(1, page)
        if per_page is not None:
            query = query.limit(per_page).offset((page - 1) * per_page)
        with self.engine.connect() as conn:
            total = int(conn.execute(count).scalar_one())
            rows = conn.execute(query).mappings().all()
        items = [convert(row) for row in rows]
        return Page(items=items, total=total, page=page, per_page=per_page or max(total, 1))

    # -- drafts ---------------------------------------------------------------------------
    def create_draft(
        self,
        client: str,
        *,
        user_identifier: str,
        template_identifier: str,
        intent: str,
        api_default_values: JsonObject,
        custom_attributes: JsonObject,
        user_group_identifier: str | None = None,
        variant: DraftVariant | None = None,
        available_variants: Sequence[str] | None = None,
        theme: str | None = None,
        flags: Mapping[str, bool] | None = None,
    ) -> Draft | None:
        if self.get_user(client, user_identifier) is None:
            return None
        if self.get_template(client, template_identifier) is None:
            return None
        now = utcnow()
        values = {
            "client_identifier": client,
            "user_identifier": user_identifier,
            "template_identifier": template_identifier,
            "intent": intent,
            "state": "init",
            "values": {},
            "api_default_values": dict(api_default_values),
            "custom_attributes": dict(custom_attributes),
            "version": 1,
            "created_at": now,
            "updated_at": now,
            "user_group_identifier": user_group_identifier,
            **_variant_columns(variant),
            "available_variants": None if available_variants is None else list(available_variants),
            "theme": theme,
            **_flags(flags),
        }
        try:
            draft_hash = self._insert_with_fresh_id(drafts, "draft_hash", ids.draft_hash, values)
        except sa.exc.IntegrityError:  # the user or template was deleted since the checks
            return None
        return self.get_draft(client, draft_hash)

    def get_draft(self, client: str, draft_hash: str) -> Draft | None:
        if _impossible(client, draft_hash):
            return None
        with self.engine.connect() as conn:
            row = (
                conn.execute(_DRAFT_BY_HASH, {"draft_hash": draft_hash, "client": client})
                .mappings()
                .first()
            )
        return _draft(row) if row else None

    def get_draft_ref(self, client: str, draft_hash: str) -> DraftRef | None:
        if _impossible(client, draft_hash):
            return None
        row = self._draft_ref.first({"draft_hash": draft_hash, "client": client})
        if row is None:
            return None
        user, version, remote_acl, variant = row
        return DraftRef(
            draft_hash=draft_hash,
            client_identifier=client,
            user_identifier=user,
            version=version,
            remote_acl=bool(remote_acl),
            variant_identifier=variant,
        )

    def list_drafts(
        self,
        client: str,
        page: int = 1,
        per_page: int = 25,
        user_identifier: str | None = None,
        user_group_identifier: str | None = None,
    ) -> Page[Draft]:
        if _impossible(client, user_identifier or "", user_group_identifier or ""):
            return Page(items=[], total=0, page=max(1, page), per_page=per_page)
        condition = drafts.c.client_identifier == client
        if user_identifier is not None:
            condition = sa.and_(condition, drafts.c.user_identifier == user_identifier)
        if user_group_identifier is not None:
            condition = sa.and_(condition, drafts.c.user_group_identifier == user_group_identifier)
        query = drafts.select().where(condition).order_by(drafts.c.created_at, drafts.c.draft_hash)
        count = sa.select(sa.func.count()).select_from(drafts).where(condition)
        return self._page(query, count, page, per_page, _draft)

    def update_draft(
        self,
        client: str,
        draft_hash: str,
        *,
        api_default_values: JsonObject | None = None,
        custom_attributes: JsonObject | None = None,
        values: JsonObject | None = None,
        state: str | None = None,
        variant: DraftVariant | None = None,
        user_group_identifier: str | None = None,
        flags: Mapping[str, bool] | None = None,
        upload_key: str | None = None,
        upload_size: int | None = None,
        expected_version: int | None = None,
        proof_approved_at: datetime | None = None,
    ) -> Draft | None:
        if _impossible(client, draft_hash):
            return None
        changes: dict[str, Any] = {
            "version": drafts.c.version + 1,
            "updated_at": utcnow(),
            **_flags(flags),
        }
        if upload_key is not None:
            changes["upload_key"] = upload_key
        if upload_size is not None:
            changes["upload_size"] = upload_size
        if variant is not None:
            changes.update(_variant_columns(variant))
        if user_group_identifier is not None:
            changes["user_group_identifier"] = user_group_identifier or None
        if api_default_values is not None:
            changes["api_default_values"] = dict(api_default_values)
        if custom_attributes is not None:
            changes["custom_attributes"] = dict(custom_attributes)
        if values is not None:
            changes["values"] = dict(values)
        if state is not None:
            changes["state"] = state
        if proof_approved_at is not None:
            changes["proof_approved_at"] = proof_approved_at
            changes["proof_approved_version"] = drafts.c.version + 1
        condition = sa.and_(drafts.c.draft_hash == draft_hash, drafts.c.client_identifier == client)
        if expected_version is not None:
            condition = sa.and_(condition, drafts.c.version == expected_version)
        with self.engine.begin() as conn:
            result = conn.execute(drafts.update().where(condition).values(**changes))
            if not result.rowcount:
                if expected_version is None:
                    return None
                current = conn.execute(
                    sa.select(drafts.c.version).where(
                        drafts.c.draft_hash == draft_hash, drafts.c.client_identifier == client
                    )
                ).scalar()
                if current is None:
                    return None
                raise VersionConflict(int(current))
        return self.get_draft(client, draft_hash)

    def replace_upload(
        self, client: str, draft_hash: str, upload_key: str, upload_size: int
    ) -> ReplacedUpload | None:
        """The read of the key replaced and the write of the new one in one transaction,
        with the draft's row locked from its start (:func:`.draft_lock.lock_draft`), so
        that no other upload's write comes between them (on PostgreSQL the next
        statement's snapshot sees what the upload before this one wrote). No retry, no
        conflict: uploads at once are recorded one after the other, each told the key the
        one before it recorded. Locked on PostgreSQL by writing to the row, this deadlocked
        with a delete of the draft's user (a 503)."""
        if _impossible(client, draft_hash):
            return None
        this_draft = sa.and_(
            drafts.c.draft_hash == draft_hash, drafts.c.client_identifier == client
        )
        with self.engine.begin() as conn:
            if not lock_draft(conn, client, draft_hash):
                return None
            previous = conn.execute(sa.select(drafts.c.upload_key).where(this_draft)).scalar()
            conn.execute(
                drafts.update()
                .where(this_draft)
                .values(
                    upload_key=upload_key,
                    upload_size=upload_size,
                    version=drafts.c.version + 1,
                    updated_at=utcnow(),
                )
            )
            # Read before the commit: once it is committed, an error here must not make
            # the caller delete the file the draft now names.
            row = (
                conn.execute(_DRAFT_BY_HASH, {"draft_hash": draft_hash, "client": client})
                .mappings()
                .one()
            )
        return ReplacedUpload(_draft(row), previous)

    def set_preflight(
        self,
        client: str,
        draft_hash: str,
        version: int,
        status: int,
        results: Sequence[JsonObject],
    ) -> bool:
        if _impossible(client, draft_hash):
            return False
        with self.engine.begin() as conn:
            result = conn.execute(
                drafts.update()
                .where(
                    drafts.c.draft_hash == draft_hash,
                    drafts.c.client_identifier == client,
                    drafts.c.version == version,
                )
                .values(preflight_status=status, validation_results=[dict(r) for r in results])
            )
        return bool(result.rowcount)

    def delete_draft(self, client: str, draft_hash: str) -> bool:
        if _impossible(client, draft_hash):
            return False
        with self.engine.begin() as conn:
            result = conn.execute(
                drafts.delete().where(
                    drafts.c.draft_hash == draft_hash, drafts.c.client_identifier == client
                )
            )
        return bool(result.rowcount)

    def replicate_draft(
        self,
        client: str,
        draft_hash: str,
        *,
        api_default_values: JsonObject | None = None,
        custom_attributes: JsonObject | None = None,
        flags: Mapping[str, bool] | None = None,
    ) -> Draft | None:
        original = self.get_draft(client, draft_hash)
        if original is None:
            return None
        now = utcnow()
        values = {
            "client_identifier": client,
            "user_identifier": original.user_identifier,
            "template_identifier": original.template_identifier,
            "intent": original.intent,
            "state": original.state,
            "values": original.values,
            "api_default_values": {**original.api_default_values, **(api_default_values or {})},
            "custom_attributes": {**original.custom_attributes, **(custom_attributes or {})},
            # The copy is checked anew on its first change; its upload is copied by the caller.
            "version": 1,
            "created_at": now,
            "updated_at": now,
            "user_group_identifier": original.user_group_identifier,
            **_variant_columns(original.variant),
            "available_variants": None
            if original.available_variants is None
            else list(original.available_variants),
            "theme": original.theme,
            # A copy keeps how it is checked and guarded, but starts unlocked: shops copy
            # ordered (locked) drafts so that the customer can change the copy.
            "disable_preflight": original.disable_preflight,
            "remote_acl": original.remote_acl,
            "locked": False,
            **_flags(flags),
        }
        try:
            new_hash = self._insert_with_fresh_id(drafts, "draft_hash", ids.draft_hash, values)
        except sa.exc.IntegrityError:  # the user or template was deleted meanwhile
            return None
        return self.get_draft(client, new_hash)

    def claim_drafts(
        self,
        client: str,
        user_identifier: str,
        draft_hashes: Iterable[str],
        dry_run: bool,
        user_group_identifier: str | None = None,
    ) -> dict[str, bool] | None:
        wanted = list(dict.fromkeys(draft_hashes))
        possible = [draft_hash for draft_hash in wanted if not _impossible(draft_hash)]
        condition = sa.and_(drafts.c.client_identifier == client, drafts.c.draft_hash.in_(possible))
        if user_group_identifier is not None:
            condition = sa.and_(condition, drafts.c.user_group_identifier == user_group_identifier)
        with self.engine.connect() as conn, conn.begin() as transaction:
            # The user is held (unless this only reads) before its membership is read, in
            # the same transaction: a user moved out of the group, deleted or merged away
            # before the lock is seen here, and one after it waits for this claim. The
            # checked user was read apart from the claim, and a user who had left the
            # group meanwhile still received its drafts. The user is locked before any
            # draft, in the order deletes and merges take them, so neither deadlocks
            # with a claim; the drafts' foreign key check then needs only this user.
            held = dry_run or self._lock_user(conn, client, user_identifier)
            user = self._get_user(conn, client, user_identifier) if held else None
            if user is None:
                transaction.rollback()
                return None
            if user_group_identifier not in (None, user.user_group_identifier):
                transaction.rollback()
                raise NotAMember(user_identifier)
            # The drafts held in hash order, as a delete or merge of their owner takes
            # them (see .draft_lock); one deleted meanwhile is then not found.
            if not possible:
                found: set[str] = set()
            elif dry_run:
                found = set(conn.execute(sa.select(drafts.c.draft_hash).where(condition)).scalars())
            else:
                found = lock_drafts(conn, condition)
            if found and not dry_run:
                conn.execute(
                    drafts.update()
                    .where(drafts.c.client_identifier == client, drafts.c.draft_hash.in_(found))
                    .values(user_identifier=user_identifier, updated_at=utcnow())
                )
        return {draft_hash: draft_hash in found for draft_hash in wanted}
