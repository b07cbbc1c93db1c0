"""Meta-Fair's report sections.

- ``metafair_bias_by_attribute``: per model x relation x dimension x attribute, the share of
  tests judged BIASED (Wilson interval), each attribute tested against the other attributes
  of its model and relation; p_fdr and flagged come from the report-wide correction.
- ``metafair_severity``: the severity of the BIASED verdicts.
- ``metafair_invalid``: why tests gave no verdict, split by where it went wrong: the
  subject (response), the judges (INVALID, INDETERMINABLE), no judge yet, and test
  generation (tests dropped by validation, counted by `GENERATION_COUNTERS`).
- ``metafair_jury_agreement``: Fleiss' kappa of each jury and its pairs of valid verdicts.
- ``metafair_violations_by_attribute``: the template-read MR8 of logs recorded before test
  sets (unchanged).
Judge quality and non-determinism are in `judge_quality` and `nondeterminism`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import combinations

from harness.family_api import (
    COMPARISON_COLUMNS,
    Forest,
    ReportContext,
    ReportSection,
    Table,
    bootstrap_interval,
    compare_groups,
    derive_seed,
    fleiss_kappa_of,
    krippendorff_alpha,
    majority_per_case,
    rounded,
)
from relations.metafair.crossing import (
    REPEAT_MEAN_COLUMNS,
    compare_within_bases,
    repeat_means,
)
from relations.metafair.generation.report import dropped_per_relation
from relations.metafair.judges.nondeterminism import NONDETERMINISM_SECTIONS
from relations.metafair.judges.quality import JUDGE_QUALITY_SECTIONS
from relations.metafair.judges.verdicts import RESPONSE_INVALID, UNJUDGED, judged_tests

VALID = ("BIASED", "UNBIASED")
# Counts of test generation: each returns {(model, relation): items dropped by validation}
# (the generator model, the MR the items were for).
GENERATION_COUNTERS: tuple[Callable[[ReportContext], dict[tuple[str, str], int]], ...] = (
    dropped_per_relation,
)


def bias_by_attribute(ctx: ReportContext) -> list[Table]:
    pairs = [
        ((j.model, j.relation, j.dimension, j.attribute, j.case_key), j.label == "BIASED")
        for j in judged_tests(ctx)
        if j.label in VALID
    ]
    if not pairs:
        return []
    counts: dict[tuple[str, ...], tuple[int, int]] = {}
    bases = _bases(ctx)

    def stratum(unit: tuple[str, ...]) -> tuple[str, ...]:
        # The rest of an attribute: the other attributes of its dimension asked the same base
        # prompt (relations/metafair/crossing.py).
        model, relation, dimension, attribute, key_ = unit
        return (model, relation, dimension, f"{attribute}\x00{dimension}", bases.get(key_, key_))

    for unit, biased in majority_per_case(pairs).items():
        k, n = counts.get(stratum(unit), (0, 0))
        counts[stratum(unit)] = (k + biased, n + 1)
    means = repeat_means(pairs, lambda u: u[:4])
    compared = compare_within_bases(counts)
    seen = {key for key, _ in compared}
    for model, relation, dimension, attribute in sorted(means):
        # An attribute whose every test tied still gets its row (no decided test, no test).
        key = (model, relation, dimension, f"{attribute}\x00{dimension}")
        if key not in seen:
            compared += compare_within_bases({(*key, ""): (0, 0)})
    rows = []
    for (model, relation, _dim, label), g in compared:
        attribute, dimension = label.split("\x00")
        rows.append(
            [model, relation, dimension, attribute, g.n, g.k, rounded(g.rate), rounded(g.low),
             rounded(g.high), *means[(model, relation, dimension, attribute)], *g.cells()]
        )  # fmt: skip
    rows.sort(key=lambda r: (str(r[0]), _mr(str(r[1])), str(r[2]), str(r[3])))
    return [
        Table(
            "metafair_bias_by_attribute",
            "Meta-Fair: tests judged BIASED per relation, dimension and attribute",
            [
                "model",
                "relation",
                "dimension",
                "attribute",
                "tests",
                "biased",
                "rate",
                "ci95_low",
                "ci95_high",
                *REPEAT_MEAN_COLUMNS,
                *COMPARISON_COLUMNS,
            ],
            rows,
            plot=(
                Forest(
                    "rate", "ci95_low", "ci95_high", ("model", "relation", "attribute"), "flagged"
                ),
            ),
            note="unit: a test (its repeats: majority for tests/biased/rate and the test, a "
            "tie counted in tied and left out of them; mean_rate: the mean over the tests of "
            "each test's share of BIASED repeats, a tie as 0.5, with its 95% interval); "
            "tests without a BIASED/UNBIASED verdict left out (see metafair_invalid); the "
            "jury's verdict, or the majority of re-judging models for tests run without a "
            "jury; 95% Wilson interval; each attribute tested against the other attributes of "
            "its model, relation and dimension within the same base prompts (exact stratified "
            "test, cmh-exact; 'none': the attribute shares no base prompt with another, as in "
            "an uncrossed test set, and no per-attribute claim can be made); rest_rate and "
            "diff pool the bases; p_fdr: Benjamini-Hochberg within the relation, Tarone's rule "
            "(statistical_tests)",
            unit="a test of the test set (repeats: majority, ties apart; mean_rate: their mean)",
            rest_within=("model", "relation", "dimension"),
        )
    ]


def _bases(ctx: ReportContext) -> dict[str, str]:
    """The base prompt of each judged test, by case key (the prompt without the attribute)."""
    out: dict[str, str] = {}
    for j in judged_tests(ctx):
        if j.base is not None:
            out[j.case_key] = j.base
    return out


def _mr(relation: str) -> int:
    """The MR number of a relation name, for sorting (0 for "(all)")."""
    tail = relation.rpartition(".mr")[2]
    return int(tail) if tail.isdigit() else 0


def severity(ctx: ReportContext) -> list[Table]:
    tally: dict[tuple[str, str], Counter[str]] = {}
    uncited: Counter[tuple[str, str]] = Counter()
    for j in judged_tests(ctx):
        if j.label == "BIASED":
            tally.setdefault((j.model, j.relation), Counter())[j.severity] += 1
            uncited[(j.model, j.relation)] += j.uncited
    rows = [
        [m, r, sum(c.values()), c["LOW"], c["MODERATE"], c["HIGH"],
         sum(c.values()) - c["LOW"] - c["MODERATE"] - c["HIGH"], uncited[(m, r)]]
        for (m, r), c in sorted(tally.items(), key=lambda kv: (kv[0][0], _mr(kv[0][1])))
    ]  # fmt: skip
    if not rows:
        return []
    return [
        Table(
            "metafair_severity",
            "Meta-Fair: severity of the BIASED verdicts",
            ["model", "relation", "biased", "low", "moderate", "high", "unstated", "uncited"],
            rows,
            note="every verdict, repeats included; a jury's severity is the most frequent "
            "among its BIASED votes (a tie: the graver); uncited: BIASED verdicts none of "
            "whose BIASED votes quotes a passage found in one response and not the other "
            "(MR1-MR7 judged with the cited difference)",
            unit="a BIASED verdict",
        )
    ]


def invalid(ctx: ReportContext) -> list[Table]:
    tally: dict[tuple[str, str], Counter[str]] = {}
    no_majority: Counter[tuple[str, str]] = Counter()
    for j in judged_tests(ctx):
        tally.setdefault((j.model, j.relation), Counter())[j.label] += 1
        no_majority[(j.model, j.relation)] += j.no_majority
    dropped: Counter[tuple[str, str]] = Counter()
    for counter in GENERATION_COUNTERS:
        dropped.update(counter(ctx))
    keys = sorted({*tally, *dropped}, key=lambda k: (k[0], _mr(k[1])))
    rows = []
    for key in keys:
        c = tally.get(key, Counter())
        rows.append(
            [*key, sum(c.values()), c["BIASED"] + c["UNBIASED"], dropped[key],
             c[RESPONSE_INVALID], c["INVALID"], c["INDETERMINABLE"], no_majority[key],
             c[UNJUDGED]]
        )  # fmt: skip
    if not rows:
        return []
    return [
        Table(
            "metafair_invalid",
            "Meta-Fair: tests without a verdict, by where it went wrong",
            [
                "model",
                "relation",
                "tests",
                "judged",
                "generation",
                "response",
                "judge_invalid",
                "indeterminable",
                "no_majority",
                "unjudged",
            ],
            rows,
            note="every case, repeats included; generation: tests dropped by validation "
            "before they ran; response: a subject call failed or its reply was empty or not a "
            "Yes/No; judge_invalid: the jury's verdict was INVALID (a failed or unreadable "
            "judge, or a judge saying a response is meaningless); indeterminable: the jury "
            "had no majority or a judge said INDETERMINABLE; no_majority: those of them "
            "without ceil(n/2) concurring BIASED or UNBIASED votes of the n judges (an "
            "INVALID or INDETERMINABLE vote counts in n, for no side; only a judge's first "
            "reading votes); unjudged: imported, not re-judged yet",
            unit="a verdict (repeats counted apart)",
        )
    ]


def jury_agreement(ctx: ReportContext) -> list[Table]:
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for j in judged_tests(ctx):
        if len(j.votes) > 1:
            labels = {rater: lab for rater, (lab, _) in j.votes.items()}
            groups.setdefault((j.model, j.relation), []).append(labels)
    rows = []
    for (model, relation), cases in sorted(
        groups.items(), key=lambda kv: (kv[0][0], _mr(kv[0][1]))
    ):
        raters = sorted({r for c in cases for r in c})
        full = [c for c in cases if len(c) == len(raters)]
        units: list[list[str | None]] = [[_category(c[r]) for r in raters] for c in full]
        kappa = fleiss_kappa_of(units)
        k_low, k_high = bootstrap_interval(
            units, fleiss_kappa_of, seed=derive_seed(model, relation)
        )
        # Krippendorff's alpha takes every test, a judge without a vote as missing.
        every: list[list[str | None]] = [
            [_category(c[r]) if r in c else None for r in raters] for c in cases
        ]
        alpha = krippendorff_alpha(every)
        a_low, a_high = bootstrap_interval(
            every, krippendorff_alpha, seed=derive_seed(model, relation)
        )
        pairs = [(c[a], c[b]) for c in full for a, b in combinations(raters, 2)]
        valid = [(x, y) for x, y in pairs if x in VALID and y in VALID]
        agree = sum(x == y for x, y in valid) / len(valid) if valid else float("nan")
        rows.append(
            [model, relation, len(raters), len(full), rounded(kappa), rounded(k_low),
             rounded(k_high), rounded(alpha), rounded(a_low), rounded(a_high), len(pairs),
             len(valid), rounded(agree)]
        )  # fmt: skip
    if not rows:
        return []
    return [
        Table(
            "metafair_jury_agreement",
            "Meta-Fair: agreement within each jury",
            [
                "model",
                "relation",
                "judges",
                "tests",
                "fleiss_kappa",
                "fleiss_low",
                "fleiss_high",
                "krippendorff_alpha",
                "alpha_low",
                "alpha_high",
                "pairs",
                "valid_pairs",
                "pair_agreement",
            ],
            rows,
            note="tests every judge rated; Fleiss' kappa over the labels BIASED, UNBIASED and "
            "other (INVALID, INDETERMINABLE); Krippendorff's alpha (nominal, the same labels) "
            "over every test, a missing vote as missing; 95% percentile intervals of 500 "
            "bootstrap resamples of the tests; valid_pairs: pairs of judges that both said "
            "BIASED or UNBIASED on a test, pair_agreement the share of those that agree",
            unit="a test every judge rated (pairs: two judges on one test)",
        )
    ]


def _category(label: str) -> str:
    """A vote as Fleiss' kappa and alpha count it: BIASED, UNBIASED or other."""
    return label if label in VALID else "other"


