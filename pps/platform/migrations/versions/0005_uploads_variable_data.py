"""uploaded files, variable-data rows and a draft's number of them

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 10:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "uploads",
        sa.Column("identifier", sa.String(length=64), nullable=False),
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("storage_key", sa.String(length=500), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_uploads_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("identifier", name=op.f("pk_uploads")),
    )
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_uploads_client_identifier"), ["client_identifier"], unique=False
        )
    op.create_table(
        "variable_rows",
        sa.Column("draft_hash", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("values", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["draft_hash"],
            ["drafts.draft_hash"],
            name=op.f("fk_variable_rows_draft_hash_drafts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("draft_hash", "position", name=op.f("pk_variable_rows")),
    )
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("record_count", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.drop_column("record_count")
    op.drop_table("variable_rows")
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_uploads_client_identifier"))
    op.drop_table("uploads")
