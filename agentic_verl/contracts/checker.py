"""Check a `Contract` (one verl/vLLM symbol we rely on) against the installed packages, cheaply (no Ray, no engine).

What a check looks at: the symbol imports and is the kind of thing we use (class, callable, dict, module); the
parameters we pass or override are still in its signature (`inspect.signature`); a class we build is still built
by the fields we pass (no new required field: `required_fields`); the config keys we set still exist; a text we
match or copy still occurs in its source (`inspect.getsource`, whitespace-insensitive); for a class we subclass,
every method our subclass defines still exists on verl's class (a renamed base method would leave our override
dead without any error); and a behaviour probe (`probes.py`) runs what we rely on, on CPU, and checks its result
(the return shape of `ToolAgentLoop._call_tool`, what `tensordict_utils.get` unwraps, ...). A module whose import
needs a package this install lacks (verl's Megatron engine) is read from its file instead (`static=True`).

    >>> ok = Contract("json:dumps", relies_on="...", why="...", used_by=("x.py",), params=("obj", "indent"))
    >>> check(ok).problems
    []
    >>> check(Contract("json:dumpz", relies_on="...", why="...", used_by=("x.py",))).problems
    ["module json has no attribute 'dumpz'"]
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import re
from dataclasses import dataclass, field

from agentic_verl.contracts import shapes, sources

KINDS = ("class", "callable", "dict", "module", "value", "config")  # "value": only that it exists
# "config": a config file a package ships, target "package.module:file.yaml"; `config_keys` must be in it


@dataclass(frozen=True)
class Contract:
    """One symbol of verl / vLLM (or a package they bring) that agentic_verl relies on.

    `target` is "module:attr.attr" (or just "module"); `used_by` our files that rely on it. `params`: parameter
    names that must be in its signature. `source_has`: texts that must occur in its source (what we match or copy).
    `overridden_by`: our subclass ("module:Class"), whose methods must all exist on `target` except `own` ones.
    `builds_with`: the fields our code builds the class with (the fewest any call site passes): each must be
    accepted and every field the class requires must be among them. `config_keys`: dotted keys we set or read,
    which must exist in the config file (kind "config") or dataclass `target`. `probe`: the name of a function in
    `agentic_verl.contracts.probes` that exercises the behaviour we rely on and returns its problems. `static`:
    read the target from its module's file instead of importing it (params and source_has only).
    `public`: a documented extension hook (registry, base class, config key) rather than an internal."""

    target: str
    relies_on: str
    why: str
    used_by: tuple[str, ...]
    kind: str = "callable"
    params: tuple[str, ...] = ()
    source_has: tuple[str, ...] = ()
    overridden_by: str | None = None
    own: tuple[str, ...] = ()
    builds_with: tuple[str, ...] = ()
    config_keys: tuple[str, ...] = ()
    probe: str | None = None
    static: bool = False
    public: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"contract {self.target}: unknown kind {self.kind!r}; known: {', '.join(KINDS)}")
        if not self.used_by:
            raise ValueError(f"contract {self.target}: name the files that rely on it (used_by)")
        if self.static and (self.builds_with or self.probe or self.overridden_by or self.config_keys):
            raise ValueError(f"contract {self.target}: a static contract checks params and source_has only")

    @property
    def checks(self) -> tuple[str, ...]:
        """What its check looks at, in words (docs/contracts.md's table)."""
        named = [("exists" if self.kind in ("value", "config") else self.kind, True),
                 ("signature", bool(self.params)), ("required fields", bool(self.builds_with)),
                 ("config keys", bool(self.config_keys)), ("source text", bool(self.source_has)),
                 ("overrides", bool(self.overridden_by)), ("behaviour", bool(self.probe)),
                 ("read from source", self.static)]
        return tuple(name for name, used in named if used)

    @property
    def package(self) -> str:
        return self.target.split(":")[0].split(".")[0]


@dataclass
class Result:
    contract: Contract
    problems: list[str] = field(default_factory=list)
    checked: bool = True  # False when the contract's package is not installed (nothing to check against)

    @property
    def ok(self) -> bool:
        return not self.problems


def resolve(target: str):
    """The object named "module:attr.attr"; raises LookupError naming the first missing part."""
    module_name, _, path = target.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:  # anything a broken import raises: report it, never crash the report
        raise LookupError(f"cannot import {module_name} ({type(exc).__name__}: {exc})") from exc
    owner = f"module {module_name}"
    for part in path.split(".") if path else ():
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise LookupError(f"{owner} has no attribute {part!r}") from None
        except Exception as exc:  # a lazy attribute (vLLM's current_platform) that fails to resolve
            raise LookupError(f"{owner}.{part} cannot be read ({type(exc).__name__}: {exc})") from exc
        owner = f"{module_name}:{getattr(obj, '__qualname__', part)}"
    return obj


def check(contract: Contract) -> Result:
    """Every problem of one contract (an empty list: it holds); never raises."""
    if importlib.util.find_spec(contract.package) is None:
        return Result(contract, checked=False)
    try:
        return Result(contract, _problems(contract))
    except Exception as exc:  # a report must list every contract, whatever one of them does
        return Result(contract, [f"the check itself failed ({type(exc).__name__}: {exc})"])


def _problems(contract: Contract) -> list[str]:
    if contract.static:
        return _static_problems(contract)
    if contract.kind == "config":
        return sources.config_key_problems(contract.target, contract.config_keys)
    try:
        obj = resolve(contract.target)
    except LookupError as exc:
        return [str(exc)]
    problems = _kind_problems(contract.kind, obj)
    if contract.params:
        problems += _param_problems(obj, contract.params)
    if contract.builds_with:
        problems += shapes.field_problems(obj, contract.builds_with)
    if contract.config_keys:
        problems += shapes.dataclass_key_problems(obj, contract.config_keys)
    if contract.source_has:
        problems += _source_problems(obj, contract.source_has)
    if contract.overridden_by:
        problems += _override_problems(obj, contract.overridden_by, contract.own)
    if contract.probe and not problems:  # a probe of a symbol that drifted otherwise would only repeat it
        problems += _probe_problems(contract.probe, obj)
    return problems


def _static_problems(contract: Contract) -> list[str]:
    try:
        problems = []
        if contract.params:
            found = sources.static_parameters(contract.target)
            missing = [name for name in contract.params if name not in found]
            if missing:
                problems.append(f"parameters ({', '.join(found)}) have no {', '.join(map(repr, missing))}")
        if contract.source_has:
            source = _squash(sources.static_source(contract.target))
            problems += [f"source no longer contains {text!r}" for text in contract.source_has
                         if _squash(text) not in source]
        if not problems:
            sources.static_definition(contract.target)  # it exists (raises LookupError naming what is gone)
        return problems
    except (LookupError, OSError, SyntaxError) as exc:
        return [str(exc)]


def check_all(contracts) -> list[Result]:
    return [check(contract) for contract in contracts]


def format_report(results: list[Result]) -> str:
    """The drifted contracts, one block each: target, what is wrong, what we rely on, our files."""
    drifted = [r for r in results if not r.ok]
    lines = [f"{len(drifted)} of {len(results)} verl/vLLM contracts drifted ({installed_versions()}):"]
    for result in drifted:
        c = result.contract
        lines.append(f"- {c.target}  (used by {', '.join(c.used_by)})")
        lines += [f"    {problem}" for problem in result.problems]
        lines.append(f"    we rely on: {c.relies_on}")
    return "\n".join(lines)


def installed_versions(packages=("verl", "vllm")) -> str:
    found = []
    for name in packages:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def _kind_problems(kind: str, obj) -> list[str]:
    if kind == "class" and not inspect.isclass(obj):
        return [f"is no longer a class ({type(obj).__name__})"]
    if kind == "callable" and not callable(obj):
        return [f"is no longer callable ({type(obj).__name__})"]
    if kind == "dict" and not isinstance(obj, dict):
        return [f"is no longer a dict ({type(obj).__name__})"]
    if kind == "module" and not inspect.ismodule(obj):
        return [f"is no longer a module ({type(obj).__name__})"]
    return []


def _param_problems(obj, params) -> list[str]:
    try:
        signature = inspect.signature(obj)  # follows __wrapped__: our own wrappers show verl's signature
    except (TypeError, ValueError) as exc:
        return [f"has no inspectable signature ({exc})"]
    missing = [name for name in params if name not in signature.parameters]
    return [f"signature {signature} has no parameter(s) {', '.join(map(repr, missing))}"] if missing else []


def _probe_problems(name: str, obj) -> list[str]:
    from agentic_verl.contracts import probes

    probe = getattr(probes, name, None)
    if probe is None:
        return [f"no behaviour probe named {name!r} in agentic_verl.contracts.probes"]
    try:
        return list(probe(obj))
    except Exception as exc:  # what we rely on raised: that is the drift
        return [f"behaviour probe {name} raised {type(exc).__name__}: {exc}"]


def _source_problems(obj, texts) -> list[str]:
    try:
        source = _squash(inspect.getsource(inspect.unwrap(obj)))
    except (OSError, TypeError) as exc:
        return [f"source not available ({exc})"]
    return [f"source no longer contains {text!r}" for text in texts if _squash(text) not in source]


def _override_problems(base, ours: str, own) -> list[str]:
    try:
        subclass = resolve(ours)
    except LookupError as exc:
        return [f"our subclass {ours}: {exc}"]
    if not (inspect.isclass(base) and inspect.isclass(subclass) and issubclass(subclass, base)):
        return [f"{ours} is no longer a subclass of it"]
    defined = [name for name, value in vars(subclass).items()
               if (inspect.isfunction(value) or isinstance(value, (property, classmethod, staticmethod)))
               and (not name.startswith("__") or name == "__init__")]
    gone = [name for name in defined if name not in own and not hasattr(base, name)]
    return [f"{ours}.{name} overrides nothing: {base.__name__}.{name} is gone" for name in gone]


def _squash(text: str) -> str:
    """Whitespace-insensitive matching: a reformatted line still counts, a changed token does not."""
    return re.sub(r"\s+", "", text)
