"""Request bodies sent without ``Content-Length`` (chunked) are held to the size limit too.

Werkzeug checks ``MAX_CONTENT_LENGTH`` against ``Content-Length`` before reading, and caps a
chunked body (which has none) at the limit while reading, but reading it whole
(``request.get_data()``, a urlencoded form) stops quietly at the limit: the rest of the
body is dropped and the request is processed without it (Werkzeug 3.1's
``LimitedStream.readall``). :class:`LimitedRequest` reads one byte past the limit to tell
a body that ends there from one that goes on, and answers the latter with 413 like a
``Content-Length`` over the limit: pps's :class:`~pps.platform.errors.PayloadTooLarge`,
with the message a view set for its body (:func:`too_large_message`: an upload names
``PPS_MAX_UPLOAD_BYTES``), so it takes pps's error shape wherever it is raised and the
view may answer it in a shape of its own (the editor's script: JSON in the page's
language). Nothing of such a body is processed, so nothing of it is stored.

A body with a ``Content-Encoding`` (gzip, deflate, br, ...) is refused with 415 when it is
read: pps decodes none, and reading gzip bytes as JSON or a form would either fail with a
misleading message or, for a body that merely claims a coding, be processed as something the
client said it was not. RFC 9110 15.5.16: 415 for an unsupported content coding, with
``Accept-Encoding`` naming the codings accepted (only ``identity``).

A form body Werkzeug's parser cannot read (a malformed multipart body, a part whose headers
are not UTF-8, a urlencoded body that is not UTF-8) is a 400 too: the parser would drop the
whole form without a word, and an upload would then be refused for lacking the file part it
has.
"""

from __future__ import annotations

from typing import IO, Any, cast

from flask import Request
from werkzeug.formparser import FormDataParser
from werkzeug.utils import cached_property
from werkzeug.wsgi import LimitedStream

from pps.platform.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

__all__ = ["LimitedRequest", "MaxBodyStream", "StrictFormDataParser", "too_large_message"]

#: Where a view keeps the 413 message for its body: in the WSGI environ, read when the
#: body's stream is made.
_TOO_LARGE_KEY = "pps.too_large_message"

#: Why a form body cannot be read, by its media type; Werkzeug's urlencoded parser fails
#: only on text that is not UTF-8.
MULTIPART_UNREADABLE = (
    "The form body cannot be read: the multipart body is malformed, or a part's headers "
    "are not valid UTF-8."
)
URLENCODED_UNREADABLE = "The form body cannot be read: it is not valid UTF-8."


class StrictFormDataParser(FormDataParser):
    """Werkzeug's form parser, with a body it cannot read refused (400), not read as empty.

    A parse that fails half-way (a body found too large as it is read, a malformed one)
    closes the files it had begun for the file parts: Werkzeug leaves them open, spooled to
    a temporary file on disk past 500 KB, until the garbage collector finds them.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "silent": False})
        self.begun: list[IO[bytes]] = []
        make = self.stream_factory

        def keeping_track(*args: Any, **kwargs: Any) -> IO[bytes]:
            stream = make(*args, **kwargs)
            self.begun.append(stream)
            return stream

        self.stream_factory = keeping_track

    def parse(
        self,
        stream: IO[bytes],
        mimetype: str,
        content_length: int | None,
        options: dict[str, str] | None = None,
    ) -> Any:
        try:
            return super().parse(stream, mimetype, content_length, options)
        except ValueError:  # UnicodeDecodeError included
            self._close_begun()
            multipart = mimetype == "multipart/form-data"
            message = MULTIPART_UNREADABLE if multipart else URLENCODED_UNREADABLE
            raise BadRequest(message) from None
        except BaseException:
            self._close_begun()
            raise
        finally:
            self.begun = []  # parsed: the request's files own them now

    def _close_begun(self) -> None:
        for begun in self.begun:
            begun.close()


def too_large_message(request: Request, message: str) -> None:
    """Have a body of unknown length that goes past the limit refused with ``message``;
    call before the body is read."""
    request.environ[_TOO_LARGE_KEY] = message


class MaxBodyStream(LimitedStream):
    """At most ``limit`` bytes of a body whose end the server marks (``wsgi.input_terminated``)."""

    def __init__(self, source: IO[bytes], limit: int, message: str | None = None) -> None:
        super().__init__(source, limit, is_max=True)
        self.source = source
        self.message = message

    def on_exhausted(self) -> None:
        """At the limit: a body that ends there is whole, one that goes on is too large."""
        if self.source.read(1):
            raise PayloadTooLarge(self.message)

    def readall(self) -> bytes:
        data = super().readall()
        if self.is_exhausted:
            self.on_exhausted()
        return data


def _has_body(request: Request) -> bool:
    length = request.content_length
    if length is None:
        return "Transfer-Encoding" in request.headers
    return length > 0


class LimitedRequest(Request):
    form_data_parser_class = StrictFormDataParser

    @cached_property
    def stream(self) -> IO[bytes]:
        coding = self.headers.get("Content-Encoding", "").strip()
        if coding and coding.lower() != "identity" and _has_body(self):
            raise UnsupportedMediaType(
                f"Content-Encoding {coding!r} is not supported: send the body unencoded.",
                headers={"Accept-Encoding": "identity"},
            )
        limit = self.max_content_length
        if (
            not self.shallow
            and limit is not None
            and self.content_length is None
            and "wsgi.input_terminated" in self.environ
        ):
            message = self.environ.get(_TOO_LARGE_KEY)
            return cast(IO[bytes], MaxBodyStream(self.input_stream, limit, message))
        return super().stream
