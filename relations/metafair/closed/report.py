"""Meta-Fair MR11-MR14 report sections, re-read from the recorded replies in one oracle mode.

``harness report DB --mode strict|guardme`` reads every MR11-14 test again from its two
recorded replies (nothing is called), as BiasLens re-reads its answers; without ``--mode``
each test is read in the mode its campaign ran with. Tables, per model x MR x dimension x
attribute: the biased rate with its Wilson interval and the attribute tested against the
rest of its dimension (the tests join the report-wide Benjamini-Hochberg correction), the
other mode's count beside; the INVALID reasons; the score gaps (MR11) and rhos (MR14).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from harness.family_api import (
    COMPARISON_COLUMNS,
    ConfigError,
    ReportContext,
    ReportSection,
    Table,
    majority_per_case,
    reading_version,
    rounded,
    wilson_interval,
)
from relations.metafair.closed.oracles import BIASED, INVALID, MODES, Reading, read_pair
from relations.metafair.closed.relations import reply_text
from relations.metafair.crossing import (
    REPEAT_MEAN_COLUMNS,
    base_prompt,
    compare_within_bases,
    repeat_means,
)

CLOSED = {f"metafair.mr{mr}": mr for mr in (11, 12, 13, 14)}
RATE_COLUMNS = [
    *("model", "relation", "dimension", "attribute", "tests", "invalid", "valid", "biased"),
    *("rate", "ci95_low", "ci95_high", "other_valid", "other_biased", "other_rate"),
    *("other_ci95_low", "other_ci95_high", *REPEAT_MEAN_COLUMNS, *COMPARISON_COLUMNS),
]
METRIC_COLUMNS = [
    *("model", "relation", "measure", "dimension", "attribute", "tests"),
    *("mean", "min", "q25", "median", "q75", "max"),
]
_REPEAT = re.compile(r"/r\d+@")  # a case id without its repeat (see harness.running.plan)


@dataclass(frozen=True)
class ClosedCase:
    """One recorded MR11-14 test, read in both modes."""

    case_id: str
    model: str
    relation: str
    dimension: str
    attribute: str
    run_mode: str
    readings: dict[str, Reading]
    base: str = ""  # the base prompt (relations/metafair/crossing.py)

    @property
    def case_key(self) -> str:
        return _REPEAT.sub("@", self.case_id, count=1)


def _requested_mode(ctx: ReportContext) -> str | None:
    mode = ctx.options.get("mode")
    if mode is not None and mode not in MODES:
        raise ConfigError(
            f"Meta-Fair MR11-MR14 have no oracle mode {mode!r}",
            field="--mode",
            fix="use --mode strict (a careful parse) or --mode guardme (the GUARD-ME rules)",
        )
    return mode


def load_closed_cases(ctx: ReportContext) -> list[ClosedCase]:
    """Every MR11-14 case of the campaign with its replies read in both modes."""
    if not any(name in CLOSED for name in ctx.planned_relations):
        return []  # the campaign planned no MR11-14 case: no scan of its cases for one
    conn = ctx.log.connection
    marks = ",".join("?" * len(CLOSED))
    opened = conn.execute(
        "SELECT case_id, json_extract(payload, '$.case') FROM events WHERE campaign = ?"
        f" AND kind = 'CaseOpened' AND json_extract(payload, '$.case.relation') IN ({marks})",
        (ctx.campaign, *CLOSED),
    ).fetchall()
    if not opened:
        return []
    replies: dict[tuple[str, str], str] = {}
    for case_id, thread, reply in conn.execute(
        "SELECT case_id, thread, reply FROM turns WHERE campaign = ? AND role = 'subject'"
        " AND reply IS NOT NULL ORDER BY case_id, turn, attempt",
        (ctx.campaign,),
    ):
        replies[(case_id, thread)] = reply
    run_modes = {
        v.case_id: str(v.evidence.get("mode", "strict"))
        for v in ctx.relation_verdicts_of(CLOSED.__contains__)
    }
    cases = []
    for case_id, case_json in opened:
        case = json.loads(case_json)
        data, mr = case["data"], CLOSED[case["relation"]]
        source = replies.get((case_id, "source"))
        follow_up = replies.get((case_id, "follow_up"))
        readings: dict[str, Reading] = {}
        for mode in MODES:
            if source is None or follow_up is None:
                readings[mode] = Reading(INVALID, "no recorded reply")
                continue
            readings[mode] = read_pair(
                mode,
                mr,
                reply_text(mr, data["source_prompt"], source),
                reply_text(mr, data["follow_up_prompt"], follow_up),
                threshold=float(data["threshold"]),
                prompt=data["source_prompt"],
                readers=reading_version(data),
            )
        cases.append(
            ClosedCase(
                case_id,
                case["model"],
                case["relation"],
                str(data["dimension"]),
                str(data["attribute"]),
                run_modes.get(case_id, "strict"),
                readings,
                base_prompt(mr, data["source_prompt"], data["follow_up_prompt"]),
            )
        )
    return cases


def closed_tables(ctx: ReportContext) -> list[Table]:
    cases = load_closed_cases(ctx)
    if not cases:
        return []  # --mode is left unread: on a log without MR11-14 it is an error
    requested = _requested_mode(ctx)

    def mode_of(c: ClosedCase) -> str:
        return requested or c.run_mode

    return [_rates(cases, mode_of, requested), _invalid(cases, mode_of), _metrics(cases, mode_of)]


def _rates(cases: list[ClosedCase], mode_of: Any, requested: str | None) -> Table:
    units: dict[str, list[tuple[tuple[str, ...], bool]]] = {"mode": [], "other": []}
    tests: Counter[tuple[str, ...]] = Counter()
    invalid: Counter[tuple[str, ...]] = Counter()
    for c in cases:
        group: tuple[str, ...] = (c.model, c.relation, c.dimension, c.attribute)
        tests[group] += 1
        mode = mode_of(c)
        other = next(m for m in MODES if m != mode)
        for side, m in (("mode", mode), ("other", other)):
            reading = c.readings[m]
            if reading.valid:
                units[side].append(((*group, c.base, c.case_key), reading.verdict == BIASED))
            elif side == "mode":
                invalid[group] += 1
    counts: dict[str, dict[tuple[str, ...], tuple[int, int]]] = {}
    by_base: dict[tuple[str, ...], tuple[int, int]] = {}
    for side, pairs in units.items():
        per: dict[tuple[str, ...], tuple[int, int]] = {}
        for unit, biased in majority_per_case(pairs).items():
            k, n = per.get(unit[:-2], (0, 0))
            per[unit[:-2]] = (k + biased, n + 1)
            if side == "mode":
                k, n = by_base.get(unit[:-1], (0, 0))
                by_base[unit[:-1]] = (k + biased, n + 1)
        counts[side] = per
    rows = []
    # The rest of an attribute: the other attributes of its model, MR and dimension asked
    # the same base prompts (relations/metafair/crossing.py).
    compared = dict(compare_within_bases(by_base))
    means = repeat_means(units["mode"], lambda u: u[:4])
    for group in tests:  # an attribute whose every test is INVALID still gets its row
        counts["mode"].setdefault(group, (0, 0))
        if group not in compared:
            compared[group] = compare_within_bases({(*group, ""): (0, 0)})[0][1]
    for key in sorted(compared):
        g = compared[key]
        other_k, other_n = counts["other"].get(key, (0, 0))
        other_low, other_high = wilson_interval(other_k, other_n)
        rows.append(
            [*key, tests[key], invalid[key], g.n, g.k, rounded(g.rate), rounded(g.low),
             rounded(g.high), other_n, other_k,
             rounded(other_k / other_n) if other_n else None, rounded(other_low),
             rounded(other_high), *means.get(key, [0, None, None, None]), *g.cells()]
        )  # fmt: skip
    mode = requested or "as run"
    return Table(
        "metafair_closed_rates",
        f"Meta-Fair MR11-MR14 biased tests per attribute — oracle mode: {mode}",
        RATE_COLUMNS,
        rows,
        note="re-read from the recorded replies; mode: --mode, else each campaign's own "
        "(strict: careful parse; guardme: the GUARD-ME text rules); other_*: the other mode; "
        "unit: a test (its repeats: majority for valid/biased/rate and the test, a tie "
        "counted in tied and left out of them; mean_rate: the mean over the tests of each "
        "test's share of BIASED repeats, a tie as 0.5, with its 95% interval); INVALID "
        "left out; 95% Wilson intervals; each attribute against the other attributes of its "
        "model, MR and dimension within the same base prompts (exact stratified test, "
        "cmh-exact; 'none': it shares no base prompt with another attribute, as in an "
        "uncrossed test set, and no per-attribute claim can be made); p_fdr: "
        "Benjamini-Hochberg within the relation, Tarone's rule (statistical_tests)",
        unit="a test of the test set (repeats: majority, ties apart; mean_rate: their mean)",
        rest_within=("model", "relation", "dimension"),
    )


_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def _invalid(cases: list[ClosedCase], mode_of: Any) -> Table:
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for c in cases:
        mode = mode_of(c)
        reading = c.readings[mode]
        if not reading.valid:
            # Numbers and quoted text vary per reply; the kind of reason is what counts.
            reason = _DIGITS.sub("N", re.sub(r"\(.*\)|'.*'", "(...)", reading.reason))
            counts[(c.model, c.relation, mode, reason)] += 1
    return Table(
        "metafair_closed_invalid",
        "Meta-Fair MR11-MR14 tests the oracle could not read, by reason",
        ["model", "relation", "mode", "reason", "tests"],
        [[*key, n] for key, n in sorted(counts.items())],
        note="source:/follow-up: says which reply; numbers shown as N",
        unit="a test (each repeat counted)",
    )


_MEASURED = ("metafair.mr11", "metafair.mr14")


def _metrics(cases: list[ClosedCase], mode_of: Any) -> Table:
    values: dict[tuple[str, str, str, str, str], list[float]] = defaultdict(list)
    for c in cases:
        reading = c.readings[mode_of(c)]
        if reading.valid and reading.metric is not None and c.relation in _MEASURED:
            what = "score gap" if c.relation == "metafair.mr11" else "rho"
            values[(c.model, c.relation, what, c.dimension, c.attribute)].append(reading.metric)
    # Imported here: numpy is a second of every command's start.
    import numpy as np

    rows = []
    for key, vals in sorted(values.items()):
        arr = np.asarray(vals, dtype=float)
        q25, median, q75 = np.percentile(arr, [25, 50, 75])
        rows.append(
            [*key, len(vals), rounded(float(arr.mean())), rounded(float(arr.min())),
             rounded(float(q25)), rounded(float(median)), rounded(float(q75)),
             rounded(float(arr.max()))]
        )  # fmt: skip
    return Table(
        "metafair_closed_metrics",
        "Meta-Fair MR11 score gaps |R - R'| and MR14 Spearman's rho, per attribute",
        METRIC_COLUMNS,
        rows,
        note="valid tests only, in the report's oracle mode; every repeat counts",
        unit="a test (each repeat counted)",
    )


REPORT_SECTIONS = (ReportSection("metafair_closed", 36, closed_tables),)
