"""What the renderer raises; every error is a ``ValueError`` so callers can map bad input alone.

The root :class:`RenderError` lets the web layer turn all of these into a 422 (or a 400 for
bad options) without knowing the renderer; nothing here knows HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pps.render.problems import Problem, english, located

__all__ = ["AssetError", "InvalidValues", "RenderError", "RenderOptionError", "SpecError"]


class RenderError(ValueError):
    """Root of every error the renderer raises on purpose."""


class SpecError(RenderError):
    """A template is invalid; ``problems`` lists every ``(path, problem)``, ``errors`` the
    same in English as ``path: message``.

    All problems are collected before raising, so an operator fixes a file in one round.
    """

    def __init__(self, problems: Sequence[tuple[str, Problem]]) -> None:
        self.problems = list(problems)
        self.errors = [located(path, problem) for path, problem in self.problems]
        super().__init__("; ".join(self.errors))


class InvalidValues(RenderError):
    """Values cannot be rendered as the template says; ``problems`` maps each DataKey to its
    problems, ``errors`` to the same in English.

    ``key`` is the first failing DataKey, for callers that only report one.
    """

    def __init__(self, problems: Mapping[str, Sequence[Problem]]) -> None:
        self.problems = {key: list(found) for key, found in problems.items()}
        self.errors = {key: [english(p) for p in found] for key, found in self.problems.items()}
        self.key = next(iter(self.errors), "")
        super().__init__(
            "; ".join(f"{key}: {message}" for key, msgs in self.errors.items() for message in msgs)
        )


class AssetError(RenderError):
    """A file the template refers to is missing, unsafe or not what its name promises."""


class RenderOptionError(RenderError):
    """An option such as ``page``, ``width`` or ``height`` is out of range."""
