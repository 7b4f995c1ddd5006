"""``/api-ext/review``: proof approval, as the PHP SDK's ``Review\\Client`` calls it, and
``/api-ext/files/review/<id>/pdf``, the proof PDF behind a short-lived link.

The shop creates a review of a draft for some of its users, sends each of them to
``/auth`` with ``redirect`` = ``{base}/review/{reviewId}`` (:mod:`pps.reviews.web`), and
hears at ``closeCallbackURL`` when the review is over. The rules live in
:mod:`pps.reviews.model`, the operations in :mod:`pps.reviews.service`.
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, request

from pps.api import bp, current_client, resource
from pps.api.blueprint import Blueprint, F
from pps.auth.access import check_token
from pps.files.api import TokenMissing
from pps.files.links import issue_link
from pps.platform.errors import Forbidden, NotFound
from pps.reviews.schemas import (
    ReviewCloseInput,
    ReviewCreatedResponse,
    ReviewCreateInput,
    ReviewPdfInput,
    ReviewUserInput,
)
from pps.reviews.service import Reviews
from pps.web.common import no_content, services, token_redirect

__all__ = ["blp", "review_files", "reviews"]

blp = resource("review", "Review")

_EMPTY = "Done; the body is empty (the SDK checks for 204)."
_CLOSED = "The review is closed already (approved, rejected or closed by the shop)."


def reviews() -> Reviews:
    return current_app.extensions["pps.reviews"]  # type: ignore[no-any-return]


@blp.post("/review")
@blp.body(ReviewCreateInput)
@blp.response(201, ReviewCreatedResponse)
@blp.errors(404, s404="`draftId` is not a draft of this client.")
def create_review(data: dict[str, Any]) -> dict[str, Any]:
    """Ask users to review a draft's proof

    Answers `{"data": {"reviewId"}}`. Each user in `user` then logs in through `/auth`
    with `redirect` = `{base}/review/{reviewId}`, sees every page of the print file with
    trim and bleed marked, and approves or rejects it with a comment. The review is
    `approved` when every reviewer approved, `rejected` as soon as one rejected (a
    rejection needs a comment), or `closed` by `close-review`; then pps POSTs its state to
    `closeCallbackURL`. Only the review's users may open it. A review goes with its draft.
    """
    review = reviews().create(
        current_client().identifier,
        draft_id=data["draftId"],
        users=data["user"],
        close_callback_url=data["closeCallbackURL"],
        remote_acl=data["remoteAcl"],
    )
    return {"data": review}


@blp.post("/review/<review_id>/add-user")
@blp.body(ReviewUserInput)
@blp.response(204, description=_EMPTY)
@blp.errors(404, 409, s409=_CLOSED)
def add_review_user(data: dict[str, Any], review_id: str) -> Response:
    """Add a reviewer to an open review

    A user already on the review is left as is. 422 when the user is not the client's.
    """
    reviews().add_user(current_client().identifier, review_id, data["userIdentifier"])
    return no_content()


@blp.post("/review/<review_id>/delete-user")
@blp.body(ReviewUserInput)
@blp.response(204, description=_EMPTY)
@blp.errors(404, 409, s409=_CLOSED)
def delete_review_user(data: dict[str, Any], review_id: str) -> Response:
    """Take a reviewer off an open review

    A user who is not on the review is nothing to take off (still 204). When every
    remaining reviewer has approved, the review is `approved` with this call and
    `closeCallbackURL` is told. 422 when the user is not the client's.
    """
    reviews().delete_user(current_client().identifier, review_id, data["userIdentifier"])
    return no_content()


@blp.post("/review/<review_id>/close-review")
@blp.body(ReviewCloseInput)
@blp.response(204, description=_EMPTY)
@blp.errors(404)
def close_review(data: dict[str, Any], review_id: str) -> Response:
    """Close a review

    An open review becomes `closed` (decisions made so far are kept) and
    `closeCallbackURL` is told. Closing a review that is over already changes nothing and
    sends nothing. No body is needed (the SDK sends none).
    """
    reviews().close(current_client().identifier, review_id)
    return no_content()


@blp.post("/review/<review_id>/create-review-pdf")
@blp.body(ReviewPdfInput)
@blp.response(204, description=_EMPTY)
@blp.errors(404, 409)
def create_review_pdf(data: dict[str, Any], review_id: str) -> Response:
    """Make the proof PDF of a review

    A cover page (the review's state; per reviewer the decision, its date and the
    comment) followed by the pages of the draft's print file. Made before this call
    answers, in any state of the review; each call makes a new PDF. Fetch the newest
    through `GET /api-ext/files/review/{reviewId}/pdf?jwt=`. When `notifyCallbackURL` is
    given, pps POSTs the review's state and `pdfUrl` there. 422 when the draft cannot be
    rendered (the reason is named).
    """
    reviews().create_pdf(current_client().identifier, review_id, data["notifyCallbackURL"])
    return no_content()


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource


# -- the proof PDF's file endpoint ---------------------------------------------------------

review_files = Blueprint(
    "review_files",
    __name__,
    url_prefix="/api-ext/files/review",
    tag="Files",
    security=[{"jwt": []}],
    always=(400, 401, 403, 404, 405, 503),
    head=False,  # a HEAD probe would use a single-use token up
)

_JWT = {
    "name": "jwt",
    "in": "query",
    "required": True,
    "schema": {"type": "string"},
    "description": (
        "HS256 JWT signed with the client's API key: `client` (required), optional `exp`, "
        "`urlPath` (must then equal this path), `user` (must then be one of the review's "
        "users) and `jti` (the token is then good for one use)."
    ),
}


def _with_jwt(view: F) -> F:
    """The JWT query parameter in the reference (flask-smorest's ``doc`` has no types)."""
    return review_files.doc(parameters=[_JWT])(view)  # type: ignore[no-any-return]


@review_files.get("/<review_id>/pdf")
@_with_jwt
@review_files.response(
    302,
    description="Redirect to the PDF.",
    headers={
        "Location": {
            "description": "`{base_url}/files/<link>/<filename>`, valid for "
            "PPS_FILE_LINK_TTL seconds.",
            "schema": {"type": "string"},
        }
    },
)
def review_pdf(review_id: str) -> Response:
    """Redirect to the newest proof PDF of a review

    A `302` to a short-lived URL of the PDF made by the last `create-review-pdf`. `404`
    when the review is not the token's client's or no PDF was made yet; `403` when the
    token's `user` is not one of the review's users; `401` for a token that fails
    verification or was used before, `400` for one that is not a JWT at all.
    `HEAD` is refused with `405` and leaves the token unused.
    """
    raw = request.args.get("jwt", "")
    if not raw:
        raise TokenMissing()
    svc = services()
    checked = check_token(svc, raw, request_path=request.path, login=False)
    review = reviews().get(checked.client.identifier, review_id)
    user = checked.token.user
    if user is not None and review.reviewer(user) is None:
        raise Forbidden("The token's user is not one of the review's users.")
    if review.pdf_key is None or svc.storage.stat(review.pdf_key) is None:
        raise NotFound("No proof PDF was made for this review yet: call create-review-pdf.")
    location = issue_link(
        svc,
        checked,
        key=review.pdf_key,
        filename=f"review-{review.review_id}.pdf",
        content_type="application/pdf",
    )
    return token_redirect(location)
