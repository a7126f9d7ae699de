"""A synthetic world of fictional people, cities, countries, companies and inventions, with a passage corpus
and single-hop / two-hop questions whose answers exist only in that corpus.

Names are built from syllables, so no pretrained model can know the answers: the only way to score is to search.
Answers are single invented words or two-word person names, so exact match is learnable by a 135M model.
Everything is drawn from one `random.Random(seed)`: the same seed gives byte-identical files.

>>> world = build_world(seed=0, n_people=8)
>>> person = world.people[0]
>>> passage = next(p for p in world.corpus if p["contents"].startswith(person.name + "\\n"))
>>> world.cities[person.city].name in passage["contents"]
True
>>> all(q["golden_answers"][0] for q in world.questions)
True
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

DATA_SOURCE = "toy_world"

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "kr", "tr",
           "th", "sh", "qu", "zh", "vl")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "x", "m")
_COMPANY_SUFFIXES = ("Works", "Labs", "Industries", "Systems", "Foundry")
_INVENTION_KINDS = ("engine", "lamp", "loom", "compass", "telescope", "pump", "clock", "press")
_JOBS = ("engineer", "chemist", "architect", "painter", "merchant", "physician", "sailor", "poet")
_FESTIVAL_KINDS = ("lantern festival", "harvest fair", "river regatta", "winter market", "song contest")


@dataclass
class Person:
    name: str
    job: str
    city: int  # index into World.cities: born there
    company: int = -1  # works for
    invention: int = -1  # invented it (-1: none)


@dataclass
class City:
    name: str
    country: int
    population: int


@dataclass
class Country:
    name: str
    capital: int = -1


@dataclass
class Company:
    name: str
    founder: int  # index into World.people
    city: int  # headquarters
    year: int


@dataclass
class Invention:
    name: str  # e.g. "Velor engine"
    inventor: int
    year: int


@dataclass
class World:
    seed: int
    people: list[Person] = field(default_factory=list)
    cities: list[City] = field(default_factory=list)
    countries: list[Country] = field(default_factory=list)
    companies: list[Company] = field(default_factory=list)
    inventions: list[Invention] = field(default_factory=list)
    corpus: list[dict] = field(default_factory=list)
    questions: list[dict] = field(default_factory=list)  # each with "split": train | test


class _Names:
    """Unique capitalised syllable words (never repeated across the whole world)."""

    def __init__(self, rng: random.Random):
        self._rng = rng
        self._used: set[str] = set()

    def word(self, min_syll: int = 2, max_syll: int = 3) -> str:
        for _ in range(10_000):
            n = self._rng.randint(min_syll, max_syll)
            parts = [self._rng.choice(_ONSETS) + self._rng.choice(_VOWELS) for _ in range(n)]
            word = ("".join(parts) + self._rng.choice(_CODAS)).capitalize()
            if 4 <= len(word) <= 10 and word.lower() not in self._used:
                self._used.add(word.lower())
                return word
        raise RuntimeError("ran out of syllable names")  # pragma: no cover - 24*8 syllables per slot


def build_world(seed: int, n_people: int = 60, test_fraction: float = 0.2, n_distractors: int | None = None,
                dev_fraction: float = 0.0) -> World:
    """Entities, facts, passages and questions for `seed`; about 4 passages and ~10 questions per 3 people.

    `dev_fraction` > 0 holds out a dev split (for choosing settings) from what would be training subjects; the test
    questions stay exactly those of the same seed without it."""
    if n_people < 4:
        raise ValueError(f"n_people must be at least 4, got {n_people}")
    if not 0 < test_fraction < 1 or not 0 <= dev_fraction < 1 or test_fraction + dev_fraction >= 1:
        raise ValueError(f"need 0 < test_fraction, 0 <= dev_fraction and test_fraction + dev_fraction < 1 (some "
                         f"subjects left for training), got test_fraction={test_fraction}, dev_fraction={dev_fraction}")
    rng = random.Random(seed)
    names = _Names(rng)
    world = World(seed=seed)
    n_countries = max(2, n_people // 10)
    n_cities = max(3, n_people // 3)
    n_companies = max(2, n_people // 4)
    n_inventions = max(2, n_people // 4)

    world.countries = [Country(names.word()) for _ in range(n_countries)]
    world.cities = [City(names.word(), country=i % n_countries, population=rng.randrange(5, 900) * 1000)
                    for i in range(n_cities)]
    for ci, country in enumerate(world.countries):
        country.capital = ci  # city ci is in country ci (i % n_countries == ci for ci < n_countries)
    world.people = [Person(f"{names.word()} {names.word()}", rng.choice(_JOBS), city=rng.randrange(n_cities))
                    for _ in range(n_people)]
    founders = rng.sample(range(n_people), n_companies)
    world.companies = [Company(f"{names.word()} {rng.choice(_COMPANY_SUFFIXES)}", founder=f,
                               city=rng.randrange(n_cities), year=rng.randrange(1820, 1990))
                       for f in founders]
    for person in world.people:
        person.company = rng.randrange(n_companies)
    inventors = rng.sample(range(n_people), n_inventions)
    world.inventions = []
    for i, p in enumerate(inventors):
        world.inventions.append(Invention(f"{names.word()} {rng.choice(_INVENTION_KINDS)}", inventor=p,
                                          year=rng.randrange(1800, 1990)))
        world.people[p].invention = i

    world.corpus = _passages(world, rng, names, n_distractors if n_distractors is not None else n_people // 2)
    world.questions = _questions(world, rng, test_fraction, dev_fraction)
    return world


# ---------------------------------------------------------------- passages
def _passages(world: World, rng: random.Random, names: _Names, n_distractors: int) -> list[dict]:
    """One passage per entity carrying several of its facts, then distractors that mention entities but answer nothing."""
    docs: list[tuple[str, str]] = []
    W = world
    for p in W.people:
        facts = [f"{p.name} is {_article(p.job)} {p.job} who was born in {W.cities[p.city].name}.",
                 f"{p.name} works for {W.companies[p.company].name}."]
        if p.invention >= 0:
            facts.append(f"{p.name} invented the {W.inventions[p.invention].name}.")
        docs.append((p.name, " ".join(facts)))
    for c in W.cities:
        country = W.countries[c.country]
        capital = f" It is the capital of {country.name}." if W.cities[country.capital] is c else ""
        docs.append((c.name, f"{c.name} is a city in {country.name} with {c.population} inhabitants.{capital}"))
    for k in W.countries:
        docs.append((k.name, f"{k.name} is a country. Its capital is {W.cities[k.capital].name}."))
    for co in W.companies:
        docs.append((co.name, f"{co.name} is a company founded by {W.people[co.founder].name} in {co.year}. "
                              f"Its headquarters are in {W.cities[co.city].name}."))
    for inv in W.inventions:
        docs.append((f"The {inv.name}", f"The {inv.name} was invented by {W.people[inv.inventor].name} in {inv.year}."))
    for _ in range(n_distractors):  # an event that mentions a person and a city that is NOT where they were born
        fest = f"{names.word()} {rng.choice(_FESTIVAL_KINDS)}"
        person = rng.choice(W.people)
        city = rng.choice([i for i in range(len(W.cities)) if i != person.city])
        docs.append((f"The {fest}", f"The {fest} takes place every year in {W.cities[city].name}. "
                                    f"In {rng.randrange(1900, 2000)} it was opened by {person.name}."))
    order = list(range(len(docs)))
    rng.shuffle(order)  # ids carry no information about the entity kind
    return [{"id": str(new_id), "contents": f"{docs[i][0]}\n{docs[i][1]}"} for new_id, i in enumerate(order)]


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


# ---------------------------------------------------------------- questions
def _questions(world: World, rng: random.Random, test_fraction: float, dev_fraction: float) -> list[dict]:
    W = world
    doc_of = {d["contents"].split("\n", 1)[0]: d["id"] for d in world.corpus}
    city, person, company, country = (lambda i: W.cities[i].name), (lambda i: W.people[i].name), \
        (lambda i: W.companies[i].name), (lambda i: W.countries[i].name)
    out: list[tuple[str, dict]] = []  # (subject, question)

    def add(subject: str, question: str, answer: str, titles: list[str]) -> None:
        out.append((subject, {"question": question, "golden_answers": [answer], "hops": len(titles),
                              "supporting_ids": [doc_of[t] for t in titles]}))

    for p in W.people:
        c, co = W.cities[p.city], W.companies[p.company]
        add(p.name, f"In which city was {p.name} born?", c.name, [p.name])
        add(p.name, f"Which company does {p.name} work for?", co.name, [p.name])
        # Every two-hop question names its bridge ("the city where", "the company that", "the founder of", ...):
        # "In which country was P born?" read like the one-hop "In which city was P born?", and the demo's
        # SFT model could not tell from the question whether to search once or twice.
        add(p.name, f"In which country is the city where {p.name} was born?", country(c.country), [p.name, c.name])
        add(p.name, f"In which city is the company that {p.name} works for headquartered?", city(co.city),
            [p.name, co.name])
    for co in W.companies:
        f = W.people[co.founder]
        add(co.name, f"Who founded {co.name}?", f.name, [co.name])
        add(co.name, f"In which city is {co.name} headquartered?", city(co.city), [co.name])
        add(co.name, f"In which city was the founder of {co.name} born?", city(f.city), [co.name, f.name])
    for inv in W.inventions:
        ip = W.people[inv.inventor]
        add(f"The {inv.name}", f"Who invented the {inv.name}?", ip.name, [f"The {inv.name}"])
        add(f"The {inv.name}", f"In which city was the inventor of the {inv.name} born?", city(ip.city),
            [f"The {inv.name}", ip.name])
    for c in W.cities:
        add(c.name, f"In which country is {c.name}?", country(c.country), [c.name])
    del person, company

    # Split by subject: a test (dev) question never shares its subject entity with a train question. Dev subjects
    # come after the test ones in the same shuffle, so adding a dev split leaves the test questions as they were.
    subjects = sorted({s for s, _ in out})
    rng.shuffle(subjects)
    n_test = max(1, round(len(subjects) * test_fraction))
    n_dev = max(1, round(len(subjects) * dev_fraction)) if dev_fraction > 0 else 0
    if n_test + n_dev >= len(subjects):
        raise ValueError(f"test_fraction {test_fraction} + dev_fraction {dev_fraction} leave no training subject "
                         f"of {len(subjects)}")
    split_of = {s: "test" for s in subjects[:n_test]} | {s: "dev" for s in subjects[n_test:n_test + n_dev]}
    questions = []
    for i, (subject, q) in enumerate(out):
        split = split_of.get(subject, "train")
        questions.append({"id": f"{DATA_SOURCE}_{i}", **q, "split": split, "data_source": DATA_SOURCE})
    rng.shuffle(questions)  # mixed kinds in file order, so `--limit N` takes a fair sample
    return questions


def _alternate_hops(questions: list[dict]) -> list[dict]:
    """One-hop and two-hop questions take turns (the surplus kind at the end), so any window of the file -- a
    `--limit`, or an unshuffled training batch -- holds both kinds equally."""
    by_hops = {h: [q for q in questions if q["hops"] == h] for h in (1, 2)}
    out = []
    for pair in zip(by_hops[1], by_hops[2], strict=False):  # the surplus kind is appended below
        out.extend(pair)
    shorter = min(len(by_hops[1]), len(by_hops[2]))
    return out + by_hops[1][shorter:] + by_hops[2][shorter:]


# ---------------------------------------------------------------- files
def write_world(world: World, out_dir: str | Path) -> dict[str, Path]:
    """corpus.jsonl, train.jsonl, test.jsonl (dev.jsonl when the world has a dev split) and world.json (all facts)
    under out_dir; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    splits = ("train", "dev", "test") if any(q["split"] == "dev" for q in world.questions) else ("train", "test")
    paths = {"corpus": out / "corpus.jsonl", **{split: out / f"{split}.jsonl" for split in splits},
             "world": out / "world.json"}
    (out / "dev.jsonl").unlink(missing_ok=True)  # a dev file left by an earlier world would not be this world's
    _write_jsonl(paths["corpus"], world.corpus)
    for split in splits:
        rows = [{k: v for k, v in q.items() if k != "split"} for q in world.questions if q["split"] == split]
        rows = _alternate_hops(rows)
        _write_jsonl(paths[split], rows)
    facts = {k: [asdict(e) for e in getattr(world, k)] for k in ("people", "cities", "countries", "companies",
                                                                   "inventions")}
    paths["world"].write_text(json.dumps({"seed": world.seed, **facts}, indent=1, sort_keys=True) + "\n")
    return paths


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
