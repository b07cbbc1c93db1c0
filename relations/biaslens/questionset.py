"""BiasLens question sets: roles x question types, read from and written to JSON or CSV.

A question is stored with the role sentence ("Suppose you are a nurse, ...") and without it,
so one set serves both the role and the no-role variant of an answer campaign.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.family_api import ConfigError, write_output

ATTRIBUTES = (
    "ability",
    "age",
    "body",
    "character",
    "culture",
    "gender",
    "occupations",
    "race",
    "religion",
    "social",
    "victim",
)
SET_FORMAT = "biaslens-questions/1"
CORPUS_DIR = Path(__file__).resolve().parent.parent.parent / "corpora" / "biaslens"
DEFAULT_QUESTIONS = CORPUS_DIR / "questions.csv"


class QType(StrEnum):
    YES_NO = "Yes/No"
    CHOICE = "Choice"
    WHY = "Why"

    @classmethod
    def parse(cls, text: str) -> QType:
        """Accepts our names and the released files' names ("Wh" for Why)."""
        exact = _BY_VALUE.get(text)
        if exact is not None:
            return exact
        key = text.strip().lower().replace(" ", "")
        for qtype, names in _TYPE_NAMES.items():
            if key in names:
                return qtype
        raise ValueError(f"unknown question type {text!r} (use Yes/No, Choice or Why)")


_TYPE_NAMES = {
    QType.YES_NO: {"yes/no", "yesno", "yes-no"},
    QType.CHOICE: {"choice"},
    QType.WHY: {"why", "wh"},
}

_BY_VALUE = {q.value: q for q in QType}
_ROLE_SENTENCE = re.compile(r"^\s*suppose you are (?:an? |the )?(?P<role>[^,]{1,120}),\s*", re.I)
PLACEHOLDER = re.compile(r"\bgroup [ab]\b", re.IGNORECASE)


def without_role(question: str) -> str:
    """The question with its leading role sentence removed (unchanged when there is none)."""
    return _ROLE_SENTENCE.sub("", question, count=1)


class Question(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    attribute: str
    role: str
    type: QType
    question: str  # with the role sentence
    question_without_role: str = ""

    def text(self, *, with_role: bool) -> str:
        if with_role:
            return self.question
        return self.question_without_role or without_role(self.question)


class QuestionSet(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    format: str = SET_FORMAT
    source: str = ""
    questions: tuple[Question, ...] = ()


_CSV_COLUMNS = ["id", "attribute", "role", "type", "question", "question_without_role"]


def load_questions(path: str | Path | None = None) -> QuestionSet:
    """A question set from ``path`` (.json or .csv); our own small corpus when None."""
    path = Path(path) if path is not None else DEFAULT_QUESTIONS
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read question set {path}: {exc.strerror}",
            field="relations.options.questions",
            fix="give the path of a .json or .csv file written by "
            "'harness biaslens export --questions'",
        ) from exc
    try:
        if path.suffix.lower() == ".json":
            return QuestionSet.model_validate_json(text)
        return QuestionSet(source=str(path), questions=tuple(_csv_rows(text)))
    except (ValidationError, ValueError, KeyError) as exc:
        raise ConfigError(
            f"{path} is not a BiasLens question set: {exc}",
            field="relations.options.questions",
            fix=f"JSON with format {SET_FORMAT!r}, or CSV with columns {', '.join(_CSV_COLUMNS)}",
        ) from exc


def _csv_rows(text: str) -> Iterable[Question]:
    for n, row in enumerate(csv.DictReader(io.StringIO(text)), start=1):
        yield Question(
            id=row.get("id") or f"q{n}",
            attribute=row["attribute"].strip().lower(),
            role=row["role"].strip(),
            type=QType.parse(row["type"]),
            question=row["question"].strip(),
            question_without_role=(row.get("question_without_role") or "").strip(),
        )


def write_questions(
    qset: QuestionSet,
    path: str | Path,
    *,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
) -> None:
    """Write a question set (JSON or CSV by suffix) whole; never over ``inputs`` or a log,
    over another existing file only when ``force``."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        text = qset.model_dump_json(indent=2)
        write_output(path, text, inputs=inputs, force=force, option="--questions")
        return
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_COLUMNS)
    for q in qset.questions:
        writer.writerow(
            [q.id, q.attribute, q.role, q.type.value, q.question, q.question_without_role]
        )
    write_output(path, out.getvalue(), inputs=inputs, force=force, option="--questions")


__all__ = [
    "ATTRIBUTES",
    "PLACEHOLDER",
    "QType",
    "Question",
    "QuestionSet",
    "load_questions",
    "without_role",
    "write_questions",
]
