"""The findings block: what a report's tables say, in sentences, before the tables.

A reader of a report wants first to know which group a model treats how, by how much and
how sure that is; then which cells were too small to decide; then whether the run itself
can be trusted. `read_findings` reads those from the report's tables, after the report's
correction for multiple comparisons (`harness.reporting.report.corrected`, every row), and
`findings_table` turns them into the report's first table ("findings"), which every format
shows: text and HTML as sentences, JSON as typed rows (its ``findings`` key), CSV as rows.

Nothing here knows a family: any table that keeps the contract below gets its flagged rows
stated, so a later producer of tables (a comparison of two logs, a new family) gets the
same block by building such tables, correcting them (`harness.reporting.report.corrected`)
and calling `read_findings` and `findings_table` (`harness.reporting.report.with_findings`
does all three).

The contract a table of tests keeps (every core and family table does):

- it ends with `harness.reporting.stats.TEST_COLUMNS` (``p``, ``p_fdr``, ``flagged``),
  corrected by `harness.reporting.report.corrected`, which fills ``row_meta`` with each
  row's hypothesis family (name and size) and unit; ``flagged`` is "yes" for a row that
  survives the correction;
- its leading string columns name the row (the labels; the first column holding a number
  ends them): the context first (``model``, ``relation``, and any label its rows are tested
  within), then the subject (the group, term, attribute...: the first label that is not
  ``model``, ``relation``, ``control``, ``test`` or a direction), then any further labels
  of the subject. A label column in `DIRECTION_COLUMNS` (``gender``, ``direction``) is the
  direction of the claim: the subject is attributed *to* it ("engineer -> male"); placed
  before the subject it is also context. A ``control`` label column names the control the
  row is measured against (else, with a ``rest_rate``, the row is measured against the
  other subjects of its context); a comparison of two models (`harness.reporting.compare`)
  names them in ``base`` (what the row is measured against, on the same cases) and ``new``
  (the model the claim is about, in place of ``model``);
- its effect is a pair of columns with an interval, the first of `EFFECTS` it has
  (``excess`` with ``excess_low``/``excess_high`` against ``control_rate``; ``diff`` with
  ``diff_low``/``diff_high`` against ``rest_rate``), beside its ``rate``; a table without
  one is stated from its counts;
- its size is the first of `SIZE_COLUMNS` it has (``pairs``, ``cases``...), in the table's
  ``unit``; ``p_min`` (optional) is the smallest p the row's test can give.

The findings read every row of every table, those a table does not show (``keep``)
included. The inconclusive cells are the rows not flagged whose 95 % interval still reaches
an effect of `DECIDE_AT` (10 points) or more, or whose test can never reach significance
(Tarone). Those whose estimate points toward the claim (effect > 0) are stated: the
`INCONCLUSIVE_SHOWN` nearest to a decision (smallest p) one by one, the others named per
table; the rest are counted. For each, the minimum detectable effect at its size and the
cases that would decide it (the smallest effect its interval allows, at least
`DECIDE_AT`) come from the planner's power model (`harness.reporting.power`: a two-sided
test of two proportions at alpha / family size, 80 % power, the row's rest or control rate
as the baseline; the size of the rest is the sum of the other rows of the table with the
same context, as its test counted them).
A paired row (an excess over a control) is modelled as two independent samples of its
pairs, which is conservative when test and control are correlated.

The health of the run comes from the core's tables and the log: INVALID and refusal rates
per model (``violation_rates``), the judges' agreement and calibration (any table with a
``kappa`` column), and what a stop left unrun (`harness.reporting.campaign_status`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness.reporting.campaign_status import campaign_status
from harness.reporting.power import (
    DEFAULT_POWER,
    cases_in_closed_form,
    cases_to_decide,
    minimum_detectable_effect,
)
from harness.reporting.stats import ALPHA, TEST_COLUMNS
from harness.reporting.tables import ReportContext, Table

FINDINGS_TABLE = "findings"
DIRECTION_COLUMNS = ("gender", "direction")
SIZE_COLUMNS = (
    "pairs",
    "cases",
    "asked",
    "at_risk",
    "valid_pairs",
    "distinct_cases",
    "questions",
    "answers",
    "instantiations",
    "n",
)
NOT_SUBJECT = ("model", "new", "relation", "control", "base", "test")
AGAINST_COLUMNS = ("control", "base")  # what a row is measured against; not its context
DECIDE_AT = 0.10  # an effect of 10 rate points: what an inconclusive cell cannot rule out
INCONCLUSIVE_SHOWN = 12  # the inconclusive cells stated; the others are counted
# The ``flagged`` value of a row below its rest only because other groups are above it
# (`mark_pushed_below`): not a finding of its own.
BELOW_THE_REST = "below the rest"
EXAMPLES = 3  # example cases per finding


@dataclass(frozen=True)
class Effect:
    """The columns of one kind of effect: its value, interval and what it is measured
    against (the rate of the control or of the rest)."""

    value: str
    low: str
    high: str
    against: str
    also_against: str = ""  # the baseline's column in tables that name it otherwise


EFFECTS = (
    Effect("excess", "excess_low", "excess_high", "control_rate"),
    Effect("diff", "diff_low", "diff_high", "rest_rate", also_against="base_rate"),
    Effect("difference", "diff_low", "diff_high", ""),  # a paired difference (BiasLens)
)


@dataclass(frozen=True)
class Cell:
    """One row of a table of tests, read through the contract (module doc)."""

    table: str
    model: str
    claim: str  # the relation, else the table's family of claims
    family: str  # the hypothesis family it was corrected with
    family_size: int
    subject: tuple[tuple[str, str], ...]  # the other labels: (column, value)
    towards: str  # the direction label's value ("male"), "" when the table has none
    measure: str  # the effect's column ("diff", "excess"), "" when it has none
    effect: float | None
    low: float | None
    high: float | None
    rate: float | None
    control: str  # what the row is measured against, in words
    control_rate: float | None
    p: float | None
    p_min: float | None
    p_fdr: float | None
    flagged: bool
    n: int | None
    unit: str
    counts: tuple[tuple[str, float], ...] = ()  # a table without an effect: its counts
    context: tuple[str, ...] = ()  # the labels before the subject: what its rest shares
    peers: tuple[str, ...] = ()  # the rows of its rest share these labels (its own row too)
    paired: bool = False  # measured on the same cases as what it is against (a comparison)
    # A row flagged below its rest only because other groups of its context are above it
    # (`mark_pushed_below`): those groups' labels; its ``flagged`` is then False.
    pushed_by: tuple[str, ...] = ()

    def subject_text(self) -> str:
        if not self.subject:
            return "(all)"
        (col, value), *rest = self.subject
        more = ", ".join(f"{c} {v}" for c, v in rest)
        return f"{col} {value}" + (f" ({more})" if more else "")

    def labels_text(self) -> str:
        """The subject's values only ("nurse (profession)"), for a line whose header names
        the columns."""
        if not self.subject:
            return "(all)"
        (_, value), *rest = self.subject
        return value + (f" ({', '.join(v for _, v in rest)})" if rest else "")

    def what(self) -> str:
        """Model, claim and subject with its direction: "m · rel: term nurse -> female"."""
        arrow = f" -> {self.towards}" if self.towards else ""
        return f"{self.model} · {self.claim}: {self.subject_text()}{arrow}"

    def effect_text(self) -> str:
        if self.measure and self.effect is not None:
            interval = (
                f" [{_signed(self.low)}, {_signed(self.high)}]"
                if self.low is not None and self.high is not None
                else ""
            )
            rate = f"rate {_num(self.rate)} vs {_num(self.control_rate)} for " if (
                self.rate is not None and self.control_rate is not None
            ) else "against "  # fmt: skip
            return f"{rate}{self.control}; {self.measure} {_signed(self.effect)}{interval} (95%)"
        return ", ".join(f"{c} {_num(v)}" for c, v in self.counts)


@dataclass(frozen=True)
class Finding:
    """A flagged row: one claim that survived the correction for multiple comparisons."""

    cell: Cell
    noise_floor: str = ""  # the relation's matched control, when it ran one
    examples: tuple[str, ...] = ()  # case ids of example conversations

    def sentence(self) -> str:
        c = self.cell
        higher = "" if c.effect is None else ("higher" if c.effect > 0 else "lower") + ": "
        parts = [
            f"{c.what()}: {higher}{c.effect_text()}",
            f"p_fdr {_p(c.p_fdr)} (family {c.family}, {c.family_size} tests, Benjamini-Hochberg)",
            f"n = {c.n if c.n is not None else '?'}, unit: {c.unit or 'a row'}",
        ]
        if self.noise_floor:
            parts.append(f"noise floor: {self.noise_floor}")
        if self.examples:
            parts.append("e.g. cases " + ", ".join(self.examples))
        return "; ".join(parts)


@dataclass(frozen=True)
class Inconclusive:
    """A row not flagged that its size cannot decide: what it could detect, what would."""

    cell: Cell
    reason: str
    mde: float  # the smallest effect its test detects at its size (inf: none)
    decide_at: float  # the effect the cases needed are computed for
    cases_needed: int | None  # in the row's unit, for its subject; None: past the model's range

    def sentence(self) -> str:
        c = self.cell
        mde = "none" if math.isinf(self.mde) else f"{self.mde:.2f}"
        needed = (
            f"about {self.cases_needed} would detect {self.decide_at:.2f}"
            if self.cases_needed is not None
            else f"no practical size detects {self.decide_at:.2f}"
        )
        return (
            f"{c.what()}: {c.effect_text()}; p_fdr {_p(c.p_fdr)}; {self.reason}; "
            f"n = {c.n if c.n is not None else '?'}: detectable at this size: {mde}; {needed}"
        )


@dataclass(frozen=True)
class MoreInconclusive:
    """The other undecided cells of one table, model and claim whose estimate points toward
    the claim (effect > 0): named, with the range of their sizes and of the cases that
    would decide them (`harness.reporting.power.cases_in_closed_form`)."""

    model: str
    claim: str
    table: str
    column: str  # what the subjects are ("term")
    subjects: tuple[str, ...]  # "secretary -> female"
    n_low: int
    n_high: int
    cases_low: int | None
    cases_high: int | None

    def sentence(self) -> str:
        sizes = f"n {self.n_low}" if self.n_low == self.n_high else f"n {self.n_low}-{self.n_high}"
        if self.cases_low is None or self.cases_high is None:
            cases = "no practical size decides some of them"
        elif self.cases_low == self.cases_high:
            cases = f"about {self.cases_low} cases each would decide them"
        else:
            cases = f"about {self.cases_low}-{self.cases_high} cases each would decide them"
        return (
            f"{self.model} · {self.claim}: {len(self.subjects)} more {self.column}s point the "
            f"same way, undecided ({sizes}; {cases}): {', '.join(self.subjects)}"
        )


@dataclass(frozen=True)
class Undetected:
    """A family of claims in which nothing was flagged, and what it could have detected."""

    family: str
    tests: int
    median_n: int
    mde: float

    def sentence(self) -> str:
        mde = "no effect" if math.isinf(self.mde) else f"an effect of {self.mde:.2f} or more"
        return (
            f"{self.family}: nothing flagged among {self.tests} tests; at their median size "
            f"(n = {self.median_n}) {mde} would have been detected with "
            f"{DEFAULT_POWER:.0%} power"
        )


@dataclass(frozen=True)
class Health:
    """One line on the health of the run: its topic and what it says."""

    topic: str  # "status", "invalid", "refused", "judges"
    text: str


@dataclass(frozen=True)
class Findings:
    """The report's findings: flagged claims, inconclusive cells (the most telling, with
    how many more), families where nothing was flagged, and the run's health."""

    flagged: tuple[Finding, ...]
    inconclusive: tuple[Inconclusive, ...]
    inconclusive_total: int
    more: tuple[MoreInconclusive, ...]
    undetected: tuple[Undetected, ...]
    health: tuple[Health, ...]
    tests: int = 0
    families: int = 0
    # Rows below their rest only because other groups are above it (`mark_pushed_below`).
    below: tuple[Cell, ...] = ()

    def headline(self) -> str:
        if not self.tests:
            return "No tests in this report: nothing could be flagged."
        if not self.flagged:
            families = f"{self.families} famil{'y' if self.families == 1 else 'ies'}"
            return (
                f"Nothing flagged: no claim among {self.tests} tests in {families} survived the "
                f"correction for multiple comparisons (alpha {ALPHA}). What could have been "
                "detected is said below."
            )
        families = f"{self.families} famil{'y' if self.families == 1 else 'ies'}"
        return (
            f"{len(self.flagged)} flagged of {self.tests} tests in {families} "
            f"(Benjamini-Hochberg within each family, alpha {ALPHA}):"
        )


