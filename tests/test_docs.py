"""The documentation site builds without a warning, and the docs' code blocks marked runnable run as written.

- `mkdocs build --strict` (mkdocs.yml turns every problem into a warning): a dead link or anchor, or a page in
  docs/ that the nav leaves out, fails the build.
- A fenced block whose info string carries `title="runnable"` runs, on toy data, CPU-only and offline: the
  runnable blocks of one page run in order in one fresh folder (so a page's quick start may build on its earlier
  blocks), `bash` blocks with `bash -euo pipefail`, `python` blocks with this interpreter; the venv's `bin/` comes
  first on PATH, `REPO` names the repository root, and the folder holds links to the repository's `configs/`, `scripts/`,
  `recipes/`, `reward_fns/` and `benchmarks/`, so a block runs as written from the root. A block titled
  `runnable: NAME` (any language) is not run but written to the file NAME in that folder, for the blocks after it
  (a module or a config the reader would save). Commands that need GPUs, a model hub or large data stay unmarked.
- In docs/*.md and README.md, no line of a code block is wider than 88 characters and no heading longer than 60.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUNNABLE = re.compile(r'title="runnable(?::\s*(?P<file>[^"\s]+))?"')
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
LANGUAGES = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python", "py": "python"}
BLOCK_TIMEOUT_S = 120
CODE_WIDTH = 88  # the docs' limit, so that code fits Material's content column (~120-character lines overflowed it)
HEADING_WIDTH = 60
USER_PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
LINKED = ("configs", "scripts", "recipes", "reward_fns", "benchmarks")  # read-only from the blocks' point of view


@dataclass
class Block:
    page: str
    line: int  # the opening fence's line, 1-based
    language: str
    file: str | None  # written to this file instead of run
    code: str


def fenced_blocks(text: str, page: str) -> list[tuple[int, str, list[str]]]:
    """(opening fence's 1-based line, info string, body lines without the fence's indent) for every fenced block
    of a Markdown page (fences of ``` or ~~~, any indent, closed by the same)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        body, j = [], i + 1
        while j < len(lines) and not (lines[j].startswith(indent + fence) and not lines[j].strip(" `~")):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{i + 1}: a code fence that never closes")
        blocks.append((i + 1, info, body))
        i = j + 1
    return blocks


def runnable_blocks(text: str, page: str) -> list[Block]:
    """The runnable blocks of a Markdown page, in order."""
    blocks = []
    for line, info, body in fenced_blocks(text, page):
        marker = RUNNABLE.search(info)
        if marker:
            language = info.split()[0] if info.split() else ""
            if language not in LANGUAGES and not marker["file"]:  # a file to write may be YAML, JSON, ...
                raise ValueError(f"{page}:{line}: a runnable block must be bash or python, not {language!r}")
            blocks.append(Block(page, line, LANGUAGES.get(language, language), marker["file"], "\n".join(body) + "\n"))
    return blocks


def long_code_lines(text: str, page: str) -> list[str]:
    """`page:line: N chars` for each line of a fenced block wider than CODE_WIDTH (the fence's indent not counted)."""
    return [f"{page}:{line + offset}: {len(code)} chars" for line, _, body in fenced_blocks(text, page)
            for offset, code in enumerate(body, 1) if len(code) > CODE_WIDTH]


def long_headings(text: str, page: str) -> list[str]:
    """`page:line: N chars` for each heading (outside code blocks) longer than HEADING_WIDTH; its `#`s, the space
    after them and a trailing `{#id}` not counted."""
    in_code = {line + offset for line, _, body in fenced_blocks(text, page) for offset in range(len(body) + 2)}
    long = []
    for number, line in enumerate(text.splitlines(), 1):
        heading = re.match(r"#{1,6}\s+(.*?)\s*(\{[^}]*\})?\s*$", line)
        if heading and number not in in_code and len(heading[1]) > HEADING_WIDTH:
            long.append(f"{page}:{number}: {len(heading[1])} chars")
    return long


