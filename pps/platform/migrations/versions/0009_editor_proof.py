"""the editor's proof approval: when and which version a draft was approved; per client
whether the proof must be confirmed before Finish

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-15 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("proof_approved_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("proof_approved_version", sa.Integer(), nullable=True))
    with op.batch_alter_table("client_settings", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("proof_required", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("client_settings", schema=None) as batch_op:
        batch_op.drop_column("proof_required")
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.drop_column("proof_approved_version")
        batch_op.drop_column("proof_approved_at")