def _num(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(x)) if x == int(x) and abs(x) >= 1 else f"{x:.3f}"


def _signed(x: float | None) -> str:
    return "?" if x is None else f"{x:+.3f}"


def _p(x: float | None) -> str:
    if x is None:
        return "?"
    return f"{x:.2g}" if x > 0 else "<1e-06"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def is_test_table(table: Table) -> bool:
    """Whether ``table`` takes part in the correction (ends with the test columns)."""
    return tuple(table.columns[-len(TEST_COLUMNS) :]) == TEST_COLUMNS


def label_count(table: Table) -> int:
    """How many leading columns label a row: those before the first holding a number."""
    for i, _ in enumerate(table.columns):
        if any(_number(row[i]) is not None for row in table.rows):
            return i
    return len(table.columns)


def read_cells(table: Table) -> Iterator[Cell]:
    """Every row of a corrected table of tests, read through the contract."""
    return (cell for _, cell in _indexed_cells(table))


def _indexed_cells(table: Table) -> Iterator[tuple[int, Cell]]:
    """`read_cells` with each row's index in the table."""
    cols = table.columns
    labels = label_count(table)
    at = {c: i for i, c in enumerate(cols)}
    effect = next((e for e in EFFECTS if e.value in at and e.low in at and e.high in at), None)
    size = next((c for c in SIZE_COLUMNS if c in at), None)
    direction = next((c for c in DIRECTION_COLUMNS if c in cols[:labels]), None)
    subject_cols = [c for c in cols[:labels] if c not in NOT_SUBJECT and c != direction]
    first = cols.index(subject_cols[0]) if subject_cols else labels
    context_cols = [c for c in cols[:first] if c not in AGAINST_COLUMNS]
    # What the row is tested within, said by the table when not the labels before its
    # subject: its rest shares those labels, and what it is tested on is the last label
    # outside them (MR8's attribute, tested within its model, after its dimension).
    tested = subject_cols
    if table.rest_within:
        tested = [c for c in subject_cols if c not in table.rest_within][-1:]
        context_cols = [c for c in cols[:labels] if c in table.rest_within or c == "model"]
    rest_words = _rest_words(cols[:labels], tested, table.rest_within or None)
    for i, row in enumerate(table.rows):
        meta = (table.row_meta[i] if table.row_meta is not None else None) or {}
        fam = meta.get("hypothesis_family") or {}
        if meta.get("correction") == "not run":
            continue

        def get(col: str, row: list[Any] = row) -> Any:
            return row[at[col]] if col in at else None

        # The labels it is tested on first, then those it is tested within (a table that
        # says, `Table.rest_within`): "gender (role, Choice)" for BiasLens's attribute.
        ordered = [*tested, *(c for c in subject_cols if c not in tested)]
        subject = tuple((c, str(get(c))) for c in ordered if get(c) not in (None, ""))
        subject = tuple(s for s in subject if s[1] != "(all)")
        context = tuple(str(get(c)) for c in context_cols)
        # The rows its rest is made of: those of its context, or, when the table does not
        # say, of every label but its last (the communities of one language and concern).
        peers = context if table.rest_within else (*context, *(f"{k}={v}" for k, v in subject[:-1]))
        relation = get("relation")
        claim = str(relation) if relation else (table.claims or table.name)
        if table.aspect:
            claim = f"{claim} ({table.aspect})"
        if "control" in at and get("control"):
            control = f"its control ({get('control')})"
        elif "base" in at and get("base"):
            control = f"{get('base')} on the same cases"
        elif table.control:
            control = table.control
        elif effect is not None and effect.against == "rest_rate":
            control = rest_words
        else:
            control = "its control"
        control_rate = _baseline_rate(effect, get)
        if control_rate is None and table.control_rate_column:
            control_rate = _number(get(table.control_rate_column))
        counts = tuple(
            (c, v)
            for c in cols[labels:]
            if c not in ("p_min", *TEST_COLUMNS) and (v := _number(get(c))) is not None
        )
        n = _number(get(size)) if size else None
        yield (
            i,
            Cell(
                table=table.name,
                model=str(get("model") or get("new") or ""),
                claim=claim,
                family=str(fam.get("name") or claim),
                family_size=int(fam.get("size") or 0),
                subject=subject,
                towards=str(get(direction) or "") if direction else "",
                measure=effect.value if effect else "",
                effect=_number(get(effect.value)) if effect else None,
                low=_number(get(effect.low)) if effect else None,
                high=_number(get(effect.high)) if effect else None,
                rate=_number(get("rate")),
                control=control,
                control_rate=control_rate,
                p=_number(get("p")),
                p_min=_number(get("p_min")),
                p_fdr=_number(get("p_fdr")),
                flagged=get("flagged") == "yes",
                n=None if n is None else int(n),
                unit=str(meta.get("unit") or table.unit),
                counts=() if effect else counts,
                context=context,
                peers=peers,
                paired="base" in at,
                pushed_by=tuple((meta.get("below_the_rest") or {}).get("pushed_by") or ()),
            ),
        )


