"""Executed Meta-Fair test pairs from any tool, as a CSV file: the rows ``harness import
metafair`` turns into a log, and the cases an imported relation re-derives on replay.

Columns: ``test_id, relation, bias_type, prompt_1, response_1, prompt_2, response_2``,
optional ``threshold`` and ``label`` (a human label: BIASED, UNBIASED, INVALID or
INDETERMINABLE; the paper's INVALID_DUE_TO_GENERATOR / INVALID_DUE_TO_MUT read as
INVALID). ``relation`` is ``metafair.mr3``, ``MR3`` or ``3``; ``bias_type`` a dimension of
the attribute catalogue. The attribute is not a column: it is the catalogue attribute (or,
for MR5, first name) that one prompt names as whole words and the other does not, the
longest when several; "unstated" when none. For MR8-MR10, ``prompt_2`` is the suitability
question as it was sent (embedding ``response_1``). A bad row is a ConfigError naming its
line and column.
"""

from __future__ import annotations

import csv
import functools
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

import relations.metafair.corpus as corpus
from harness.family_api import READING_KEY, READING_VERSION, ConfigError, read_user_text

REQUIRED = ("test_id", "relation", "bias_type", "prompt_1", "response_1", "prompt_2", "response_2")
OPTIONAL = ("threshold", "label")
LABELS = {"BIASED", "UNBIASED", "INVALID", "INDETERMINABLE"}
# The thresholds a row may set (as the relations' options allow): MR11 a score gap, MR14 a rho.
THRESHOLD_RANGE = {11: (1.0, 4.0), 14: (-1.0, 1.0)}
_RELATION = re.compile(r"^\s*(?:metafair\.)?(?:mr)?\s*(\d{1,2})\s*$", re.IGNORECASE)
UNSTATED = "unstated"


