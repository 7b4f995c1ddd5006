"""drafts: preflight status and results, the customer's uploaded print PDF

``disable_preflight`` is a draft option of 0003.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("drafts") as batch:
        # -1: not checked (pps.platform.models.PREFLIGHT_NOT_CHECKED); existing drafts were not.
        batch.add_column(
            sa.Column("preflight_status", sa.Integer(), nullable=False, server_default="-1")
        )
        batch.add_column(
            sa.Column("validation_results", sa.JSON(), nullable=False, server_default="[]")
        )
        batch.add_column(sa.Column("upload_key", sa.String(length=500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("drafts") as batch:
        batch.drop_column("upload_key")
        batch.drop_column("validation_results")
        batch.drop_column("preflight_status")