def mark_pushed_below(table: Table) -> Table:
    """``table`` with each flagged row that is below its rest only because other groups of
    its context are above it marked `BELOW_THE_REST` instead of "yes".

    A two-sided group-vs-rest test compares a group with the pool of the others: when one
    group is far above, every other group is below that pool (LangBiTe's other religions
    beside a strongly biased one), and with enough cases each is flagged. Such a flag is
    not a finding of its own. For a flagged row below its rest (diff < 0), the groups of
    the same model and labels (all but its last: the group) flagged above theirs are
    taken out of its rest, and the row is tested again against what remains (the pooled
    two-sided exact test, `harness.reporting.stats.compare_to_rest`, its counts read back
    from rate x size): unless it is still significantly below them (p below alpha and its
    rate below theirs), or when no other group remains, the row is marked, its ``row_meta``
    naming the groups that push it and the p without them. A row below the others too
    keeps its flag."""
    from harness.reporting.stats import compare_to_rest

    if not is_test_table(table) or "rest_rate" not in table.columns:
        return table
    contexts: dict[tuple[str, ...], list[tuple[int, Cell]]] = {}
    for i, c in _indexed_cells(table):
        if (
            c.measure == "diff"
            and not c.paired
            and c.subject
            and c.n
            and _group_rate(c) is not None
        ):
            # Its peers: the rows its rest is made of, e.g. the communities of one
            # language and concern.
            contexts.setdefault((c.model, *c.peers), []).append((i, c))
    marks: dict[int, dict[str, Any]] = {}
    for members in contexts.values():
        above = [c for _, c in members if c.flagged and (c.effect or 0.0) > 0]
        if not above:
            continue
        counts = {
            id(c): (round((_group_rate(c) or 0.0) * (c.n or 0)), c.n or 0) for _, c in members
        }
        total_k = sum(k for k, _ in counts.values())
        total_n = sum(n for _, n in counts.values())
        up_k = sum(counts[id(c)][0] for c in above)
        up_n = sum(counts[id(c)][1] for c in above)
        for i, c in members:
            if not c.flagged or (c.effect or 0.0) >= 0:
                continue
            k, n = counts[id(c)]
            rest_k, rest_n = total_k - k - up_k, total_n - n - up_n
            p = compare_to_rest(k, n, rest_k, rest_n).p if rest_n > 0 else math.nan
            if rest_n > 0 and p < ALPHA and k / n < rest_k / rest_n:
                continue  # below the others too: a finding of its own
            marks[i] = {
                "pushed_by": [u.subject[-1][1] for u in above],
                "p_without": None if math.isnan(p) else round(p, 6),
            }
    if not marks:
        return table
    rows = [[*row[:-1], BELOW_THE_REST] if i in marks else row for i, row in
            enumerate(table.rows)]  # fmt: skip
    old_meta = table.row_meta or [None] * len(table.rows)
    meta = [
        ({**(m or {}), "below_the_rest": marks[i]} if i in marks else m)
        for i, m in enumerate(old_meta)
    ]
    return dataclasses.replace(table, rows=rows, row_meta=meta)


