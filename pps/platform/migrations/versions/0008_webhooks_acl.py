"""webhooks and their deliveries, per-client outbound settings

A draft's ``remote_acl`` flag is a draft option of 0003.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-08 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "client_settings",
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("webhook_secret", sa.String(length=200), nullable=True),
        sa.Column("acl_url", sa.Text(), nullable=True),
        sa.Column("allowed_hosts", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_client_settings_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("client_identifier", name=op.f("pk_client_settings")),
    )
    op.create_table(
        "webhooks",
        sa.Column("identifier", sa.String(length=32), nullable=False),
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_webhooks_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("identifier", name=op.f("pk_webhooks")),
    )
    op.create_index(
        "ix_webhooks_client_event", "webhooks", ["client_identifier", "event"], unique=False
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("identifier", sa.String(length=40), nullable=False),
        sa.Column("webhook_identifier", sa.String(length=32), nullable=False),
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["webhook_identifier"],
            ["webhooks.identifier"],
            name=op.f("fk_webhook_deliveries_webhook_identifier_webhooks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("identifier", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(
        "ix_webhook_deliveries_due", "webhook_deliveries", ["next_attempt_at"], unique=False
    )
    op.create_index(
        op.f("ix_webhook_deliveries_webhook_identifier"),
        "webhook_deliveries",
        ["webhook_identifier"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_webhook_deliveries_webhook_identifier"), table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_webhooks_client_event", table_name="webhooks")
    op.drop_table("webhooks")
    op.drop_table("client_settings")
