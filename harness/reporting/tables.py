"""What a report is made of: `Table`s that `ReportSection`s compute from a `ReportContext`.

A section is contributed by a `Family` (or by the core: `harness.reporting.report`); every output
format renders the same tables, so machines and people see the same numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, TypeVar

from harness.reporting.stats import load as load_statistics
from harness.runtime.process_call import ProcessCall, second_core_free
from harness.store.reader import EventReader
from harness.store.verdict_counts import VerdictCounts, case_key, count_verdicts, count_verdicts_in

# A log file this large has its verdicts counted in a second process (`count_verdicts_aside`);
# a smaller one counts them in well under a second, less than a process takes to start.
ASIDE_MIN_BYTES = 64 * 2**20

# The topic of the Note `harness.verifying.rejudge` appends before the first verdict of a judge: the
# report looks it up to learn whether the log holds any judge verdict at all.
REJUDGE_TOPIC = "rejudge"

T_co = TypeVar("T_co", covariant=True)


class PartAside(Protocol[T_co]):
    """A part of a section computed in a second process (`ReportContext.compute_aside`):
    `result` waits for its value (raising the child's exception, or a `HarnessError` if the
    child died), `close` stops it if it still runs. Close it always (in a ``finally``)."""

    def result(self) -> T_co: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Forest:
    """Plot hint: each row a point (``rate``) with its interval (``low``-``high``), labelled
    by the ``label`` columns; a row whose ``flag`` column says "yes" is marked."""

    rate: str
    low: str
    high: str
    label: tuple[str, ...] = ("model", "relation")
    flag: str | None = None


@dataclass(frozen=True)
class Heatmap:
    """Plot hint: a grid of ``value`` with the ``row`` columns down and the ``column``
    columns across, one grid per value of the ``facet`` columns; a cell whose ``flag``
    column says "yes" (the report-wide FDR flag) is marked."""

    row: tuple[str, ...]
    column: tuple[str, ...]
    value: str
    flag: str | None = None
    facet: tuple[str, ...] = ()


@dataclass(frozen=True)
class Network:
    """Plot hint: a graph whose edges are the rows (``source`` - ``target``, drawn by
    ``weight``), one graph per value of the ``facet`` columns; with ``flag``, only the rows
    whose ``flag`` column says "yes" (an edge its test supports) are drawn."""

    source: str
    target: str
    weight: str
    facet: tuple[str, ...] = ("model",)
    flag: str | None = None


@dataclass(frozen=True)
class Paired:
    """Plot hint: each row two values joined by a line (``first`` and ``second``, e.g. role
    and no-role), labelled by the ``label`` columns."""

    first: str
    second: str
    label: tuple[str, ...]
    flag: str | None = None


@dataclass(frozen=True)
class Bars:
    """Plot hint: one horizontal bar of ``value`` per row, labelled by the ``label`` columns."""

    value: str
    label: tuple[str, ...]


PlotHint = Forest | Heatmap | Network | Paired | Bars


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    # Which rows a report shows (None: all). A long table of tests (one per term) keeps its
    # most interesting rows; the hidden rows' tests still count in the report's correction.
    keep: list[bool] | None = None
    # How the HTML report may draw the table (besides showing it): text, JSON and CSV
    # reports ignore it.
    plot: tuple[PlotHint, ...] = ()
    # The independent unit its rows count, in one line ("a case, its repeats summarised by
    # their mean"): every output format shows it once, above the rows.
    unit: str = ""
    # The family of hypotheses its tests are corrected with when it has no "relation"
    # column (a row's relation names its family otherwise); "" for the table's name.
    claims: str = ""
    # What kind of claim its tests make within a relation ("refusal"), when not the
    # relation's bias claims: a separate family, "<relation> (<aspect>)", so that a
    # relation's bias flags do not depend on how many refusal tests ran beside them.
    aspect: str = ""
    # The label columns a row's rest shares (the rows it is tested against have the same
    # values in them), when they are not simply the labels before its subject (BiasLens's
    # attribute is tested within its model, variant AND type): () for those labels.
    rest_within: tuple[str, ...] = ()
    # What every row of a table of paired tests is measured against, in words ("the same
    # question without its role sentence"), when no ``control`` column names it; and the
    # column holding that control's rate ("" when the table has no ``control_rate``).
    control: str = ""
    control_rate_column: str = ""
    # Filled by the report's correction (`harness.reporting.report.apply_fdr`) for a table
    # of tests: per row, its unit and the family of hypotheses it was corrected with (name,
    # size, method, alpha, and whether Tarone's rule dropped it). JSON carries it per row.
    row_meta: list[dict[str, Any] | None] | None = None
    # A table that is one record, not rows (the campaign header): the JSON report writes
    # these typed fields in place of ``rows``; text, HTML and CSV show the rows.
    fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class VerdictRow:
    case_id: str
    relation: str
    model: str
    outcome: str
    reason: str
    evidence: dict[str, Any]
    source: str

    @property
    def case_key(self) -> str:
        """The case without its repeat: repeats of one case share it (see
        `harness.running.plan`)."""
        return case_key(self.case_id)


class ReportOptions(dict[str, Any]):
    """The report's options (``top``, ``mode``...), remembering which ones a section read,
    so an option no section of this log uses (``--mode`` without BiasLens) is an error,
    not silently ignored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)