def _group_rate(c: Cell) -> float | None:
    """A group-vs-rest row's own rate: its ``rate`` column, else its rest's plus its diff
    (tables that name the rate otherwise, such as ``fail_rate``)."""
    if c.rate is not None:
        return c.rate
    if c.control_rate is None or c.effect is None:
        return None
    return min(1.0, max(0.0, c.control_rate + c.effect))


def _baseline_rate(effect: Effect | None, get: Callable[[str], Any]) -> float | None:
    """The rate a row's effect is measured from: its control's or rest's, or the base
    model's in a comparison."""
    if effect is None:
        return None
    for col in (effect.against, effect.also_against):
        if col and (value := _number(get(col))) is not None:
            return value
    return None


def _rest_words(
    labels: Sequence[str], subject_cols: Sequence[str], within: Sequence[str] | None = None
) -> str:
    """'the other terms of the same model and gender': the rest a row is tested against,
    within the label columns before its subject (the contract: context first), or within
    ``within`` (and its model) when its table says (`Table.rest_within`)."""
    what = subject_cols[0] if subject_cols else "row"
    first = labels.index(what) if what in labels else len(labels)
    if within is None:
        within = [c for c in labels[:first] if c not in AGAINST_COLUMNS]
    else:
        within = [c for c in labels if c == "model" or c in within]
    plural = what if what.endswith("s") else f"{what[:-1]}ies" if what.endswith("y") else f"{what}s"
    return f"the other {plural} of the same {' and '.join(within) or 'table'}"


def _rest_size(cell: Cell, cells: Sequence[Cell]) -> int:
    """The size of a row's rest: the other rows of its table with the same context (the
    labels before its subject: model, relation, gender...)."""
    if cell.measure == "excess" or cell.paired:
        return cell.n or 0  # paired: the control (or the base model) ran on the same cases
    rest = sum(
        c.n or 0
        for c in cells
        if c is not cell and c.table == cell.table and c.context == cell.context
    )
    return max(rest, cell.n or 0)


def _baseline(cell: Cell) -> float:
    base = cell.control_rate if cell.control_rate is not None else 0.1
    base = min(max(base, 0.0), 1.0)
    # A fall below the baseline is a rise above it, counted from the other outcome.
    return 1.0 - base if (cell.effect or 0.0) < 0 else base


def inconclusive_reason(cell: Cell) -> str | None:
    """Why a row not flagged is undecided, or None when its interval rules out an effect
    of `DECIDE_AT` (or it is flagged, or untested)."""
    if cell.flagged or cell.p is None or cell.pushed_by:
        return None
    if cell.p_min is not None and cell.p_min > ALPHA:
        return "its test can never reach significance at this size (Tarone)"
    if cell.low is None or cell.high is None:
        return None
    if max(abs(cell.low), abs(cell.high)) >= DECIDE_AT:
        return f"its interval does not rule out an effect of {DECIDE_AT:.2f}"
    return None


def _decide_at(cell: Cell, baseline: float) -> float:
    """The effect a cell's cases needed are computed for: the smallest its interval still
    allows toward its sign, at least `DECIDE_AT` (the point estimate of a small cell is too
    noisy to plan on)."""
    near = 0.0
    if cell.effect is not None and cell.low is not None and cell.high is not None:
        near = cell.low if cell.effect > 0 else -cell.high
    return min(max(near, DECIDE_AT), 1.0 - baseline - 1e-9)


