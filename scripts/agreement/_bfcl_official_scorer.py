"""bfcl-eval's own scorer (`bfcl evaluate`: eval_runner.runner) on a folder of result files; runs inside `.venv-bfcl`.

    python _bfcl_official_scorer.py RESULT_DIR SCORE_DIR
        -> stdout, last line: {model: {category: {"accuracy", "total_count"}}}; SCORE_DIR gets bfcl-eval's score files

This is `bfcl evaluate --result-dir RESULT_DIR --score-dir SCORE_DIR --partial-eval` for every model folder and
category found, run through bfcl-eval's `runner` itself (folder walk, `extract_test_category`, `load_file`,
`evaluate_task`: the per-category runners, their checkers, `save_eval_results`), with four things put aside
because `.venv-bfcl` carries only what the checkers import:

- the model registry (`constants.model_config` imports every vendor's SDK): any model name maps to a prompting
  model whose handler decodes as bfcl-eval's local prompting models do (`OSSHandler.decode_ast` /
  `decode_execute`: `default_decode_ast_prompting` / `default_decode_execute_prompting`), no `_` -> `.` renaming;
- numpy, pandas, python-dotenv, tqdm and overrides are imported by its modules but used only for the leaderboard
  CSVs (`generate_leaderboard_csv`, `update_leaderboard_table_with_local_score_file`), a progress bar and a
  decorator: stand-ins take their place, and the two CSV steps are skipped; the first hands us the leaderboard
  table instead, which is what this prints.
"""

import json
import sys
import types
from pathlib import Path


def _stub(name: str, **attributes) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module


_stub("numpy")
_stub("pandas")
_stub("dotenv", load_dotenv=lambda *args, **kwargs: None)
_stub("tqdm", tqdm=lambda iterable, **kwargs: iterable)
_stub("overrides", final=lambda function: function, override=lambda function: function)


class PromptingHandler:
    """What eval_runner asks of a handler, as bfcl-eval's local prompting models (OSSHandler) answer it."""

    def __init__(self, **kwargs):
        pass

    def decode_ast(self, result, language, has_tool_call_tag):
        from bfcl_eval.model_handler.utils import default_decode_ast_prompting

        return default_decode_ast_prompting(result, language, has_tool_call_tag)

    def decode_execute(self, result, has_tool_call_tag):
        from bfcl_eval.model_handler.utils import default_decode_execute_prompting

        return default_decode_execute_prompting(result, has_tool_call_tag)


class _PromptingModel:
    model_handler = PromptingHandler
    is_fc_model = False
    underscore_to_dot = False
    input_price = output_price = None

    def __init__(self, name: str):
        self.model_name = self.display_name = name


class _AnyModel(dict):
    def __missing__(self, key):
        return _PromptingModel(key)


_stub("bfcl_eval.constants.model_config", MODEL_CONFIG_MAPPING=_AnyModel())

from bfcl_eval.constants.category_mapping import ALL_CATEGORIES  # noqa: E402
from bfcl_eval.eval_checker import eval_runner  # noqa: E402


def score(result_dir: Path, score_dir: Path) -> dict:
    tables = []
    eval_runner.update_leaderboard_table_with_local_score_file = lambda table, folder: None
    eval_runner.generate_leaderboard_csv = lambda table, folder: tables.append(table)
    eval_runner.runner(None, ALL_CATEGORIES, result_dir, score_dir, allow_missing=True)
    (table,) = tables
    return {model: {category: value for category, value in scores.items() if category not in ("cost", "latency")}
            for model, scores in table.items()}


if __name__ == "__main__":
    print(json.dumps(score(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())))
