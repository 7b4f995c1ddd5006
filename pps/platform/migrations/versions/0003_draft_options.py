"""draft options: locked, disable_preflight, remote_acl

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

FLAGS = ("locked", "disable_preflight", "remote_acl")


def upgrade() -> None:
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        for name in FLAGS:
            batch_op.add_column(
                sa.Column(name, sa.Boolean(), nullable=False, server_default=sa.false())
            )


def downgrade() -> None:
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        for name in reversed(FLAGS):
            batch_op.drop_column(name)
