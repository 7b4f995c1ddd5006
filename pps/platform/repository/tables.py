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


def owning_client() -> sa.Column[str]:
    """The tenant a row belongs to: every lookup filters by it; rows go with their client."""
    return sa.Column(
        "client_identifier",
        sa.String(64),
        sa.ForeignKey("clients.identifier", ondelete="CASCADE"),
        nullable=False,
        index=True,
    )


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

# -- user groups (pps.groups) ---------------------------------------------------------------

user_groups = sa.Table(
    "user_groups",
    metadata,
    sa.Column("identifier", sa.String(64), primary_key=True),
    owning_client(),
    sa.Column("created_at", Timestamp, nullable=False),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("identifier", sa.String(64), primary_key=True),
    owning_client(),
    sa.Column("locale", sa.String(16)),
    sa.Column("salutation", sa.String(50)),
    sa.Column("title", sa.String(100)),
    sa.Column("first_name", sa.String(200)),
    sa.Column("last_name", sa.String(200)),
    sa.Column("email", sa.String(320)),
    sa.Column("custom_attributes", sa.JSON, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Column(
        "user_group_identifier",
        sa.String(64),
        sa.ForeignKey("user_groups.identifier", ondelete="SET NULL"),
        nullable=True,
    ),
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
    # Rows of variable data (in variable_rows); 0 without variable data.
    sa.Column("record_count", sa.Integer, nullable=False, server_default="0"),
    # Draft options (pps.platform.models.DRAFT_FLAGS), migration 0003; remote_acl: the shop's
    # ACL URL is asked before each action on the draft (pps.acl).
    sa.Column("locked", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("disable_preflight", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("remote_acl", sa.Boolean, nullable=False, server_default=sa.false()),
    # Preflight (pps.preflight) and the customer's own print PDF (intents upload*): 0006.
    sa.Column("preflight_status", sa.Integer, nullable=False, server_default="-1"),
    sa.Column("validation_results", sa.JSON, nullable=False, server_default="[]"),
    sa.Column("upload_key", sa.String(500), nullable=True),
    # Bytes of that PDF, counted against the client's storage budget (migration 0012).
    sa.Column("upload_size", sa.BigInteger, nullable=False, server_default="0"),
    # pps.groups and pps.variants (migration 0004)
    sa.Column(
        "user_group_identifier",
        sa.String(64),
        sa.ForeignKey("user_groups.identifier", ondelete="SET NULL"),
        nullable=True,
        index=True,
    ),
    sa.Column("variant_id", sa.Integer, nullable=True),
    sa.Column("variant_identifier", sa.String(64), nullable=True),
    sa.Column("variant_version", sa.Integer, nullable=True),
    sa.Column("available_variants", sa.JSON, nullable=True),
    sa.Column("theme", sa.String(64), nullable=True),
    # The customer's proof approval in the editor (migration 0009): when, and the version
    # the draft had once approved and finished.
    sa.Column("proof_approved_at", Timestamp, nullable=True),
    sa.Column("proof_approved_version", sa.Integer, nullable=True),
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
    owning_client(),
    sa.Column("notify_url", sa.Text, nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # Retention pruning finds finished processings by their last change (migration 0013).
    sa.Index("ix_processings_updated_at", "updated_at"),
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
    # The sweep for lost jobs finds the few unfinished drafts by state (migration 0014).
    sa.Index("ix_processing_drafts_state", "state"),
)

# -- uploaded files and variable data (pps.platform.repository.uploads / .variable_data) ----------

uploads = sa.Table(
    "uploads",
    metadata,
    sa.Column("identifier", sa.String(64), primary_key=True),
    owning_client(),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("storage_key", sa.String(500), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
)

# Room taken in the client's storage budget for an upload being written (pps.uploads.budget):
# released once the file's own row holds its size; counts no more after ``expires_at``.
storage_reservations = sa.Table(
    "storage_reservations",
    metadata,
    sa.Column("identifier", sa.String(32), primary_key=True),
    owning_client(),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False),
)

variable_rows = sa.Table(
    "variable_rows",
    metadata,
    sa.Column(
        "draft_hash",
        sa.String(64),
        sa.ForeignKey("drafts.draft_hash", ondelete="CASCADE"),
        primary_key=True,
    ),
    # Counted from 0, without gaps: the order of the records in the print file.
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("values", sa.JSON, nullable=False),
)

# -- webhooks, remote ACL, per-client outbound settings (pps.platform.repository.integrations)

client_settings = sa.Table(
    "client_settings",
    metadata,
    sa.Column(
        "client_identifier",
        sa.String(64),
        sa.ForeignKey("clients.identifier", ondelete="CASCADE"),
        primary_key=True,
    ),
    # Signs every webhook delivery of the client (Standard Webhooks, "whsec_..." form).
    sa.Column("webhook_secret", sa.String(200), nullable=True),
    # Asked before actions on drafts created with remoteAcl: true.
    sa.Column("acl_url", sa.Text, nullable=True),
    # Host names whose private addresses the client's notifications and webhooks may reach.
    sa.Column("allowed_hosts", sa.JSON, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # The editor's proof step must be confirmed before Finish (migration 0009).
    sa.Column("proof_required", sa.Boolean, nullable=False, server_default=sa.false()),
)

webhooks = sa.Table(
    "webhooks",
    metadata,
    sa.Column("identifier", sa.String(32), primary_key=True),
    sa.Column(
        "client_identifier",
        sa.String(64),
        sa.ForeignKey("clients.identifier", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("event", sa.String(64), nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    # 0 operational, 1 degraded (an attempt failed), 2 broken (a delivery was given up).
    sa.Column("status", sa.SmallInteger, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Index("ix_webhooks_client_event", "client_identifier", "event"),
)

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    # The Standard Webhooks message id ("msg_..."), the same on every retry.
    sa.Column("identifier", sa.String(40), primary_key=True),
    sa.Column(
        "webhook_identifier",
        sa.String(32),
        sa.ForeignKey("webhooks.identifier", ondelete="CASCADE"),
        # None for a notification to a URL of its own (see ``url``).
        nullable=True,
        index=True,
    ),
    sa.Column("client_identifier", sa.String(64), nullable=False),
    sa.Column("event", sa.String(64), nullable=False),
    # A notification's own target (stateChangedNotifyUrl, closeCallbackURL, ...).
    sa.Column("url", sa.Text, nullable=True),
    # Notifications of one subject (a processing, a review): sent in order, one at a time,
    # and a newer one supersedes an older one that is being retried.
    sa.Column("topic", sa.String(100), nullable=True),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", Timestamp, nullable=False),
    # Set while a dispatcher sends it; an expired lease (a dispatcher that died) frees it.
    sa.Column("lease_until", Timestamp, nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("ix_webhook_deliveries_due", "next_attempt_at"),
    sa.Index("ix_webhook_deliveries_topic", "topic", "created_at"),
    # Retention pruning asks, per notification key, for an outbox row of its client as old
    # or older (migration 0013).
    sa.Index("ix_webhook_deliveries_client_created", "client_identifier", "created_at"),
)

# Notifications that are queued once however often they are asked for (a batch's final
# state, asked again by a job retried after an outage): the row outlives the delivery, so
# asking again after it was sent queues nothing either.
notification_keys = sa.Table(
    "notification_keys",
    metadata,
    owning_client(),
    sa.Column("key", sa.String(120), nullable=False),
    # The message queued for it: its ``webhook-id``, the same on every retry.
    sa.Column("message_identifier", sa.String(40), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.PrimaryKeyConstraint("client_identifier", "key"),
    # Retention pruning finds spent keys by their age (migration 0013).
    sa.Index("ix_notification_keys_created_at", "created_at"),
)

# -- reviews (proof approval; pps.reviews.store) -------------------------------------------

reviews = sa.Table(
    "reviews",
    metadata,
    sa.Column("review_id", sa.String(32), primary_key=True),
    owning_client(),
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
