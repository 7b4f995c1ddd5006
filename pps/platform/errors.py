"""The root of every error pps reports on purpose.

Views raise these; one handler per surface (JSON for ``/api-ext``, HTML for browser pages)
turns them into a response. Each subclass carries its HTTP status and a message a shop
developer can act on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class PpsError(Exception):
    """Base class: ``status`` is the HTTP status, ``message`` the sentence shown to callers."""

    status: int = 500
    default_message: str = "Internal error."
    #: The message code of what an HTML error page tells a shopper (``error.logged_out``);
    #: None: the page's words follow the status. ``message`` stays the technical reason.
    page: str | None = None
    #: A link back to the shop that the page offers, when the shop named one (signed).
    back_url: str | None = None
    #: What only the log gets (addresses, a network error's text): logged with the request
    #: id when the error is answered, never shown.
    detail: str | None = None

    def __init__(
        self,
        message: str | None = None,
        *,
        errors: Mapping[str, Sequence[str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.errors = {key: list(value) for key, value in (errors or {}).items()}
        self.headers = dict(headers or {})
        super().__init__(self.message)

    def body(self) -> dict[str, object]:
        # ``success: false`` as in the reference's error bodies (the PHP SDK's tests send it).
        body: dict[str, object] = {"message": self.message, "success": False}
        if self.errors or self.status == 422:
            body["errors"] = self.errors
        return body


class BadRequest(PpsError):
    status = 400
    default_message = "The request could not be understood."


class Unauthorized(PpsError):
    status = 401
    default_message = "A valid API key is required: send 'Authorization: Bearer <API key>'."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer realm="pps"'})


class Forbidden(PpsError):
    status = 403
    default_message = "This action is not allowed."


class NotFound(PpsError):
    status = 404
    default_message = "No such resource."


class MethodNotAllowed(PpsError):
    status = 405
    default_message = "This method is not allowed here."


class NotAcceptable(PpsError):
    status = 406
    default_message = "This endpoint answers with JSON only: send 'Accept: application/json'."


class Conflict(PpsError):
    status = 409
    default_message = "The request conflicts with the current state of the resource."


class PayloadTooLarge(PpsError):
    status = 413
    default_message = "The request body is too large."


class UnsupportedMediaType(PpsError):
    status = 415
    default_message = "Send the body as application/json or application/x-www-form-urlencoded."


class ValidationFailed(PpsError):
    status = 422
    default_message = "The given data was invalid."


class ServiceUnavailable(PpsError):
    """A backing service (database, Redis) failed or did not answer in time.

    Always sent with ``Retry-After``: the outage is expected to pass, and clients and
    proxies should come back rather than give up. ``pps.web.errors`` maps the database
    and Redis client errors onto this class.
    """

    status = 503
    default_message = "A backing service is unavailable; try again shortly."
    retry_after = 5

    def __init__(
        self,
        message: str | None = None,
        *,
        errors: Mapping[str, Sequence[str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            message,
            errors=errors,
            headers={"Retry-After": str(self.retry_after), **(headers or {})},
        )


class InsufficientStorage(PpsError):
    """The file storage is full: nothing was stored; the operator has to make room."""

    status = 507
    default_message = "The file storage is full; nothing was stored. Try again later."


class ClientStorageFull(InsufficientStorage):
    """The client's uploads would take more than its budget (``PPS_CLIENT_STORAGE_BYTES``):
    a 507 like a full disk's, since for this client the storage is full; nothing was stored."""
