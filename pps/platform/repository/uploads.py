"""Storage of uploaded files' records (``POST /api-ext/file``); the bytes live in file storage.

As everywhere in the repository, the client comes first and the queries enforce it: another
client's file is simply not found.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from pps.platform import ids
from pps.platform.repository.storage_budget import SqlStorageBudget
from pps.platform.repository.tables import uploads

__all__ = ["SqlUploadStore", "Upload"]


@dataclass(frozen=True)
class Upload:
    identifier: str
    client_identifier: str
    kind: str
    name: str
    size: int
    storage_key: str
    created_at: datetime


class SqlUploadStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        #: What the client's uploads take of its budget (``PPS_CLIENT_STORAGE_BYTES``).
        self.budget = SqlStorageBudget(engine)

    def create(
        self, client: str, *, identifier: str, kind: str, name: str, size: int, storage_key: str
    ) -> Upload:
        record = Upload(
            identifier=identifier,
            client_identifier=client,
            kind=kind,
            name=name,
            size=size,
            storage_key=storage_key,
            created_at=datetime.now(UTC),
        )
        with self.engine.begin() as conn:
            conn.execute(
                uploads.insert().values(
                    identifier=identifier,
                    client_identifier=client,
                    kind=kind,
                    name=name,
                    size=size,
                    storage_key=storage_key,
                    created_at=record.created_at,
                )
            )
        return record

    @staticmethod
    def new_identifier() -> str:
        return ids.file_identifier()

    def get(self, client: str, identifier: str) -> Upload | None:
        if "\x00" in identifier or "\x00" in client:
            return None
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    uploads.select().where(
                        uploads.c.identifier == identifier,
                        uploads.c.client_identifier == client,
                    )
                )
                .mappings()
                .first()
            )
        if row is None:
            return None
        created = row["created_at"]
        return Upload(
            identifier=row["identifier"],
            client_identifier=row["client_identifier"],
            kind=row["kind"],
            name=row["name"],
            size=row["size"],
            storage_key=row["storage_key"],
            created_at=created if created.tzinfo else created.replace(tzinfo=UTC),
        )

    def delete(self, client: str, identifier: str) -> bool:
        """Remove the record (the caller deletes the bytes first); False when the client
        has no such file. Its size counts against the budget no more."""
        with self.engine.begin() as conn:
            deleted = conn.execute(
                uploads.delete().where(
                    uploads.c.identifier == identifier, uploads.c.client_identifier == client
                )
            ).rowcount
        return bool(deleted)