@dataclass
class ReportContext:
    log: EventReader
    campaign: str
    options: dict[str, Any] = field(default_factory=ReportOptions)
    _counting: ProcessCall[VerdictCounts] | None = field(default=None, init=False, repr=False)

    def count_verdicts_aside(self) -> None:
        """Starts counting the verdicts (`verdict_counts`) in a second process when the log
        is a large SQLite file and a second core is free: the sections that do not read them
        run meanwhile (`harness.reporting.report.build_tables` builds the core's, which do,
        last)."""
        path = self.log.file
        if (
            self._counting is not None
            or "verdict_counts" in self.__dict__
            or path is None
            or not second_core_free()
        ):
            return
        try:
            if path.stat().st_size >= ASIDE_MIN_BYTES:
                self._counting = ProcessCall(
                    "the process counting the verdicts", count_verdicts_in, path, self.campaign
                )
        except OSError:  # no file there any more, or no process: the count is made here
            self._counting = None

    def can_compute_aside(self) -> bool:
        """Whether `compute_aside` may start a second process: the log is a SQLite file (the
        child opens it by name) and this process may use a second core."""
        return self.log.file is not None and second_core_free()

    def compute_aside(
        self, what: str, fn: Callable[..., T_co], *args: Any
    ) -> PartAside[T_co] | None:
        """``fn(*args)`` started in a second process while the section goes on with its own
        part, or None when none can be started (`can_compute_aside`, or the start failed):
        the section then computes that part itself. ``fn`` is a module-level function and its
        arguments and value pickle (the log is passed as ``self.log.file``, never open);
        ``what`` names the process in errors ("the process tallying BiasLens groups")."""
        if not self.can_compute_aside():
            return None
        try:
            return ProcessCall(what, fn, *args)
        except OSError:
            return None

    def close(self) -> None:
        """Stops a count still running in a second process (a report that failed)."""
        if self._counting is not None:
            self._counting.close()
            self._counting = None

    def verdicts(
        self, source: str = "relation", relations: Iterable[str] | None = None
    ) -> Iterator[VerdictRow]:
        """The latest verdict of each case from ``source``, streamed from the ``verdicts``
        view; only cases of ``relations`` when given."""
        sql = (
            "SELECT case_id, relation, model, outcome, reason, evidence, source FROM verdicts"
            " WHERE campaign = ? AND source = ?"
        )
        args: list[str] = [self.campaign, source]
        if relations is not None:
            names = sorted(relations)
            if not names:
                return
            sql += f" AND relation IN ({', '.join('?' * len(names))})"
            args += names
        cur = self.log.connection.execute(sql + " ORDER BY case_id, decided_at", args)
        previous: VerdictRow | None = None
        for case_id, relation, model, outcome, reason, evidence, src in cur:
            row = VerdictRow(
                case_id, relation, model, outcome, reason, json.loads(evidence or "{}"), src
            )
            if previous is not None and previous.case_id != row.case_id:
                yield previous
            previous = row
        if previous is not None:
            yield previous

    def verdicts_with_data(
        self, source: str = "relation", relations: Iterable[str] | None = None
    ) -> Iterator[tuple[VerdictRow, dict[str, Any]]]:
        """`verdicts` with each case's data (what its relation drew, `case_data`) beside
        it, read together as they stream: the verdicts and the cases' data come ordered by
        case id from the log and are merged, so a report never holds every case's data."""
        stream = self.verdicts(source, relations)
        data_rows = iter(self.log.connection.execute(_CASE_DATA_SQL + " ORDER BY case_id",
                                                     (self.campaign,)))  # fmt: skip
        try:
            exhausted = False
            for v in stream:
                data: dict[str, Any] | None = None
                # Every verdict's case was opened (the verdicts view joins its CaseOpened)
                # and both streams are in the log's own case id order: the data rows of
                # cases without a verdict here (other relations, unfinished cases) are
                # skipped on the way.
                while not exhausted:
                    row = next(data_rows, None)
                    if row is None:
                        exhausted = True
                    elif row[0] == v.case_id:
                        data = json.loads(row[1] or "{}")
                        break
                if data is None:
                    # Not met on the way (a log whose order the merge cannot follow): asked
                    # by case id, as a lookup would.
                    data = self._one_case_data(v.case_id)
                yield v, data
        finally:
            close = getattr(data_rows, "close", None)
            if close is not None:
                close()

    def _one_case_data(self, case_id: str) -> dict[str, Any]:
        row = self.log.connection.execute(
            _CASE_DATA_SQL + " AND case_id = ?", (self.campaign, case_id)
        ).fetchone()
        return json.loads(row[1] or "{}") if row is not None else {}

    def relation_verdicts_with_data_of(
        self, wanted: Callable[[str], bool]
    ) -> Iterable[tuple[VerdictRow, dict[str, Any]]]:
        """`relation_verdicts_of` with each case's data beside its verdict
        (`verdicts_with_data`), streamed from the log on every iteration."""
        verdicts = self.relation_verdicts
        if isinstance(verdicts, VerdictStream):
            return VerdictStream(self, wanted, with_data=True)
        data = self.case_data  # a subset held in memory (bench/power.py's resamples)
        return [(v, data.get(v.case_id, {})) for v in verdicts if wanted(v.relation)]

    @cached_property
    def relation_verdicts(self) -> Iterable[VerdictRow]:
        """Every relation verdict, read anew on each loop (none is kept between loops); a
        context over a subset held in memory (bench/power.py's resamples) sets a list here."""
        return VerdictStream(self, lambda _: True)

    def relation_verdicts_of(self, wanted: Callable[[str], bool]) -> Iterable[VerdictRow]:
        """The relation verdicts of the relations ``wanted`` accepts: a family's section reads
        its own cases only, and none at all (no query) when the campaign ran none of them."""
        verdicts = self.relation_verdicts
        if isinstance(verdicts, VerdictStream):
            return VerdictStream(self, wanted)
        return [v for v in verdicts if wanted(v.relation)]

    @cached_property
    def planned_relations(self) -> dict[str, dict[str, Any]]:
        """The relations the campaign was started with (`CampaignStarted`), by name, with the
        options each was given: a family's section that finds none of its own here has no
        case to read (every case of a campaign comes from its plan)."""
        row = self.log.connection.execute(
            "SELECT json_extract(payload, '$.config.relations') FROM events"
            " WHERE campaign = ? AND kind = 'CampaignStarted'",
            (self.campaign,),
        ).fetchone()
        planned: dict[str, dict[str, Any]] = {}
        for spec in json.loads(row[0]) if row and row[0] else []:
            planned.setdefault(spec["name"], spec.get("options") or {})  # the first, if twice
        return planned

    @cached_property
    def rejudged(self) -> bool:
        """Whether a judge re-judged any case of the campaign. Verdicts of a source other than
        "relation" come only from `harness.verifying.rejudge`, which appends its Note first; the
        Note is found through the (campaign, kind) index among a handful of Notes, where the
        sources themselves are read from every verdict of the log."""
        found = self.log.connection.execute(
            "SELECT 1 FROM events WHERE campaign = ? AND kind = 'Note'"
            " AND json_extract(payload, '$.topic') = ? LIMIT 1",
            (self.campaign, REJUDGE_TOPIC),
        ).fetchone()
        return found is not None

    @cached_property
    def verdict_counts(self) -> VerdictCounts:
        """Counts of the relation verdicts (`harness.store.verdict_counts`), read once per report
        (in a second process, if `count_verdicts_aside` started one)."""
        counting, self._counting = self._counting, None
        if counting is None:
            return count_verdicts(self.log.connection, self.campaign)
        if not counting.ready():
            load_statistics()  # every reader of the counts tests them: import meanwhile
        try:
            return counting.result()
        except Exception:
            # The child failed in any way (killed from outside, the file gone from its
            # name, a damaged log): counted here, so an error is raised as one process
            # raises it.
            return count_verdicts(self.log.connection, self.campaign)
        finally:
            counting.close()

    @cached_property
    def calibration_labels(self) -> dict[str, str]:
        """The human labels (case id -> BIASED or UNBIASED) of every ``JudgeCalibrated``
        event of the campaign (``harness judges calibrate``), a later label of a case over
        an earlier one; empty without calibration (an index lookup)."""
        labels: dict[str, str] = {}
        for stored in self.log.events(self.campaign, kinds=("JudgeCalibrated",)):
            labels.update(getattr(stored.event, "labels", {}))
        return labels

    @cached_property
    def case_data(self) -> dict[str, dict[str, Any]]:
        """Each case's data (what its relation drew: terms, groups, ...) by case id: every
        case's, held in memory; a report's sections read it as they stream instead
        (`verdicts_with_data`)."""
        cur = self.log.connection.execute(_CASE_DATA_SQL, (self.campaign,))
        return {case_id: json.loads(data or "{}") for case_id, data in cur}


