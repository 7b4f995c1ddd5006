"""What the review calls and pages do, on top of the store and the state machine. No Flask.

Each change reads the review, applies a rule of :mod:`pps.reviews.model`, and writes the
result guarded by the review's revision; when another write came first, the change is
applied again to what is stored now (a few times at most). When a change closes the
review, the shop hears of it at ``closeCallbackURL``: the review's state as JSON, queued in
the webhook outbox (:mod:`pps.webhooks.notifications`: durable, the same SSRF checks at
submission and at send time, no redirects, retries with backoff, the client's bounded
concurrency, signed with its webhook secret) and sent by the dispatcher, so no request
waits for the shop, however slow it is.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pps.files.render_limits import render_budget
from pps.files.rendering import RenderPolicy, template_spec
from pps.platform.errors import Conflict, NotFound, PpsError, ValidationFailed
from pps.platform.models import Draft, Template
from pps.platform.services import Services
from pps.processing.notify import ForbiddenTarget, check_notify_url
from pps.reviews import model
from pps.reviews.model import MAX_REVIEWERS, Review, ReviewClosed, ReviewRuleBroken
from pps.reviews.proof import print_pdf, proof_pdf, proof_pdf_key
from pps.reviews.store import ReviewStore, ReviewTargetGone, StaleReview
from pps.webhooks.events import REVIEW_CLOSED, emit
from pps.webhooks.notifications import (
    REVIEW_CLOSED_NOTIFICATION,
    REVIEW_PDF_NOTIFICATION,
    notify,
)

__all__ = [
    "REVIEW_NOT_FOUND",
    "DecisionRefused",
    "ReviewContext",
    "Reviews",
    "notify_in_background",
]

log = logging.getLogger("pps.reviews")

REVIEW_NOT_FOUND = "No review with this id exists for this client."
DRAFT_NOT_FOUND = "No draft with this hash exists for this client."
NOT_A_USER = "No user with this identifier exists for this client."
#: Tries of one change against concurrent writes before giving up with a 409.
ATTEMPTS = 5

#: ``(client, kind, url, payload, topic)``: queue a notification, never wait for it.
Sender = Callable[[str, str, str, dict[str, Any], str], None]


def utcnow() -> datetime:
    return datetime.now(UTC)


def notify_in_background(svc: Services) -> Sender:
    """Queue a notification in the webhook outbox; the dispatcher sends it."""

    def send(client: str, kind: str, url: str, payload: dict[str, Any], topic: str) -> None:
        notify(svc, client, kind, url, payload, topic)

    return send


class DecisionRefused(ValidationFailed):
    """A rule of the review refused the change (422); ``code`` and ``params`` let the
    reviewer's page say so in the reader's language."""

    def __init__(self, rule: ReviewRuleBroken) -> None:
        super().__init__(str(rule), errors={"decision": [str(rule)]})
        self.code = rule.code
        self.params = rule.params


@dataclass(frozen=True)
class ReviewContext:
    """A review with the draft and template it shows."""

    review: Review
    draft: Draft
    template: Template


class Reviews:
    """The review operations of one app (or one test)."""

    def __init__(self, svc: Services, store: ReviewStore, send: Sender) -> None:
        self.svc = svc
        self.store = store
        self.send = send

    # -- reading ---------------------------------------------------------------------------

    def get(self, client: str, review_id: str) -> Review:
        review = self.store.get(client, review_id)
        if review is None:
            raise NotFound(REVIEW_NOT_FOUND)
        return review

    def context(self, review: Review) -> ReviewContext:
        """The review's draft and template; 404 when either is gone."""
        repository = self.svc.repository
        draft = repository.get_draft(review.client_identifier, review.draft_hash)
        if draft is None:
            raise NotFound("The design of this review no longer exists.")
        template = repository.get_template(draft.client_identifier, draft.template_identifier)
        if template is None:
            raise NotFound("The template of this review's design no longer exists.")
        return ReviewContext(review, draft, template)

    # -- the shop's calls -------------------------------------------------------------------

    def create(
        self,
        client: str,
        *,
        draft_id: str,
        users: Sequence[str],
        close_callback_url: str | None,
        remote_acl: bool,
    ) -> Review:
        repository = self.svc.repository
        if repository.get_draft_ref(client, draft_id) is None:
            raise NotFound(DRAFT_NOT_FOUND)
        reviewers = list(dict.fromkeys(users))
        errors = self._unknown_users(client, reviewers)
        if len(reviewers) > MAX_REVIEWERS:
            errors.setdefault("user", []).append(f"A review has at most {MAX_REVIEWERS} reviewers.")
        if close_callback_url:
            problem = self._url_problem(client, close_callback_url)
            if problem is not None:
                errors["closeCallbackURL"] = [problem]
        if remote_acl:
            errors["remoteAcl"] = [
                "This pps server does not ask a remote ACL about reviews; send false or "
                "leave it out (reviewers are the users named in 'user')."
            ]
        if errors:
            raise ValidationFailed(errors=errors)
        now = utcnow()
        review = Review(
            review_id=model.new_review_id(),
            client_identifier=client,
            draft_hash=draft_id,
            state=model.OPEN,
            reviewers=tuple(model.Reviewer(user) for user in reviewers),
            close_callback_url=close_callback_url or None,
            remote_acl=remote_acl,
            pdf_key=None,
            pdf_count=0,
            revision=0,
            created_at=now,
            updated_at=now,
        )
        try:
            self.store.create(review)
        except ReviewTargetGone:
            raise self._gone_since_checked(client, draft_id, reviewers) from None
        return review

    def _unknown_users(self, client: str, users: Sequence[str]) -> dict[str, list[str]]:
        """``{"user": [...]}`` naming the users that are not the client's; ``{}`` if none."""
        unknown = [user for user in users if not self.svc.repository.user_exists(client, user)]
        if not unknown:
            return {}
        return {"user": [f"{NOT_A_USER} {_short(user)}" for user in unknown[:20]]}

    def _gone_since_checked(self, client: str, draft_id: str, users: Sequence[str]) -> PpsError:
        """What a delete that won the race with :meth:`create`'s checks took away: the
        draft (404, as if it had never been) or reviewers (422 naming them)."""
        if self.svc.repository.get_draft_ref(client, draft_id) is None:
            return NotFound(DRAFT_NOT_FOUND)
        errors = self._unknown_users(client, users)
        if errors:
            return ValidationFailed(errors=errors)
        return Conflict("The draft or a reviewer changed while the review was made; try again.")

    def add_user(self, client: str, review_id: str, user: str) -> Review:
        review = self.get(client, review_id)  # 404 first: another client's review
        self._check_user(client, user)
        if review.reviewer(user) is None and len(review.reviewers) >= MAX_REVIEWERS:
            raise ValidationFailed(
                errors={"userIdentifier": [f"A review has at most {MAX_REVIEWERS} reviewers."]}
            )

        def apply(current: Review) -> Review:
            # Checked again on every attempt: a user deleted since is a 422, not a retry.
            self._check_user(client, user)
            return model.add_reviewer(current, user, now=utcnow())

        return self._change(client, review_id, apply)

    def delete_user(self, client: str, review_id: str, user: str) -> Review:
        self.get(client, review_id)  # 404 first: another client's review
        self._check_user(client, user)
        return self._change(
            client, review_id, lambda r: model.remove_reviewer(r, user, now=utcnow())
        )

    def close(self, client: str, review_id: str) -> Review:
        return self._change(client, review_id, lambda r: model.close(r, now=utcnow()))

    def create_pdf(self, client: str, review_id: str, notify_url: str | None) -> Review:
        """Render the proof PDF now, keep it for the file endpoint, notify ``notify_url``."""
        if notify_url:
            problem = self._url_problem(client, notify_url)
            if problem is not None:
                raise ValidationFailed(errors={"notifyCallbackURL": [problem]})
        for _ in range(ATTEMPTS):
            review = self.get(client, review_id)
            ctx = self.context(review)
            number = review.pdf_count + 1
            key = proof_pdf_key(review, number)
            self.svc.storage.put(key, self._proof_pdf(ctx))
            try:
                stored = self.store.save(
                    dataclasses.replace(review, pdf_key=key, pdf_count=number, updated_at=utcnow())
                )
            except StaleReview:
                self.svc.storage.delete(key)
                continue
            if notify_url:
                payload = {**stored.status(), "pdfUrl": self.pdf_url(stored)}
                self.send(
                    client, REVIEW_PDF_NOTIFICATION, notify_url, payload, f"review-pdf:{review_id}"
                )
            return stored
        raise Conflict("The review kept changing while its PDF was made; try again.")

    def pdf_url(self, review: Review) -> str:
        """The file endpoint of the proof PDF; the shop adds ``?jwt=``."""
        return f"{self.svc.settings.base_url}/api-ext/files/review/{review.review_id}/pdf"

    # -- the reviewer's decision ------------------------------------------------------------

    def decide(
        self,
        client: str,
        review_id: str,
        user: str,
        decision: str,
        comment: str,
        *,
        draft_version: int,
    ) -> Review:
        """Record ``user``'s decision on the draft version they looked at."""

        def apply(review: Review) -> Review:
            current = self.context(review).draft.version
            if current != draft_version:
                raise Conflict(
                    "The design changed while you were looking at it; look at the proof "
                    "again before deciding."
                )
            return model.decide(
                review, user, decision, comment, draft_version=draft_version, now=utcnow()
            )

        return self._change(client, review_id, apply)

    # -- helpers ------------------------------------------------------------------------------

    def _change(self, client: str, review_id: str, rule: Callable[[Review], Review]) -> Review:
        for _ in range(ATTEMPTS):
            review = self.get(client, review_id)
            try:
                changed = rule(review)
            except ReviewClosed as exc:
                raise Conflict(str(exc)) from None
            except ReviewRuleBroken as exc:
                raise DecisionRefused(exc) from None
            if changed is review:
                return review
            try:
                stored = self.store.save(changed)
            except StaleReview:
                continue
            if review.is_open and not stored.is_open:
                self._closed(stored)
            return stored
        raise Conflict("The review kept changing; try again.")

    def _closed(self, review: Review) -> None:
        """Tell the shop (its ``closeCallbackURL`` and its ``review.closed`` webhooks) and
        the log that the review is over."""
        log.info(
            "review %s of client %s is %s", review.review_id, review.client_identifier, review.state
        )
        # The webhook event names records and the outcome, never a reviewer's comment.
        status = review.status()
        payload = {key: status[key] for key in ("reviewId", "draftId", "state", "closedAt")}
        emit(self.svc, review.client_identifier, REVIEW_CLOSED, payload)
        if review.close_callback_url:
            self.send(
                review.client_identifier,
                REVIEW_CLOSED_NOTIFICATION,
                review.close_callback_url,
                review.status(),
                f"review:{review.review_id}",
            )

    def _check_user(self, client: str, user: str) -> None:
        if not self.svc.repository.user_exists(client, user):
            raise ValidationFailed(errors={"userIdentifier": [NOT_A_USER]})

    def _url_problem(self, client: str, url: str) -> str | None:
        hosts = self.svc.integrations.settings(client).allowed_hosts
        try:
            settings = self.svc.settings
            check_notify_url(
                url,
                allow_private=settings.notify_allow_private,
                timeout=settings.notify_timeout,
                allowed_hosts=hosts,
            )
        except ForbiddenTarget as exc:
            return str(exc)
        return None

    def policy(self, client: str) -> RenderPolicy:
        """The image pixel limit and the client's renders per minute, as for file URLs."""
        settings = self.svc.settings
        return RenderPolicy(
            max_pixels=settings.max_image_pixels,
            spend=render_budget(self.svc.ephemeral, client, settings.renders_per_minute),
        )

    def _proof_pdf(self, ctx: ReviewContext) -> bytes:
        client = ctx.review.client_identifier
        repository = self.svc.repository
        names: dict[str, str] = {}
        for reviewer in ctx.review.reviewers:
            user = repository.get_user(ctx.review.client_identifier, reviewer.user_identifier)
            if user is not None:
                name = " ".join(p for p in (user.first_name, user.last_name) if p)
                if name:
                    names[reviewer.user_identifier] = name
        try:
            template_spec(ctx.template)  # a template that no longer parses: a clear 422
            data = print_pdf(self.svc.storage, ctx.draft, ctx.template, self.policy(client))
        except PpsError:
            raise
        except ValueError as exc:  # RenderError and its kin
            raise ValidationFailed(
                f"The proof cannot be rendered: {exc}", errors={"draft": [str(exc)]}
            ) from exc
        return proof_pdf(
            ctx.review,
            template_name=ctx.template.name,
            draft_version=ctx.draft.version,
            names=names,
            print_file=data,
        )


def _short(value: str) -> str:
    return value if len(value) <= 80 else f"{value[:77]}..."
