"""Reading a released BiasLens answers folder: files, rows, and each row's case data.

Both the importer and the ``biaslens.answer`` relation (``source = "released"``) derive case
data here, so ``harness replay --verify`` re-derives an imported case from the folder exactly
as the import wrote it. Case index = position of the row among all rows of all files, in
(model, variant, attribute, run) order, counting rows that are skipped.
"""

from __future__ import annotations

import bisect
import csv
import functools
import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.family_api import READING_KEY, READING_VERSION, ConfigError
from relations.biaslens.questionset import QType

VARIANT_DIRS = {"role": "role", "without_role": "no_role"}
_ANSWER_FILE = re.compile(r"^(?P<attr>[A-Za-z_]+)_answers_(?P<run>\d+)\.csv$")


@dataclass(frozen=True)
class AnswerFile:
    model: str
    variant: str
    attribute: str
    run: int
    path: Path


def find_answer_files(src: Path, models: list[str] | None = None) -> list[AnswerFile]:
    answers = src / "answers"
    if not answers.is_dir():
        raise ConfigError(
            f"{src} has no answers/ folder",
            fix="give the BiasLens folder holding answers/role/<model>/<attr>_answers_01.csv",
        )
    found = []
    for variant_dir, variant in VARIANT_DIRS.items():
        base = answers / variant_dir
        if not base.is_dir():
            continue
        for model_dir in sorted(p for p in base.iterdir() if p.is_dir()):
            if models and model_dir.name not in models:
                continue
            for path in sorted(model_dir.glob("*_answers_*.csv")):
                m = _ANSWER_FILE.match(path.name)
                if m:
                    found.append(
                        AnswerFile(model_dir.name, variant, m["attr"].lower(), int(m["run"]), path)
                    )
    if not found:
        wanted = f" for models {models}" if models else ""
        raise ConfigError(
            f"no <attribute>_answers_<run>.csv files under {answers}{wanted}",
            fix="check the folder layout answers/role/<model>/<attr>_answers_01.csv",
        )
    return found


def _answer_cells(path: Path) -> tuple[list[str], list[list[str]], bool]:
    """The header, the non-blank rows as lists of cells (as pandas skips blank lines), and
    whether undecodable bytes had to be dropped (the released scripts read with
    errors="ignore"). One file at a time: an import never holds a whole folder."""
    raw = path.read_bytes()
    try:
        text, lossy = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        text, lossy = raw.decode("utf-8", errors="ignore"), True
    del raw
    reader = csv.reader(text.splitlines(keepends=True))
    header = next(reader, [])
    return header, [cells for cells in reader if cells], lossy


def read_answer_rows(path: Path) -> tuple[list[dict[str, str]], bool]:
    """Rows as dicts by header name (the first of duplicated names), blank lines skipped,
    and whether undecodable bytes had to be dropped."""
    header, cells_list, lossy = _answer_cells(path)
    columns = [(i, name) for i, name in enumerate(header) if name and name not in header[:i]]
    rows = [
        {name: cells[i] if i < len(cells) else "" for i, name in columns} for cells in cells_list
    ]
    return rows, lossy


def count_case_rows(path: Path) -> int:
    """How many rows of ``path`` become cases (a known question type: `row_case_data`), read
    without building the rows, so an import can plan its cases before writing the first."""
    header, cells_list, _ = _answer_cells(path)
    if "Question Type" not in header:
        return 0
    col = header.index("Question Type")
    return sum(
        _parse_type(cells[col] if col < len(cells) else "") is not None for cells in cells_list
    )


@functools.lru_cache(maxsize=8_192)  # a question's runs are read one file after another
def question_key(role: str, qtype: str, question: str) -> str:
    return hashlib.sha1(f"{role}\x1f{qtype}\x1f{question}".encode()).hexdigest()[:12]


def row_case_data(f: AnswerFile, row_no: int, row: dict[str, str]) -> dict[str, Any] | None:
    """The case data of one released row; None when its question type is unknown."""
    return case_data(
        f,
        row_no,
        row.get("Role", ""),
        row.get("Question Type", ""),
        row.get("Question", ""),
        row,
    )


_JUDGE_COLUMNS = ("LLM 1", "LLM 2", "LLM 3")


