"""Every ``/api-ext`` resource, nested in :data:`pps.api.bp` once, at import."""

from __future__ import annotations

from pps.api import bp
from pps.api.clients import blp as clients
from pps.api.drafts import blp as drafts
from pps.api.processing import blp as processing
from pps.api.templates import blp as templates
from pps.api.users import blp as users

for _resource in (clients, users, drafts, templates, processing):
    bp.register_blueprint(_resource)
