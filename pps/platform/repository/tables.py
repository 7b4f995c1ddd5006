"""The relational schema. Alembic migrations in ``pps/platform/migrations`` create and evolve it."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

Timestamp = sa.DateTime(timezone=True)

clients = sa.Table(
    "clients",
    metadata,
    sa.Column("identifier", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("api_key", sa.String(200), nullable=False),
    # Lookups go by the key's SHA-256, so the database never compares secrets itself.
    sa.Column("api_key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("allowed_origins", sa.JSON, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("disabled_at", Timestamp, nullable=True),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("identifier", sa.String(64), primary_key=True),
    sa.Column(
        "client_identifier",
        sa.String(64),
        sa.ForeignKey("clients.identifier", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("locale", sa.String(16)),
    sa.Column("salutation", sa.String(50)),
    sa.Column("title", sa.String(100)),
    sa.Column("first_name", sa.String(200)),
    sa.Column("last_name", sa.String(200)),
    sa.Column("email", sa.String(320)),
    sa.Column("custom_attributes", sa.JSON, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)

templates = sa.Table(
    "templates",
    metadata,
    sa.Column(
        "client_identifier",
        sa.String(64),
        sa.ForeignKey("clients.identifier", ondelete="CASCADE"),
        primary_key=True,
    ),
    # Operators may choose template identifiers, so they are unique per client only.
    sa.Column("identifier", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("data_keys", sa.JSON, nullable=False),
    sa.Column("custom_attributes", sa.JSON, nullable=False),
    sa.Column("page_count", sa.Integer, nullable=False),
    sa.Column("spec", sa.JSON, nullable=False),
    sa.Column("preview_key", sa.String(500)),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)

drafts = sa.Table(
    "drafts",
    metadata,
    sa.Column("draft_hash", sa.String(64), primary_key=True),
    sa.Column("client_identifier", sa.String(64), nullable=False),
    sa.Column(
        "user_identifier",
        sa.String(64),
        sa.ForeignKey("users.identifier", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("template_identifier", sa.String(64), nullable=False),
    sa.Column("intent", sa.String(32), nullable=False),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("values", sa.JSON, nullable=False),
    sa.Column("api_default_values", sa.JSON, nullable=False),
    sa.Column("custom_attributes", sa.JSON, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # Draft options (pps.platform.models.DRAFT_FLAGS), migration 0003.
    sa.Column("locked", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("disable_preflight", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("remote_acl", sa.Boolean, nullable=False, server_default=sa.false()),
    # Preflight (pps.preflight) and the customer's own print PDF (intents upload*): 0006.
    sa.Column("preflight_status", sa.Integer, nullable=False, server_default="-1"),
    sa.Column("validation_results", sa.JSON, nullable=False, server_default="[]"),
    sa.Column("upload_key", sa.String(500), nullable=True),
    sa.ForeignKeyConstraint(
        ["client_identifier", "template_identifier"],
        ["templates.client_identifier", "templates.identifier"],
        ondelete="CASCADE",
        name="fk_drafts_template",
    ),
    sa.Index("ix_drafts_client_created", "client_identifier", "created_at"),
)

# -- batch print files (pps.platform.repository.processing) ---------------------------------------

processings = sa.Table(
    "processings",
    metadata,
    sa.Column("processing_id", sa.String(32), primary_key=True),
    sa.Column(
        "client_identifier",
        sa.String(64),
        sa.ForeignKey("clients.identifier", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("notify_url", sa.Text, nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)

processing_drafts = sa.Table(
    "processing_drafts",
    metadata,
    sa.Column(
        "processing_id",
        sa.String(32),
        sa.ForeignKey("processings.processing_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    # The order the shop listed the drafts in, which is also the order they are rendered in.
    sa.Column("position", sa.Integer, primary_key=True),
    # No foreign key: a draft deleted after submission keeps its (failed) row here.
    sa.Column("draft_hash", sa.String(64), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("message", sa.Text, nullable=True),
    sa.Column("file_key", sa.String(500), nullable=True),
    sa.Column("updated_at", Timestamp, nullable=False),
)

# -- reviews (proof approval; pps.reviews.store) -------------------------------------------

reviews = sa.Table(
    "reviews",
    metadata,
    sa.Column("review_id", sa.String(32), primary_key=True),
    sa.Column(
        "client_identifier",
        sa.String(64),
        sa.ForeignKey("clients.identifier", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    # A review goes with its draft.
    sa.Column(
        "draft_hash",
        sa.String(64),
        sa.ForeignKey("drafts.draft_hash", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("close_callback_url", sa.Text, nullable=True),
    sa.Column("remote_acl", sa.Boolean, nullable=False),
    sa.Column("pdf_key", sa.String(500), nullable=True),
    sa.Column("pdf_count", sa.Integer, nullable=False),
    # Bumped by every write: two reviewers deciding at once cannot overwrite each other.
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Column("closed_at", Timestamp, nullable=True),
)

review_users = sa.Table(
    "review_users",
    metadata,
    sa.Column(
        "review_id",
        sa.String(32),
        sa.ForeignKey("reviews.review_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    # A deleted (or merged away) user leaves the reviews they were on.
    sa.Column(
        "user_identifier",
        sa.String(64),
        sa.ForeignKey("users.identifier", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("decision", sa.String(16), nullable=True),
    sa.Column("comment", sa.Text, nullable=True),
    sa.Column("draft_version", sa.Integer, nullable=True),
    sa.Column("decided_at", Timestamp, nullable=True),
)
