"""Model against model, campaign against campaign: paired tests on the cases both ran.

Two models are compared on the *same generated cases*: a case of one is paired with the
case of the other that has the same relation, case index, case seed, repeat count and case
data (what `harness.running.plan` generated; the case id differs only by its ``@model``
tail). The unit is that case: its valid repeats (VIOLATED or HELD) averaged into its share
of violated repeats, on each side, so repeats of one case never count as independent
observations. Per relation, and per group where a case names one
(`harness.reporting.outcome_groups.group_of`), the new model's rate is tested against the
base's:

- every share 0 or 1 (one repeat, or repeats that agree): the exact McNemar test on the
  discordant pairs (statsmodels), its mid-p beside it, and the conditional Clopper-Pearson
  interval of the difference that inverts it (`harness.reporting.excess.paired_excess`);
- shares in between (repeats that disagree): the paired sign-flip permutation test of the
  mean difference (scipy, exact up to 2^16 sign patterns, else 9,999 random ones, seeded)
  and the paired bootstrap percentile interval of the mean difference (scipy, 9,999
  resamples of cases, seeded).

REFUSED and INVALID are not violations: a case side with no valid repeat leaves the
violation test (``excluded`` counts those pairs), and refusals and unreadable answers are
compared on their own (``compare_outcomes``, the share of a case's repeats REFUSED, resp.
INVALID, over every pair), in a family of their own, so a model that starts refusing one
group is found even though its violation rate looks better.

Each comparison's tests are corrected like a report's (`harness.reporting.report.apply_fdr`):
one family per relation and pair of models (``Table.aspect`` names the pair), Tarone's rule
from each row's smallest attainable p, Benjamini-Hochberg at 0.05. A comparison whose sides
share no case is refused (`UnpairedError`) unless asked for unpaired: then each side's cases
are independent samples (Fisher's exact test with Newcombe's interval when the shares are
0/1, else the permutation test of two independent samples and the bootstrap interval), and
every table says so.

Over three or more logs, `trend_table` gives each relation's per-case violation rate per log
and the Cochran-Armitage test of a linear trend across the logs in their given order
(statsmodels' linear-by-linear association test of the logs x (violated, held) table with
scores 0, 1, 2...).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.reporting.excess import paired_excess
from harness.reporting.outcome_groups import group_of
from harness.reporting.stats import (
    ALPHA,
    TEST_COLUMNS,
    compare_to_rest,
    mcnemar_min_p,
    report_number,
)
from harness.reporting.tables import Forest, ReportContext, Table
from harness.store.reader import EventReader
from harness.vocabulary.errors import ConfigError

VALID = ("VIOLATED", "HELD")
ALL_GROUPS = "(all)"
RESAMPLES = 9_999
EXACT_PERMUTATIONS = 2**16
# The smallest two-sided p of a randomized permutation test (scipy counts the observed
# statistic among its resamples, and doubles the smaller tail).
RANDOM_MIN_P = 2 / (RESAMPLES + 1)
SEED = 20261128  # the permutation and bootstrap draws are seeded: a comparison is reproducible

# (relation, case index, case seed, digest of the case data): the same generated case on
# every model of a campaign, and across campaigns run with the same seed and options.
PairKey = tuple[str, int, int, str]


class UnpairedError(ConfigError):
    """Two sides of a comparison share no generated case (other seeds, other relations)."""


@dataclass
class CaseTally:
    """One case's repeats on one model: outcomes counted, and the group it is about."""

    relation: str
    group: str | None
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def share(self, wanted: Sequence[str], among: Sequence[str] | None) -> float | None:
        """The share of repeats with an outcome in ``wanted`` among those in ``among``
        (None: every repeat), or None when there is no such repeat."""
        total = sum(n for o, n in self.outcomes.items() if among is None or o in among)
        if total == 0:
            return None
        return sum(self.outcomes.get(o, 0) for o in wanted) / total