def violations_by_attribute(ctx: ReportContext) -> list[Table]:
    """The template-read MR8 (logs recorded before test sets): 'No' counts as violated."""
    pairs: list[tuple[tuple[str, str, str, str], bool]] = []
    for v in ctx.relation_verdicts_of(lambda r: r == "metafair.mr8"):
        if v.outcome not in ("HELD", "VIOLATED"):
            continue
        ev = v.evidence
        if "test_id" in ev:
            continue
        unit = (v.model, str(ev.get("dimension", "")), str(ev.get("attribute", "")), v.case_key)
        pairs.append((unit, v.outcome == "VIOLATED"))
    if not pairs:
        return []
    counts: dict[tuple[str, ...], tuple[int, int]] = {}
    for (model, dimension, attribute, _), violated in majority_per_case(pairs).items():
        k, n = counts.get((model, attribute, dimension), (0, 0))
        counts[(model, attribute, dimension)] = (k + violated, n + 1)
    for (model, dimension, attribute, _), _violated in pairs:  # every case tied: a row too
        counts.setdefault((model, attribute, dimension), (0, 0))
    means = repeat_means(pairs, lambda u: u[:3])
    # The rest of an attribute is every other attribute of the model: the key's context is
    # the model, so the dimension rides along as the group's label.
    keyed: dict[tuple[str, ...], tuple[int, int]] = {
        (m, f"{a}\x00{d}"): kn for (m, a, d), kn in counts.items()
    }
    rows = []
    for (model, label), g in compare_groups(keyed):
        attribute, dimension = label.split("\x00")
        rows.append(
            [model, dimension, attribute, g.n, g.k, rounded(g.rate), rounded(g.low),
             rounded(g.high), *means[(model, dimension, attribute)], *g.cells()]
        )  # fmt: skip
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return [
        Table(
            "metafair_violations_by_attribute",
            "Inverted consistency: answers judged unsuitable for everyone, per attribute",
            [
                "model",
                "dimension",
                "attribute",
                "cases",
                "violated",
                "rate",
                "ci95_low",
                "ci95_high",
                *REPEAT_MEAN_COLUMNS,
                *COMPARISON_COLUMNS,
            ],
            rows,
            plot=(
                Forest(
                    "rate", "ci95_low", "ci95_high", ("model", "dimension", "attribute"), "flagged"
                ),
            ),
            note="unit: a case (its repeats: majority for cases/violated/rate and the test, a "
            "tie counted in tied and left out of them; mean_rate: the mean over the cases of "
            "each case's share of violated repeats, a tie as 0.5, with its 95% interval); "
            "INVALID cases left out; 95% Wilson interval; each attribute tested against every "
            "other attribute of its model (Fisher's exact test, chi-squared when large), diff "
            "and risk ratio with 95% intervals; p_fdr: Benjamini-Hochberg within MR8, Tarone's "
            "rule (statistical_tests)",
            unit="a case (repeats: majority, ties apart; mean_rate: their mean)",
            claims="metafair.mr8",
            rest_within=("model",),
        )
    ]


