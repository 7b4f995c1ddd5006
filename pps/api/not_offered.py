"""Calls of the reference product's clients that pps does not offer, declared once as data.

The PHP SDK (``risscsolutions/printformer-php-sdk``, ``src/Client/*``, ``src/Url/*``) and the
Magento 2 module (``Helper/Api/Url/V2.php``, ``Helper/Api.php``) call these. Each answers
``403`` with ``{"message": "<feature> is not offered by this pps server", "success": false}``:
the SDK's ``BadRequestHandler`` turns a 403 into ``FeatureNotEnabledException``, which shop
code already handles for a reference installation without the feature. A 404 would read as
"no such draft" instead. Each is listed in ``/openapi.json`` under the tag "Not offered".

Calls with a bearer key nest in the API blueprint (the key is checked first, as everywhere);
URLs that carry a JWT in the query instead (file URLs, the page planner's links) answer
without reading the token: there is nothing to protect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from pps.api import API_STATUSES, bp
from pps.api.blueprint import Blueprint
from pps.platform.errors import Forbidden

TAG = "Not offered"


@dataclass(frozen=True)
class NotOffered:
    """One call: ``path`` under ``/api-ext`` (a Flask rule), who calls it (``source``);
    ``bearer``: sent with the API key (else a URL with a JWT in the query)."""

    feature: str
    methods: tuple[str, ...]
    path: str
    source: str
    bearer: bool = True

    @property
    def message(self) -> str:
        return f"{self.feature} is not offered by this pps server"


_DRAFT = "<draft_hash:draft_hash>"
_IDML = "IDML package export"
_3D = "3D rendering (x3d files and textures)"
_DERIVATIVES = "The derivative service"
_WORKFLOWS = "The workflow service"
_DECLARATIONS = "The declaration service (declarations and ingredients)"
_FEEDS = "The product feed service"
_PAGE_PLANNER = "The page planner"
_PDF_UTILITIES = "The PDF utility service"
_VARIANT_FILES = "Exporting template variants and their thumbnails"
_PHOTO_THUMBS = "The photo thumbnail of a template"

NOT_OFFERED: tuple[NotOffered, ...] = (
    NotOffered(
        _IDML,
        ("POST",),
        f"/draft/{_DRAFT}/request-idml-package",
        "SDK src/Client/Draft/Client.php requestIdmlPackage; Magento API_REQUEST_IDML_PACKAGE",
    ),
    NotOffered(
        _IDML,
        ("GET",),
        f"/files/draft/{_DRAFT}/idml-package",
        "SDK src/Url/DraftFiles.php idmlPackage; Magento Helper/Api.php getIdmlPackage",
        bearer=False,
    ),
    NotOffered(
        _3D, ("GET",), f"/files/draft/{_DRAFT}/x3d", "SDK src/Url/DraftFiles.php x3d", bearer=False
    ),
    NotOffered(
        _3D,
        ("GET",),
        "/files/template/<identifier>/3d-texture/<page>",
        "SDK src/Url/TemplateFiles.php threeDeeTexture",
        bearer=False,
    ),
    NotOffered(
        _VARIANT_FILES,
        ("GET",),
        "/files/template/<identifier>/variant-export",
        "SDK src/Url/TemplateFiles.php variantExport (?page=, ?variant_version_id=)",
        bearer=False,
    ),
    NotOffered(
        _VARIANT_FILES,
        ("GET",),
        "/files/template/<identifier>/variant-thumb",
        "SDK src/Url/TemplateFiles.php variantThumb (?page=, ?variant_version_id=)",
        bearer=False,
    ),
    NotOffered(
        _PHOTO_THUMBS,
        ("GET",),
        "/files/template/<identifier>/photo-thumb",
        "SDK src/Url/TemplateFiles.php photoThumb",
        bearer=False,
    ),
    NotOffered(
        _DERIVATIVES,
        ("GET",),
        f"/draft/{_DRAFT}/derivative",
        "SDK src/Client/Derivative/Client.php list (owner: a draft)",
    ),
    NotOffered(
        _DERIVATIVES,
        ("GET",),
        "/template/<identifier>/derivative",
        "SDK src/Client/Derivative/Client.php list (owner: a template)",
    ),
    NotOffered(
        _DERIVATIVES,
        ("GET",),
        "/derivative/<identifier>",
        "SDK src/Client/Derivative/Client.php show",
    ),
    NotOffered(
        _DERIVATIVES,
        ("GET",),
        "/files/derivative/<identifier>/file",
        "SDK src/Url/DerivativeFiles.php file; Magento Helper/Api.php getDerivateLink",
        bearer=False,
    ),
    NotOffered(_WORKFLOWS, ("POST",), "/workflow", "SDK src/Client/Workflow/Client.php create"),
    NotOffered(
        _WORKFLOWS, ("GET",), "/workflow/<identifier>", "SDK src/Client/Workflow/Client.php show"
    ),
    NotOffered(
        _WORKFLOWS, ("PUT",), "/workflow/<identifier>", "SDK src/Client/Workflow/Client.php update"
    ),
    NotOffered(
        _DECLARATIONS, ("GET",), "/declaration", "SDK src/Client/Declaration/Client.php list"
    ),
    NotOffered(
        _DECLARATIONS,
        ("GET",),
        "/declaration/<identifier>",
        "SDK src/Client/Declaration/Client.php show",
    ),
    NotOffered(
        _DECLARATIONS,
        ("GET",),
        "/ingredient",
        "SDK src/Client/Declaration/Ingredient/Client.php list",
    ),
    NotOffered(
        _DECLARATIONS,
        ("GET",),
        "/ingredient/<identifier>",
        "SDK src/Client/Declaration/Ingredient/Client.php show",
    ),
    NotOffered(_FEEDS, ("POST",), "/product-feed", "SDK src/Client/Feed/Client.php create"),
    NotOffered(
        _FEEDS,
        ("GET",),
        "/product-feed/<identifier>",
        "SDK src/Client/Feed/Client.php show; Magento Observer/Admin/Product/GetFeedName.php",
    ),
    NotOffered(
        _FEEDS, ("PUT",), "/product-feed/<identifier>", "SDK src/Client/Feed/Client.php update"
    ),
    NotOffered(
        _FEEDS, ("DELETE",), "/product-feed/<identifier>", "SDK src/Client/Feed/Client.php destroy"
    ),
    NotOffered(_PAGE_PLANNER, ("POST",), "/draft-setup", "Magento V2 API_DRAFT_SETUP"),
    NotOffered(
        _PAGE_PLANNER,
        ("GET", "POST"),
        "/page-planner/approve",
        "Magento Helper/Api.php closePagePlanner (a URL with ?jwt=)",
        bearer=False,
    ),
    NotOffered(
        _PAGE_PLANNER,
        ("GET", "POST"),
        "/page-planner/delete",
        "Magento Helper/Api/Url/V2.php getPagePlannerDeleteUrl",
        bearer=False,
    ),
    NotOffered(
        _PDF_UTILITIES,
        ("POST",),
        "/util/pdf/re-assemble",
        "SDK src/Client/Util/Client.php reAssemble",
    ),
    NotOffered(
        _PDF_UTILITIES, ("POST",), "/util/pdf/optimize", "SDK src/Client/Util/Client.php optimize"
    ),
    NotOffered(
        "Delivering drafts to a print shop",
        ("POST",),
        f"/draft/{_DRAFT}/deliver",
        "SDK src/Client/Draft/Client.php deliver",
    ),
    NotOffered(
        "The product list of a draft",
        ("GET",),
        f"/draft/{_DRAFT}/products",
        "SDK src/Client/Draft/Client.php products",
    ),
)


class FeatureNotOffered(Forbidden):
    """403: the SDK raises ``FeatureNotEnabledException`` for it."""

    def __init__(self, call: NotOffered) -> None:
        super().__init__(call.message)


def _view(call: NotOffered) -> Callable[..., NoReturn]:
    def view(**_path: object) -> NoReturn:
        raise FeatureNotOffered(call)

    return view


# URLs with a JWT in the query (no bearer key) answer without reading the token.
not_offered_tokens = Blueprint(
    "not_offered_tokens", __name__, url_prefix="/api-ext", tag=TAG, security=[]
)
_api = Blueprint("not_offered", __name__, tag=TAG, always=API_STATUSES)


def _declare(index: int, call: NotOffered) -> None:
    blueprint = _api if call.bearer else not_offered_tokens
    view = _view(call)
    view.__name__ = f"not_offered_{index}"
    document = blueprint.doc(
        summary=f"Not offered: {call.feature}",
        description=(
            f'Always `403` with `{{"message": "{call.message}", "success": false}}`, '
            "so the PHP SDK raises `FeatureNotEnabledException`. Called by: "
            f"{call.source}."
        ),
    )
    refuse = blueprint.errors(403, s403=f"{call.message}.")
    blueprint.route(call.path, methods=list(call.methods), endpoint=view.__name__)(
        refuse(document(view))
    )


for _index, _call in enumerate(NOT_OFFERED):
    _declare(_index, _call)

bp.register_blueprint(_api)  # once, at import: the API blueprint nests these calls
