"""notifications queued once: the key of each (a batch's final state) outlives its delivery

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-16 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notification_keys",
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=120), nullable=False),
        sa.Column("message_identifier", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_notification_keys_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("client_identifier", "key", name=op.f("pk_notification_keys")),
    )
    op.create_index(
        op.f("ix_notification_keys_client_identifier"),
        "notification_keys",
        ["client_identifier"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_notification_keys_client_identifier"), table_name="notification_keys")
    op.drop_table("notification_keys")
