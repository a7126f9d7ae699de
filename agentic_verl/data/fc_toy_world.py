"""A function-calling toy world: invented APIs and BFCL-style questions about them, with gold calls.

Every API is an English verb on an invented noun (`book_drathel`: "Books a drathel."), with one to three
parameters whose names, enum values and string values are syllable words (`toy_world`'s name maker), so no
pretrained model has seen them: a model scores only by reading the function docs in the prompt. Parameter types:
string, integer, float, boolean and enum (a string with an `enum` list); an optional parameter is mentioned in
about half of the questions (its possible answer is then its value, else `""`: leave it out).

Questions come in four of BFCL's kinds (its category names):
- simple_python: one function offered, one call;
- multiple: the API and one other offered, call the right one;
- parallel: one function offered, two calls with different values;
- irrelevance: a question about an API that is not offered (the one offered shares its verb when the split has
  one): the right output is no call.
Each question states its argument values in words ("with 12 vorkals, the tasko Brenu and gilm off"), and carries
a templated reasoning of two or three short sentences (FunReason's `<think>` span for SFT) that states the request,
what each offered function does, then whether one fits and which arguments the question gives.

APIs are split into train / dev / test, disjoint: dev and test questions are about held-out APIs (dev is for
choosing settings, test for reporting). Everything is drawn from one `random.Random(seed)`: the same seed and sizes
give byte-identical files. `write_world` lays the splits out as BFCL v4 does, so `agentic-verl data fc` and
`agentic-verl eval bfcl --questions` read them:

    OUT/apis.json                                       every API with its split
    OUT/<split>/BFCL_v4_<category>.json                 question entries (JSON lines), + "reasoning"
    OUT/<split>/possible_answer/BFCL_v4_<category>.json possible answers (not for irrelevance, as in BFCL)

>>> world = build_world(seed=0, apis=(6, 2, 2), questions=(4, 2, 2))
>>> question = world.questions["test"][0]
>>> question["category"], len(question["function"]), question["function"][0]["name"] in {a.name for a in world.apis}
('simple_python', 1, True)
>>> {a.split for a in world.apis if a.name == question["function"][0]["name"]}
{'test'}
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentic_verl.data.toy_world import _Names

KINDS = ("simple_python", "multiple", "parallel", "irrelevance")  # BFCL's category names
SPLITS = ("train", "dev", "test")
PARAM_TYPES = ("string", "integer", "float", "boolean", "enum")
_VERBS = ("book", "cancel", "inspect", "register", "measure", "schedule", "locate", "repair", "order", "archive",
          "ship", "paint", "weigh", "launch", "reserve", "clean")  # fmt: skip
_THIRD_PERSON = {"reserve": "reserves", "archive": "archives", "schedule": "schedules", "launch": "launches"}
_ENUM_SIZE = 3
_SENTENCES = ("{Verb} a {noun} with {args}.", "Please {verb} a {noun}: {args}.", "I need to {verb} a {noun} with {args}.",
              "Can you {verb} a {noun} with {args}?")  # fmt: skip
_PARALLEL = ("{Verb} two {noun}s: one with {args1}, and one with {args2}.",
             "Please {verb} a {noun} with {args1}, and another {noun} with {args2}.")  # fmt: skip
_PHRASES = {  # how a question states a value of each type ({p}: the parameter's name, {v}: the value)
    "string": ("the {p} {v}", "{p} {v}", "the {p} named {v}"),
    "integer": ("{v} {p}s", "a {p} count of {v}"),
    "float": ("a {p} of {v}", "{p} at {v}"),
    "enum": ("{p} {v}", "the {v} {p}"),
    "boolean": ("{p} {v}",),  # v: on / off
}
_DESCRIPTIONS = {"string": "Name of the {p}.", "integer": "Number of {p}s.", "float": "The {p} value.",
                 "enum": "The {p} to use.", "boolean": "Whether {p} is on."}  # fmt: skip
_BFCL_TYPES = {"string": "string", "integer": "integer", "float": "float", "enum": "string", "boolean": "boolean"}


@dataclass
class Param:
    name: str
    kind: str  # one of PARAM_TYPES
    required: bool
    enum: list[str] = field(default_factory=list)  # kind "enum" only

    def schema(self) -> dict:
        out = {"type": _BFCL_TYPES[self.kind], "description": _DESCRIPTIONS[self.kind].format(p=self.name)}
        if self.kind == "enum":
            out["enum"] = list(self.enum)
        return out


@dataclass
class Api:
    verb: str
    noun: str
    split: str
    params: list[Param]

    @property
    def name(self) -> str:
        return f"{self.verb}_{self.noun}"

    def function(self) -> dict:
        """The API in BFCL's function format (the key order BFCL's files use)."""
        return {"name": self.name, "description": f"{_third_person(self.verb).capitalize()} a {self.noun}.",
                "parameters": {"type": "dict", "properties": {p.name: p.schema() for p in self.params},
                               "required": [p.name for p in self.params if p.required]}}  # fmt: skip


@dataclass
class FcWorld:
    seed: int
    apis: list[Api]
    questions: dict[str, list[dict]]  # split -> entries {id, category, question, function, ground_truth, reasoning}


def _third_person(verb: str) -> str:
    return _THIRD_PERSON.get(verb, verb + "s")


def build_world(seed: int, apis: tuple[int, int, int] = (24, 8, 8),
                questions: tuple[int, int, int] = (64, 12, 12)) -> FcWorld:
    """`apis`: APIs per split (train, dev, test); `questions`: questions per kind in each split."""
    if len(apis) != 3 or len(questions) != 3:
        raise ValueError("apis and questions take one number per split (train, dev, test)")
    if min(apis) < 2:
        raise ValueError(f"every split needs at least 2 APIs (multiple and irrelevance offer another), got {apis}")
    if min(questions) < 1:
        raise ValueError(f"every split needs at least 1 question per kind, got {questions}")
    rng = random.Random(seed)
    names = _Names(rng)
    world_apis = [_api(rng, names, split) for split, n in zip(SPLITS, apis, strict=True) for _ in range(n)]
    out = {}
    for split, n in zip(SPLITS, questions, strict=True):
        pool = [a for a in world_apis if a.split == split]
        entries = [_question(rng, names, pool, kind) for kind in KINDS for _ in range(n)]
        counters = dict.fromkeys(KINDS, 0)
        for entry in entries:
            entry["id"] = f"{split}_{entry['category']}_{counters[entry['category']]}"
            counters[entry["category"]] += 1
        out[split] = entries
    return FcWorld(seed=seed, apis=world_apis, questions=out)


def _api(rng: random.Random, names: _Names, split: str) -> Api:
    n_params = rng.randint(1, 3)
    params = []
    for i in range(n_params):
        kind = rng.choice(PARAM_TYPES)
        enum = [names.word(1, 2).lower() for _ in range(_ENUM_SIZE)] if kind == "enum" else []
        # the first parameter is required; later ones are optional one time in three
        params.append(Param(names.word(2, 2).lower(), kind, required=i == 0 or rng.random() > 1 / 3, enum=enum))
    return Api(verb=rng.choice(_VERBS), noun=names.word(2, 3).lower(), split=split, params=params)


def _value(rng: random.Random, names: _Names, param: Param):
    if param.kind == "string":
        return names.word(2, 2)
    if param.kind == "integer":
        return rng.randint(2, 99)
    if param.kind == "float":
        return rng.randint(5, 995) / 10 if rng.random() < 0.5 else rng.randint(1, 99) + 0.5
    if param.kind == "enum":
        return rng.choice(param.enum)
    return rng.random() < 0.5


def _arguments(rng: random.Random, names: _Names, api: Api, avoid: dict | None = None) -> dict:
    """Values for the required parameters and about half of the optional ones (`avoid`: values to differ from)."""
    args = {}
    for param in api.params:
        if param.required or rng.random() < 0.5:
            for _ in range(20):
                value = _value(rng, names, param)
                if avoid is None or avoid.get(param.name) != value:
                    break
            args[param.name] = value
    return args


def _phrase(rng: random.Random, param: Param, value) -> str:
    shown = ("on" if value else "off") if param.kind == "boolean" else value
    return rng.choice(_PHRASES[param.kind]).format(p=param.name, v=shown)


def _state(rng: random.Random, api: Api, args: dict) -> str:
    by_name = {p.name: p for p in api.params}
    parts = [_phrase(rng, by_name[name], value) for name, value in args.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _sentence(template: str, api: Api, **parts) -> str:
    return template.format(Verb=api.verb.capitalize(), verb=api.verb, noun=api.noun, **parts)


def _possible_answer(api: Api, args: dict) -> dict:
    return {api.name: {p.name: [args[p.name]] if p.name in args else [""] for p in api.params}}


def _given(args: dict) -> str:
    names = list(args)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _question(rng: random.Random, names: _Names, pool: list[Api], kind: str) -> dict:
    api = rng.choice(pool)
    others = [a for a in pool if a is not api]
    # The reasoning puts the request beside what each offered function does before it decides, for every kind.
    wants = f"The user wants to {api.verb} a {api.noun}."
    if kind == "irrelevance":
        offered = rng.choice([a for a in others if a.verb == api.verb] or others)
        text = _sentence(rng.choice(_SENTENCES), api, args=_state(rng, api, _arguments(rng, names, api)))
        reasoning = f"{wants} {_does(offered)}, so it does not fit; no function is called."
        return _entry(kind, text, [offered], None, reasoning)
    if kind == "parallel":
        first = _arguments(rng, names, api)
        second = _arguments(rng, names, api, avoid=first)
        text = _sentence(rng.choice(_PARALLEL), api, args1=_state(rng, api, first), args2=_state(rng, api, second))
        reasoning = f"The user wants to {api.verb} two {api.noun}s. {_does(api)}, so it fits, called once for each."
        return _entry(kind, text, [api], [_possible_answer(api, first), _possible_answer(api, second)], reasoning)
    args = _arguments(rng, names, api)
    text = _sentence(rng.choice(_SENTENCES), api, args=_state(rng, api, args))
    offered = [api]
    if kind == "multiple":
        offered = [api, rng.choice(others)]
        rng.shuffle(offered)
    reasoning = f"{wants} {'; '.join(_does(a) for a in offered)}. {api.name} fits; the question gives {_given(args)}."
    return _entry(kind, text, offered, [_possible_answer(api, args)], reasoning)


def _does(api: Api) -> str:
    return f"{api.name} {_third_person(api.verb)} a {api.noun}"


def _entry(kind: str, text: str, offered: list[Api], ground_truth: list | None, reasoning: str) -> dict:
    return {"category": kind, "question": [[{"role": "user", "content": text}]],
            "function": [a.function() for a in offered], "ground_truth": ground_truth, "reasoning": reasoning}


# ---------------------------------------------------------------- files
def write_world(world: FcWorld, out_dir: str | Path) -> dict[str, list[Path]]:
    """The BFCL-layout files (module docstring) under out_dir; returns {split: [question files]}, plus "apis"."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    apis = out / "apis.json"
    apis.write_text(json.dumps({"seed": world.seed, "apis": [{"name": a.name, **asdict(a)} for a in world.apis]},
                               indent=1, sort_keys=True) + "\n")  # fmt: skip
    written: dict[str, list[Path]] = {"apis": [apis]}
    for split, entries in world.questions.items():
        written[split] = []
        for kind in KINDS:
            rows = [e for e in entries if e["category"] == kind]
            path = out / split / f"BFCL_v4_{kind}.json"
            _write_jsonl(path, [{"id": e["id"], "question": e["question"], "function": e["function"],
                                 "reasoning": e["reasoning"]} for e in rows])  # fmt: skip
            if kind != "irrelevance":
                _write_jsonl(out / split / "possible_answer" / path.name,
                             [{"id": e["id"], "ground_truth": e["ground_truth"]} for e in rows])
            written[split].append(path)
    return written


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
