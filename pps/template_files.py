"""Template files: the JSON an operator imports with ``pps template import``.

Plain Python, no Flask. A template file is a JSON object::

    {
      "name": "Business card",              # required, non-empty
      "identifier": "Card2024",             # optional: letters, digits, - and _, up to 64
      "dataKeys": ["firstName", "email"],   # optional, unique non-empty strings
      "customAttributes": {"format": "A6"}, # optional object
      "pageCount": 1,                       # optional whole number >= 1 (default 1)
      "preview": "card.png"                 # optional PNG beside the file
    }

The format is open: unknown keys are ignored here and the whole object is kept as the
template's ``spec``, so later additions (pages, size, bleed, elements) need no migration of
files already imported. Validation collects every error with its path (``dataKeys[2]: ...``)
before anything is written, so a file is imported whole or not at all.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pps import ids
from pps.models import JsonObject, Template
from pps.repository import DuplicateIdentifier, Repository
from pps.storage import FileStorage

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
MAX_NAME_LENGTH = 200  # the width of templates.name
_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,64}")
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
    """A validated template file, ready to import."""

    name: str
    identifier: str | None
    data_keys: tuple[str, ...]
    custom_attributes: JsonObject
    page_count: int
    spec: JsonObject
    preview: bytes | None


def preview_key(client: str, identifier: str) -> str:
    """Where a template's preview lives in file storage."""
    return f"templates/{client}/{identifier}/preview.png"


def load_template_file(path: Path) -> TemplateFile:
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
        document = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise TemplateFileError(source, [f"{_ROOT}: is not UTF-8 text"]) from None
    except json.JSONDecodeError as exc:
        raise TemplateFileError(
            source, [f"{_ROOT}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        ) from None
    except (ValueError, RecursionError) as exc:
        raise TemplateFileError(source, [f"{_ROOT}: not valid JSON: {exc}"]) from None
    return parse_template(document, base_dir=path.parent, source=source)


def parse_template(document: Any, *, base_dir: Path, source: str = _ROOT) -> TemplateFile:
    """Validate an already parsed template; ``preview`` is resolved against ``base_dir``."""
    if not isinstance(document, dict):
        raise TemplateFileError(source, [f"{_ROOT}: must be a JSON object, got {_kind(document)}"])
    errors: list[str] = []

    name = document.get("name")
    if "name" not in document:
        errors.append("name: is required")
    elif not isinstance(name, str) or not name.strip():
        errors.append(f"name: must be a non-empty string, got {_kind(name)}")
    elif len(name) > MAX_NAME_LENGTH:
        errors.append(f"name: must be at most {MAX_NAME_LENGTH} characters, got {len(name)}")

    identifier = document.get("identifier")
    if identifier is not None and (
        not isinstance(identifier, str) or not _IDENTIFIER.fullmatch(identifier)
    ):
        errors.append(
            "identifier: must be 1 to 64 letters, digits, '-' or '_', got " + _show(identifier)
        )

    data_keys = _data_keys(document.get("dataKeys", []), errors)

    custom_attributes = document.get("customAttributes", {})
    if not isinstance(custom_attributes, dict):
        errors.append(f"customAttributes: must be an object, got {_kind(custom_attributes)}")

    page_count = document.get("pageCount", 1)
    if isinstance(page_count, bool) or not isinstance(page_count, int) or page_count < 1:
        errors.append(f"pageCount: must be a whole number of at least 1, got {_show(page_count)}")

    preview = None
    if document.get("preview") is not None:
        preview = _preview(document["preview"], base_dir, errors)

    if errors:
        raise TemplateFileError(source, errors)
    assert isinstance(name, str) and isinstance(custom_attributes, dict)
    return TemplateFile(
        name=name.strip(),
        identifier=identifier,
        data_keys=tuple(data_keys),
        custom_attributes=custom_attributes,
        page_count=page_count,
        spec=document,
        preview=preview,
    )


def import_template(
    repository: Repository, storage: FileStorage, client: str, template: TemplateFile
) -> Template:
    """Create ``template`` for ``client``, with its preview in ``storage``; all or nothing.

    The preview key contains the identifier, so the identifier is settled first (the file's,
    or a fresh one). The preview is written before the row and deleted again if the insert
    fails, so a failure leaves neither a row nor a stray file. Checking for a taken
    identifier before writing keeps an existing template's preview from being overwritten;
    only two imports of the same identifier racing each other could still swap previews.
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
    key = None
    if template.preview is not None:
        key = preview_key(client, identifier)
        storage.put(key, template.preview)
    try:
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
        if key is not None:
            storage.delete(key)
        raise


def _data_keys(value: Any, errors: list[str]) -> list[str]:
    if not isinstance(value, list):
        errors.append(f"dataKeys: must be a list of strings, got {_kind(value)}")
        return []
    seen: dict[str, int] = {}
    for index, key in enumerate(value):
        if not isinstance(key, str) or not key.strip():
            errors.append(f"dataKeys[{index}]: must be a non-empty string, got {_show(key)}")
        elif key in seen:
            errors.append(f"dataKeys[{index}]: duplicates dataKeys[{seen[key]}] ({key!r})")
        else:
            seen[key] = index
    return list(seen)


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
    if not target.is_file():
        errors.append(f"preview: {value!r} does not exist or is not a file")
        return None
    try:
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


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; PostgreSQL's JSON type refuses them too.
    raise ValueError(f"{name} is not allowed in JSON")


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
