"""Published results our evaluation tables print beside ours (sources: docs/methods.md).

RAG-R1 (arXiv 2507.02962), Table 1: exact match, Qwen2.5-7B-Instruct, every baseline re-run by the RAG-R1 authors
with their retriever (KILT Wikipedia, BGE-large-en-v1.5, top-3) and their evaluation (temperature 0.7, up to 5
retrievals, 1024 new tokens).
"""

from __future__ import annotations

# Dataset keys are the `data_source` names FlashRAG / Search-R1 use for the seven evaluation sets, in the paper's
# column order; `QA_DATASET_LABELS` are the column headers.
QA_DATASETS = ("nq", "popqa", "triviaqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle")
QA_DATASET_LABELS = {"nq": "NQ", "popqa": "PopQA", "triviaqa": "TriviaQA", "hotpotqa": "HotpotQA",
                     "2wikimultihopqa": "2Wiki", "musique": "Musique", "bamboogle": "Bamboogle"}
# Other spellings of the same datasets (folder names, Search-R1 parquet values).
QA_DATASET_ALIASES = {"natural_questions": "nq", "nq_open": "nq", "trivia_qa": "triviaqa", "trivia": "triviaqa",
                      "hotpot_qa": "hotpotqa", "hotpot": "hotpotqa", "2wiki": "2wikimultihopqa",
                      "2wikimultihop": "2wikimultihopqa", "musique_ans": "musique", "pop_qa": "popqa"}


def _row(*ems: float) -> dict[str, float]:
    return dict(zip(QA_DATASETS, ems, strict=True))


RAG_R1_EM = {  # the rows we compare against (Avg = the mean of the seven)
    "Search-R1 (published)": _row(.387, .422, .531, .377, .351, .135, .376),
    "RAG-R1-sq (published)": _row(.429, .477, .599, .474, .481, .181, .432),
    "RAG-R1-mq (published)": _row(.423, .479, .608, .495, .556, .192, .432),
}
RAG_R1_EM_AVG = {"Search-R1 (published)": .368, "RAG-R1-sq (published)": .439, "RAG-R1-mq (published)": .455}

# Efficiency on HotpotQA + 2Wiki: (seconds per question, retrievals per question).
RAG_R1_EFFICIENCY = {"Search-R1 (published)": (8.35, 2.73), "RAG-R1-sq (published)": (8.21, 2.53),
                     "RAG-R1-mq (published)": (7.42, 2.15)}


def canonical_dataset(name: str) -> str:
    """The paper's key for a data_source name (`HotpotQA`, `hotpot_qa` -> `hotpotqa`); other names unchanged."""
    key = name.strip().lower()
    return QA_DATASET_ALIASES.get(key, key)


# FunReason (arXiv 2505.20192), BFCL: Non-Live AST, Live, Overall = (Non-Live + Live) / 2, in percent; the rows
# `agentic-verl eval bfcl` prints above ours (the method, its base model, and GPT-4o). Their Live is BFCL v3's (live
# irrelevance and relevance included): the paper (May 2025) predates BFCL v4's change of Live (August 2025), and
# docs/methods.md gives that definition; the paper itself names no bfcl-eval version.
FUNREASON_BFCL_DEFINITION = ("the FunReason paper (May 2025, before BFCL v4) reports Live as BFCL v3 defines it: "
                             "compare them with the Live (BFCL v3) column")
FUNREASON_BFCL = {
    "GPT-4o-2024-11-20 (published)": (86.81, 78.85, 82.83),
    "Qwen2.5-Coder-7B-Instruct (published)": (84.08, 69.78, 76.93),
    "Qwen2.5-Coder-7B FunReason (published)": (87.00, 80.31, 83.66),
}

# FunReason-MT (arXiv 2510.24645; model card huggingface.co/Bingguang/FunReason-MT, "BFCLv3 Multi-Turn and Single-Turn
# Performance"): BFCL v3 Multi-Turn Overall, in percent, the rows `eval bfcl` prints above ours on the multi-turn
# categories. Only the overall is published (no per-category numbers).
FUNREASON_MT_BFCL_DEFINITION = ("FunReason-MT (arXiv 2510.24645; its model card's BFCL v3 table), Multi-Turn Overall "
                                "measured on BFCL v3's data of the four categories; ours on the installed bfcl-eval's")
FUNREASON_MT_BFCL = {
    "Qwen3-4B-Instruct-2507 (published)": 15.75,
    "Qwen3-4B FunReason-MT (published)": 56.50,
}
