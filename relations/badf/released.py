"""The BADF authors' released association files, and ``badf.released``: one closed case per
released association, so their findings sit in a log beside ours.

A folder holds CSV files (any depth) with the columns ``Location Category, Demographic
Identity, Phrase, Score, P-Value, Prompt Response``. Their names for categories and
identities ("Art leisure", "Middle-east", "Judaism") are mapped to ours (`CATEGORY_NAMES`,
`IDENTITY_NAMES`; unknown names are kept as written, lower-cased for categories). A row
without a category, an identity or a phrase is skipped and counted; a Score or P-Value that
is not a number is kept as empty. Files are read in sorted path order, so a row's index is
stable and ``make_case`` re-derives every case from the folder (``harness replay --verify``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from harness.family_api import (
    Case,
    ConfigError,
    GenerationParams,
    Message,
    ModelError,
    ModelSpec,
    Outcome,
    RelationBase,
    Reply,
    Transcript,
    Verdict,
)

COLUMNS = (
    "Location Category",
    "Demographic Identity",
    "Phrase",
    "Score",
    "P-Value",
    "Prompt Response",
)
CATEGORY_NAMES = {
    "art leisure": "arts_and_leisure",
    "art and leisure": "arts_and_leisure",
    "arts and leisure": "arts_and_leisure",
    "law policy": "law_and_policy",
    "law and policy": "law_and_policy",
}
IDENTITY_NAMES = {
    "female": "female",
    "male": "male",
    "asian": "Asian",
    "black": "Black",
    "white": "White",
    "middle-east": "Middle-Eastern",
    "middle east": "Middle-Eastern",
    "middle-eastern": "Middle-Eastern",
    "christian": "Christian",
    "christianity": "Christian",
    "judaism": "Jewish",
    "jewish": "Jewish",
    "muslim": "Muslim",
    "islam": "Muslim",
    "buddhism": "Buddhist",
    "buddhist": "Buddhist",
}


def category_name(text: str) -> str:
    low = " ".join(text.replace("_", " ").split()).lower()
    return CATEGORY_NAMES.get(low, low.replace(" ", "_"))


def identity_name(text: str) -> str:
    low = " ".join(text.split()).lower()
    return IDENTITY_NAMES.get(low, text.strip())


def _number(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass
class ReleasedFolder:
    rows: list[dict[str, Any]] = field(default_factory=list)
    files: int = 0
    skipped: int = 0
    first_problem: str = ""


@cache
def load_folder(folder: str) -> ReleasedFolder:
    root = Path(folder)
    paths = sorted(p for p in root.rglob("*.csv") if p.is_file())
    if not paths:
        raise ConfigError(
            f"{root} holds no .csv file",
            field="SRC",
            fix="give the folder of the association files",
        )
    out = ReleasedFolder(files=len(paths))
    for path in paths:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in reader.fieldnames or []]
            missing = [c for c in COLUMNS[:3] if c not in header]
            if missing:
                out.skipped += 1
                out.first_problem = out.first_problem or f"{path.name}: no column {missing[0]!r}"
                continue
            for line, raw in enumerate(reader, start=2):
                row = {(k or "").strip(): (v or "") for k, v in raw.items()}
                cat, ident, phrase = (row.get(c, "").strip() for c in COLUMNS[:3])
                if not (cat and ident and phrase):
                    out.skipped += 1
                    out.first_problem = out.first_problem or f"{path.name} line {line}: empty field"
                    continue
                out.rows.append(
                    {
                        "source_file": str(path.relative_to(root)),
                        "line": line,
                        "location_category": category_name(cat),
                        "identity": identity_name(ident),
                        "phrase": " ".join(phrase.split()).lower(),
                        "score": _number(row.get("Score")),
                        "p": _number(row.get("P-Value")),
                        "prompt_response": row.get("Prompt Response", "").strip(),
                        "released": {"location_category": cat, "identity": ident, "phrase": phrase},
                    }
                )
    return out


class ReleasedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    folder: str = Field(description="the folder of association files an import read")


class BadfReleased(RelationBase):
    name: ClassVar[str] = "badf.released"
    family: ClassVar[str] = "badf"
    summary: ClassVar[str] = (
        "BADF associations released by the authors, imported by 'harness import badf' "
        "(one closed case per association; nothing is asked)"
    )
    Options: ClassVar[type[BaseModel]] = ReleasedOptions
    options: ReleasedOptions

    def case_count(self) -> int | None:
        return len(load_folder(self.options.folder).rows)

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return dict(load_folder(self.options.folder).rows[index])

    def step(self, case: Case, transcript: Transcript) -> list[Any] | Verdict:
        evidence = {k: v for k, v in case.data.items() if k != "released"}
        return Verdict(outcome=Outcome.HELD, reason="released association", evidence=evidence)


class ReleasedAssociationsModel:
    """The ``badf-released:`` scheme: stands for the authors' released findings in an
    imported log; known so the recorded campaign validates, never callable."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        raise ModelError(
            f"{self.name} stands for associations imported from the BADF authors' files; it "
            "cannot be called"
        )

    async def aclose(self) -> None:
        return None


def build_released(spec: ModelSpec) -> ReleasedAssociationsModel:
    return ReleasedAssociationsModel(spec.name)
