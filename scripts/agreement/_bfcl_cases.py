"""BFCL questions from bfcl_eval's data and model outputs made from them: the gold output and mutations.

Every case is {"id", "category", "kind", "output", "functions", "possible_answer"}; `kind` names the mutation.
"""

from __future__ import annotations

import copy
import json
import random
import re
from importlib import resources

from agentic_verl.rewards.bfcl.match import AST_CATEGORIES, RELEVANCE_CATEGORIES, language_of
from agentic_verl.rewards.bfcl.render import gold_calls, render_calls


def load_questions(categories=AST_CATEGORIES + RELEVANCE_CATEGORIES, per_category: int | None = None) -> list[dict]:
    """[{"id", "category", "functions", "possible_answer"}] for every question of `categories` (the first
    `per_category` of each when given)."""
    data = resources.files("bfcl_eval") / "data"
    questions = []
    for category in categories:
        answers = {}
        answer_file = data / "possible_answer" / f"BFCL_v4_{category}.json"
        if answer_file.is_file():
            for line in answer_file.read_text().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    answers[entry["id"]] = entry["ground_truth"]
        lines = [line for line in (data / f"BFCL_v4_{category}.json").read_text().splitlines() if line.strip()]
        for line in lines[:per_category]:
            entry = json.loads(line)
            questions.append({"id": entry["id"], "category": category, "functions": entry["function"],
                              "possible_answer": answers.get(entry["id"])})  # fmt: skip
    return questions


def gold_output(question: dict, omit_optional: bool = True, index: int = 0) -> str:
    calls = gold_calls(question["possible_answer"], question["functions"], omit_optional=omit_optional, index=index)
    return render_calls(calls, language_of(question["category"]), question["functions"])


def _case(question: dict, kind: str, output: str) -> dict:
    return {"id": question["id"], "category": question["category"], "kind": kind, "output": output,
            "functions": question["functions"], "possible_answer": question["possible_answer"]}  # fmt: skip


