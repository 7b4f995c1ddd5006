"""What the renderer raises; every error is a ``ValueError`` so callers can map bad input alone.

The root :class:`RenderError` lets the web layer turn all of these into a 422 (or a 400 for
bad options) without knowing the renderer; nothing here knows HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["AssetError", "InvalidValues", "RenderError", "RenderOptionError", "SpecError"]


class RenderError(ValueError):
    """Root of every error the renderer raises on purpose."""


class SpecError(RenderError):
    """A template is invalid; ``errors`` lists every problem as ``path: message``.

    All problems are collected before raising, so an operator fixes a file in one round.
    """

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


class InvalidValues(RenderError):
    """Values cannot be rendered as the template says; ``errors`` maps each DataKey to messages.

    ``key`` is the first failing DataKey, for callers that only report one.
    """

    def __init__(self, errors: Mapping[str, Sequence[str]]) -> None:
        self.errors = {key: list(messages) for key, messages in errors.items()}
        self.key = next(iter(self.errors), "")
        super().__init__(
            "; ".join(f"{key}: {message}" for key, msgs in self.errors.items() for message in msgs)
        )


class AssetError(RenderError):
    """A file the template refers to is missing, unsafe or not what its name promises."""


class RenderOptionError(RenderError):
    """An option such as ``page``, ``width`` or ``height`` is out of range."""
