"""reviews (proof approval) and their reviewers' decisions

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reviews",
        sa.Column("review_id", sa.String(length=32), nullable=False),
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("draft_hash", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("close_callback_url", sa.Text(), nullable=True),
        sa.Column("remote_acl", sa.Boolean(), nullable=False),
        sa.Column("pdf_key", sa.String(length=500), nullable=True),
        sa.Column("pdf_count", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_reviews_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["draft_hash"],
            ["drafts.draft_hash"],
            name=op.f("fk_reviews_draft_hash_drafts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("review_id", name=op.f("pk_reviews")),
    )
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_reviews_client_identifier"), ["client_identifier"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_reviews_draft_hash"), ["draft_hash"], unique=False)

    op.create_table(
        "review_users",
        sa.Column("review_id", sa.String(length=32), nullable=False),
        sa.Column("user_identifier", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("draft_version", sa.Integer(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["review_id"],
            ["reviews.review_id"],
            name=op.f("fk_review_users_review_id_reviews"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_identifier"],
            ["users.identifier"],
            name=op.f("fk_review_users_user_identifier_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("review_id", "user_identifier", name=op.f("pk_review_users")),
    )


def downgrade() -> None:
    op.drop_table("review_users")
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_reviews_draft_hash"))
        batch_op.drop_index(batch_op.f("ix_reviews_client_identifier"))
    op.drop_table("reviews")
