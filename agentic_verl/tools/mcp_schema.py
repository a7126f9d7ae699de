"""An MCP tool's input schema as verl's `OpenAIFunctionToolSchema`, without losing any of it.

verl's schema models keep, per parameter, only `type`, `description` and `enum` (pydantic drops the rest), and
require `type`: an array parameter loses its `items`, an object its `properties`, a Python SDK server's optional
parameter (`anyOf: [..., null]`, no `type`) fails validation. MCP servers use all of these (the memory server's
`entities` is an array of objects), so the model would see `entities: array` and have to guess its fields.
`full_tool_schema` returns subclasses of verl's models that keep every key, so verl's
`tool_schema.model_dump(exclude_unset=True, exclude_none=True)` (what ToolAgentLoop renders into the chat template)
gives the server's schema whole. A `tool_schema` written in the tool YAML is validated by verl itself, before the
tool sees it, and so keeps only what verl keeps: leave it out (`agentic-verl tools mcp-yaml` does by default).
"""

from __future__ import annotations

from pydantic import ConfigDict
from verl.tools.schemas import (
    OpenAIFunctionParametersSchema,
    OpenAIFunctionPropertySchema,
    OpenAIFunctionSchema,
    OpenAIFunctionToolSchema,
)

__all__ = ["full_tool_schema", "tool_to_openai_schema"]


class _FullPropertySchema(OpenAIFunctionPropertySchema):
    model_config = ConfigDict(extra="allow")
    type: str | list[str] | None = None  # anyOf / oneOf / $ref parameters have none


class _FullParametersSchema(OpenAIFunctionParametersSchema):
    model_config = ConfigDict(extra="allow")  # $defs, additionalProperties
    properties: dict[str, _FullPropertySchema]


class _FullFunctionSchema(OpenAIFunctionSchema):
    parameters: _FullParametersSchema


class _FullToolSchema(OpenAIFunctionToolSchema):
    function: _FullFunctionSchema


def tool_to_openai_schema(tool) -> dict:
    """An MCP `Tool` listing as an OpenAI function-tool dict (the model sees name, description, parameters)."""
    parameters = dict(tool.input_schema or {})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    parameters.pop("$schema", None)
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description or tool.title or tool.name,
                         "parameters": parameters}}


def full_tool_schema(tool) -> OpenAIFunctionToolSchema:
    """`tool_to_openai_schema` as a verl schema object that dumps back every key the server gave."""
    return _FullToolSchema.model_validate(tool_to_openai_schema(tool))
