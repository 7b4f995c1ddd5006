"""batch print files: processings and their per-draft states

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "processings",
        sa.Column("processing_id", sa.String(length=32), nullable=False),
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("notify_url", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_processings_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("processing_id", name=op.f("pk_processings")),
    )
    with op.batch_alter_table("processings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_processings_client_identifier"), ["client_identifier"], unique=False
        )

    op.create_table(
        "processing_drafts",
        sa.Column("processing_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("draft_hash", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("file_key", sa.String(length=500), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["processing_id"],
            ["processings.processing_id"],
            name=op.f("fk_processing_drafts_processing_id_processings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("processing_id", "position", name=op.f("pk_processing_drafts")),
    )


def downgrade() -> None:
    op.drop_table("processing_drafts")
    with op.batch_alter_table("processings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_processings_client_identifier"))

    op.drop_table("processings")
