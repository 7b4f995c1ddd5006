"""a byte budget per client for uploaded files

``drafts.upload_size``: the bytes of a draft's uploaded print PDF, counted with
``uploads.size`` against ``PPS_CLIENT_STORAGE_BYTES``; ``storage_reservations``: room held
for an upload while its file is written. PDFs uploaded before this revision count 0 bytes
until replaced (a migration cannot read file storage).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-20 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("upload_size", sa.BigInteger(), nullable=False, server_default="0")
        )
    op.create_table(
        "storage_reservations",
        sa.Column("identifier", sa.String(length=32), nullable=False),
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_storage_reservations_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("identifier", name=op.f("pk_storage_reservations")),
    )
    with op.batch_alter_table("storage_reservations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_storage_reservations_client_identifier"),
            ["client_identifier"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("storage_reservations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_storage_reservations_client_identifier"))
    op.drop_table("storage_reservations")
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.drop_column("upload_size")
