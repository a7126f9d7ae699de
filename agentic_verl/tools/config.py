"""Check a tool config YAML as verl's loader will read it, before a run, with errors that say how to fix them.

verl builds the tools of `actor_rollout_ref.rollout.multi_turn.tool_config_path` in every rollout worker
(`verl.tools.tool_registry.initialize_tools_from_config`): it looks each `class_name` module up on that process's
`sys.path` with `importlib.util.find_spec`, never relative to the YAML. A module that is not importable there
(a `my_tools.py` next to the YAML, importable only when Python was started in that folder) fails inside verl with
`AttributeError: 'NoneType' object has no attribute 'loader'`. Here the same lookup names the module, the YAML and
the fix: a class in an installed package (`pip install -e .` of your project) loads from any working directory;
a loose module needs its folder on `PYTHONPATH` in every worker.

    python -m agentic_verl.tools.config my_tools.yaml   # exit 1 with the reason when verl would fail
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys

__all__ = ["ToolConfigError", "check_tool_config"]

_ENTRY_FIELDS = frozenset({"class_name", "config", "tool_schema"})  # what verl reads; anything else it ignores


class ToolConfigError(ValueError):
    """A tool config that verl's loader would refuse, or would fail on with an unhelpful error."""


def settings_from_config(settings_class: type, config, what: str):
    """A tool's settings dataclass from its YAML `config` (verl's `type` key aside), refusing keys the dataclass does
    not have, so that a misspelt setting stops the run instead of being ignored. `what` names the tool in the error."""
    known = {f.name for f in dataclasses.fields(settings_class)}
    unknown = sorted(set(config) - known - {"type"})
    if unknown:
        raise ValueError(f"unknown {what} config key(s) {unknown}; known: {sorted(known)}")
    return settings_class(**{key: value for key, value in config.items() if key in known})


def check_schema_keeps(tool_schema, parameter: str) -> None:
    """A tool_schema the YAML gives (or None: the tool builds its own) must keep the parameter the tool reads."""
    if tool_schema is not None and parameter not in tool_schema.function.parameters.properties:
        raise ValueError(f"a tool_schema given in the YAML must keep the {parameter!r} parameter; "
                         "better leave tool_schema out (the tool builds its own)")


def check_tool_config(path: str | os.PathLike) -> list[type]:
    """The tool classes `path` names, imported as a rollout worker will; ToolConfigError if any would fail."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = os.path.abspath(os.fspath(path))
    try:
        data = OmegaConf.load(path)
    except OSError as exc:
        raise ToolConfigError(f"cannot read tool config {path!r}: {exc}") from exc
    except Exception as exc:  # yaml's own error types; the file is the problem either way
        raise ToolConfigError(f"tool config {path!r} is not valid YAML: {exc}") from exc
    tools = data.get("tools") if OmegaConf.is_dict(data) else None
    if not OmegaConf.is_list(tools) or len(tools) == 0:
        raise ToolConfigError(f"{path}: expected a mapping with a non-empty 'tools' list")
    classes = []
    for index, entry in enumerate(tools):
        where = f"{path}: tools[{index}]"
        try:
            classes.append(_check_entry(entry, where, os.path.dirname(path)))
        except OmegaConfBaseException as exc:  # an interpolation that does not resolve, ...
            raise ToolConfigError(f"{where}: {type(exc).__name__}: {exc}") from exc
    return classes


def _check_entry(entry, where: str, yaml_dir: str) -> type:
    from omegaconf import OmegaConf
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema

    if not OmegaConf.is_dict(entry):
        raise ToolConfigError(f"{where}: expected a mapping with 'class_name' and 'config', got {entry!r}")
    unknown = sorted(set(entry) - _ENTRY_FIELDS)
    if unknown:
        raise ToolConfigError(f"{where}: unknown fields {unknown} (verl would ignore them); "
                              f"allowed: {sorted(_ENTRY_FIELDS)}")
    class_name = entry.get("class_name")
    if not isinstance(class_name, str) or "." not in class_name.strip("."):
        raise ToolConfigError(f"{where}: 'class_name' must be a dotted 'package.module.Class', got {class_name!r}")
    config = entry.get("config")
    if not OmegaConf.is_dict(config) or config.get("type") != "native":
        raise ToolConfigError(f"{where}: 'config' must be a mapping with 'type: native' (verl's only tool type), "
                              f"got {config!r}")
    cls = _import_class(class_name, where, yaml_dir)
    if not (isinstance(cls, type) and issubclass(cls, BaseTool)):
        raise ToolConfigError(f"{where}: {class_name} is not a subclass of verl.tools.base_tool.BaseTool")
    if entry.get("tool_schema") is not None:
        try:
            OpenAIFunctionToolSchema.model_validate(OmegaConf.to_container(entry.tool_schema, resolve=True))
        except ValueError as exc:  # pydantic's ValidationError
            raise ToolConfigError(f"{where}: bad 'tool_schema': {exc}") from exc
    return cls


def _import_class(class_name: str, where: str, yaml_dir: str) -> type:
    module_name, _, attr = class_name.rpartition(".")
    top = module_name.partition(".")[0]
    if importlib.util.find_spec(top) is None:  # verl's find_spec returns None here: the AttributeError
        hint = ""
        if os.path.exists(os.path.join(yaml_dir, f"{top}.py")) or os.path.isdir(os.path.join(yaml_dir, top)):
            hint = f" ({top!r} is next to the YAML: add PYTHONPATH={yaml_dir} to every worker's environment)"
        raise ToolConfigError(
            f"{where}: class_name {class_name!r}: no module {top!r} on this process's sys.path. verl imports it "
            "in every rollout worker from sys.path, not relative to the YAML or the launch folder: install the "
            f"package that holds it (pip install -e YOUR_PROJECT) or put its folder on PYTHONPATH{hint}"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the module exists but fails to import: its own error, with where it came from
        raise ToolConfigError(f"{where}: class_name {class_name!r}: importing {module_name!r} failed: "
                              f"{type(exc).__name__}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ToolConfigError(f"{where}: class_name {class_name!r}: module {module_name!r} "
                              f"({getattr(module, '__file__', '?')}) has no attribute {attr!r}") from None


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m agentic_verl.tools.config TOOL_CONFIG.yaml...", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            classes = check_tool_config(path)
        except ToolConfigError as exc:
            print(f"FAIL {exc}", file=sys.stderr)
            status = 1
        else:
            print(f"ok   {path}: " + ", ".join(f"{cls.__module__}.{cls.__qualname__}" for cls in classes))
    return status


if __name__ == "__main__":
    sys.exit(main())