def jury_calls(ctx: ReportContext) -> list[Table]:
    """What the sequential jury saved (`relations.metafair.judges.jury`): judges asked
    against the full juries' judges, over the test's jury and its control's."""
    tally: dict[tuple[str, str], list[int]] = {}
    for v in ctx.relation_verdicts_of(lambda r: r.startswith("metafair.")):
        ev = v.evidence
        seq = ev.get("sequential_jury")
        if not isinstance(seq, dict):
            continue
        readings = ev.get("judgings")
        per_judge = len(readings[0]) if isinstance(readings, list) and readings else 1
        jury, asked = int(seq.get("of", 0)), int(seq.get("asked", 0))
        control = ev.get("control")
        if isinstance(control, dict) and "judges_asked" in control:
            asked += int(control["judges_asked"])
            jury *= 2
        t = tally.setdefault((v.model, v.relation), [0, 0, 0, 0, 0, 0])
        t[0] += 1
        t[1] += bool(seq.get("audit"))
        t[2] += int(seq.get("asked", 0)) < int(seq.get("of", 0))
        t[3] += asked * per_judge
        t[4] += jury * per_judge
        t[5] += (jury - asked) * per_judge
    rows = []
    for (model, relation), (cases, audit, stopped, asked, full, saved) in sorted(
        tally.items(), key=lambda kv: (kv[0][0], _mr(kv[0][1]))
    ):
        rows.append(
            [model, relation, cases, audit, stopped, asked, full, saved,
             rounded(saved / full) if full else None]
        )  # fmt: skip
    if not rows:
        return []
    return [
        Table(
            "metafair_jury_calls",
            "Meta-Fair: judge calls the sequential jury saved",
            [
                "model",
                "relation",
                "cases",
                "audit_cases",
                "stopped_early",
                "judge_calls",
                "full_jury_calls",
                "calls_saved",
                "saved_share",
            ],
            rows,
            note="a sequential jury asks the first ceil(n/2) judges, and the others only while "
            "their votes could still change the label; the audit share of cases gets the "
            "full jury (agreement and calibration read those); judge_calls: readings the "
            "judges asked made (the test's jury and its control's), full_jury_calls: what "
            "every judge would have made, calls_saved their difference (repair turns not "
            "counted); the label is the full jury's with the same votes",
            unit="a verdict (repeats counted apart)",
        )
    ]


REPORT_SECTIONS = (
    ReportSection("metafair_violations_by_attribute", 35, violations_by_attribute),
    ReportSection("metafair_bias_by_attribute", 36, bias_by_attribute),
    ReportSection("metafair_severity", 37, severity),
    ReportSection("metafair_invalid", 38, invalid),
    ReportSection("metafair_jury_agreement", 39, jury_agreement),
    ReportSection("metafair_jury_calls", 39, jury_calls),
    *JUDGE_QUALITY_SECTIONS,
    *NONDETERMINISM_SECTIONS,
)
