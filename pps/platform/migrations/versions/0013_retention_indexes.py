"""indexes for retention pruning: old rows are found without reading whole tables

``pps worker`` (hourly) and ``pps db prune`` look for finished processings by
``processings.updated_at`` and for spent notification keys by
``notification_keys.created_at``, and for each key ask whether an outbox row of its client
is as old or older (``webhook_deliveries`` by client and ``created_at``). Without these
indexes every prune read the three tables in full, the outbox once per key.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-22 09:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_processings_updated_at", "processings", ["updated_at"], unique=False)
    op.create_index(
        "ix_notification_keys_created_at", "notification_keys", ["created_at"], unique=False
    )
    op.create_index(
        "ix_webhook_deliveries_client_created",
        "webhook_deliveries",
        ["client_identifier", "created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_client_created", table_name="webhook_deliveries")
    op.drop_index("ix_notification_keys_created_at", table_name="notification_keys")
    op.drop_index("ix_processings_updated_at", table_name="processings")
