"""What goes into and comes out of an MCP tool call: the model's arguments checked, the server's result as text.

Every model output is hostile input: arguments that are not a JSON object (or a JSON string of one), that do not
serialize, or that are huge become a `bad_arguments` McpCallError, whose observation the model sees.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["McpCallError", "call_arguments", "result_text"]


class McpCallError(Exception):
    """A failed call: `kind` is the counted metric, `observation` the text the model sees."""

    def __init__(self, kind: str, observation: str):
        super().__init__(observation)
        self.kind, self.observation = kind, observation


def call_arguments(parameters: Any, max_chars: int) -> dict:
    """The model's arguments as the JSON object sent to the server; McpCallError("bad_arguments") otherwise."""
    if isinstance(parameters, str | bytes):  # a loop that did not decode the JSON: decode it here
        if len(parameters) > max_chars:
            raise _bad(f"the arguments are {len(parameters)} characters; at most {max_chars}")
        try:
            parameters = json.loads(parameters)
        except (ValueError, RecursionError) as exc:
            raise _bad(f"the arguments are not valid JSON ({type(exc).__name__})") from exc
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise _bad(f"the arguments must be a JSON object, got {type(parameters).__name__}")
    try:
        encoded = json.dumps(parameters, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _bad(f"the arguments cannot be sent as JSON ({type(exc).__name__})") from exc
    if len(encoded) > max_chars:
        raise _bad(f"the arguments are {len(encoded)} characters of JSON; at most {max_chars}")
    return json.loads(encoded)  # plain JSON types only (str keys, no tuples or subclasses)


def _bad(reason: str) -> McpCallError:
    return McpCallError("bad_arguments", f"Error: {reason}.")


def result_text(result, max_chars: int) -> str:
    """A CallToolResult as the observation: its text parts in order, other parts named, cut to max_chars."""
    parts = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource":
            resource = item.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {item.uri}]")
        else:  # image, audio: a text model gets their kind, not their bytes
            parts.append(f"[{kind or 'content'} {getattr(item, 'mime_type', '') or ''}]".replace(" ]", "]"))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts) if parts else "(the tool returned nothing)"
    if len(text) > max_chars:
        text = text[:max_chars] + f"...(cut: {len(text) - max_chars} more characters)"
    return text
