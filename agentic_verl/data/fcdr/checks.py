"""FCDR's five checks (FunReason, arXiv 2505.20192), one sample at a time.

Checks 1-3 ask a judge model; this module renders their prompts and parses the replies (never executes them).
Checks 4-5 are rules: BFCL's AST match of the sample's calls against the reference (`agentic_verl.rewards.bfcl`)
and FunReason's target format (`agentic_verl.rewards.fc_format`).

| check | question | verdicts | on failure |
|---|---|---|---|
| 1 `is_call` | is the reference answer a function call at all? | call / text | text: kept as is |
| 2 `solvable` | can the given functions solve the request? | yes / no | dropped |
| 3 `reasoning` | does the chain of thought lead to the reference call? | yes / no | dropped |
| 4 `calls` | do the response's calls match the reference (BFCL AST)? | rule | regenerated |
| 5 `format` | is the response `<think>...</think>\\n\\n[calls]`? | rule | regenerated |

A judge reply whose verdict cannot be read is `None` (counted as "unparseable", never as a pass).

>>> parse_verdict("The tools fit.\\nVERDICT: YES", ("yes", "no"))
'yes'
>>> parse_verdict("**Verdict:** no", ("yes", "no")), parse_verdict("Maybe.", ("yes", "no"))
('no', None)
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from string import Template

import yaml

from agentic_verl.rewards.bfcl import RELEVANCE_CATEGORIES, ast_match
from agentic_verl.rewards.fc_format import check_fc_format

JUDGE_CHECKS = {"is_call": ("call", "text"), "solvable": ("yes", "no"), "reasoning": ("yes", "no")}
PROMPT_NAMES = (*JUDGE_CHECKS, "regenerate")
_VERDICT = re.compile(r"verdict[\"'*_\s]*[:=][\s\"'*_`]*([a-z]+)", re.IGNORECASE)


# ---- prompts ------------------------------------------------------------------------------------------------------

def load_prompts(folder: str | Path | None = None) -> dict[str, dict]:
    """{name: {"system", "user"}} for every name in PROMPT_NAMES, from `folder/<name>.yaml` or the packaged ones.
    Placeholders are `$query`, `$functions`, `$reference`, `$reasoning`, `$response`, `$problems`."""
    prompts = {}
    for name in PROMPT_NAMES:
        if folder is not None:
            path = Path(folder) / f"{name}.yaml"
            if not path.is_file():
                raise FileNotFoundError(f"prompt file {path} not found (a prompts folder needs "
                                        f"{', '.join(n + '.yaml' for n in PROMPT_NAMES)})")
            text = path.read_text(encoding="utf-8")
        else:
            text = (resources.files("agentic_verl.data.fcdr") / "prompts" / f"{name}.yaml").read_text("utf-8")
        spec = yaml.safe_load(text)
        if not isinstance(spec, dict) or not isinstance(spec.get("user"), str):
            raise ValueError(f"prompt {name}: needs a `user` string (and optionally `system`)")
        prompts[name] = {"system": str(spec.get("system") or ""), "user": spec["user"]}
    return prompts


def render(prompt: dict, **fields: str) -> list[dict]:
    """Chat messages of one prompt with its `$placeholders` filled (unknown ones are left as they are)."""
    messages = []
    if prompt["system"].strip():
        messages.append({"role": "system", "content": Template(prompt["system"]).safe_substitute(fields).strip()})
    messages.append({"role": "user", "content": Template(prompt["user"]).safe_substitute(fields).strip()})
    return messages


def prompt_fields(sample: dict) -> dict[str, str]:
    """The placeholders every prompt may use, from a sample (see pipeline.Sample)."""
    record = sample["record"]
    reasoning = sample.get("reasoning")
    return {"query": "\n".join(str(t.get("content", "")) for t in record["turns"]),
            "functions": json.dumps(record["functions"], ensure_ascii=False, indent=1),
            "reference": sample["reference"], "reasoning": reasoning if reasoning is not None else "(none)",
            "response": sample.get("response") or "(none)"}  # fmt: skip


# ---- judge verdicts -----------------------------------------------------------------------------------------------

def parse_verdict(reply, choices: tuple[str, ...]) -> str | None:
    """The judge's verdict, lowercased, or None when it cannot be read.

    Read from the text after the last `</think>` (a reasoning judge's thoughts do not count; an unclosed
    `<think>` is unreadable): the last `VERDICT: X` line (also `**Verdict:** X`, `"verdict": "X"`), else a reply
    that is one choice word alone. A verdict word outside `choices` is unreadable, never a default.

    >>> parse_verdict('{"verdict": "call"}', ("call", "text")), parse_verdict("Yes.", ("yes", "no"))
    ('call', 'yes')
    >>> parse_verdict("<think>VERDICT: YES</think>", ("yes", "no")) is None
    True
    """
    if not isinstance(reply, str):
        return None
    if "</think>" in reply:
        reply = reply.rsplit("</think>", 1)[1]
    elif "<think>" in reply:
        return None
    matches = _VERDICT.findall(reply)
    word = matches[-1] if matches else re.sub(r"[^a-z]", "", reply.lower())
    word = word.lower()
    return word if word in choices else None


# ---- rule-based checks --------------------------------------------------------------------------------------------

def check_calls(sample: dict) -> str | None:
    """Check 4: None when the response's calls pass BFCL's AST match against the reference, else BFCL's error
    type. The decoder reads the text after the last `</think>` (parsed with `ast`, never executed)."""
    record, response = sample["record"], sample.get("response")
    if not response:
        return "fcdr:no_response"
    category = record["category"]
    if category in RELEVANCE_CATEGORIES or not record["calls"]:
        return None  # nothing to match (check 1 keeps plain-text references before this)
    verdict = ast_match(response, record["functions"], record["possible_answer"], category, record["language"])
    return None if verdict["valid"] else str(verdict["error_type"])


def check_format(sample: dict, strict_separator: bool = True) -> str | None:
    """Check 5: None when the response is `<think>reasoning</think>\\n\\n[calls]`, else the `fc_format:*` verdict."""
    record, response = sample["record"], sample.get("response")
    if not response:
        return "fcdr:no_response"
    verdict = check_fc_format(response, record["language"], require_call=bool(record["calls"]),
                              strict_separator=strict_separator)
    return verdict.error_type
