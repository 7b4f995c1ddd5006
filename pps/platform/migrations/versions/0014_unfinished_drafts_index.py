"""index of processing drafts by state: unfinished batches are found among many finished ones

``pps worker`` (and a served process without Redis) looks every minute for batches whose
job was lost: those with a draft still ``pending`` or ``in-process`` and no recent change
(:mod:`pps.processing.lost`). Those drafts are few; the finished ones the retention keeps
are many, and without this index every look read them all.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-23 09:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_processing_drafts_state", "processing_drafts", ["state"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_processing_drafts_state", table_name="processing_drafts")
