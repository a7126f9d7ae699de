"""What a contract reads without importing the module it names: a function's source from the module's file (for
modules whose import needs packages this install lacks: verl's Megatron engine imports megatron.core) and a
config file shipped inside a package (verl's hydra YAMLs).

    >>> sorted(static_parameters("json.encoder:JSONEncoder.encode"))
    ['o', 'self']
    >>> config_key_problems("json:__init__.py", ("a",))[0].startswith("cannot read")
    True
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path


def package_file(module: str, filename: str | None = None) -> Path:
    """The file of `module` (or `filename` in its package folder), found from the top-level package's folder so
    that nothing but the top-level package's spec is looked up (importing a parent package can fail)."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise LookupError(f"package {top} is not installed")
    folder = Path(list(spec.submodule_search_locations)[0]).joinpath(*rest)
    if filename is not None:
        path = folder / filename
    else:
        path = folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")
    if not path.is_file():
        raise LookupError(f"{module}: no file {path.name} in {path.parent}")
    return path


def static_definition(target: str) -> ast.AST:
    """The class or function named by "module:Class.method", read from the module's file (no import)."""
    module, _, attr_path = target.partition(":")
    node: ast.AST = ast.parse(package_file(module).read_text())
    owner = f"module {module}"
    for part in attr_path.split("."):
        found = [child for child in getattr(node, "body", [])
                 if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and child.name == part]
        if not found:
            raise LookupError(f"{owner} has no attribute {part!r} (read from its source, not imported)")
        node, owner = found[-1], f"{module}:{part}"  # the last definition wins, as at import
    return node


def static_source(target: str) -> str:
    module = target.partition(":")[0]
    return ast.get_source_segment(package_file(module).read_text(), static_definition(target)) or ""


def static_parameters(target: str) -> list[str]:
    node = static_definition(target)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise LookupError(f"{target} is not a function")
    args = node.args
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]
    return [arg.arg for arg in named]


def config_key_problems(target: str, keys) -> list[str]:
    """The dotted `keys` that the YAML file "package.module:file.yaml" does not have."""
    import yaml

    module, _, filename = target.partition(":")
    try:
        config = yaml.safe_load(package_file(module, filename).read_text())
    except Exception as exc:  # missing file, broken YAML: report it, never crash the report
        return [f"cannot read {filename} ({type(exc).__name__}: {exc})"]
    problems = []
    for key in keys:
        node = config
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                problems.append(f"config key {key!r} is gone ({part!r} missing)")
                break
            node = node[part]
    return problems
