"""Invented values the generated states and requests are made of (names, topics, sentences). None of them comes
from BFCL's questions; combined at random with numbers, they give states and requests that no BFCL question has.
Standard library only."""

from __future__ import annotations

import random

FIRST_NAMES = ["Ada", "Bruno", "Celia", "Dario", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Lars",
               "Mira", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Soren", "Tanya", "Ugo", "Vera", "Wendel", "Xenia",
               "Yusuf", "Zora", "Amara", "Bastian", "Corin", "Delphine", "Emeric", "Fenna", "Gideon", "Halima",
               "Ivo", "Jasmin", "Kasimir", "Linnea", "Matteo", "Noor"]  # fmt: skip
LAST_NAMES = ["Okafor", "Lindqvist", "Moreau", "Tanaka", "Varga", "Castillo", "Novak", "Haddad", "Brennan",
              "Ivanova", "Kowalski", "Mbeki", "Rossi", "Schulz", "Takeda", "Duarte", "Falk", "Gruber", "Holm",
              "Jansen"]  # fmt: skip
TOPICS = ["budget", "roadmap", "inventory", "survey", "payroll", "outreach", "hiring", "logistics", "research",
          "marketing", "compliance", "training", "maintenance", "procurement", "forecast", "onboarding", "audit",
          "fundraising", "catalog", "workshop"]  # fmt: skip
FOLDER_WORDS = ["drafts", "archive", "shared", "scratch", "exports", "backups", "reviews", "assets", "minutes",
                "invoices", "designs", "sandbox", "staging", "records", "samples", "templates", "uploads", "ledger",
                "planning", "outbox"]  # fmt: skip
FILE_KINDS = ["notes", "summary", "plan", "log", "report", "memo", "draft", "checklist", "tally", "overview", "brief",
              "agenda", "digest", "outline", "journal"]  # fmt: skip
EXTENSIONS = [".txt", ".md", ".csv", ".log", ".doc", ".json"]
NOUNS = ["supplier", "quarter", "meeting", "shipment", "invoice", "sensor", "ticket", "release", "contract", "sample",
         "server", "vendor", "budget", "deadline", "prototype", "campaign", "warehouse", "schedule", "dataset",
         "workshop"]  # fmt: skip
VERBS = ["delayed", "approved", "reviewed", "updated", "flagged", "archived", "confirmed", "postponed", "merged",
         "cancelled", "scheduled", "verified", "rejected", "shipped", "measured"]  # fmt: skip
ADJECTIVES = ["green", "quiet", "rapid", "amber", "hollow", "bright", "narrow", "steady", "coastal", "silver",
              "frozen", "gentle", "tidal", "rusty", "lunar"]  # fmt: skip
HANDLE_PARTS = ["pixel", "orbit", "maple", "cobalt", "ember", "quartz", "willow", "nimbus", "harbor", "juniper",
                "falcon", "meadow", "cinder", "lagoon", "summit"]  # fmt: skip


def pick(rng: random.Random, items: list, avoid=()) -> str:
    """A random item not in `avoid` (a name taken already)."""
    choices = [item for item in items if item not in avoid]
    if not choices:
        raise ValueError("no unused value left")
    return rng.choice(choices)


def sentence(rng: random.Random) -> str:
    """A short invented line of text, e.g. 'Vendor contract approved for week 14'."""
    noun, verb = rng.choice(NOUNS), rng.choice(VERBS)
    tail = rng.choice([f"for week {rng.randint(1, 52)}", f"by {rng.choice(FIRST_NAMES)}",
                       f"after {rng.randint(2, 9)} reviews", f"in the {rng.choice(ADJECTIVES)} batch",
                       f"with code {rng.randint(100, 999)}"])
    return f"{noun.capitalize()} {rng.choice(TOPICS)} {verb} {tail}"


def file_name(rng: random.Random, avoid=()) -> str:
    """An unused file name like 'budget_memo_41.txt'."""
    for _ in range(100):
        name = f"{rng.choice(TOPICS)}_{rng.choice(FILE_KINDS)}_{rng.randint(1, 99)}{rng.choice(EXTENSIONS)}"
        if name not in avoid:
            return name
    raise ValueError("no unused file name found")


def folder_name(rng: random.Random, avoid=()) -> str:
    for _ in range(100):
        name = rng.choice(FOLDER_WORDS) if rng.random() < 0.6 else f"{rng.choice(FOLDER_WORDS)}_{rng.randint(2, 40)}"
        if name not in avoid:
            return name
    raise ValueError("no unused folder name found")


def handle(rng: random.Random, avoid=()) -> str:
    """A social-media user name like 'cobalt_meadow7'."""
    for _ in range(100):
        first, second = rng.sample(HANDLE_PARTS, 2)
        name = f"{first}_{second}{rng.randint(1, 99)}"
        if name not in avoid:
            return name
    raise ValueError("no unused handle found")


def password(rng: random.Random) -> str:
    return f"{rng.choice(ADJECTIVES)}{rng.choice(NOUNS).capitalize()}{rng.randint(10, 999)}!"


def digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))
