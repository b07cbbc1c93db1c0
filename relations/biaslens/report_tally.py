"""What the BiasLens report needs, accumulated one trial group at a time.

`tally.trial_groups` hands over the trials of one (model, attribute) at a time, both variants
and every run; each group is aligned into questions (`tally.align`), tallied, and dropped.
What is kept is counts (cells, consistency, Table 5's Choice counts, the role vs no-role
pairs per attribute and type, tested by the report at the end: a process that tallies
groups needs no statistics library) and the rows a reader asked for (every question the two
modes disagree on, every answer strict mode could not read), so a report of the six-model
release holds one group's answers, not a million.

The tables come out as they did when every trial was held: cells in the order of (model,
variant, attribute) groups, rows of the listings likewise, each group's questions in the
order of its base run.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.family_api import EventReader
from relations.biaslens.comparisons import PairedCounts, paired_counts
from relations.biaslens.oracles import Vote
from relations.biaslens.questionset import QType
from relations.biaslens.table5 import ChoiceKey, choice_by_attribute, combine
from relations.biaslens.tally import (
    AlignedQuestion,
    Cell,
    Consistency,
    Trial,
    align,
    cells,
    consistency,
    disagreements,
    trials_at,
)

ANSWER_CHARS = 160
GroupKey = tuple[str, str, str]  # (model, variant, attribute)


@dataclass
class ReportTally:
    """Counts and listed rows of the BiasLens report in oracle ``mode``."""

    mode: str
    row_counts: dict[tuple[str, str, str, int], int]
    cells_by_group: dict[GroupKey, dict[tuple[str, str, str, QType], Cell]] = field(
        default_factory=dict
    )
    consistency: dict[tuple[str, str, QType], Consistency] = field(default_factory=dict)
    choice: dict[ChoiceKey, tuple[frozenset[int], Consistency]] = field(default_factory=dict)
    every_run: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    paired: list[PairedCounts] = field(default_factory=list)  # tested by the report
    disagreement_rows: dict[GroupKey, list[list[Any]]] = field(default_factory=dict)
    strict_invalid_rows: dict[GroupKey, list[list[Any]]] = field(default_factory=dict)

    def merge(self, later: ReportTally) -> None:
        """Adds ``later``'s tally, of groups that all sort after this one's (the share of a
        second process): the result is the tally of every group, added in order."""
        self.cells_by_group.update(later.cells_by_group)
        for cons_key, c in later.consistency.items():
            self.consistency.setdefault(cons_key, Consistency()).add(c)
        self.choice.update(later.choice)
        for run_key, runs in later.every_run.items():
            self.every_run.setdefault(run_key, set()).update(runs)
        self.paired.extend(later.paired)
        self.disagreement_rows.update(later.disagreement_rows)
        self.strict_invalid_rows.update(later.strict_invalid_rows)

    def add(self, trials: list[Trial]) -> None:
        """Tally one (model, attribute) group: both variants, every run."""
        for trial in trials:
            self.every_run.setdefault((trial.model, trial.variant), set()).add(trial.run)
        questions = align(trials, self.row_counts)
        for cell_key, cell in cells(questions).items():
            self.cells_by_group.setdefault(cell_key[:3], {})[cell_key] = cell
        for key, c in consistency(questions, self.mode).items():
            self.consistency.setdefault(key, Consistency()).add(c)
        self.choice.update(choice_by_attribute(trials))
        self.paired.extend(paired_counts(questions, self.mode))
        for q in disagreements(questions):
            rows = self.disagreement_rows.setdefault((q.model, q.variant, q.attribute), [])
            rows.append(_disagreement_row(q))
        for q in questions:
            for t in q.trials:
                if t is not None and t.strict is Vote.INVALID:
                    rows = self.strict_invalid_rows.setdefault(
                        (q.model, q.variant, q.attribute), []
                    )
                    rows.append(_strict_invalid_row(t))

    @property
    def by_cell(self) -> dict[tuple[str, str, str, QType], Cell]:
        """Every cell, groups in (model, variant, attribute) order."""
        return {
            k: c for g in sorted(self.cells_by_group) for k, c in self.cells_by_group[g].items()
        }

    def choice_consistency(self) -> dict[tuple[str, str], Consistency]:
        """Table 5's Choice columns per (model, variant) (`table5.combine`)."""
        return combine(self.choice, self.every_run)

    def disagreements(self) -> list[list[Any]]:
        return _in_group_order(self.disagreement_rows)

    def strict_invalid(self) -> list[list[Any]]:
        return _in_group_order(self.strict_invalid_rows)


def tally_groups(
    groups: Iterable[list[Trial]], mode: str, row_counts: dict[tuple[str, str, str, int], int]
) -> ReportTally:
    tally = ReportTally(mode, row_counts)
    for trials in groups:
        tally.add(trials)
        # One group's answers at a time: a name still bound to this group while the next
        # one is read would hold two.
        del trials
    return tally


def tally_groups_in(
    path: Path,
    mode: str,
    row_counts: dict[tuple[str, str, str, int], int],
    groups: list[array[int]],
) -> ReportTally:
    """The tally of the groups whose cases are at ``groups`` (`tally.group_positions`), in
    that order, read over a reader of its own on the SQLite log ``path`` (what a second
    process runs for the BiasLens report)."""
    with EventReader(path) as log:
        return tally_groups((trials_at(log.connection, g) for g in groups), mode, row_counts)


def _in_group_order(rows: dict[GroupKey, list[list[Any]]]) -> list[list[Any]]:
    return [row for key in sorted(rows) for row in rows[key]]


def _answers(q: AlignedQuestion) -> str:
    return " | ".join(
        "(missing)" if t is None else (t.answer or "")[:ANSWER_CHARS].replace("\n", " ")
        for t in q.trials
    )


def _disagreement_row(q: AlignedQuestion) -> list[Any]:
    return [
        q.model,
        q.variant,
        q.attribute,
        q.qtype.value,
        q.role,
        q.question,
        q.verdict("released").value,
        q.verdict("strict").value,
        _answers(q),
    ]


def _strict_invalid_row(t: Trial) -> list[Any]:
    answer = "(no reply)" if t.answer is None else t.answer[:ANSWER_CHARS]
    return [t.model, t.variant, t.attribute, t.qtype.value, t.run, t.question, answer]
