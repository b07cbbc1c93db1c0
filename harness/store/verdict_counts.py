"""Verdict counts of one campaign, in one streamed pass over the log: what the core's report
sections (violation rates, the reasons of INVALID verdicts, answer formats) need.

A report of a million-case log must not hold a million verdicts (invariant 6: memory grows
with the calls in flight, not with the campaign). SQLite sorts the relation verdicts by
(model, case key, case) (its sorter spills to a temporary file, not to memory); the pass
takes each case's latest verdict and keeps counts only: per (model, relation), per model,
and per reason. Repeats of one case share a case key (`case_key`), so they arrive together
and each case's majority is decided as soon as its last repeat is read.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any

from harness.store.reader import EventReader

_REPEAT = re.compile(r"/r\d+@")
_CASE_KEY_SQLITE = "harness_case_key"  # `case_key`, registered on the SQLite connection
# The same on a PostgreSQL log (`harness.store.postgres_reader`): its own regexp_replace,
# which replaces the first match only, as `case_key` does.
_CASE_KEY_POSTGRES = "regexp_replace(case_id, '/r[0-9]+@', '@')"

# The relation verdicts of the campaign with the case key their repeats share, sorted so that
# a case's verdicts come together, latest last ("latest": the last by decision time, as
# `ReportContext.verdicts` reads it), and a case key's repeats come together. One sort: a
# window function picking the latest first would sort the verdicts twice. Only an INVALID
# verdict's reason is read: no other count uses it.
_VERDICTS = """
SELECT model, relation, outcome, CASE WHEN outcome = 'INVALID' THEN reason END,
       {key} AS unit, case_id
FROM verdicts WHERE campaign = ? AND source = 'relation'
ORDER BY model, unit, case_id, decided_at
"""


def case_key(case_id: str) -> str:
    """The case without its repeat: repeats of one case share it (see `harness.running.plan`)."""
    return _REPEAT.sub("@", case_id, count=1)


def case_key_sql(column: str) -> str:
    """`case_key` of ``column`` in SQLite's SQL, on a connection with the function
    registered. An id without "@" (an imported case's) is its own key: SQL answers it, and
    the Python function, a call back into the interpreter for each of a million rows, is
    asked only of the others (planned cases' ids hold "@")."""
    return f"CASE WHEN instr({column}, '@') = 0 THEN {column} ELSE {_CASE_KEY_SQLITE}({column}) END"


@dataclass
class OutcomeCounts:
    """Verdicts of one (model, relation) or one model: every verdict by outcome (repeats
    included), the distinct cases with a valid repeat, how many of them a majority of valid
    repeats found violated (a tie is not), how many tied, and the sum over cases of each
    case's share of violated repeats (the per-case mean: a tie counts one half)."""

    outcomes: Counter[str] = field(default_factory=Counter)
    cases: int = 0
    violated_cases: int = 0
    tied_cases: int = 0
    violated_share: float = 0.0

    def add_case(self, violated: int, held: int) -> None:
        if violated + held:
            self.cases += 1
            self.violated_cases += violated > held
            self.tied_cases += violated == held
            self.violated_share += violated / (violated + held)


@dataclass
class VerdictCounts:
    by_relation: dict[tuple[str, str], OutcomeCounts] = field(default_factory=dict)
    # Per model over all its relations: a case key counts once even if (which no importer
    # or planner does today) two relations shared it.
    by_model: dict[str, OutcomeCounts] = field(default_factory=dict)
    # (model, relation, the reason up to its first ":") -> INVALID verdicts
    invalid_reasons: Counter[tuple[str, str, str]] = field(default_factory=Counter)

    @property
    def relations(self) -> frozenset[str]:
        """The relations with at least one verdict of their own in the campaign."""
        return frozenset(relation for _, relation in self.by_relation)


def count_verdicts(conn: sqlite3.Connection, campaign: str) -> VerdictCounts:
    """The counts of the campaign's latest relation verdicts, read from the log."""
    if isinstance(conn, sqlite3.Connection):
        conn.create_function(_CASE_KEY_SQLITE, 1, case_key, deterministic=True)
        key = case_key_sql("case_id")
    else:
        key = _CASE_KEY_POSTGRES
    return _accumulate(_latest(conn.execute(_VERDICTS.format(key=key), (campaign,))))


def relation_outcomes(conn: Any, campaign: str) -> Counter[str]:
    """Every relation verdict of the campaign by outcome (repeats and re-decisions
    included), on a reader's connection of either store."""
    rows = conn.execute(
        "SELECT outcome, count(*) FROM verdicts WHERE campaign = ? AND source = 'relation'"
        " GROUP BY outcome",
        (campaign,),
    ).fetchall()
    return Counter(dict(rows))


def count_verdicts_in(path: Path, campaign: str) -> VerdictCounts:
    """`count_verdicts` over a reader of its own on the SQLite log ``path`` (what a second
    process runs: `harness.reporting.tables.ReportContext.count_verdicts_aside`)."""
    with EventReader(path) as log:
        return count_verdicts(log.connection, campaign)


def _latest(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """The last of each case's rows (rows of one case come together, latest last)."""
    previous = None
    for row in rows:
        if previous is not None and previous[5] != row[5]:
            yield previous
        previous = row
    if previous is not None:
        yield previous


def tally_verdicts(rows: Iterable[tuple[str, str, str, str, str]]) -> VerdictCounts:
    """The counts of verdicts given as (model, relation, outcome, reason, case key) rows in
    any order (a subset held in memory, e.g. a resample of bench/power.py)."""
    return _accumulate(sorted(rows, key=itemgetter(0, 4)))


def _accumulate(rows: Iterable[tuple[Any, ...]]) -> VerdictCounts:
    """Counts from rows sorted by (model, case key): one case's repeats at a time."""
    counts = VerdictCounts()
    for (model, _), repeats in groupby(rows, key=itemgetter(0, 4)):
        per_relation: dict[str, list[int]] = {}
        both = [0, 0]  # this case's valid repeats over all relations: violated, held
        for _, relation, outcome, reason, *_ in repeats:
            mine = counts.by_relation.get((model, relation))
            if mine is None:
                mine = counts.by_relation[(model, relation)] = OutcomeCounts()
            mine.outcomes[outcome] += 1
            tally = per_relation.setdefault(relation, [0, 0])
            if outcome == "VIOLATED":
                tally[0] += 1
                both[0] += 1
            elif outcome == "HELD":
                tally[1] += 1
                both[1] += 1
            elif outcome == "INVALID":
                counts.invalid_reasons[(model, relation, str(reason).split(":")[0])] += 1
        for relation, (violated, held) in per_relation.items():
            counts.by_relation[(model, relation)].add_case(violated, held)
        counts.by_model.setdefault(model, OutcomeCounts()).add_case(*both)
    for (model, _), mine in counts.by_relation.items():
        counts.by_model[model].outcomes.update(mine.outcomes)
    return counts
