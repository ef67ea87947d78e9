"""LoCoMo's conversations as the retrieval evaluation's turns and questions (read from a path).

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) is never copied into the project: the
evaluation reads the public JSON file (`data/locomo10.json` of snap-research/LoCoMo, or a
folder holding part of it, such as `../shared/data/locomo/`) from the path given on its
command line, and nothing of it is written back.

- Each conversation is one memory (one user id): every turn of both speakers, in order, is
  one `add()`, created at its session's date, with its speaker, its position
  (`dia_id`) and any shared image's caption (appended to the text, as a bot that reads images
  would keep what it saw).
- Questions of categories 1-4 with evidence (1 multi-hop, 2 temporal, 3 open-domain,
  4 single-hop, as numbered by LoCoMo's evaluation code); category 5 (adversarial) has no
  evidence to find. A question's evidence ids are kept as written: an id naming no turn
  (a typo in the data) is evidence never found, so recall is not flattered by dropping it.
- `SPLIT` fixes which conversations tune and which never do: chosen before any measurement,
  by id, about half of the questions each.

Pure data: imports nothing from the project.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["CATEGORIES", "SPLIT", "LocomoQuestion", "LocomoTurn", "Conversation", "load"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# conv-26, -30, -41 (383 questions of categories 1-4) tune; conv-42, -43 (377) are never tuned on.
SPLIT = {"conv-26": "tune", "conv-30": "tune", "conv-41": "tune", "conv-42": "untuned", "conv-43": "untuned"}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    id: str          # dia_id, "D<session>:<n>"
    speaker: str
    text: str        # the turn's words, any image's caption appended
    when: float      # the session's date and time, epoch seconds (UTC)
    session_date: str  # as the data writes it


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    id: str
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    speakers: tuple[str, str]
    turns: tuple[LocomoTurn, ...]
    questions: tuple[LocomoQuestion, ...]

    @property
    def split(self) -> str:
        return SPLIT.get(self.id, "untuned")


def _path(where: str | Path) -> Path:
    path = Path(where)
    if path.is_dir():
        found = sorted(path.glob("*.json"))
        if len(found) != 1:
            raise FileNotFoundError(f"{path}: expected one LoCoMo .json file, found {len(found)}")
        return found[0]
    return path


def _text(turn: dict) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    caption = turn.get("blip_caption")
    return f"{text} [shared image: {caption}]" if isinstance(caption, str) and caption.strip() else text


def load(where: str | Path) -> list[Conversation]:
    """The conversations of the LoCoMo file at `where` (the file, or a folder holding one)."""
    raw = json.loads(_path(where).read_text(encoding="utf-8"))
    out = []
    for sample in raw:
        conv = sample["conversation"]
        turns: list[LocomoTurn] = []
        n = 1
        while f"session_{n}" in conv:
            stamp = conv[f"session_{n}_date_time"]
            when = datetime.strptime(stamp, DATE_FORMAT).replace(tzinfo=UTC).timestamp()
            turns += [LocomoTurn(t["dia_id"], t["speaker"], _text(t), when, stamp) for t in conv[f"session_{n}"]]
            n += 1
        questions = tuple(
            LocomoQuestion(f"{sample['sample_id']}/q{i}", q["question"], tuple(q["evidence"]), int(q["category"]))
            for i, q in enumerate(sample["qa"])
            if int(q.get("category", 5)) in CATEGORIES and q.get("evidence"))
        out.append(Conversation(sample["sample_id"], (conv["speaker_a"], conv["speaker_b"]), tuple(turns), questions))
    return out
