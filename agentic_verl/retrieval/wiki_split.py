"""Split Wikipedia articles into 100-word passages with the title prepended (the DPR / RAG-R1 corpus recipe).

Input: JSONL (optionally .gz), one article per line, with a title and a body in any of these layouts:
- `{"title": "Paris", "text": "Paris is the capital ..."}` (WikiExtractor `--json` output; extra keys such as
  `id`/`url` are ignored);
- `{"wikipedia_title": "Paris", "text": ["Paris\\n", "Paris is the capital ...", ...]}` (KILT knowledge source:
  `text` is a list of paragraphs, joined with spaces; a first paragraph equal to the title is dropped).
Articles whose body is empty are skipped. Markup is not stripped: feed plain text.

Output: JSONL passages `{"id": "0", "contents": "Title\\nw1 w2 ... w100"}`, ids numbered from 0 in input order,
the corpus format `agentic-verl index build` reads. Words are whitespace-separated tokens; the last passage of
an article may be shorter.

>>> list(split_article("Paris", "one two three four five", words_per_passage=2))
['one two', 'three four', 'five']
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from tqdm import tqdm

from agentic_verl.retrieval.corpus import CorpusError, iter_lines


def split_article(title: str, text: str, words_per_passage: int = 100) -> Iterator[str]:
    """The passage bodies (without title) of one article."""
    words = text.split()
    for start in range(0, len(words), words_per_passage):
        yield " ".join(words[start : start + words_per_passage])


def read_articles(path: str | Path) -> Iterator[tuple[str, str]]:
    """(title, text) for each article of a JSONL dump; raises CorpusError naming the line of a bad record."""
    for where, line in iter_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{where}: not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from None
        if not isinstance(record, dict):
            raise CorpusError(f"{where}: expected a JSON object, got {type(record).__name__}")
        title = record.get("title", record.get("wikipedia_title"))
        text = record.get("text")
        if not isinstance(title, str):
            raise CorpusError(f"{where}: article needs a string 'title' (or 'wikipedia_title'); keys: {sorted(record)}")
        if isinstance(text, list) and all(isinstance(p, str) for p in text):
            paragraphs = [p.strip() for p in text]
            if paragraphs and paragraphs[0] == title.strip():
                paragraphs = paragraphs[1:]
            text = " ".join(paragraphs)
        if not isinstance(text, str):
            raise CorpusError(f"{where}: article needs 'text' as a string or a list of strings")
        yield title.strip(), text


def split_wikipedia(input_path: str | Path, out_path: str | Path, words_per_passage: int = 100,
                    show_progress: bool = True) -> dict:
    """Write the passage corpus; return counts {"articles", "skipped_empty", "passages"}."""
    if words_per_passage < 1:
        raise ValueError(f"words_per_passage must be >= 1, got {words_per_passage}")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    counts = {"articles": 0, "skipped_empty": 0, "passages": 0}
    tmp_path = out_path.with_name(out_path.name + ".partial")
    try:
        with open(tmp_path, "w", encoding="utf-8") as out:
            for title, text in tqdm(read_articles(input_path), desc="wiki-split", unit=" articles",
                                    disable=not show_progress):
                counts["articles"] += 1
                wrote = False
                for body in split_article(title, text, words_per_passage):
                    record = {"id": str(counts["passages"]), "contents": f"{title}\n{body}"}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    counts["passages"] += 1
                    wrote = True
                if not wrote:
                    counts["skipped_empty"] += 1
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    tmp_path.replace(out_path)  # only a finished split appears under the requested name
    return counts
