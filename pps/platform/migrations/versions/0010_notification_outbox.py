"""notifications to a shop's own URL go through the webhook outbox

A delivery either belongs to a webhook (``webhook_identifier``, its URL read from there) or
is a notification of its own (``url``: ``stateChangedNotifyUrl``, ``closeCallbackURL``,
``notifyCallbackURL``). ``topic`` orders and supersedes the notifications of one subject.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-14 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.alter_column(
            "webhook_identifier", existing_type=sa.String(length=32), nullable=True
        )
        batch_op.add_column(sa.Column("url", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("topic", sa.String(length=100), nullable=True))
        batch_op.create_index("ix_webhook_deliveries_topic", ["topic", "created_at"], unique=False)


def downgrade() -> None:
    op.execute("DELETE FROM webhook_deliveries WHERE webhook_identifier IS NULL")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_topic")
        batch_op.drop_column("topic")
        batch_op.drop_column("url")
        batch_op.alter_column(
            "webhook_identifier", existing_type=sa.String(length=32), nullable=False
        )
