"""``GET|HEAD /files/<link>/<filename>``: the short-lived file URLs the file endpoints hand out.

The link is an unguessable token stored in the ephemeral store with the storage key, the
file name and the content type; it works (also for HEAD and Range requests, which PDF
viewers use) until it expires after ``PPS_FILE_LINK_TTL`` seconds.
"""

from __future__ import annotations

import io
import json
from typing import Any
from urllib.parse import quote

from flask import Response, send_file

from pps.platform.ephemeral import link_key
from pps.platform.errors import NotFound
from pps.web import bp
from pps.web.common import services


class LinkGone(NotFound):
    default_message = "This file link is unknown or has expired; request the file URL again."


@bp.get("/files/<token>/<filename>")
def file_link(token: str, filename: str) -> Any:
    svc = services()
    raw = svc.ephemeral.get_link(link_key(token))
    link = _parse(raw)
    if link is None or link["filename"] != filename:
        raise LinkGone()
    key, content_type = link["key"], link["contentType"]
    stored = svc.storage.stat(key)
    if stored is None:
        raise LinkGone("The file behind this link is gone; request the file URL again.")

    if svc.settings.x_accel_prefix:
        # Behind nginx: answer with headers only and let nginx send the bytes from an
        # `internal` location mapped to the files directory, e.g.
        #   location /_pps_files/ { internal; alias /var/lib/pps/files/; }
        # with PPS_X_ACCEL_PREFIX=/_pps_files. nginx then does sendfile, Range and HEAD
        # itself and keeps the headers set here (Content-Type, Content-Disposition, ...).
        response = Response(b"", content_type=content_type)
        prefix = svc.settings.x_accel_prefix.rstrip("/")
        response.headers["X-Accel-Redirect"] = f"{prefix}/{quote(key)}"
        response.headers["Content-Disposition"] = _inline(filename)
    elif stored.path is not None:
        response = send_file(
            stored.path,
            mimetype=content_type,
            as_attachment=False,
            download_name=filename,
            conditional=True,
            etag=True,
        )
    else:  # a storage without local paths (an object store): read the bytes
        data = svc.storage.read(key)
        if data is None:
            raise LinkGone("The file behind this link is gone; request the file URL again.")
        response = send_file(
            io.BytesIO(data),
            mimetype=content_type,
            as_attachment=False,
            download_name=filename,
            conditional=True,
            etag=False,
        )
    response.headers["Cache-Control"] = "private, no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _parse(raw: str | None) -> dict[str, str] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    fields = ("key", "filename", "contentType")
    if not all(isinstance(value.get(name), str) for name in fields):
        return None
    return {name: value[name] for name in fields}


def _inline(filename: str) -> str:
    """``inline`` with the file name, RFC 6266 style (our names are plain ASCII anyway)."""
    return f"inline; filename=\"{filename}\"; filename*=UTF-8''{quote(filename)}"