_CASE_DATA_SQL = (
    "SELECT case_id, json_extract(payload, '$.case.data') FROM events"
    " WHERE campaign = ? AND kind = 'CaseOpened'"
)


class VerdictStream:
    """The latest relation verdict of each case of the relations ``wanted`` accepts, read
    from the log on every iteration: a section may loop twice, and a report of a million
    cases never holds a million verdicts (invariant 6)."""

    def __init__(
        self, ctx: ReportContext, wanted: Callable[[str], bool], *, with_data: bool = False
    ) -> None:
        self.ctx = ctx
        self.wanted = wanted
        # Each verdict with its case's data (`ReportContext.verdicts_with_data`).
        self.with_data = with_data

    def __iter__(self) -> Iterator[Any]:
        planned = self.ctx.planned_relations
        if planned and not any(self.wanted(r) for r in planned):
            # Every case of a campaign comes from its plan: none of these relations has a
            # verdict here, and a section not concerned waits for no count. (A campaign
            # whose start names no relation, as hand-made logs do, is read as before.)
            return iter(())
        present = self.ctx.verdict_counts.relations
        mine = [r for r in present if self.wanted(r)]
        # All relations: no filter in the query (the same rows, read without a test each).
        relations = None if len(mine) == len(present) else mine
        if self.with_data:
            return self.ctx.verdicts_with_data(relations=relations)
        return self.ctx.verdicts(relations=relations)


@dataclass(frozen=True)
class ReportSection:
    """One part of a report: ``build`` returns its tables (none when it has nothing to say).

    Sections run in (order, name) order.
    """

    name: str
    order: int
    build: Callable[[ReportContext], list[Table]]


def rounded(x: float) -> float | None:
    return None if not math.isfinite(x) else round(x, 4)