def case_data(
    f: AnswerFile,
    row_no: int,
    role: str,
    type_text: str,
    question: str,
    judges: Mapping[str, str],
) -> dict[str, Any] | None:
    """`row_case_data` of a row's cells: ``judges`` gives the judge columns and "final"
    (read for a Why question only)."""
    qtype = _parse_type(type_text)
    if qtype is None:
        return None
    data: dict[str, Any] = {
        "question_id": f"{f.attribute}:{question_key(role, qtype.value, question)}",
        "attribute": f.attribute,
        "role": role,
        "type": qtype.value,
        "variant": f.variant,
        "question": question,
        "run": f.run,
        "row": row_no,
        "imported": True,
        # Read as a campaign's answers are today (a refusal is REFUSED); a log imported
        # before recorded no reading rules and replays to the verdicts it recorded.
        READING_KEY: READING_VERSION,
    }
    if qtype is QType.WHY:
        data["released_judges"] = [judges.get(name, "") for name in _JUDGE_COLUMNS]
        data["released_final"] = judges.get("final", "")
    return data


@functools.lru_cache(maxsize=64)  # a file's few spellings of its types
def _parse_type(text: str) -> QType | None:
    try:
        return QType.parse(text)
    except ValueError:
        return None


class _Cells(Mapping[str, str]):
    """A row's cells by column name (the first column of a name; "" past the row's end or
    for a column the header lacks), as `read_answer_rows`' dicts give them."""

    def __init__(self, index: dict[str, int], cells: list[str]) -> None:
        self._index = index
        self._cells = cells

    def __getitem__(self, name: str) -> str:
        i = self._index.get(name)
        if i is None:
            raise KeyError(name)
        return self._cells[i] if i < len(self._cells) else ""

    def get(self, name: str, default: Any = None) -> Any:
        i = self._index.get(name)
        if i is None:
            return default
        return self._cells[i] if i < len(self._cells) else ""

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def answer_case_rows(
    f: AnswerFile,
) -> tuple[int, Iterator[tuple[int, dict[str, Any] | None, str]], bool]:
    """The rows of ``f`` (counting blank-line-free rows as `read_answer_rows` does), and
    for each its number, `row_case_data` and its answer, without a dict per row; and
    whether undecodable bytes had to be dropped."""
    header, cells_list, lossy = _answer_cells(f.path)
    index = {name: i for i, name in reversed(list(enumerate(header))) if name}
    missing = len(header) + max((len(c) for c in cells_list), default=0)  # past every row
    role, qtype, question, answer = (
        index.get(name, missing) for name in ("Role", "Question Type", "Question", "Answer")
    )

    def rows() -> Iterator[tuple[int, dict[str, Any] | None, str]]:
        for row_no, cells in enumerate(cells_list):
            n = len(cells)
            data = case_data(
                f,
                row_no,
                cells[role] if role < n else "",
                cells[qtype] if qtype < n else "",
                cells[question] if question < n else "",
                _Cells(index, cells),
            )
            yield row_no, data, cells[answer] if answer < n else ""

    return len(cells_list), rows(), lossy


@dataclass(frozen=True)
class ReleasedFolder:
    files: tuple[AnswerFile, ...]
    rows: tuple[tuple[dict[str, str], ...], ...]
    lossy: tuple[bool, ...]
    offsets: tuple[int, ...]  # global index of each file's first row

    @property
    def total_rows(self) -> int:
        return self.offsets[-1] + len(self.rows[-1]) if self.rows else 0

    def locate(self, index: int) -> tuple[AnswerFile, int, dict[str, str]]:
        if not 0 <= index < self.total_rows:
            raise IndexError(f"case index {index} is outside the folder's {self.total_rows} rows")
        i = bisect.bisect_right(self.offsets, index) - 1
        row_no = index - self.offsets[i]
        return self.files[i], row_no, self.rows[i][row_no]


@functools.lru_cache(maxsize=4)
def load_folder(src: str, models: tuple[str, ...] | None = None) -> ReleasedFolder:
    files = find_answer_files(Path(src), list(models) if models else None)
    rows, lossy, offsets, total = [], [], [], 0
    for f in files:
        r, lost = read_answer_rows(f.path)
        rows.append(tuple(r))
        lossy.append(lost)
        offsets.append(total)
        total += len(r)
    return ReleasedFolder(tuple(files), tuple(rows), tuple(lossy), tuple(offsets))
