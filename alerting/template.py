"""The annotation template: ``{name}`` placeholders filled from a fixed set of fields, nothing
else. No format specs, attribute access, indexing, file reads, loops or recursion: one pass of
a regex over a text of bounded length, and the output is bounded too (each value is cut)."""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["FIELDS", "MAX_OUTPUT", "MAX_TEMPLATE", "TemplateError", "check_template", "render"]

MAX_TEMPLATE = 1024
MAX_VALUE = 256  # characters of one substituted value
MAX_OUTPUT = MAX_TEMPLATE + 16 * MAX_VALUE
FIELDS = ("rule", "value", "query", "severity", "state", "window", "threshold", "server")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class TemplateError(ValueError):
    """A template refused, naming the offending placeholder."""


def check_template(text: object) -> str:
    if not isinstance(text, str):
        raise TemplateError("must be a string")
    if len(text) > MAX_TEMPLATE:
        raise TemplateError(f"at most {MAX_TEMPLATE} characters, got {len(text)}")
    placeholders = _PLACEHOLDER.findall(text)
    if len(placeholders) > 16:
        raise TemplateError("at most 16 placeholders")
    for name in placeholders:
        if name not in FIELDS:
            raise TemplateError(
                f"unknown placeholder {{{name[:40]}}}: only {', '.join(FIELDS)} (no expressions)"
            )
    stray = _PLACEHOLDER.sub("", text)
    if "{" in stray or "}" in stray:
        raise TemplateError("an unmatched '{' or '}'")
    return text


def render(text: str, values: Mapping[str, object]) -> str:
    """``text`` with each placeholder replaced once; substituted text is never re-expanded."""

    def one(match: re.Match[str]) -> str:
        return str(values.get(match.group(1), ""))[:MAX_VALUE]

    return _PLACEHOLDER.sub(one, check_template(text))[:MAX_OUTPUT]
