"""Template files: the JSON an operator imports with ``pps template import``.

Plain Python, no Flask. The format is the renderer's (see :mod:`pps.render.parsing`: size,
bleed, pages, backgrounds, elements); old files of the first issue still import::

    {
      "name": "Business card",              # required, non-empty
      "identifier": "Card2024",             # optional: letters, digits, - and _, up to 64
      "dataKeys": ["firstName", "email"],   # optional: derived from the elements otherwise
      "customAttributes": {"format": "A6"}, # optional object
      "pageCount": 1,                       # optional; must match "pages" when given
      "preview": "card.png",                # optional PNG beside the file
      "size": {...}, "bleed": 3, "pages": [...]
    }

:func:`pps.render.parse_spec` validates the file and every file it names (fonts, artwork
PDFs, images) and reports each problem by its path
(``pages[0].elements[2].box.width: must be greater than 0``); the preview is checked here.
Then every file, the preview included, is decoded completely (:mod:`pps.render.decode`):
a truncated image or an image of more than ``max_image_pixels`` is refused here rather than
failing every render later. Text with a lone UTF-16 surrogate (``"\\ud800"``, which no
database or storage key can hold) or a NUL character (which PostgreSQL's text cannot hold)
is refused wherever it appears.
All problems are collected before anything is written, so a file is imported whole or not at
all. Unknown top-level keys are kept in the template's ``spec``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pps.files.keys import template_asset_key
from pps.platform import ids, strict_json
from pps.platform.models import JsonObject, Template
from pps.platform.repository import DuplicateIdentifier, Repository
from pps.platform.storable_text import MAX_DEPTH, nested_deeper_than
from pps.platform.storage import FileStorage
from pps.render import AssetError, DirectoryAssets, SpecError, parse_spec
from pps.render.assets import check_relative_name
from pps.render.decode import DEFAULT_MAX_IMAGE_PIXELS, asset_problem

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_PREVIEW_BYTES",
    "PNG_SIGNATURE",
    "TemplateFile",
    "TemplateFileError",
    "UnknownClient",
    "import_template",
    "load_template_file",
    "parse_template",
    "preview_key",
]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Template files are small descriptions; anything larger is almost certainly the wrong file.
MAX_FILE_BYTES = 5 * 1024 * 1024
#: A preview is a thumbnail shown in shop catalogues, not print data.
MAX_PREVIEW_BYTES = 10 * 1024 * 1024
_ROOT = "(template)"


class TemplateFileError(Exception):
    """The file is not a valid template; ``errors`` lists every problem as ``path: message``."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = errors
        super().__init__(f"{source}: " + "; ".join(errors))


class UnknownClient(LookupError):
    """``pps template import --client`` names no client."""


@dataclass(frozen=True)
class TemplateFile:
    """A validated template file, ready to import.

    ``assets`` holds every file the template names (the preview included), by the relative
    name written in the file; the import copies them to file storage.
    """

    name: str
    identifier: str | None
    data_keys: tuple[str, ...]
    custom_attributes: JsonObject
    page_count: int
    spec: JsonObject
    preview: bytes | None
    assets: Mapping[str, bytes] = field(default_factory=dict)


def preview_key(client: str, identifier: str) -> str:
    """Where a template's preview lives in file storage."""
    return f"templates/{client}/{identifier}/preview.png"