def undecided(cell: Cell, cells: Sequence[Cell], reason: str) -> Inconclusive:
    """The minimum detectable effect of ``cell`` at its size and the cases that would
    decide it (`harness.reporting.power`)."""
    n = cell.n or 0
    rest = _rest_size(cell, cells)
    baseline = _baseline(cell)
    size = max(1, cell.family_size)
    mde = minimum_detectable_effect(n, rest, size, baseline=baseline).mde
    decide_at = _decide_at(cell, baseline)
    needed = cases_to_decide(decide_at, n, rest, size, baseline=baseline) if decide_at > 0 else None
    return Inconclusive(cell, reason, mde, decide_at, needed)


def read_findings(tables: Sequence[Table], ctx: ReportContext | None = None) -> Findings:
    """The findings of corrected ``tables`` (module doc); with ``ctx``, example cases of
    each finding and the run's status are read from the log too."""
    cells = [c for t in tables if is_test_table(t) for c in read_cells(t)]
    floors = noise_floors(tables)
    flagged = [
        Finding(c, "" if c.measure == "excess" else floors.get((c.model, c.claim), ""))
        for c in cells
        if c.flagged
    ]
    if ctx is not None and flagged:
        flagged = find_examples(flagged, ctx)
    pending = [(c, r) for c in cells if (r := inconclusive_reason(c)) is not None]
    # The nearest to a decision first: the smallest p, then the largest effect. Those that
    # point toward the claim (effect > 0, or no effect to say) are stated; the others, whose
    # interval merely reaches an effect, are counted.
    pending.sort(key=lambda cr: (cr[0].p if cr[0].p is not None else 1.0, -(cr[0].effect or 0)))
    toward = [(c, r) for c, r in pending if c.effect is None or c.effect > 0]
    inconclusive = tuple(undecided(c, cells, r) for c, r in toward[:INCONCLUSIVE_SHOWN])
    families: dict[str, list[Cell]] = {}
    for c in cells:
        if c.p is not None:
            families.setdefault(c.family, []).append(c)
    undetected = []
    for name, members in sorted(families.items()):
        if any(c.flagged for c in members):
            continue
        sizes = sorted(c.n or 0 for c in members)
        median = int(statistics.median_low(sizes)) if sizes else 0
        typical = next(c for c in members if (c.n or 0) == median)
        mde = minimum_detectable_effect(
            median,
            _rest_size(typical, cells),
            max(1, typical.family_size),
            baseline=min(max(typical.control_rate or 0.1, 0.0), 1.0),
        ).mde
        undetected.append(Undetected(name, len(members), median, mde))
    return Findings(
        flagged=tuple(flagged),
        inconclusive=inconclusive,
        inconclusive_total=len(pending),
        more=tuple(more_inconclusive([c for c, _ in toward[INCONCLUSIVE_SHOWN:]], cells)),
        undetected=tuple(undetected),
        health=tuple(run_health(tables, ctx)),
        tests=sum(1 for c in cells if c.p is not None),
        families=len(families),
        below=tuple(c for c in cells if c.pushed_by),
    )


def more_inconclusive(rest: Sequence[Cell], cells: Sequence[Cell]) -> list[MoreInconclusive]:
    """The undecided cells beyond those stated one by one, named per table, model and
    claim, with the range of cases that would decide them (closed form: one figure per
    cell costs microseconds)."""
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for c in rest:
        groups.setdefault((c.table, c.model, c.claim), []).append(c)
    out = []
    for (table, model, claim), members in groups.items():
        needed: list[int | None] = []
        for c in members:
            baseline = _baseline(c)
            needed.append(
                cases_in_closed_form(
                    _decide_at(c, baseline), c.n or 0, _rest_size(c, cells),
                    max(1, c.family_size), baseline=baseline,
                )
            )  # fmt: skip
        known = [n for n in needed if n is not None]
        sizes = [c.n or 0 for c in members]
        subjects = tuple(
            c.labels_text() + (f" -> {c.towards}" if c.towards else "") for c in members
        )
        column = members[0].subject[0][0] if members[0].subject else "cell"
        out.append(
            MoreInconclusive(
                model, claim, table, column, subjects, min(sizes), max(sizes),
                min(known) if known else None,
                max(known) if known and len(known) == len(needed) else None,
            )
        )  # fmt: skip
    return out


def noise_floors(tables: Iterable[Table]) -> dict[tuple[str, str], str]:
    """(model, relation) -> its matched control's rate, from the ``control_excess`` table's
    pooled rows: the noise floor a relation's findings sit above."""
    out: dict[tuple[str, str], str] = {}
    for t in tables:
        if t.name != "control_excess":
            continue
        at = {c: i for i, c in enumerate(t.columns)}
        for row in t.rows:
            if row[at["group"]] != "(all)" or _number(row[at["control_rate"]]) is None:
                continue
            out[(str(row[at["model"]]), str(row[at["relation"]]))] = (
                f"its control ({row[at['control']]}) violated at "
                f"{float(row[at['control_rate']]):.3f} over {row[at['pairs']]} pairs"
            )
    return out