def run_blocks(blocks: list[Block], workdir: Path) -> None:
    """Run (or write) the blocks in order in `workdir`; the first failing block fails with its output."""
    env = dict(os.environ, REPO=str(ROOT), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for name in LINKED:
        if not (workdir / name).exists():
            (workdir / name).symlink_to(ROOT / name)
    for number, block in enumerate(blocks, 1):
        if block.file:
            (workdir / block.file).parent.mkdir(parents=True, exist_ok=True)  # `runnable: pkg/pyproject.toml`
            (workdir / block.file).write_text(block.code)
            continue
        script = workdir / f"_block_{number}.{'sh' if block.language == 'bash' else 'py'}"
        script.write_text(block.code)
        command = ["bash", "-euo", "pipefail", str(script)] if block.language == "bash" else [sys.executable, str(script)]
        try:
            proc = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{block.page}:{block.line}: the runnable block ran over {BLOCK_TIMEOUT_S} s:\n{block.code}")
        if proc.returncode != 0:
            pytest.fail(f"{block.page}:{block.line}: the runnable block exited {proc.returncode}:\n{block.code}\n"
                        f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")


PAGES = sorted(p.name for p in DOCS.glob("*.md") if runnable_blocks(p.read_text(), p.name))


@pytest.mark.parametrize("page", PAGES)
def test_runnable_blocks_run_as_written(page, tmp_path):
    run_blocks(runnable_blocks((DOCS / page).read_text(), page), tmp_path)


def test_some_pages_have_runnable_blocks():
    assert {"rewards.md", "retrieval.md", "extending.md"} <= set(PAGES)


def test_no_code_line_is_wider_than_the_content_column():
    offenders = [entry for page in USER_PAGES
                 for entry in long_code_lines(page.read_text(), str(page.relative_to(ROOT)))]
    assert not offenders, (f"{len(offenders)} code lines are wider than {CODE_WIDTH} characters (wrap bash with"
                           " `\\`):\n" + "\n".join(offenders))


def test_headings_are_short():
    offenders = [entry for page in USER_PAGES
                 for entry in long_headings(page.read_text(), str(page.relative_to(ROOT)))]
    assert not offenders, f"{len(offenders)} headings are longer than {HEADING_WIDTH} characters:\n" + "\n".join(offenders)


def test_the_width_checks_find_what_they_should():
    wide = "x" * (CODE_WIDTH + 1)
    page = (f"# {'h' * HEADING_WIDTH} {{#short}}\n{wide}\n"  # prose may be wide
            f"```bash\n{'y' * CODE_WIDTH}\n{wide}\n```\n"
            f"  ~~~python\n  {'z' * CODE_WIDTH}\n  # {'c' * HEADING_WIDTH}\n  ~~~\n"  # a comment is no heading
            f"## {'h' * (HEADING_WIDTH + 1)}\n")
    assert long_code_lines(page, "t.md") == [f"t.md:5: {CODE_WIDTH + 1} chars"]
    assert long_headings(page, "t.md") == [f"t.md:11: {HEADING_WIDTH + 1} chars"]


def test_the_site_builds_strict(tmp_path):
    """~3 s: every warning fails (mkdocs.yml's `validation`: dead links and anchors, pages left out of the nav)."""
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))  # Material's banner about its successor
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"


def test_the_reader_finds_blocks_and_the_runner_fails_loudly(tmp_path):
    page = (
        "```bash\nexit 1\n```\n"  # not marked: never run
        '```python title="runnable: helper.py"\nVALUE = 41\n```\n'
        '  ````python title="runnable"\n  from helper import VALUE\n  print(VALUE + 1)\n  ````\n'
        '```bash title="runnable"\ntest "$(cat missing.txt)" = ok\n```\n'
    )
    blocks = runnable_blocks(page, "t.md")
    assert [(b.line, b.language, b.file) for b in blocks] == [(4, "python", "helper.py"), (7, "python", None),
                                                             (11, "bash", None)]
    assert blocks[1].code == "from helper import VALUE\nprint(VALUE + 1)\n"
    run_blocks(blocks[:2], tmp_path)  # the module written by the first block is importable by the second
    with pytest.raises(pytest.fail.Exception, match=r"t\.md:11: the runnable block exited 1"):
        run_blocks(blocks, tmp_path)
    with pytest.raises(ValueError, match="never closes"):
        runnable_blocks('```bash title="runnable"\necho\n', "t.md")
    with pytest.raises(ValueError, match="must be bash or python, not 'yaml'"):
        runnable_blocks('```yaml title="runnable"\na: 1\n```\n', "t.md")
    assert runnable_blocks('```yaml title="runnable: a.yaml"\na: 1\n```\n', "t.md")[0].file == "a.yaml"