def _mutate_value(value, rng: random.Random):
    if isinstance(value, bool):
        return rng.choice([not value, str(value).lower(), int(value)])
    if isinstance(value, int):
        return rng.choice([value + 1, -value - 1, float(value), str(value), [value]])
    if isinstance(value, float):
        return rng.choice([value + 0.5, int(value), str(value), -value - 1.0])
    if isinstance(value, str):
        return rng.choice([value + "x", value.upper(), value.replace(" ", ", "), value + "-", "'" + value + "'",
                           value[: len(value) // 2], "", 5, value.replace(" ", "_"), value.title()])  # fmt: skip
    if isinstance(value, list):
        options = [value[::-1], value[:-1], value + value[:1], tuple(value), "variable_name"]
        if value:
            options.append([_mutate_value(value[0], rng)] + value[1:])
        return rng.choice(options)
    if isinstance(value, dict):
        if not value:
            return {"k": 1}
        key = rng.choice(list(value))
        options = [{k: v for k, v in value.items() if k != key}, {**value, "extra_key": 1},
                   {**value, key: _mutate_value(value[key], rng)}, list(value.values())]  # fmt: skip
        return rng.choice(options)
    return rng.choice(["x", 0, None])


def mutations(question: dict, rng: random.Random, per_question: int = 12) -> list[dict]:
    """The gold output plus up to `per_question` mutated outputs of one question."""
    category = question["category"]
    language = language_of(category)
    functions = question["functions"]
    if question["possible_answer"] is None:  # irrelevance / relevance: no ground truth
        function = rng.choice(functions) if functions else {"name": "lookup", "parameters": {}}
        props = function["parameters"].get("properties", {})
        args = {p: (1 if s.get("type") == "integer" else "value") for p, s in props.items()}
        call = render_calls([{function["name"]: args}])
        texts = {
            "refusal": "I cannot answer that with the available functions.",
            "call": call,
            "call_think": f"<think>maybe {function['name']}</think>\n\n{call}",
            "empty_list": "[]",
            "text_then_call": f"Here you go: {call}",
            "fenced_call": f"```\n{call}\n```",
            "lang_fenced_call": f"```python\n{call}\n```",
            "no_args": f"[{function['name']}()]",
            "bare_name": f"[{function['name']}]",
            "positional": f"[{function['name']}(1, 'a')]",
            "truncated": call[: max(1, len(call) // 2)],
            "json": json.dumps([{"name": function["name"], "arguments": args}]),
            "unary": f"[{function['name']}(x=+1, y=not True)]",
        }
        return [_case(question, kind, text) for kind, text in texts.items()]

    cases = []
    gold = gold_calls(question["possible_answer"], functions)
    render = lambda calls: render_calls(calls, language, functions)  # noqa: E731
    text = render(gold)
    cases.append(_case(question, "gold", text))
    cases.append(_case(question, "gold_all_params", render(gold_calls(question["possible_answer"], functions, False))))
    cases.append(_case(question, "gold_alt_options", render(gold_calls(question["possible_answer"], functions, False, 1))))
    cases.append(_case(question, "think_fence", f"<think>\nreasoning [x]\n</think>\n\n```\n{text}\n```"))
    cases.append(_case(question, "lang_fence", f"```python\n{text}\n```"))
    generators = []

    def wrong_value():
        calls = copy.deepcopy(gold)
        args = next(iter(calls[rng.randrange(len(calls))].values()))
        if not args:
            return None
        param = rng.choice(list(args))
        args[param] = _mutate_value(args[param], rng)
        return "wrong_value", render(calls)

    def drop_param():
        calls = copy.deepcopy(gold_calls(question["possible_answer"], functions, rng.random() < 0.5))
        args = next(iter(calls[rng.randrange(len(calls))].values()))
        if not args:
            return None
        del args[rng.choice(list(args))]
        return "drop_param", render(calls)

    def extra_param():
        calls = copy.deepcopy(gold)
        next(iter(calls[0].values()))[rng.choice(["extra", "verbose", "unit"])] = rng.choice([1, "x", True])
        return "extra_param", render(calls)

    def wrong_name():
        calls = copy.deepcopy(gold)
        i = rng.randrange(len(calls))
        (name, args), = calls[i].items()
        other = [f["name"] for f in functions if f["name"] != name]
        calls[i] = {rng.choice(other + [name + "_v2", name.upper()]): args}
        return "wrong_name", render(calls)

    def reorder():
        calls = copy.deepcopy(gold)
        rng.shuffle(calls)
        return "reorder", render(calls)

    def drop_call():
        calls = copy.deepcopy(gold)
        if len(calls) > 1:
            calls.pop(rng.randrange(len(calls)))
        else:
            calls = calls + calls
        return "drop_or_dup_call", render(calls)

    def string_variant():
        calls = copy.deepcopy(gold)
        args = next(iter(calls[0].values()))
        strings = [p for p, v in args.items() if isinstance(v, str)]
        if not strings:
            return None
        p = rng.choice(strings)
        args[p] = rng.choice([args[p].upper(), args[p].replace(" ", ""), args[p] + ".", args[p].replace(",", ""),
                              " " + args[p].lower() + " ", args[p].replace("'", '"'), args[p] + "!"])  # fmt: skip
        return "string_variant", render(calls)

    def garbage():
        choice = rng.randrange(8)
        if choice == 0:
            return "truncated", text[: rng.randrange(1, max(2, len(text)))]
        if choice == 1:
            return "trailing_text", text + " Let me know if you need more."
        if choice == 2:
            return "leading_text", "Sure! " + text
        if choice == 3:
            return "json", json.dumps([{"name": n, "arguments": a} for c in gold for n, a in c.items()])
        if choice == 4:
            return "noise", "".join(rng.choice("[](){}=,'\"abc123 .-+") for _ in range(rng.randrange(1, 40)))
        if choice == 5:
            return "no_brackets", text[1:-1]
        if choice == 6:
            return "unary_plus", text.replace("=", "=+", 1) if language == "python" else text + ";"
        return "double_brackets", "[" + text + "]"

    def syntax_variant():
        variants = [
            ("spaces_around_equals", lambda t: re.sub(r"(\w)=", r"\1 = ", t)),
            ("no_space_after_comma", lambda t: t.replace(", ", ",")),
            ("single_quotes", lambda t: t.replace('"', "'")),
            ("double_quotes", lambda t: t.replace("'", '"')),
            ("trailing_semicolon", lambda t: t + ";"),
            ("newlines", lambda t: t.replace(", ", ",\n  ")),
            ("positional_first", lambda t: t.replace("(", "(1, ", 1)),
            ("kwargs_splat", lambda t: t.replace("(", "(**opts, ", 1)),
            ("strip_suffixes", lambda t: re.sub(r"(\d)[LfF]\b", r"\1", t)),
            ("quoted_numbers", lambda t: re.sub(r"=(-?\d+(\.\d+)?)\b", r'="\1"', t)),
            ("nested_call_value", lambda t: re.sub(r"=([^,()]+)\)", r"=wrap(v=\1))", t, count=1)),
            ("python_bools", lambda t: t.replace("true", "True").replace("false", "False")),
            ("json_bools", lambda t: t.replace("True", "true").replace("False", "false")),
            ("none_value", lambda t: re.sub(r"=([^,()]+)\)", r"=None)", t, count=1)),
        ]
        name, change = rng.choice(variants)
        return name, change(text)

    def value_syntax():
        # Python value syntax the decoder must resolve exactly as BFCL does (never anything BFCL would hang on)
        if language != "python":
            return None
        calls = copy.deepcopy(gold)
        args = next(iter(calls[0].values()))
        if not args:
            return None
        param = rng.choice(list(args))
        original = args[param]
        args[param] = "__VALUE__"
        replacement = rng.choice([
            "None", "(1, 2)", "g(x=1)", "x", "x[0]", "len(x)", "1 + 1", "'a' + 'b'", "2 ** 8", "7 // 2", "-3.5",
            "f'{x}'", "{1, 2}", "{1: 'a'}", "b'x'", "1j", "lambda: 1", "...", "[1, 'a', None]", "x.y", "-(1)",
            "not x", "1 if x else 2", "[*a]", "{**d}", "True + 1", "'%s' % 5", "'ab' * 2", "1e309", "0x1F",
            "1_000", "-0.0", repr(str(original) + "\n"), '"""multi\nline"""', "u'x'", r"r'\d'", repr(original),
            repr(original) + " + ''", "(" + repr(original) + ")", "[" + repr(original) + "]",
        ])  # fmt: skip
        return "value_syntax", render(calls).replace(repr("__VALUE__"), replacement)

    generators = [wrong_value, wrong_value, drop_param, syntax_variant, syntax_variant, value_syntax, extra_param, wrong_name, string_variant, garbage, garbage]
    if "parallel" in category:
        generators += [reorder, reorder, drop_call]
    while len(cases) < per_question + 5 and generators:
        made = rng.choice(generators)()
        if made is not None:
            cases.append(_case(question, *made))
    return cases


def all_cases(seed: int = 0, per_question: int = 12, questions_per_category: int | None = None) -> list[dict]:
    rng = random.Random(seed)
    questions = load_questions(per_category=questions_per_category)
    return [case for question in questions for case in mutations(question, rng, per_question)]