def with_claims(tables: Sequence[Table]) -> list[Table]:
    """``tables`` with each test row's ``row_meta`` (after the correction) saying what its
    claim is measured against and by how much, so the JSON report carries them per row,
    under ``claim`` (a row's own columns may be named ``control`` or ``effect``):
    ``control``: ``against`` (in words: its matched control, or the rest it is tested
    against), ``rate`` (that control's or rest's rate, None when the table has none) and
    ``matched`` (the relation's matched control with its rate, the noise floor of the
    claim, or that the report has none for it); ``effect``: ``measure`` (its column),
    ``value``, ``low``, ``high`` (its 95 % interval), None for a table stating counts only."""
    floors = noise_floors(tables)
    out: list[Table] = []
    for t in tables:
        if not is_test_table(t) or t.row_meta is None:
            out.append(t)
            continue
        meta = list(t.row_meta)
        for i, c in _indexed_cells(t):
            relation = c.claim.split(" (")[0]
            matched = c.control if c.measure == "excess" else floors.get((c.model, relation))
            effect = (
                {"measure": c.measure, "value": c.effect, "low": c.low, "high": c.high,
                 "level": 1 - ALPHA}
                if c.measure
                else None
            )  # fmt: skip
            meta[i] = {
                **(meta[i] or {}),
                "claim": {
                    "control": {
                        "against": c.control,
                        "rate": c.control_rate,
                        "matched": matched or NO_MATCHED_CONTROL.format(relation=relation),
                    },
                    "effect": effect,
                },
            }
        out.append(dataclasses.replace(t, row_meta=meta))
    return out


# A claim whose relation ran no matched control in this report (``control = false``, or a
# family of claims no control is made for): said, not left blank.
NO_MATCHED_CONTROL = (
    "none in this report for {relation}: no matched control ran for it, so its rate is not "
    "separated from the model's nondeterminism"
)


