"""The memory bench's synthetic corpus and its vectors, embedded once and kept in a file.

`texts(n, seed)` gives n distinct short texts of the kind a person tells the bot (one or two
sentences from templates); `queries(n, seed)` gives questions about them, each with a random tag
word so that no two are alike. `Vectors` holds the real embedder's vectors of the first texts
of a corpus, in an `.npz` file grown chunk by chunk (`python bench/memory_corpus.py --prepare N`),
so that bulk loads take their vectors from it: embedding 50,000 texts takes most of an hour
on a loaded 2-core machine, and it is not what the bench measures (every query and every single
add still runs the model). Past the file's rows (`--sizes 500000`), vectors are the file's
rows again with gaussian noise added and renormalized, and texts are repeated with a counter:
stated by the bench where it is used.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

NAMES = ["Lena", "Omar", "Priya", "Jonas", "Mei", "Tomás", "Aiko", "Farah", "Nils", "Zoe", "Ravi", "Ines"]
PLACES = ["Lisbon", "Kyoto", "Oslo", "Nairobi", "Montreal", "Tallinn", "Cusco", "Hanoi", "Porto", "Denver",
          "Bergen", "Tbilisi", "Seville", "Perth", "Krakow", "Osaka"]
FOODS = ["ramen", "falafel", "paella", "pierogi", "pho", "tacos", "sourdough", "kimchi", "risotto", "curry",
         "dumplings", "shakshuka", "goulash", "sushi", "empanadas"]
HOBBIES = ["bouldering", "the cello", "chess", "woodworking", "birdwatching", "running", "knitting",
           "photography", "sailing", "pottery", "gardening", "salsa dancing", "astronomy", "fencing"]
PETS = ["a cat", "a beagle", "two rabbits", "a parrot", "a corgi", "goldfish", "a tortoise", "a husky"]
JOBS = ["nurse", "backend developer", "teacher", "electrician", "translator", "architect", "baker",
        "data analyst", "pilot", "librarian", "game designer", "pharmacist"]
TOOLS = ["Rust", "Python", "Kubernetes", "Postgres", "Blender", "Figma", "Excel", "Godot", "Linux", "Vim"]
MONTHS = ["January", "March", "April", "June", "August", "September", "October", "December"]
TEMPLATES = [
    "My sister {name} just moved to {place} for work.",
    "I have been learning {hobby} for {n} months now and I love it.",
    "For dinner tonight I am making {food} with my roommate.",
    "We adopted {pet} last {month}; it keeps us busy.",
    "I work as a {job} and my shift starts at {hour} am.",
    "Can you remind me that my dentist appointment is on the {n}th?",
    "I'm planning a trip to {place} in {month} with {name}.",
    "At work we are migrating everything to {tool}, which is painful.",
    "I can't eat {food} anymore since my doctor said so.",
    "My favourite weekend plan is {hobby} followed by {food}.",
    "{name} recommended a book about {hobby}; I am on chapter {n}.",
    "I ran {n} kilometres this morning along the river in {place}.",
    "Our team lead {name} wants the {tool} report by Friday.",
    "I grew up in {place} but now I live near {place2}.",
    "Question: how long should I boil {food}? Answer: about {n} minutes, then rest it.",
]
QUESTIONS = [
    "where does my sister live?", "what hobby am I learning?", "what did I cook for dinner?",
    "what pet do we have?", "what is my job?", "when is my dentist appointment?", "where am I travelling?",
    "what are we migrating to at work?", "what food can't I eat?", "what do I do on weekends?",
    "which book was recommended to me?", "how far did I run?", "what report is due Friday?",
    "where did I grow up?", "how long to boil {food}?", "anything about {place}?", "{hobby}",
    "what did I say last week about {food}?",
]


def _sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        name=rng.choice(NAMES), place=rng.choice(PLACES), place2=rng.choice(PLACES), food=rng.choice(FOODS),
        hobby=rng.choice(HOBBIES), pet=rng.choice(PETS), job=rng.choice(JOBS), tool=rng.choice(TOOLS),
        month=rng.choice(MONTHS), n=rng.randint(2, 40), hour=rng.randint(5, 11))


def texts(n: int, seed: int = 7) -> list[str]:
    """n distinct texts, the same for the same seed (one sentence, or two joined)."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < n:
        seen[_sentence(rng) + (" Also: " + _sentence(rng) if rng.random() < 0.5 else "")] = None
    return list(seen)


def queries(n: int, seed: int) -> list[str]:
    """n questions, each with a random six-letter tag, so that no query vector is reused."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tag = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(6))
        question = rng.choice(QUESTIONS).format(food=rng.choice(FOODS), place=rng.choice(PLACES),
                                                hobby=rng.choice(HOBBIES))
        out.append(f"{question} (re {tag})")
    return out


class Vectors:
    """The embedder's vectors of `texts(n)`'s first rows, read from an `.npz` file."""

    def __init__(self, path: Path) -> None:
        with np.load(path) as data:
            self.matrix = data["vectors"]
        self.path = path

    def take(self, start: int, stop: int, seed: int = 11) -> np.ndarray:
        """Rows start..stop-1; rows past the file's are its rows again, perturbed (see the module)."""
        have = len(self.matrix)
        if stop <= have:
            return self.matrix[start:stop]
        rows = self.matrix[np.arange(start, stop) % have].copy()
        extra = np.arange(start, stop) >= have
        noise = np.random.default_rng(seed + start).standard_normal((int(extra.sum()), rows.shape[1]))
        rows[extra] += noise.astype(np.float32) * 0.02
        rows[extra] /= np.linalg.norm(rows[extra], axis=1, keepdims=True)
        return rows


def corpus_text(all_texts: list[str], row: int) -> str:
    """The text of corpus row `row`; rows past the distinct texts repeat them with a counter."""
    return all_texts[row] if row < len(all_texts) else f"{all_texts[row % len(all_texts)]} (#{row})"


def prepare(path: Path, n: int, chunk: int = 1024) -> None:
    """Embed `texts(n)` into `path`, resuming from the rows it already holds."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from memory.semantic.embeddings import LocalEmbedder

    all_texts = texts(n)
    have = np.load(path)["vectors"] if path.exists() else np.zeros((0, 384), np.float32)
    embedder = LocalEmbedder(threads=2)
    started, had = time.perf_counter(), len(have)
    for start in range(len(have), n, chunk):
        have = np.concatenate([have, embedder.embed(all_texts[start:start + chunk])])
        part = path.with_suffix(".part.npz")
        np.savez(part, vectors=have)
        os.replace(part, path)
        print(f"{len(have):,} / {n:,} rows, {(len(have) - had) / (time.perf_counter() - started):.0f} texts/s",
              flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", type=int, required=True, help="rows to embed")
    parser.add_argument("--vectors", type=Path, default=Path("/tmp/membench/vectors.npz"))
    args = parser.parse_args()
    prepare(args.vectors, args.prepare)
