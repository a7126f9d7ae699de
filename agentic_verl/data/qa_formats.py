"""Loaders for open-domain QA question files, all returning `{id, question, golden_answers, ...}` records.

One loader per on-disk *format* (not per dataset name), each with a detector that looks at the first record:

| format      | what it reads                                                    | published datasets            |
|-------------|------------------------------------------------------------------|-------------------------------|
| `flashrag`  | JSONL `{id, question, golden_answers, metadata?}`                 | FlashRAG: NQ, TriviaQA, PopQA, HotpotQA, 2Wiki, Musique, Bamboogle; RAG-R1's RL data; toy_world |
| `hotpot`    | one JSON list of `{_id, question, answer, type?, level?}`         | HotpotQA and 2WikiMultihopQA originals |
| `nq_open`   | JSONL `{question, answer: [..]}`                                  | NQ-open (Lee et al.)          |
| `musique`   | JSONL `{id, question, answer, answer_aliases, answerable}`        | MuSiQue originals             |
| `triviaqa`  | one JSON object `{"Data": [{QuestionId, Question, Answer: {Value, Aliases}}]}` | TriviaQA rc/unfiltered |

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "dev.jsonl")
>>> _ = open(path, "w").write(json.dumps({"question": "who wrote hamlet", "answer": ["Shakespeare"]}) + "\\n")
>>> load_questions(path)[0]["golden_answers"]
['Shakespeare']
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class QAFormat:
    name: str
    detect: Callable[[object], bool]  # sees the first record (JSONL) or the parsed document (JSON)
    records: Callable[[object], list[dict]]  # parsed records -> normalised records
    jsonl: bool


def _answers(*values) -> list[str]:
    """Flatten str / list answers into unique non-empty strings, order kept."""
    out: list[str] = []
    for value in values:
        for item in ([value] if isinstance(value, str) else list(value or [])):
            text = str(item).strip()
            if text and text not in out:
                out.append(text)
    return out


def _extra(rec: dict, skip: set[str]) -> dict:
    return {k: v for k, v in rec.items() if k not in skip}


def _flashrag(rows: list[dict]) -> list[dict]:
    return [{**_extra(r, {"id", "question", "golden_answers"}), "id": str(r.get("id", i)),
             "question": r["question"], "golden_answers": _answers(r["golden_answers"])} for i, r in enumerate(rows)]


def _hotpot(doc: list[dict]) -> list[dict]:
    keep = ("type", "level")
    return [{"id": str(r.get("_id", i)), "question": r["question"], "golden_answers": _answers(r["answer"]),
             **{k: r[k] for k in keep if k in r}} for i, r in enumerate(doc)]


def _nq_open(rows: list[dict]) -> list[dict]:
    return [{"id": str(r.get("id", i)), "question": r["question"], "golden_answers": _answers(r["answer"])}
            for i, r in enumerate(rows)]


def _musique(rows: list[dict]) -> list[dict]:
    return [{"id": str(r["id"]), "question": r["question"],
             "golden_answers": _answers(r["answer"], r.get("answer_aliases"))}
            for r in rows if r.get("answerable", True)]


def _triviaqa(doc: dict) -> list[dict]:
    return [{"id": str(r["QuestionId"]), "question": r["Question"],
             "golden_answers": _answers(r["Answer"]["Value"], r["Answer"].get("Aliases"))} for r in doc["Data"]]


FORMATS: dict[str, QAFormat] = {f.name: f for f in (
    QAFormat("flashrag", lambda r: isinstance(r, dict) and "golden_answers" in r and "question" in r, _flashrag, True),
    QAFormat("musique", lambda r: isinstance(r, dict) and "answer_aliases" in r and "answerable" in r, _musique, True),
    QAFormat("nq_open", lambda r: isinstance(r, dict) and "question" in r and isinstance(r.get("answer"), list),
             _nq_open, True),
    QAFormat("hotpot", lambda d: isinstance(d, list) and bool(d) and "_id" in d[0] and "answer" in d[0], _hotpot,
             False),
    QAFormat("triviaqa", lambda d: isinstance(d, dict) and isinstance(d.get("Data"), list), _triviaqa, False),
)}


def load_questions(path: str | Path, fmt: str = "auto", limit: int | None = None) -> list[dict]:
    """Read a question file in any known format (`fmt="auto"` detects it) into normalised records."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"question file not found: {path}")
    text = path.read_text(encoding="utf-8")
    parsed: object
    try:
        parsed = json.loads(text)  # a single JSON document (or a one-line JSONL file)
        rows = [parsed] if isinstance(parsed, dict) and "question" in parsed else None
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        parsed = None
    if fmt == "auto":
        candidates = [f for f in FORMATS.values() if (f.detect(rows[0]) if f.jsonl and rows else
                                                      (not f.jsonl and parsed is not None and f.detect(parsed)))]
        if not candidates:
            raise ValueError(f"{path}: unknown question format; known: {sorted(FORMATS)}")
        qa_format = candidates[0]
    elif fmt in FORMATS:
        qa_format = FORMATS[fmt]
    else:
        raise ValueError(f"unknown question format {fmt!r}; known: {sorted(FORMATS)}")
    records = qa_format.records(rows if qa_format.jsonl else parsed)
    bad = [r["id"] for r in records if not r["question"].strip() or not r["golden_answers"]]
    if bad:
        raise ValueError(f"{path}: {len(bad)} record(s) without a question or an answer, e.g. id {bad[0]}")
    return records[:limit] if limit is not None else records