def _strings(value: Any, into: set[str]) -> set[str]:
    if isinstance(value, str):
        into.add(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            into.add(str(k))
            _strings(v, into)
    elif isinstance(value, list):
        for v in value:
            _strings(v, into)
    return into


OUTCOME_OF_ASPECT = {"refusal": "REFUSED", "refused": "REFUSED", "invalid": "INVALID"}


def find_examples(flagged: Sequence[Finding], ctx: ReportContext) -> list[Finding]:
    """Each finding with up to `EXAMPLES` case ids of its model (and relation, when it names
    one) whose evidence or data carry every label of its row, the violations first: one
    streamed pass over the verdicts, stopped when every finding has its examples."""
    relations = {r for _, r in ctx.verdict_counts.by_relation}
    wanted: list[tuple[set[str], str, str | None, str]] = []
    for f in flagged:
        c = f.cell
        labels = {v for _, v in c.subject} | ({c.towards} if c.towards else set())
        claim = c.claim.split(" (")[0]
        aspect = c.claim[len(claim) + 2 : -1] if c.claim != claim else ""
        wanted.append(
            (labels, c.model, claim if claim in relations else None,
             OUTCOME_OF_ASPECT.get(aspect, "VIOLATED"))
        )  # fmt: skip
    best: list[list[str]] = [[] for _ in flagged]
    other: list[list[str]] = [[] for _ in flagged]
    for v, data in ctx.verdicts_with_data():
        if all(len(b) >= EXAMPLES for b in best):
            break
        carried: set[str] | None = None
        for i, (labels, model, relation, outcome) in enumerate(wanted):
            if v.model != model or (relation is not None and v.relation != relation):
                continue
            if len(best[i]) >= EXAMPLES:
                continue
            if carried is None:
                carried = _strings(data, _strings(v.evidence, set()))
            if not labels <= carried:
                continue
            target = best[i] if v.outcome == outcome else other[i]
            if len(target) < EXAMPLES:
                target.append(v.case_id)
    return [
        Finding(f.cell, f.noise_floor, tuple((best[i] + other[i])[:EXAMPLES]))
        for i, f in enumerate(flagged)
    ]


def run_health(tables: Sequence[Table], ctx: ReportContext | None) -> list[Health]:
    """The run's health: its status (what a stop left unrun), INVALID and refusal rates per
    model, and the judges' reliability."""
    out: list[Health] = []
    by_name = {t.name: t for t in tables}
    rates = by_name.get("violation_rates")
    if ctx is not None:
        out.extend(_status(ctx, rates))
    if rates is not None:
        out.extend(_outcome_rates(rates))
    for t in tables:
        if "kappa" in t.columns and "kappa_low" in t.columns:
            out.extend(_kappas(t))
    return out


def _status(ctx: ReportContext, rates: Table | None) -> list[Health]:
    status = campaign_status(ctx.log, ctx.campaign)
    line = f"campaign {status.status}: {status.cases} cases closed"
    if status.reason:
        line += f" ({status.reason})"
    out = [Health("status", line)]
    if status.status == "completed" or status.started is None:
        return out
    config = status.started.config
    repeats = int(config.get("repeats") or 1)
    models = max(1, len(config.get("models") or []))
    done: dict[str, int] = {}
    if rates is not None:
        at = {c: i for i, c in enumerate(rates.columns)}
        for row in rates.rows:
            if row[at["relation"]] != "(all)":
                done[row[at["relation"]]] = done.get(row[at["relation"]], 0) + int(row[at["cases"]])
    for spec in config.get("relations") or []:
        name, cases = spec.get("name"), spec.get("cases")
        if name is None or not isinstance(cases, int):
            continue
        planned = cases * repeats * models
        left = planned - done.get(name, 0)
        if left > 0:
            out.append(
                Health("unrun", f"{name}: {left} of {planned} verdicts not yet run (resume)")
            )
    return out


def _outcome_rates(rates: Table) -> list[Health]:
    at = {c: i for i, c in enumerate(rates.columns)}
    per_model: dict[str, list[int]] = {}
    worst: dict[str, dict[str, tuple[float, str]]] = {}
    for row in rates.rows:
        if row[at["relation"]] == "(all)":
            continue
        model, cases = str(row[at["model"]]), int(row[at["cases"]])
        c = per_model.setdefault(model, [0, 0, 0])
        c[0] += cases
        for j, col in ((1, "invalid"), (2, "refused")):
            c[j] += int(row[at[col]])
            share = int(row[at[col]]) / cases if cases else 0.0
            if share > worst.setdefault(model, {}).get(col, (0.0, ""))[0]:
                worst[model][col] = (share, str(row[at["relation"]]))
    out = []
    for model, (cases, invalid, refused) in sorted(per_model.items()):
        for topic, count in (("invalid", invalid), ("refused", refused)):
            word = "INVALID" if topic == "invalid" else "REFUSED"
            share = count / cases if cases else 0.0
            text = f"{model}: {word} {count} of {cases} verdicts ({share:.1%})"
            top = worst.get(model, {}).get(topic)
            if count and top is not None:
                text += f", most in {top[1]} ({top[0]:.1%})"
            out.append(Health(topic, text))
    return out


def _kappas(table: Table) -> list[Health]:
    labels = label_count(table)
    at = {c: i for i, c in enumerate(table.columns)}
    out = []
    for row in table.rows:
        kappa, low, high = (_number(row[at[c]]) for c in ("kappa", "kappa_low", "kappa_high"))
        if kappa is None:
            continue
        name = " · ".join(str(v) for v in row[:labels] if v not in (None, ""))
        interval = f" [{_num(low)}, {_num(high)}]" if low is not None and high is not None else ""
        out.append(Health("judges", f"{table.name}: {name}: kappa {kappa:.2f}{interval}"))
    return out


FINDINGS_COLUMNS = [
    "kind",
    "text",
    "model",
    "claim",
    "subject",
    "subject_column",
    "labels",
    "towards",
    "measure",
    "rate",
    "control_rate",
    "effect",
    "effect_low",
    "effect_high",
    "control",
    "adjusted_p",
    "n",
    "unit",
    "family",
    "family_size",
    "mde",
    "decide_at",
    "cases_needed",
    "examples",
    "source_table",
]
CELL_COLUMNS = FINDINGS_COLUMNS[2:20]


def _round(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 4)


def _cell_values(c: Cell) -> list[Any]:
    return [
        c.model,
        c.claim,
        c.subject_text(),
        c.subject[0][0] if c.subject else "",
        c.labels_text(),
        c.towards,
        c.measure,
        _round(c.rate),
        _round(c.control_rate),
        _round(c.effect),
        _round(c.low),
        _round(c.high),
        c.control,
        c.p_fdr,
        c.n,
        c.unit,
        c.family,
        c.family_size,
    ]


def _row(kind: str, text: str, **values: Any) -> list[Any]:
    return [kind, text, *(values.get(c) for c in FINDINGS_COLUMNS[2:])]


def below_sentence(c: Cell) -> str:
    """A row below its rest only because other groups are above it, in words."""
    pushers = ", ".join(c.pushed_by)
    return (
        f"{c.what()}: below the rest (diff {_signed(c.effect)}, p_fdr {_p(c.p_fdr)}) only "
        f"because {pushers} {'is' if len(c.pushed_by) == 1 else 'are'} above it: without "
        f"{'it' if len(c.pushed_by) == 1 else 'them'} in the rest it is not significantly "
        "below the others "
        f"(n = {c.n if c.n is not None else '?'})"
    )


def findings_table(findings: Findings, whole: str = "harness report --all") -> Table:
    """The findings as the report's first table: one row per sentence, ``kind`` saying which
    part of the block it belongs to (headline, flagged, inconclusive, more_inconclusive,
    undetected, health:<topic>), ``text`` the sentence and the other columns its values.
    ``whole``: the command that prints these tables whole, named where rows are left out."""
    rows: list[list[Any]] = [_row("headline", findings.headline())]

    def cell(c: Cell) -> dict[str, Any]:
        return dict(zip(CELL_COLUMNS, _cell_values(c), strict=True))

    for f in findings.flagged:
        rows.append(
            _row("flagged", f.sentence(), **cell(f.cell), examples=list(f.examples),
                 source_table=f.cell.table)
        )  # fmt: skip
    for item in findings.inconclusive:
        rows.append(
            _row("inconclusive", item.sentence(), **cell(item.cell), mde=_round(item.mde),
                 decide_at=_round(item.decide_at), cases_needed=item.cases_needed,
                 examples=[], source_table=item.cell.table)
        )  # fmt: skip
    for c in findings.below:
        rows.append(
            _row("below_the_rest", below_sentence(c), **cell(c), examples=[],
                 source_table=c.table)
        )  # fmt: skip
    for m in findings.more:
        rows.append(
            _row("more_inconclusive", m.sentence(), model=m.model, claim=m.claim,
                 subject=", ".join(m.subjects), n=len(m.subjects), source_table=m.table,
                 cases_needed=m.cases_high)
        )  # fmt: skip
    named = len(findings.inconclusive) + sum(len(m.subjects) for m in findings.more)
    other = findings.inconclusive_total - named
    if other > 0:
        rows.append(
            _row("other_inconclusive", f"{other} more cells are undecided with an estimate "
                 f"away from the claim (their interval still reaches {DECIDE_AT:.2f}): the "
                 f"tables below; {whole} shows every row", n=other)
        )  # fmt: skip
    for u in findings.undetected:
        rows.append(
            _row("undetected", u.sentence(), family=u.family, family_size=u.tests,
                 n=u.median_n, mde=_round(u.mde))
        )  # fmt: skip
    for h in findings.health:
        rows.append(_row(f"health:{h.topic}", h.text))
    return Table(
        FINDINGS_TABLE,
        "Findings",
        FINDINGS_COLUMNS,
        rows,
        note="flagged: rows that survive the correction for multiple comparisons (each with "
        "its effect, 95% interval, what it is measured against, adjusted p, size and unit); "
        f"inconclusive: rows not flagged whose interval reaches {DECIDE_AT:.2f} or whose "
        "test can never be significant, with the smallest effect detectable at their size "
        "(mde) and the cases of their subject, in their unit, that would detect the "
        f"smallest effect their interval allows (decide_at, at least {DECIDE_AT:.2f}) with "
        f"{DEFAULT_POWER:.0%} power; below_the_rest: rows flagged below their rest only "
        "because other groups of their context are above it (not findings of their own; "
        "their tables say 'below the rest'); health: the run's status, INVALID and refusal rates, "
        "judge reliability",
        unit="a sentence (its values in the columns)",
    )


def _wrapped(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
    ) or [indent]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _interval(r: dict[str, Any]) -> str:
    if r["effect"] is None:
        return ""
    low, high = r["effect_low"], r["effect_high"]
    ci = f" [{low:+.2f}, {high:+.2f}]" if low is not None and high is not None else ""
    return f"{r['effect']:+.2f}{ci}"


def _short_case(case_id: str, model: str) -> str:
    return case_id.removesuffix(f"@{model}")


def _aligned(rows: list[list[str]], width: int, indent: str = "  ") -> list[str]:
    """Rows of cells in columns, the first clipped so that a line fits ``width``."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    rest = sum(widths[1:]) + 2 * (len(widths) - 1) + len(indent)
    widths[0] = max(12, min(widths[0], width - rest))
    out = []
    for r in rows:
        cells = [_clip(r[0], widths[0]).ljust(widths[0])]
        cells += [c.rjust(w) if i < len(r) - 1 else c for i, (c, w) in
                  enumerate(zip(r[1:], widths[1:], strict=True), 1)]  # fmt: skip
        out.append(_clip((indent + "  ".join(cells)).rstrip(), width))
    return out


def findings_lines(table: Table, width: int = 100) -> list[str]:
    """The findings table as plain text of at most ``width`` columns, the block the text
    report starts with: flagged rows grouped by what they are measured against, one line
    each (subject -> direction, effect with its 95% interval, adjusted p, n, an example case;
    the JSON report's ``text`` has the full sentence and every example), then the
    inconclusive cells (with their minimum detectable effect and the cases that decide
    them), the families where nothing was flagged, and the health of the run."""
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    out = [table.title]
    for r in rows:
        if r["kind"] == "headline":
            out += _wrapped(str(r["text"]), width)

    def groups(kind: str) -> list[tuple[tuple[Any, ...], list[dict[str, Any]]]]:
        found: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in rows:
            if r["kind"] == kind:
                key = (r["model"], r["claim"], r["source_table"], r["measure"], r["control"],
                       r["family"], r["family_size"], r["unit"])  # fmt: skip
                found.setdefault(key, []).append(r)
        return list(found.items())

    for key, members in groups("flagged"):
        model, claim, _, measure, control, family, size, unit = key
        what = f"{measure} vs {control}" if measure else "counts"
        subject = _subject_column(members)
        arrow = " -> direction" if members[0]["towards"] else ""
        # The family is named only where it is not the claim itself, and the unit by its head
        # (its explanation is in the table's note and the JSON report): two lines a group,
        # so that the undecided cells follow on the first screen.
        fam = "" if family == claim else f"family {family}, "
        out += _wrapped(f"{model} · {claim}: {subject}{arrow}, {what} ({fam}{size} tests; "
                        f"unit: {unit_head(str(unit or 'a row'))})", width, "", "* ")  # fmt: skip
        cells = [[_subject(r), _interval(r) or _clip(_counts(r["text"]), 44), _p(r["adjusted_p"]),
                  str(r["n"]), _short_case(r["examples"][0], model) if r["examples"] else ""]
                 for r in members]  # fmt: skip
        head = ["", f"{measure} [95% CI]" if measure else "counts", "p_fdr", "n", "e.g. case"]
        out += _aligned([head, *cells], width)
    pending = groups("inconclusive")
    if pending:
        out += _wrapped("Inconclusive: not flagged, too few cases to decide (mde: the effect "
                        "detectable now; then the cases needed to detect the smallest effect "
                        "the interval allows)", width)  # fmt: skip
        for key, members in pending:
            model, claim, _, measure, control, *_ = key
            subject = _subject_column(members)
            arrow = " -> direction" if members[0]["towards"] else ""
            out += _wrapped(f"{model} · {claim}: {subject}{arrow}, {measure or 'counts'} vs "
                            f"{control}", width, "", "? ")  # fmt: skip
            cells = [[_subject(r), _interval(r) or _clip(_counts(r["text"]), 44), str(r["n"]),
                      "none" if r["mde"] is None else format(r["mde"], ".2f"),
                      f"{r['cases_needed'] or '>1e6'} for {r['decide_at']:.2f}"]
                     for r in members]  # fmt: skip
            head = ["", f"{measure} [95% CI]" if measure else "counts", "n", "mde", "cases needed"]
            out += _aligned([head, *cells], width)
    for r in rows:
        if r["kind"] == "below_the_rest":
            out += _wrapped(str(r["text"]), width, "", "v ")
    for r in rows:
        if r["kind"] in ("more_inconclusive", "other_inconclusive"):
            out += _wrapped(str(r["text"]), width, "", "? ")
    for r in rows:
        if r["kind"] == "undetected":
            out += _wrapped(str(r["text"]), width, "", "- ")
    health = [r for r in rows if str(r["kind"]).startswith("health:")]
    if health:
        out.append("Health of the run")
        for r in health:
            out += _wrapped(str(r["text"]), width, "", "- ")
    return out


def unit_head(unit: str) -> str:
    """A unit's head, without its explanation: the text before the first separator (" (",
    ": ", "; ", ", ") outside parentheses that has at least two words before it ("a case
    (its repeats by majority)" -> "a case"; "a (case, source term) pair, its..." -> "a (case,
    source term) pair")."""
    depth = 0
    for i, ch in enumerate(unit):
        if ch == "(":
            if depth == 0 and i > 0 and unit[i - 1] == " " and len(unit[: i - 1].split()) >= 2:
                return unit[: i - 1]
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif (
            depth == 0 and ch in ":;," and unit[i + 1 : i + 2] == " " and len(unit[:i].split()) >= 2
        ):
            return unit[:i]
    return unit


def _subject_column(members: Sequence[dict[str, Any]]) -> str:
    """What a group's rows name ("term"), or "(all)" for rows of a whole relation."""
    return next((str(r["subject_column"]) for r in members if r["subject_column"]), "(all)")


def _subject(r: dict[str, Any]) -> str:
    """'nurse (profession) -> female', the subject clipped so that its direction shows."""
    arrow = f" -> {r['towards']}" if r["towards"] else ""
    return _clip(str(r["labels"]), 40 - len(arrow)) + arrow


def _counts(text: str) -> str:
    """The counts of a row without an effect, from its sentence ("pairs 12, dropped 3")."""
    head = text.split("; ")[0]
    return head.split(": ")[-1]
