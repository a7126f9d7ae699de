"""Every repository path that the docs and the code's docstrings and comments name exists, so a renamed or moved file
cannot leave a pointer behind.

Where paths are read:
- Markdown: `docs/*.md`, `README.md`, `recipes/*/README.md`, the whole text (prose, code spans, code blocks), and
  every relative link target (`[text](page.md#anchor)`), resolved from the page's folder, with its anchor: a
  heading of the page it links to (mkdocs checks the site's own links; the READMEs' links it never sees).
- Python (`agentic_verl/`, `recipes/`, `tests/`, `benchmarks/`, `scripts/`, `reward_fns/`): the comments and the
  module, class and function docstrings; string literals that are code are not read.
- Shell, YAML and requirement files under those folders and `configs/`, `install/`, and the `Makefile`,
  `pyproject.toml`, `mkdocs.yml` and `.ci/run`: their `#` comments.

A repository path is a word that starts with one of `TOP_FOLDERS` and a slash (`recipes/rag_r1/grpo.sh`,
`docs/`); brace lists expand (`docs/{rag_r1,v2p}.md` names two pages). A path may also be read from the naming
file's folder (`agentic_verl/agent_loops/` names its own `configs/`), and `module.name` is a name in `module.py`. Not checked: globs and placeholders (a `*`, `<`,
`$` or `...` in the word, or right after it), folders that runs create (`SKIPPED_PARTS`), and words that continue
another path (`github.com/volcengine/verl/docs/...`, `verl/tests/...`).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from markdown.extensions.toc import slugify  # what mkdocs.yml's `toc` extension names headings with

ROOT = Path(__file__).resolve().parents[1]
TOP_FOLDERS = ("agentic_verl", "recipes", "docs", "tests", "benchmarks", "scripts", "configs", "reward_fns",
               "install", "notes")
TOP_FILES = ("Makefile", "pyproject.toml", "mkdocs.yml", ".ci/run")  # read for their `#` comments
SKIPPED_PARTS = {"outputs", "checkpoints", "__pycache__"}  # what runs write; never committed
# A word that starts at a top folder: letters, digits, `_.-/`, and `{a,b}` brace lists. The look-behind keeps out
# paths inside other paths and URLs; the look-ahead leaves globs and placeholders (`recipes/<method>/...`) alone.
PATH = re.compile(
    r"(?<![\w./\-$~])(?P<path>(?:" + "|".join(TOP_FOLDERS) + r")/(?:[\w.\-/]|\{[\w.\-/,]*\})*)"
    r"(?P<after>[*<$\[]|\.\.\.)?"
)
FILE_SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".json", ".jsonl", ".txt", ".toml", ".html", ".png", ".parquet"}
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
PLACEHOLDER = re.compile(r"[*<>$]|\.\.\.")


def expand_braces(path: str) -> list[str]:
    """`docs/{rag_r1,v2p}.md` -> `docs/rag_r1.md`, `docs/v2p.md` (one brace list at a time, left to right)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [expanded for option in match[1].split(",")
            for expanded in expand_braces(path[:match.start()] + option + path[match.end():])]


def named_paths(text: str) -> Iterator[tuple[int, str]]:
    """(0-based line offset, repository path) for each repository path named in `text`, placeholders left out."""
    for offset, line in enumerate(text.splitlines()):
        for match in PATH.finditer(line):
            if match["after"]:
                continue
            for path in expand_braces(match["path"].rstrip(".,:;")):
                if not PLACEHOLDER.search(path) and not SKIPPED_PARTS & set(path.split("/")):
                    yield offset, path.rstrip("/") or path


def linked_paths(text: str, page: Path) -> Iterator[tuple[int, Path, str]]:
    """(0-based line offset, repository file, anchor or "") for each relative Markdown link target of `page`."""
    for offset, line in enumerate(text.splitlines()):
        for match in LINK.finditer(line):
            target, _, anchor = match["target"].partition("#")
            if target and not re.match(r"[a-z][a-z0-9+.\-]*:|/", target) and not PLACEHOLDER.search(target):
                yield offset, (page.parent / target).resolve(), anchor


def heading_anchors(text: str) -> set[str]:
    """The anchors of a Markdown page's headings as the site makes them: an explicit `{#id}`, else the toc
    extension's slug of the heading's text; headings inside code blocks are not headings."""
    anchors, fence = set(), None
    for line in text.splitlines():
        opening = re.match(r"\s*(`{3,}|~{3,})", line)
        if opening and fence is None:
            fence = opening[1]
        elif fence and line.strip().startswith(fence) and not line.strip(" `~"):
            fence = None
        elif fence is None and (heading := re.match(r"#{1,6}\s+(.*?)\s*(?:\{#(?P<id>[^}\s]+)[^}]*\})?\s*$", line)):
            anchors.add(heading["id"] or slugify(heading[1], "-"))
    return anchors


def python_prose(source: str) -> Iterator[tuple[int, str]]:
    """(1-based line, text) for the comments and docstrings of a Python module."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                for number in range(first.lineno, first.end_lineno + 1):
                    yield number, lines[number - 1]


def shell_comments(source: str) -> Iterator[tuple[int, str]]:
    """(1-based line, comment) for shell, YAML, TOML, make: from a `#` at the line's start or after a blank."""
    for number, line in enumerate(source.splitlines(), 1):
        match = re.search(r"(?:^|\s)(#.*)$", line)
        if match:
            yield number, match[1]