class ImportedRow(BaseModel):
    """One executed test pair."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    line: int
    test_id: str
    mr: int
    dimension: str
    attribute: str
    prompt_1: str
    response_1: str
    prompt_2: str
    response_2: str
    threshold: float | None = None
    label: str | None = None


def _fail(path: Path, line: int, column: str, why: str, fix: str) -> ConfigError:
    return ConfigError(f"{path} line {line}, column {column}: {why}", fix=fix)


def _words(text: str, candidates: tuple[str, ...]) -> set[str]:
    return {c for c in candidates if re.search(rf"(?<![\w']){re.escape(c)}(?![\w'])", text, re.I)}


def infer_attribute(mr: int, dimension: str, prompt_1: str, prompt_2: str) -> str:
    """The attribute one prompt names and the other does not (see the module doc)."""
    catalogue = corpus.attribute_catalogue()
    if mr == 5:
        candidates = tuple(
            n for cat, _, names in catalogue.proper_nouns if cat == dimension for n in names
        )
    else:
        candidates = tuple(a.word for a in catalogue.of(dimension))
    carrier, other = (prompt_1, prompt_2) if 8 <= mr <= 10 else (prompt_2, prompt_1)
    found = _words(carrier, candidates) - _words(other, candidates)
    # "transgender woman" over "woman": the longest phrase named.
    return max(found, key=lambda a: (len(a), a)) if found else UNSTATED


def _row(path: Path, line: int, raw: dict[str, str]) -> ImportedRow:
    match = _RELATION.match(raw["relation"] or "")
    if match is None or not 1 <= int(match.group(1)) <= 14:
        raise _fail(path, line, "relation", f"{raw['relation']!r} is not a Meta-Fair relation",
                    'write metafair.mr1 ... metafair.mr14 (or "MR3", "3")')  # fmt: skip
    mr = int(match.group(1))
    dims = corpus.attribute_catalogue().dimensions
    dimension = (raw["bias_type"] or "").strip().lower().replace(" ", "_")
    if dimension not in dims:
        raise _fail(path, line, "bias_type", f"{raw['bias_type']!r} is not a dimension",
                    f"use one of {', '.join(dims)}")  # fmt: skip
    for column in ("test_id", "prompt_1", "prompt_2"):
        if not (raw[column] or "").strip():
            raise _fail(path, line, column, "is empty", "give every row its test id and prompts")
    threshold = None
    if (raw.get("threshold") or "").strip():
        try:
            threshold = float(raw["threshold"])
        except ValueError:
            raise _fail(path, line, "threshold", f"{raw['threshold']!r} is not a number",
                        "write a number, or leave the cell empty") from None  # fmt: skip
        low, high = THRESHOLD_RANGE.get(mr, (-float("inf"), float("inf")))
        if not low <= threshold <= high:
            raise _fail(path, line, "threshold", f"{threshold:g} is outside {low:g}..{high:g} "
                        f"for MR{mr}", "write a threshold in that range, or leave the cell "
                        "empty for the default")  # fmt: skip
    label = (raw.get("label") or "").strip().upper() or None
    if label is not None and label.startswith("INVALID_"):
        label = "INVALID"
    if label is not None and label not in LABELS:
        raise _fail(path, line, "label", f"{raw['label']!r} is not a label",
                    f"use one of {', '.join(sorted(LABELS))}, or leave it empty")  # fmt: skip
    return ImportedRow(
        line=line, test_id=raw["test_id"].strip(), mr=mr, dimension=dimension,
        attribute=infer_attribute(mr, dimension, raw["prompt_1"], raw["prompt_2"]),
        prompt_1=raw["prompt_1"], response_1=raw["response_1"] or "",
        prompt_2=raw["prompt_2"], response_2=raw["response_2"] or "",
        threshold=threshold, label=label,
    )  # fmt: skip


@functools.cache
def _read(path: str, size: int, mtime_ns: int) -> tuple[ImportedRow, ...]:
    file = Path(path)
    text = read_user_text(file, "Meta-Fair import file")
    reader = csv.DictReader(text.splitlines(keepends=True))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or ())]
    if missing:
        raise ConfigError(
            f"{file} has no column {', '.join(missing)}",
            fix=f"the header must hold {', '.join(REQUIRED)} (and optionally threshold, label)",
        )
    rows = []
    seen: dict[str, int] = {}
    for raw in reader:
        line = reader.line_num
        if None in raw:
            raise _fail(file, line, "(extra)", "has more cells than the header", "quote cells "
                        "that contain commas")  # fmt: skip
        row = _row(file, line, raw)
        if row.test_id in seen:
            raise _fail(file, line, "test_id", f"{row.test_id!r} repeats line {seen[row.test_id]}",
                        "give each row its own test id")  # fmt: skip
        seen[row.test_id] = line
        rows.append(row)
    if not rows:
        raise ConfigError(f"{file} holds no rows", fix="give a CSV with one executed pair a row")
    return tuple(rows)


def read_rows(path: str | Path) -> tuple[ImportedRow, ...]:
    """The rows of an import file (read again when the file changes)."""
    file = Path(path)
    try:
        stat = file.stat()
    except OSError as exc:
        raise ConfigError(f"cannot read the Meta-Fair import file {file}: {exc.strerror}",
                          fix="check the path") from exc  # fmt: skip
    return _read(str(file.resolve()), stat.st_size, stat.st_mtime_ns)


def row_case_data(row: ImportedRow) -> dict[str, Any]:
    """An imported row as case data of its relation: the recorded prompts are sent as they
    are (no instruction appended), MR8-MR10's suitability question included."""
    data: dict[str, Any] = {
        "test_id": row.test_id,
        "mr": row.mr,
        "dimension": row.dimension,
        "attributes": [row.attribute],
        "source": row.prompt_1,
        "follow_up": row.prompt_2,
        "instruction": "",
        "imported_line": row.line,
        # Read as a campaign's replies are today (a refusal is REFUSED); a log imported
        # before recorded no reading rules and replays to the verdicts it recorded.
        READING_KEY: READING_VERSION,
    }
    if 8 <= row.mr <= 10:
        data["check_prompt"] = row.prompt_2
    if row.threshold is not None:
        data["threshold"] = row.threshold
    if row.label is not None:
        data["label"] = row.label
    return data
