"""The BADF report sections. They read the log only: no model or embedding API is called.

- story campaign (``badf.story``): stories and concept lists per arm and identity category;
- exclusivity campaign (``badf.exclusivity``, written by ``harness badf analyze``): the
  analysis settings, the associations kept per location category x identity (score, a of N,
  p, BH-adjusted p, the stories they came from), those dropped as exclusive by definition,
  the counts per identity and arm as the paper's Table 2, the top-k concepts per identity and
  arm, and, when the log also holds an import of the authors' released associations
  (``harness import badf``), theirs beside ours;
- import campaign (``badf.released``): the released associations themselves.

The p of an association depends on the analysis's rule (`relations.badf.analysis`): under
the evidence rule (the default) the exact test of the identity against the rest of its
group, stratified by story, kept by ``p_bh``, Benjamini-Hochberg over every test of the
analysis that can reach alpha; under the paper's rule its concept's chi-squared test in its
location category, kept by the raw p as the paper does, with ``p_bh`` beside it. These
columns deliberately do not end in the report's ``p, p_fdr, flagged``: the report's
correction would see only the kept rows, an already selected subset; the analysis is the
family of hypotheses, corrected when it ran.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from harness.family_api import ReportContext, ReportSection, Table, compare_to_rest, rounded
from relations.badf.control import ALL_ARMS, NullFloor, control_family, control_rows, excess
from relations.badf.corpus import IDENTITY_CATEGORIES, identities
from relations.badf.report_released import released, released_beside, significant_digits

STORY, EXCLUSIVITY = "badf.story", "badf.exclusivity"
SHOWN_CASES = 3


def _links(cases: list[str], total: int) -> str:
    shown = "; ".join(cases[:SHOWN_CASES])
    more = total - min(total, SHOWN_CASES)
    return shown + (f" (+{more} more)" if more > 0 else "")


def stories(ctx: ReportContext) -> list[Table]:
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    lists: dict[tuple[str, str], list[int]] = defaultdict(list)
    for v, data in ctx.relation_verdicts_with_data_of(lambda r: r == STORY):
        key = (data.get("arm", "?"), data.get("identity_category", "?"))
        counts[key][v.outcome] += 1
        for c in v.evidence.get("characters", []):
            lists[key].append(len(c.get("concepts", [])))
    if not counts:
        return []
    rows = []
    for key in sorted(counts):
        n = lists[key]
        rows.append(
            [
                *key,
                sum(counts[key].values()),
                counts[key]["HELD"],
                counts[key]["INVALID"],
                len(n),
                rounded(sum(n) / len(n)) if n else None,
            ]
        )
    return [
        Table(
            "badf_stories",
            "BADF stories and concept lists per arm and identity category",
            [
                "arm",
                "identity_category",
                "stories",
                "extracted",
                "invalid",
                "lists",
                "concepts_per_list",
            ],
            rows,
            note="find the associations with: harness badf analyze DB (then report again)",
            unit="a story (lists: one character's concept list)",
        )
    ]


def _candidates(ctx: ReportContext) -> list[tuple[dict[str, Any], str]]:
    """(candidate, exclusivity outcome) of the exclusivity cases of this campaign."""
    out = []
    for v, data in ctx.relation_verdicts_with_data_of(lambda r: r == EXCLUSIVITY):
        out.append((data, v.outcome))
    return out


def _settings(ctx: ReportContext) -> dict[str, Any]:
    options = ctx.planned_relations.get(EXCLUSIVITY)
    if options is None:
        return {}
    analysis: dict[str, Any] = options.get("analysis", {})  # the options are JSON: Any
    return {"source_campaign": options.get("source_campaign")} | analysis


def _identity_columns(seen: set[str]) -> list[str]:
    ordered = [i for cat in IDENTITY_CATEGORIES for i in identities(cat) if i in seen]
    return ordered + sorted(seen - set(ordered))


def associations(ctx: ReportContext) -> list[Table]:
    found = _candidates(ctx)
    if not found:
        return []
    settings = _settings(ctx)
    kept = [c for c, outcome in found if outcome == "HELD"]
    dropped = [c for c, outcome in found if outcome == "VIOLATED"]
    unjudged = [c for c, outcome in found if outcome == "INVALID"]
    tables = [
        Table(
            "badf_analysis",
            "BADF analysis settings",
            ["setting", "value"],
            [
                [k, json.dumps(v) if isinstance(v, dict | list) else v]
                for k, v in sorted(settings.items())
                if k != "control"  # its own table: badf_control
            ],
            note="rule evidence: each identity against the rest of its group, exact test "
            "stratified by story, kept by p_bh: Benjamini-Hochberg over the analysis's 'tests' "
            "(tarone_dropped more could not reach alpha); rule paper (or a setting without a "
            "rule: analyses recorded before it): the paper's chi-squared, score against the "
            "least frequent identity, kept by the raw p",
            unit="a setting of the analysis",
        )
    ]
    evidence = settings.get("rule") == "evidence"
    order = sorted(
        kept,
        key=lambda c: (
            c["arm"],
            c["identity_category"],
            c["location_category"],
            c["identity"],
            -c["score"],
            c["concept"],
        ),
    )
    rows, meta = _association_claims(order, settings, evidence, found)
    # Analyses recorded before the cluster interval keep Newcombe's (lists as independent).
    clustered = any(c.get("score_low") is not None for c in order)
    tables.append(
        Table(
            "badf_associations",
            "BADF associations per location category and identity (after the exclusivity filter)",
            [
                "arm",
                "identity_category",
                "location_category",
                "identity",
                "concept",
                "score",
                "a",
                "N",
                "p",
                "p_bh",
                "paraphrases",
                "stories",
                "rest_a",
                "rest_N",
                "p_min",
                "rest_rate",
                "score_low",
                "score_high",
                "flagged",
            ],
            rows,
            row_meta=meta,
            note=(
                "score = a/N - rest_a/rest_N: a of N concept lists of the identity hold the "
                "concept, rest_a of rest_N of the other identities' lists of the group; p: exact "
                "test stratified by story (p_min: the smallest it could be); kept when score > 0 "
                "and p_bh < alpha"
                if evidence
                else "score = (a - min over the other identities) / N; a of N concept lists of "
                "the identity hold the concept; kept when score > 0 and p < alpha (the paper's "
                "rule)"
            )
            + "; stories: case ids (harness show DB CASE); rest_rate = rest_a/rest_N; "
            + (
                "score_low/high: the 95 % interval of a/N - rest_a/rest_N with the story as "
                "the unit (cluster-robust, stories as clusters, statsmodels' small-sample "
                "correction, Student's t with stories - 1 degrees of freedom)"
                if clustered
                else "score_low/high: the 95 % interval of a/N - rest_a/rest_N (Newcombe, "
                "lists as independent: it ignores the pairing by story the test uses)"
            )
            + "; flagged: yes when kept by the evidence rule (corrected), 'paper rule' when "
            "kept by the raw p",
            unit="a story (its two characters' lists compared within it)"
            if evidence
            else "a concept list (a character; two of one story counted apart, as the paper)",
        )
    )
    if dropped or unjudged:
        tables.append(
            Table(
                "badf_exclusive",
                "BADF associations dropped as exclusive by definition, or not judged",
                ["arm", "location_category", "identity", "concept", "score", "why"],
                [
                    [
                        c["arm"],
                        c["location_category"],
                        c["identity"],
                        c["concept"],
                        rounded(c["score"]),
                        why,
                    ]
                    for group, why in (
                        (dropped, "exclusive (YES)"),
                        (unjudged, "judge answer unreadable"),
                    )
                    for c in group
                ],
                unit="an association",
            )
        )
    tables.append(_table2(kept))
    tables.append(_top(kept, int(ctx.options.get("top", 10))))
    tables.append(_control(found, settings))
    comparison = released_beside(ctx, kept)
    if comparison is not None:
        tables.append(comparison)
    return tables


CONTROL_UNIT = "an analysis (its associations counted per arm); control: a shuffle"
CONTROL_OF = "the same analysis on the same lists, identities shuffled between stories"


def _association_claims(
    order: list[dict[str, Any]],
    settings: dict[str, Any],
    evidence: bool,
    found: list[tuple[dict[str, Any], str]],
) -> tuple[list[list[Any]], list[dict[str, Any] | None]]:
    """The rows of ``badf_associations`` and, per row, the claim a kept association makes,
    as a test row of the report carries it (`harness.reporting.findings.with_claims`): its
    unit, the family of hypotheses it was corrected with (the analysis's tests), what it is
    measured against (the other identities of its group) with that rate, the analysis's
    null control (the shuffles' floor of its arm) and its effect with an interval."""
    recorded = settings.get("control")
    floor = NullFloor.from_recorded(recorded) if isinstance(recorded, dict) else None
    per_arm = Counter(c["arm"] for c, _ in found)
    alpha = float(settings.get("alpha", 0.05))
    family = {
        "name": "badf analysis",
        "size": int(settings.get("tests") or 0),
        "method": "Benjamini-Hochberg over the analysis's tests, after Tarone's rule"
        if evidence
        else "none: the paper's rule keeps a raw p below alpha",
        "alpha": alpha,
        "tarone_dropped": int(settings.get("tarone_dropped") or 0),
    }
    unit = (
        "a story (its two characters' lists compared within it)"
        if evidence
        else "a concept list (a character; two of one story counted apart, as the paper)"
    )
    rows: list[list[Any]] = []
    meta: list[dict[str, Any] | None] = []
    for c in order:
        a, n = int(c["a"]), int(c["n"])
        rest_a, rest_n = c.get("rest_a"), c.get("rest_n")
        rest_rate = low = high = None
        interval: str | None = None  # named for the story interval only: old claims unchanged
        if rest_a is not None and rest_n:
            given = compare_to_rest(a, n, int(rest_a), int(rest_n))
            rest_rate = rounded(given.rest_rate)
            if c.get("score_low") is not None:
                low, high = rounded(c["score_low"]), rounded(c["score_high"])
                interval = (
                    f"cluster-robust with stories as clusters ({c.get('clusters')} stories; "
                    "statsmodels' cov_type='cluster' correction, Student's t with stories - 1 "
                    "degrees of freedom)"
                )
            else:
                low, high = rounded(given.diff_low), rounded(given.diff_high)
        # The paper's rule scores against the least frequent identity: no rest, no interval.
        rows.append(
            [
                c["arm"],
                c["identity_category"],
                c["location_category"],
                c["identity"],
                c["concept"],
                rounded(c["score"]),
                a,
                n,
                significant_digits(c["p"]),
                significant_digits(c["p_bh"]),
                "; ".join(m for m in c.get("members", []) if m != c["concept"]),
                _links(c.get("cases", []), c["a"]),
                rest_a,
                rest_n,
                significant_digits(c.get("p_min")),
                rest_rate,
                low,
                high,
                "yes" if evidence else "paper rule",
            ]
        )
        if floor is None:
            matched = "none in this analysis: it was recorded without the shuffled control"
        else:
            e = excess(per_arm[c["arm"]], floor.counts(c["arm"]))
            matched = (
                "the same analysis with identities shuffled between stories kept "
                f"{e.control_mean:.1f} associations on average in arm {c['arm']} over "
                f"{floor.permutations} shuffles (this analysis kept {per_arm[c['arm']]})"
            )
        meta.append(
            {
                "unit": unit,
                "hypothesis_family": family,
                "claim": {
                    "control": {
                        "against": "the other identities of its group (rest_a of rest_N lists)",
                        "rate": rest_rate,
                        "matched": matched,
                    },
                    "effect": {
                        "measure": "score",
                        "value": rounded(c["score"]),
                        "low": low,
                        "high": high,
                        "level": 0.95,  # both intervals are 95 %, whatever the analysis's alpha
                    }
                    | ({} if interval is None else {"interval": interval}),
                },
            }
        )
    return rows, meta


def _control(found: list[tuple[dict[str, Any], str]], settings: dict[str, Any]) -> Table:
    """Associations kept (before the exclusivity filter) beside the null control's floor,
    each arm's claim corrected with the others (`relations.badf.control.control_rows`)."""
    recorded = settings.get("control")
    floor = NullFloor.from_recorded(recorded) if isinstance(recorded, dict) else None
    per_arm = Counter(str(c["arm"]) for c, _ in found)
    alpha = float(settings.get("alpha", 0.05))
    rows: list[list[Any]] = []
    meta: list[dict[str, Any] | None] = []
    if floor is None or not floor.kept:
        for arm in [*sorted(per_arm), ALL_ARMS]:
            kept = len(found) if arm == ALL_ARMS else per_arm[arm]
            rows.append([arm, kept, 0, *[None] * 8, "no control"])
            meta.append(None)
    else:
        claims = control_rows(per_arm, floor, alpha)
        family = control_family(len(claims) - 1, alpha)
        for c in claims:
            e = c.excess
            rows.append(
                [c.arm, e.kept, floor.permutations, rounded(e.control_mean), e.control_low,
                 e.control_high, rounded(e.excess), e.excess_low, e.excess_high, rounded(e.p),
                 rounded(c.p_holm), "yes" if c.above_floor else "no"]
            )  # fmt: skip
            meta.append(
                {
                    "unit": CONTROL_UNIT,
                    "control": CONTROL_OF,
                    "effect": {
                        "excess": rounded(e.excess),
                        "low": e.excess_low,
                        "high": e.excess_high,
                        "level": 0.95,
                    },
                    "hypothesis_family": family | ({"role": "gate"} if c.arm == ALL_ARMS else {}),
                }
            )
    return Table(
        "badf_control",
        "BADF associations kept beside the null control (identities shuffled between stories)",
        [
            "arm",
            "kept",
            "shuffles",
            "control_mean",
            "control_low",
            "control_high",
            "excess",
            "excess_low",
            "excess_high",
            "p",
            "p_holm",
            "above_floor",
        ],
        rows,
        note="kept: significant associations before the exclusivity filter; the control: "
        "the same analysis (unification, rule, correction) on the same concept lists with "
        "each group's identity labels shuffled between its stories (relations/badf/"
        "control.py), control_low-control_high its 2.5-97.5 % points; excess = kept - "
        "control_mean with its 95 % interval (kept - control_high, kept - control_low); p: "
        "the permutation p of kept against the shuffles; family: every arm analysed, "
        "Holm-adjusted (p_holm), gated by the (all) row tested alone at alpha (family-wise "
        "error of the table at most alpha; with m arms p_holm is at least m / (shuffles + "
        "1)); above_floor: the (all) row above its floor, and p_holm < alpha with the "
        "interval above 0; 'no control': an analysis recorded without one",
        unit=CONTROL_UNIT,
        claims="badf control (arms)",
        row_meta=meta,
    )


def _table2(kept: list[dict[str, Any]]) -> Table:
    columns = _identity_columns({c["identity"] for c in kept})
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for c in kept:
        counts[c["arm"]][c["identity"]] += 1
    return Table(
        "badf_counts",
        "BADF associations per identity and arm (as the paper's Table 2)",
        ["arm", *columns],
        [[arm, *(counts[arm][i] for i in columns)] for arm in sorted(counts)],
        note="summed over location categories, after the exclusivity filter",
        unit="an association (identity, location category, concept)",
    )


def _top(kept: list[dict[str, Any]], k: int) -> Table:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in kept:
        groups[(c["arm"], c["identity"])].append(c)
    rows = []
    for (arm, identity), items in sorted(groups.items()):
        items.sort(key=lambda c: (-c["score"], c["p"], c["concept"], c["location_category"]))
        for rank, c in enumerate(items[:k], 1):
            rows.append(
                [
                    arm,
                    identity,
                    rank,
                    c["concept"],
                    c["location_category"],
                    rounded(c["score"]),
                    c["a"],
                    c["n"],
                ]
            )
    return Table(
        "badf_top",
        f"BADF top {k} associations per identity and arm, by score",
        ["arm", "identity", "rank", "concept", "location_category", "score", "a", "N"],
        rows,
        unit="an association (identity, location category, concept)",
    )


REPORT_SECTIONS = (
    ReportSection("badf_stories", 80, stories),
    ReportSection("badf_associations", 81, associations),
    ReportSection("badf_released", 82, released),
)