def markdown_files() -> list[Path]:
    return sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md", *(ROOT / "recipes").glob("*/README.md")])


def code_files() -> list[Path]:
    folders = ("agentic_verl", "recipes", "tests", "benchmarks", "scripts", "reward_fns", "configs", "install")
    found = [path for folder in folders for path in (ROOT / folder).rglob("*")
             if path.suffix in {".py", ".sh", ".yaml", ".yml", ".txt"} and path.is_file()
             and not SKIPPED_PARTS & set(path.relative_to(ROOT).parts)]
    return sorted([*found, *(ROOT / name for name in TOP_FILES)])


def exists(path: Path) -> bool:
    """The file or folder, or `module.name` where `module.py` is the file (`tests/cpu/cpu_backend_helpers.run_recipe`)."""
    return path.exists() or (path.suffix not in FILE_SUFFIXES and path.with_suffix(".py").is_file())


def dead_anchors(text: str, page: Path, root: Path) -> list[str]:
    """`page:line: target.md#anchor (no such heading)` for each link to an existing page's missing anchor."""
    return [f"{page.relative_to(root)}:{offset + 1}: {target.relative_to(root)}#{anchor} (no such heading)"
            for offset, target, anchor in linked_paths(text, page)
            if anchor and target.suffix == ".md" and target.is_file() and target.is_relative_to(root)
            and anchor not in heading_anchors(target.read_text())]


def missing_paths(files: list[Path], root: Path = ROOT) -> list[str]:
    """`file:line: path` for every path named in `files` that does not exist under `root`, and every link anchor
    that names no heading."""
    missing = []
    for file in files:
        text, name = file.read_text(), file.relative_to(root)
        if file.suffix == ".md":
            pieces = [(offset + 1, path) for offset, path in named_paths(text)]
            pieces += [(offset + 1, target) for offset, target, _ in linked_paths(text, file)]
            missing += dead_anchors(text, file, root)
        else:
            prose = python_prose(text) if file.suffix == ".py" else shell_comments(text)
            pieces = [(number, path) for number, line in prose for _, path in named_paths(line)]
        for number, path in pieces:
            target = path if isinstance(path, Path) else root / path
            if not exists(target) and (isinstance(path, Path) or not exists(file.parent / path)):
                shown = target.relative_to(root) if target.is_relative_to(root) else target
                missing.append(f"{name}:{number}: {shown}")
    return sorted(sorted(set(missing)), key=lambda entry: (entry.split(":")[0], int(entry.split(":")[1])))


def test_every_path_the_docs_name_exists():
    missing = missing_paths(markdown_files())
    assert not missing, f"{len(missing)} paths named in the docs do not exist:\n" + "\n".join(missing)


def test_every_path_docstrings_and_comments_name_exists():
    missing = missing_paths(code_files())
    assert not missing, (f"{len(missing)} paths named in docstrings and comments do not exist:\n"
                         + "\n".join(missing))


def test_the_reader_catches_a_renamed_file_and_skips_placeholders(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "recipes" / "rag_r1").mkdir(parents=True)
    (tmp_path / "recipes" / "rag_r1" / "grpo.sh").write_text("# see docs/rag_r1.md and docs/gone.md\n")
    (tmp_path / "docs" / "rag_r1.md").write_text(
        "# RAG-R1\n## The method\n## Renamed {#kept}\n```bash\n# moved away\n```\n")
    (tmp_path / "docs" / "page.md").write_text(
        "Run `recipes/rag_r1/grpo.sh`, then `recipes/rag_r1/old_grpo.sh`; [a link](missing_page.md#x).\n"
        "Not paths: `recipes/<method>/<stage>.sh`, `recipes/_common/*`, `recipes/rag_r1/outputs/run1`,\n"
        "https://github.com/volcengine/verl/blob/main/docs/algo/baseline.md, `$ROOT/docs/x.md`, docs/...\n"
        "Brace lists: `docs/{rag_r1,page,nope}.md`.\n"
        "[ok](rag_r1.md#the-method), [ok](rag_r1.md#kept), [gone](rag_r1.md#moved-away)\n")
    module = tmp_path / "recipes" / "mod.py"
    module.write_text('"""Reads\nrecipes/rag_r1/grpo.sh and docs/renamed.md."""\nX = "docs/in_code.md"  # docs/c.md\n')
    files = [tmp_path / "docs" / "page.md", tmp_path / "recipes" / "rag_r1" / "grpo.sh", module]
    assert missing_paths(files, root=tmp_path) == [
        "docs/page.md:1: docs/missing_page.md", "docs/page.md:1: recipes/rag_r1/old_grpo.sh",
        "docs/page.md:4: docs/nope.md", "docs/page.md:5: docs/rag_r1.md#moved-away (no such heading)",
        "recipes/mod.py:2: docs/renamed.md", "recipes/mod.py:3: docs/c.md",
        "recipes/rag_r1/grpo.sh:1: docs/gone.md",
    ]
