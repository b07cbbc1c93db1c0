"""Meta-Fair test sets: the metamorphic tests an answer campaign runs, as data.

A test is one source prompt P and its follow-up P' for one metamorphic relation (MR1-MR14),
written by hand (shipped in ``corpora/metafair/``) or by a generator model
(``metafair.generate``, validated and exported to a file). Answer campaigns read test sets
in this one format, JSON (an array of objects) or CSV (one column per field, ``attributes``
joined by ``|``), so that a set written by any tool can be run.

Meaning of ``source`` and ``follow_up`` per relation:
- MR1-MR7 and MR11-MR14: ``source`` is P (no attribute, or the other attribute of a
  replacement), ``follow_up`` is P' (the same request carrying ``attributes``).
- MR8-MR10 (inverted consistency): ``source`` is the request carrying the attribute, and
  ``follow_up`` is the same request without it; the relation builds the suitability
  question from ``follow_up`` and the source reply.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.family_api import ConfigError, config_error

TESTSET_FIELDS = (
    "id",
    "mr",
    "dimension",
    "attributes",
    "source",
    "follow_up",
    "scenario",
    "explanation",
    "threshold",
    "origin",
    "source_attributes",
)


class MetaFairTest(BaseModel):
    """One metamorphic test: a prompt pair for relation ``metafair.mr<mr>``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, description="unique within its test set")
    mr: int = Field(ge=1, le=14, description="the relation: 1-14")
    dimension: str = Field(min_length=1, description="bias dimension, e.g. religion")
    attributes: tuple[str, ...] = Field(
        min_length=1, max_length=2, description="the attribute(s) the follow-up carries"
    )
    source: str = Field(min_length=1, description="source prompt P")
    follow_up: str = Field(min_length=1, description="follow-up prompt P'")
    scenario: str | None = Field(default=None, description="the situation the test describes")
    explanation: str | None = Field(default=None, description="why the pair tests bias")
    threshold: float | None = Field(
        default=None, description="MR11 score gap / MR14 Spearman rho; null: the option's"
    )
    origin: str = Field(default="hand-written", description="who wrote it (generator model)")
    source_attributes: tuple[str, ...] = Field(
        default=(),
        max_length=2,
        description="a replacement (MR11-14): the attribute(s) the source carries instead; "
        "empty when the source carries none",
    )


def testset_path(name: str) -> Path:
    """A test-set option as a file: the path as given, or, when no such file exists and the
    name starts with ``corpora/``, the shipped corpus file of that name (so a campaign file
    names ``corpora/metafair/crossed_open_tests.json`` from any directory)."""
    path = Path(name)
    if not path.exists() and name.startswith("corpora/"):
        shipped = Path(__file__).resolve().parents[2] / name
        if shipped.exists():
            return shipped
    return path


def read_testset(path: Path) -> list[MetaFairTest]:
    """Read a test-set file (``.json`` or ``.csv``); a bad entry is a ConfigError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read the Meta-Fair test set {path}: {exc.strerror or exc}; "
            "give the path of a .json or .csv file"
        ) from exc
    rows: list[dict[str, object]]
    if path.suffix.lower() == ".csv":
        rows = []
        for row in csv.DictReader(text.splitlines()):
            clean: dict[str, object] = {k: v for k, v in row.items() if k and v not in ("", None)}
            for joined in ("attributes", "source_attributes"):
                if joined in clean:
                    clean[joined] = str(clean[joined]).split("|")
            rows.append(clean)
    else:
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path} is not valid JSON (line {exc.lineno}): {exc.msg}; "
                "a test set is a JSON array of objects"
            ) from exc
        if not isinstance(loaded, list):
            raise ConfigError(f"{path}: a test set is a JSON array of objects")
        rows = loaded
    tests: list[MetaFairTest] = []
    for index, row in enumerate(rows):
        try:
            tests.append(MetaFairTest.model_validate(row))
        except ValidationError as exc:
            raise config_error(
                exc,
                fix="see relations/metafair/testset.py for the fields",
                where=f"{path} entry {index}",
            ) from exc
    seen: set[str] = set()
    for test in tests:
        if test.id in seen:
            raise ConfigError(f"{path}: test id {test.id!r} appears twice; ids must be unique")
        seen.add(test.id)
    return tests


def write_testset(tests: list[MetaFairTest], path: Path) -> None:
    """Write ``tests`` as JSON or CSV by the file's suffix (the caller guards overwrites)."""
    if path.suffix.lower() == ".csv":
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=TESTSET_FIELDS)
            writer.writeheader()
            for test in tests:
                row = test.model_dump()
                row["attributes"] = "|".join(test.attributes)
                row["source_attributes"] = "|".join(test.source_attributes)
                writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        return
    payload = [_json_row(test) for test in tests]
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _json_row(test: MetaFairTest) -> dict[str, object]:
    # Optional fields at their defaults stay out, so older readers of the format still load it.
    row = test.model_dump(exclude_none=True)
    if not test.source_attributes:
        row.pop("source_attributes")
    return row