def load_template_file(
    path: Path, *, max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
) -> TemplateFile:
    """Read and validate the template file at ``path``; raise :class:`TemplateFileError`."""
    source = str(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise TemplateFileError(source, [f"{_ROOT}: cannot be read: {exc.strerror}"]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise TemplateFileError(
            source, [f"{_ROOT}: larger than {MAX_FILE_BYTES} bytes; is this a template file?"]
        )
    try:
        # NaN, Infinity and numbers past a float (1e999) are refused: no JSON answer and no
        # PostgreSQL JSON column can hold them.
        document = strict_json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise TemplateFileError(source, [f"{_ROOT}: is not UTF-8 text"]) from None
    except json.JSONDecodeError as exc:
        raise TemplateFileError(
            source, [f"{_ROOT}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        ) from None
    except ValueError as exc:
        raise TemplateFileError(source, [f"{_ROOT}: not valid JSON: {exc}"]) from None
    if nested_deeper_than(document, MAX_DEPTH):
        # Stored, such a value broke every answer listing the template.
        raise TemplateFileError(source, [f"{_ROOT}: nested deeper than {MAX_DEPTH} levels"])
    return parse_template(
        document, base_dir=path.parent, source=source, max_image_pixels=max_image_pixels
    )


def parse_template(
    document: Any,
    *,
    base_dir: Path,
    source: str = _ROOT,
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
) -> TemplateFile:
    """Validate an already parsed template; its files are resolved against ``base_dir``."""
    if not isinstance(document, dict):
        raise TemplateFileError(source, [f"{_ROOT}: must be a JSON object, got {_kind(document)}"])
    # First, and alone: names and keys with a lone surrogate cannot even be looked up, and
    # no text with a NUL can be stored (PostgreSQL's text holds none; the API refuses it).
    errors = [f"{where}: {problem}" for where, problem in _unstorable(document, "")]
    if errors:
        raise TemplateFileError(source, errors)
    spec = None
    try:
        spec = parse_spec(document, base_dir)
    except SpecError as exc:
        errors.extend(exc.errors)

    preview = None
    preview_name = document.get("preview")
    if preview_name is not None:
        preview = _preview(preview_name, base_dir, errors)

    if errors:
        raise TemplateFileError(source, errors)
    assert spec is not None
    assets: dict[str, bytes] = {}
    loader = DirectoryAssets(base_dir)
    for name in spec.files:
        try:
            assets[name] = loader(name)
        except AssetError as exc:  # changed since it was checked a moment ago
            errors.append(f"{_ROOT}: {exc}")
    if preview is not None:
        assets[str(preview_name)] = preview
    for name, data in assets.items():
        problem = asset_problem(data, max_pixels=max_image_pixels)
        if problem is not None:
            errors.append(f"{'preview' if data is preview else 'files'}: {name!r} {problem}")
    if errors:
        raise TemplateFileError(source, errors)
    return TemplateFile(
        name=spec.name,
        identifier=spec.identifier,
        data_keys=spec.data_keys,
        custom_attributes=dict(spec.custom_attributes),
        page_count=spec.page_count,
        spec=document,
        preview=preview,
        assets=assets,
    )


def import_template(
    repository: Repository, storage: FileStorage, client: str, template: TemplateFile
) -> Template:
    """Create ``template`` for ``client``, with its files in ``storage``; all or nothing.

    Every file the template names goes to ``templates/<client>/<identifier>/assets/<name>``
    (where the renderer reads it), the preview also to :func:`preview_key`. The keys contain
    the identifier, so the identifier is settled first (the file's, or a fresh one). Files
    are written before the row and deleted again if anything fails, so a failure leaves
    neither a row nor a stray file. Checking for a taken identifier before writing keeps an
    existing template's files from being overwritten; only two imports of the same
    identifier racing each other could still swap files.
    """
    if repository.get_client(client) is None:
        raise UnknownClient(f"no client {client!r}; see 'pps client list'")
    if template.identifier is None:
        # 62**8 identifiers: a second draw is already rare, a sixth never happens.
        identifier = ids.template_identifier()
        for _ in range(5):
            if repository.get_template(client, identifier) is None:
                break
            identifier = ids.template_identifier()
    elif repository.get_template(client, template.identifier) is not None:
        raise DuplicateIdentifier(
            f"template identifier {template.identifier!r} is taken for client {client!r}"
        )
    else:
        identifier = template.identifier
    files = {
        template_asset_key(client, identifier, name): data for name, data in template.assets.items()
    }
    key = None
    if template.preview is not None:
        key = preview_key(client, identifier)
        files[key] = template.preview
    written: list[str] = []
    try:
        for file_key, data in files.items():
            written.append(file_key)  # before put: a failed put may still leave a file
            storage.put(file_key, data)
        return repository.create_template(
            client,
            name=template.name,
            data_keys=template.data_keys,
            custom_attributes=template.custom_attributes,
            page_count=template.page_count,
            spec=template.spec,
            identifier=identifier,
            preview_key=key,
        )
    except BaseException:
        for file_key in written:
            storage.delete(file_key)
        raise


def _preview(value: Any, base_dir: Path, errors: list[str]) -> bytes | None:
    """The PNG bytes of the preview, which must stay inside the template file's directory."""
    if not isinstance(value, str) or not value.strip():
        errors.append(f"preview: must be a path relative to the template file, got {_show(value)}")
        return None
    if "\x00" in value or Path(value).is_absolute():
        errors.append(f"preview: must be a path relative to the template file, got {_show(value)}")
        return None
    root = base_dir.resolve()
    # resolve() follows symlinks, so a link pointing out of the directory is refused too.
    target = (root / value).resolve()
    if not target.is_relative_to(root):
        errors.append(f"preview: {value!r} lies outside the template file's directory")
        return None
    # The name is also a storage key (the preview is copied among the template's files).
    problem = check_relative_name(value)
    if problem is not None:
        errors.append(f"preview: {value!r} {problem}")
        return None
    try:
        # In the try: a name too long for the file system fails even to be looked up.
        if not target.is_file():
            errors.append(f"preview: {value!r} does not exist or is not a file")
            return None
        size = target.stat().st_size
        if size > MAX_PREVIEW_BYTES:
            errors.append(f"preview: {value!r} is larger than {MAX_PREVIEW_BYTES} bytes")
            return None
        data = target.read_bytes()
    except OSError as exc:
        errors.append(f"preview: {value!r} cannot be read: {exc.strerror}")
        return None
    if not data.startswith(PNG_SIGNATURE):
        errors.append(f"preview: {value!r} is not a PNG file")
        return None
    return data


_SURROGATE = "contains a lone UTF-16 surrogate; the file must be valid Unicode text"
_NUL = "contains a NUL character (\\u0000), which cannot be stored"


def _unstorable(value: Any, path: str) -> list[tuple[str, str]]:
    """The path and the problem of every key and string in ``value`` that holds a lone
    surrogate or a NUL character."""
    found: list[tuple[str, str]] = []
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem is not None:
            found.append((path or _ROOT, problem))
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = _text_problem(str(key))
            if problem is not None:
                found.append((f"{path or _ROOT} (a key)", problem))
                continue
            found.extend(_unstorable(item, f"{path}.{key}" if path else str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_unstorable(item, f"{path}[{index}]"))
    return found


def _text_problem(text: str) -> str | None:
    if not _encodes(text):
        return _SURROGATE
    return _NUL if "\x00" in text else None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    if isinstance(value, dict | list):
        return _kind(value)
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