@dataclass(frozen=True)
class Side:
    """The cases of one model in one log, by pair key, and where they come from."""

    label: str  # "sim:a" (one log) or "base.db: sim:a" (two logs)
    model: str
    cases: dict[PairKey, CaseTally]


def read_sides(log: EventReader, campaign: str, label_prefix: str = "") -> list[Side]:
    """Every model of ``campaign``: its cases by pair key, with each case's latest relation
    verdict per repeat (cases without a verdict yet are left out)."""
    opened: dict[str, tuple[str, PairKey, str | None]] = {}
    cur = log.connection.execute(
        "SELECT case_id, json_extract(payload, '$.case.model'),"
        " json_extract(payload, '$.case.relation'), json_extract(payload, '$.case.index'),"
        " json_extract(payload, '$.case.seed'), json_extract(payload, '$.case.data')"
        " FROM events WHERE campaign = ? AND kind = 'CaseOpened'",
        (campaign,),
    )
    for case_id, model, relation, index, seed, data in cur:
        parsed = json.loads(data or "{}")
        digest = hashlib.sha256(
            json.dumps(parsed, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()[:16]
        key: PairKey = (str(relation), int(index), int(seed), digest)
        opened[case_id] = (str(model), key, group_of(parsed))
    by_model: dict[str, dict[PairKey, CaseTally]] = defaultdict(dict)
    for verdict in ReportContext(log, campaign).verdicts():
        found = opened.get(verdict.case_id)
        if found is None:
            continue
        model, key, group = found
        tally = by_model[model].setdefault(key, CaseTally(key[0], group))
        tally.outcomes[verdict.outcome] += 1
    return [
        Side(f"{label_prefix}{model}", model, cases) for model, cases in sorted(by_model.items())
    ]


@dataclass(frozen=True)
class Difference:
    """The new side's rate against the base's over one set of cases."""

    n: int  # pairs (paired) or cases of the new side (unpaired)
    n_base: int
    base_rate: float
    new_rate: float
    diff: float
    low: float
    high: float
    base_only: int | None  # discordant pairs (0/1 shares, paired); None otherwise
    new_only: int | None
    test: str
    p_mid: float | None
    p_min: float
    p: float


def _binary(values: Iterable[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def paired_difference(base: Sequence[float], new: Sequence[float]) -> Difference:
    """``new - base`` over pairs of per-case shares (module doc: McNemar when every share is
    0 or 1, else the sign-flip permutation test and the paired bootstrap)."""
    n = len(base)
    if n == 0:
        nan = math.nan
        return Difference(0, 0, nan, nan, nan, nan, nan, None, None, "none", None, nan, nan)
    base_rate, new_rate = sum(base) / n, sum(new) / n
    if _binary(base) and _binary(new):
        from scipy.stats import binom

        both = sum(1 for a, b in zip(base, new, strict=True) if a and b)
        new_only = sum(1 for a, b in zip(base, new, strict=True) if b and not a)
        base_only = sum(1 for a, b in zip(base, new, strict=True) if a and not b)
        e = paired_excess(both, new_only, base_only, n - both - new_only - base_only)
        d = new_only + base_only
        mid = min(1.0, e.p - float(binom.pmf(new_only, d, 0.5))) if d else 1.0
        return Difference(
            n, n, base_rate, new_rate, e.excess, e.low, e.high, base_only, new_only,
            "mcnemar-exact", mid, mcnemar_min_p(new_only, base_only), e.p,
        )  # fmt: skip
    import numpy as np
    from scipy.stats import bootstrap, permutation_test

    diffs = np.asarray(new, dtype=float) - np.asarray(base, dtype=float)
    nonzero = int(np.count_nonzero(diffs))
    rng = np.random.default_rng(SEED)
    if nonzero == 0:
        p, p_min = 1.0, 1.0
    else:
        moved = diffs[diffs != 0]
        result = permutation_test(
            (moved,),
            np.mean,
            permutation_type="samples",
            n_resamples=RESAMPLES if 2**nonzero > EXACT_PERMUTATIONS else math.inf,
            alternative="two-sided",
            random_state=rng,
        )
        p = float(result.pvalue)
        exact = 2**nonzero <= EXACT_PERMUTATIONS
        p_min = mcnemar_min_p(nonzero, 0) if exact else RANDOM_MIN_P
    low = high = float(diffs.mean())
    if nonzero and n > 1:
        ci = bootstrap(
            (diffs,),
            np.mean,
            n_resamples=RESAMPLES,
            confidence_level=1 - ALPHA,
            method="percentile",
            random_state=rng,
        ).confidence_interval
        low, high = float(ci.low), float(ci.high)
    return Difference(
        n, n, base_rate, new_rate, new_rate - base_rate, low, high, None, None,
        "paired-permutation", None, p_min, p,
    )  # fmt: skip


def unpaired_difference(base: Sequence[float], new: Sequence[float]) -> Difference:
    """``new - base`` over independent cases of each side: Fisher's exact test and
    Newcombe's interval for 0/1 shares, else the permutation test of two independent
    samples and the bootstrap percentile interval of the difference of means."""
    nb, nn = len(base), len(new)
    if nb == 0 or nn == 0:
        nan = math.nan
        return Difference(nn, nb, nan, nan, nan, nan, nan, None, None, "none", None, nan, nan)
    base_rate, new_rate = sum(base) / nb, sum(new) / nn
    if _binary(base) and _binary(new):
        c = compare_to_rest(int(sum(new)), nn, int(sum(base)), nb)
        return Difference(
            nn, nb, base_rate, new_rate, c.diff, c.diff_low, c.diff_high, None, None,
            c.test, None, c.p_min, c.p,
        )  # fmt: skip
    import numpy as np
    from scipy.stats import bootstrap, permutation_test

    rng = np.random.default_rng(SEED)
    a, b = np.asarray(new, dtype=float), np.asarray(base, dtype=float)

    def statistic(x: Any, y: Any, axis: int = -1) -> Any:
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    result = permutation_test(
        (a, b), statistic, n_resamples=RESAMPLES, alternative="two-sided", random_state=rng,
        vectorized=True,
    )  # fmt: skip
    low = high = new_rate - base_rate
    if nb > 1 and nn > 1 and (a.std() > 0 or b.std() > 0):
        ci = bootstrap(
            (a, b), statistic, n_resamples=RESAMPLES, confidence_level=1 - ALPHA,
            method="percentile", random_state=rng, vectorized=True,
        ).confidence_interval  # fmt: skip
        low, high = float(ci.low), float(ci.high)
    return Difference(
        nn, nb, base_rate, new_rate, new_rate - base_rate, low, high, None, None,
        "permutation", None, RANDOM_MIN_P, float(result.pvalue),
    )  # fmt: skip


COLUMNS = [
    "base",
    "new",
    "relation",
    "group",
    "measure",
    "pairs",
    "excluded",
    "base_rate",
    "new_rate",
    "diff",
    "diff_low",
    "diff_high",
    "base_only",
    "new_only",
    "test",
    "p_mid",
    "p_min",
    *TEST_COLUMNS,
]

# What each measure counts in a case's repeats: (the outcomes counted, among which outcomes;
# None: every repeat).
MEASURES: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    "violated": (("VIOLATED",), VALID),
    "refused": (("REFUSED",), None),
    "invalid": (("INVALID",), None),
}


def paired_keys(base: Side, new: Side) -> list[PairKey]:
    """The generated cases both sides ran, in a stable order."""
    return sorted(base.cases.keys() & new.cases.keys())


def compare_rows(
    base: Side, new: Side, *, measures: Sequence[str], paired: bool
) -> list[list[Any]]:
    """One row per (relation, group, measure): ``new`` against ``base``."""
    keys = paired_keys(base, new) if paired else None
    cells: dict[tuple[str, str, str], tuple[list[float], list[float], list[int]]] = {}

    def slot(relation: str, group: str, measure: str) -> tuple[list[float], list[float], list[int]]:
        return cells.setdefault((relation, group, measure), ([], [], [0]))

    def groups_of(tally: CaseTally) -> tuple[str, ...]:
        return (ALL_GROUPS,) if tally.group is None else (ALL_GROUPS, tally.group)

    for measure in measures:
        wanted, among = MEASURES[measure]
        if keys is not None:
            for key in keys:
                a, b = base.cases[key], new.cases[key]
                sa, sb = a.share(wanted, among), b.share(wanted, among)
                for group in groups_of(a):
                    got = slot(key[0], group, measure)
                    if sa is None or sb is None:
                        got[2][0] += 1
                        continue
                    got[0].append(sa)
                    got[1].append(sb)
            continue
        for which, side in ((0, base), (1, new)):
            for tally in side.cases.values():
                s = tally.share(wanted, among)
                for group in groups_of(tally):
                    got = slot(tally.relation, group, measure)
                    if s is None:
                        got[2][0] += 1
                    else:
                        (got[1] if which else got[0]).append(s)
    rows: list[list[Any]] = []
    order = {m: i for i, m in enumerate(measures)}
    for (relation, group, measure), (a_shares, b_shares, excluded) in sorted(
        cells.items(), key=lambda c: (c[0][0], order[c[0][2]], c[0][1] != ALL_GROUPS, c[0][1])
    ):
        if measure != "violated" and not (any(a_shares) or any(b_shares)):
            continue  # no refusal (INVALID) on either side: a p of 1 only dilutes the family
        d = (
            paired_difference(a_shares, b_shares)
            if paired
            else unpaired_difference(a_shares, b_shares)
        )
        rows.append(
            [
                base.label,
                new.label,
                relation,
                group,
                measure,
                d.n if paired else f"{d.n_base}/{d.n}",
                excluded[0],
                report_number(d.base_rate),
                report_number(d.new_rate),
                report_number(d.diff),
                report_number(d.low),
                report_number(d.high),
                d.base_only,
                d.new_only,
                d.test,
                report_number(d.p_mid, 6) if d.p_mid is not None else None,
                report_number(d.p_min, 6),
                report_number(d.p, 6),
                None,
                None,
            ]
        )
    return rows


def comparison_tables(base: Side, new: Side, *, paired: bool = True, index: int = 1) -> list[Table]:
    """The comparison of ``new`` against ``base``: violations, then refusals and INVALID
    answers, each its own family of hypotheses per relation (module doc). Raises
    `UnpairedError` when ``paired`` and the sides share no generated case."""
    if paired and not paired_keys(base, new):
        raise UnpairedError(
            f"{new.label} and {base.label} ran no case in common (the same relation, case "
            "index, case seed and case data)",
            fix="run both with the same campaign seed, relations and options (the cases are "
            "then the same), or pass --unpaired to compare them as independent samples",
        )
    pair = f"{base.label} -> {new.label}"
    kind = "paired" if paired else "UNPAIRED"
    suffix = "" if index == 1 else f"_{index}"
    unit = (
        "a generated case run by both models: its valid repeats averaged on each side"
        if paired
        else "a case of one side (UNPAIRED: the sides' cases are independent samples; no "
        "case is matched)"
    )
    tables = []
    for name, measures, what, aspect in (
        ("comparison", ("violated",), "violation rate", f"{kind} comparison {pair}"),
        (
            "comparison_refusal",
            ("refused", "invalid"),
            "refusal and INVALID rates",
            f"{kind} comparison {pair}, refusal and INVALID",
        ),
    ):
        rows = compare_rows(base, new, measures=measures, paired=paired)
        if not rows and name != "comparison":
            continue
        tables.append(
            Table(
                f"{name}{suffix}",
                f"{what.capitalize()}: {new.label} against {base.label} ({kind})",
                COLUMNS,
                rows,
                unit=unit,
                aspect=aspect,
                note=_NOTE_PAIRED if paired else _NOTE_UNPAIRED,
                plot=(Forest("diff", "diff_low", "diff_high", ("relation", "group"), "flagged"),),
            )
        )
    return tables


_NOTE_PAIRED = (
    "diff = new_rate - base_rate over the pairs (positive: the new model violates more, "
    "refuses more, or answers unreadably more); violated: a case's share of VIOLATED among "
    "its valid (VIOLATED or HELD) repeats; a pair where either side has no valid repeat "
    "(every repeat REFUSED or INVALID) is excluded from the violation test (excluded) and "
    "counted in the refusal and INVALID rows (share of all repeats); 0/1 shares: exact "
    "McNemar test on the discordant pairs (base_only, new_only), its mid-p beside it, "
    "Clopper-Pearson interval of the difference conditional on the discordant pairs; other "
    "shares: sign-flip permutation test and paired bootstrap percentile interval; "
    "flagged: Benjamini-Hochberg within the relation and pair of models, after Tarone's rule"
)
_NOTE_UNPAIRED = (
    "UNPAIRED comparison (asked with --unpaired): the two sides' cases are treated as "
    "independent samples, so case-to-case variation is not removed and the test has less "
    "power than a paired one; pairs = base cases/new cases; diff = new_rate - base_rate; 0/1 "
    "shares: Fisher's exact test and Newcombe's interval; other shares: permutation test of "
    "two independent samples and bootstrap percentile interval; excluded: cases with no "
    "valid repeat; flagged: Benjamini-Hochberg within the relation and pair, after Tarone's "
    "rule"
)


TREND_COLUMNS = [
    "relation",
    "logs",
    "rates",
    "cases",
    "first_rate",
    "last_rate",
    "change",
    "test",
    "p_min",
    *TEST_COLUMNS,
]


def trend_table(logs: Sequence[tuple[str, list[Side]]]) -> Table:
    """Each relation's per-case violation rate in each log (every model of the log together),
    with the Cochran-Armitage test of a linear trend over the logs in their given order."""
    from statsmodels.stats.contingency_tables import Table as Contingency

    per_relation: dict[str, list[tuple[float, int]]] = defaultdict(lambda: [(0.0, 0)] * len(logs))
    for i, (_, sides) in enumerate(logs):
        for side in sides:
            for tally in side.cases.values():
                s = tally.share(("VIOLATED",), VALID)
                if s is None:
                    continue
                total, n = per_relation[tally.relation][i]
                per_relation[tally.relation][i] = (total + s, n + 1)
    rows: list[list[Any]] = []
    for relation, counts in sorted(per_relation.items()):
        rates = [t / n if n else math.nan for t, n in counts]
        present = [(i, t, n) for i, (t, n) in enumerate(counts) if n]
        p: float = math.nan
        if len(present) >= 3:
            table = [[t, n - t] for _, t, n in present]
            scores = [float(i) for i, _, _ in present]
            if sum(r[0] for r in table) > 0 and sum(r[1] for r in table) > 0:
                import numpy as np

                # No 0.5 added to empty cells: the test is of the counts as observed.
                result = Contingency(np.asarray(table), shift_zeros=False).test_ordinal_association(
                    row_scores=np.asarray(scores), col_scores=np.asarray([0.0, 1.0])
                )
                p = float(result.pvalue)
            else:
                p = 1.0
        first = next((r for r in rates if not math.isnan(r)), math.nan)
        last = next((r for r in reversed(rates) if not math.isnan(r)), math.nan)
        rows.append(
            [
                relation,
                len(present),
                ", ".join("-" if math.isnan(r) else f"{r:.4f}" for r in rates),
                ", ".join(str(n) for _, n in counts),
                report_number(first),
                report_number(last),
                report_number(last - first),
                "cochran-armitage" if not math.isnan(p) else "none",
                0.0 if not math.isnan(p) else None,
                report_number(p, 6),
                None,
                None,
            ]
        )
    labels = ", ".join(label for label, _ in logs)
    return Table(
        "trend",
        f"Violation rate per log, in the order given ({labels}), and its trend",
        TREND_COLUMNS,
        rows,
        unit="a case (its valid repeats averaged), every model of a log together",
        aspect="trend over logs",
        note="rates: the mean over a log's cases of each case's share of VIOLATED among its "
        "valid repeats (REFUSED and INVALID excluded), in the order the logs were given; "
        "cases: cases with a valid repeat per log; test: Cochran-Armitage test of a linear "
        "trend (statsmodels' linear-by-linear association test, scores 0, 1, 2... for the "
        "logs), the shares summed as violations (conservative when repeats disagree), "
        "asymptotic; needs three logs with cases; flagged: Benjamini-Hochberg over the "
        "relations' trend tests",
    )


def model_pairs(
    logs: Sequence[list[Side]], pairs: Sequence[tuple[str, str]] = ()
) -> list[tuple[Side, Side]]:
    """Which sides to compare (base, new). One log: every pair of its models, in the order
    of their names (``pairs`` picks some). Two logs: each ``pairs`` entry (a model of the
    first log, a model of the second), else the models both logs ran, by name, else their
    only models; anything else is a `ConfigError` naming ``--pair``."""
    if len(logs) == 1:
        sides = {s.model: s for s in logs[0]}
        if pairs:
            return [(_pick(sides, a, "first"), _pick(sides, b, "first")) for a, b in pairs]
        if len(sides) < 2:
            raise ConfigError(
                f"the log ran {len(sides)} model(s) with verdicts: a comparison needs two",
                field="LOGS",
                fix="give two logs (harness compare BASE.db NEW.db), or a log of a campaign "
                "with two or more models",
            )
        names = sorted(sides)
        return [(sides[a], sides[b]) for i, a in enumerate(names) for b in names[i + 1 :]]
    base, new = ({s.model: s for s in log} for log in logs)
    if pairs:
        return [(_pick(base, a, "first"), _pick(new, b, "second")) for a, b in pairs]
    shared = sorted(base.keys() & new.keys())
    if shared:
        return [(base[m], new[m]) for m in shared]
    if len(base) == 1 and len(new) == 1:
        return [(next(iter(base.values())), next(iter(new.values())))]
    raise ConfigError(
        f"the logs share no model name (first: {', '.join(sorted(base)) or 'none'}; second: "
        f"{', '.join(sorted(new)) or 'none'})",
        field="--pair",
        fix="name the models to compare: --pair BASE_MODEL=NEW_MODEL (repeatable)",
    )


def _pick(sides: dict[str, Side], model: str, which: str) -> Side:
    found = sides.get(model)
    if found is None:
        raise ConfigError(
            f"no model {model!r} with verdicts in the {which} log (it has "
            f"{', '.join(sorted(sides)) or 'none'})",
            field="--pair",
            fix="name a model the log ran: --pair BASE_MODEL=NEW_MODEL",
        )
    return found


def compare_tables(
    logs: Sequence[tuple[str, list[Side]]],
    *,
    pairs: Sequence[tuple[str, str]] = (),
    paired: bool = True,
) -> list[Table]:
    """The tables of a comparison, not yet corrected (`harness.reporting.report.apply_fdr`):
    one or two logs, the model pairs' comparisons (`model_pairs`); three or more logs, the
    trend over them (`trend_table`)."""
    if len(logs) >= 3:
        if pairs:
            raise ConfigError(
                "--pair chooses the models of one or two logs; three or more logs give the "
                "trend of every model together",
                field="--pair",
                fix="leave --pair out, or compare two logs",
            )
        return [trend_table(logs)]
    tables: list[Table] = []
    for i, (base, new) in enumerate(model_pairs([sides for _, sides in logs], pairs), 1):
        tables += comparison_tables(base, new, paired=paired, index=i)
    return tables
