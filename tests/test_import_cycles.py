"""No import loops inside the package: the graph of every module's imports (top-level, function-level and
`TYPE_CHECKING` ones alike, read with `ast`, nothing imported) must have no cycle.

A function-level import hides a loop from Python (the module is complete by the time the function runs) but not
from a reader: two modules that import each other are one module in two files. `tests/test_layering.py` checks the
rules between folders; this test checks every pair of modules, wherever they sit.

An edge A -> B means module A names module B in an import: `import agentic_verl.x.b`, `from agentic_verl.x import b`
(b a submodule), `from agentic_verl.x.b import name`, or the relative forms. Importing a module also runs its
parent packages' `__init__.py`; those implicit edges are left out (every module would otherwise sit in a loop with
any `__init__.py` that re-exports it), but an explicit import of a package is an edge to its `__init__.py`.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "agentic_verl"

def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package (a package's name maps to its __init__.py)."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """`from ..x import y` in `module` -> the absolute name of `..x`."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported package module, line) for every import statement in the file, wherever it stands."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in modules:  # `import a.b.c` where c is a name inside a.b: edge to a.b
                    name = name.rpartition(".")[0]
                if name:
                    found.append((name, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_package, node.level, node.module) if node.level
                    else node.module or "")
            if base not in modules:
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((submodule if submodule in modules else base, node.lineno))
    return [(name, line) for name, line in found if name != module]


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line that imports it}."""
    modules = module_files(root, package)
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        for target, line in imports_of(module, path, modules):
            edges.setdefault(target, line)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def one_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """A shortest loop through the component's first module (breadth-first within the component)."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        next_frontier = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1] + [start]
                if child in members and child not in previous:
                    previous[child] = node
                    next_frontier.append(child)
        frontier = next_frontier
    return component  # unreachable for a strongly connected component


def describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """The loop as `a -> b -> a`, then every import between the loop's modules with its file and line."""
    files = module_files()
    members = set(component)
    lines = ["  " + " -> ".join(one_cycle(graph, component))]
    lines += [f"    {a} -> {b}  ({files[a].relative_to(ROOT)}:{line})"
              for a in component for b, line in sorted(graph[a].items()) if b in members]
    return "\n".join(lines)


def test_the_package_has_no_import_loop():
    graph = import_graph()
    loops = strongly_connected(graph)
    report = [f"loop {i} ({len(c)} modules):\n{describe(graph, c)}" for i, c in enumerate(loops, 1)]
    assert not loops, "import loops in agentic_verl:\n" + "\n".join(report)


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The reader finds loops made of function-level, relative, `from package import submodule` and
    `import a.b` imports, and names the line of each import."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .sub import b\n")
    (package / "sub" / "b.py").write_text("import pkg.sub.c\n")
    (package / "sub" / "c.py").write_text("from ..a import f\n")
    (package / "d.py").write_text("from pkg import a\n")  # into the loop, not part of it
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.sub.b": 2}
    assert graph["pkg.sub.b"] == {"pkg.sub.c": 1}
    assert graph["pkg.sub.c"] == {"pkg.a": 1}
    assert strongly_connected(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c"]]
    assert one_cycle(graph, ["pkg.a", "pkg.sub.b", "pkg.sub.c"]) == ["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]
    (package / "sub" / "c.py").write_text("X = 1\n")
    assert strongly_connected(import_graph(tmp_path, "pkg")) == []
