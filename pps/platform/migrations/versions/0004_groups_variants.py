"""user groups; a user's and a draft's group; a draft's variant, offered variants and theme

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_groups",
        sa.Column("identifier", sa.String(length=64), nullable=False),
        sa.Column("client_identifier", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_identifier"],
            ["clients.identifier"],
            name=op.f("fk_user_groups_client_identifier_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("identifier", name=op.f("pk_user_groups")),
    )
    with op.batch_alter_table("user_groups", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_user_groups_client_identifier"), ["client_identifier"], unique=False
        )

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("user_group_identifier", sa.String(length=64), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_users_user_group_identifier_user_groups"),
            "user_groups",
            ["user_group_identifier"],
            ["identifier"],
            ondelete="SET NULL",
        )

    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("user_group_identifier", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("variant_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("variant_identifier", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("variant_version", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("available_variants", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("theme", sa.String(length=64), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_drafts_user_group_identifier"), ["user_group_identifier"], unique=False
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_drafts_user_group_identifier_user_groups"),
            "user_groups",
            ["user_group_identifier"],
            ["identifier"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("drafts", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_drafts_user_group_identifier_user_groups"), type_="foreignkey"
        )
        batch_op.drop_index(batch_op.f("ix_drafts_user_group_identifier"))
        for column in (
            "theme",
            "available_variants",
            "variant_version",
            "variant_identifier",
            "variant_id",
            "user_group_identifier",
        ):
            batch_op.drop_column(column)

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_users_user_group_identifier_user_groups"), type_="foreignkey"
        )
        batch_op.drop_column("user_group_identifier")

    with op.batch_alter_table("user_groups", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_groups_client_identifier"))
    op.drop_table("user_groups")
