"""The BADF report sections. They read the log only: no model or embedding API is called.

- story campaign (``badf.story``): stories and concept lists per arm and identity category;
- exclusivity campaign (``badf.exclusivity``, written by ``harness badf analyze``): the
  analysis settings, the associations kept per location category x identity (score, a of N,
  p, BH-adjusted p, the stories they came from), those dropped as exclusive by definition,
  the counts per identity and arm as the paper's Table 2, the top-k concepts per identity and
  arm, and, when the log also holds an import of the authors' released associations
  (``harness import badf``), theirs beside ours;
- import campaign (``badf.released``): the released associations themselves.

The p of an association is that of its concept's chi-squared test in its location category;
the paper keeps associations by this raw p. ``p_bh`` is the Benjamini-Hochberg adjustment over
every concept test of the analysis, shown beside it. These columns deliberately do not end in
the report's ``p, p_fdr, flagged``: the report-wide correction would see only the kept rows,
an already selected subset.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from harness.tables import ReportContext, ReportSection, Table, rounded
from relations.badf.corpus import IDENTITY_CATEGORIES, identities

STORY, EXCLUSIVITY, RELEASED = "badf.story", "badf.exclusivity", "badf.released"
SHOWN_CASES = 3


def _sig(p: float | None) -> float | None:
    """A p-value to four significant digits (tiny ones stay readable, never 0.0)."""
    return None if p is None or p != p else float(f"{p:.4g}")


def _links(cases: list[str], total: int) -> str:
    shown = "; ".join(cases[:SHOWN_CASES])
    more = total - min(total, SHOWN_CASES)
    return shown + (f" (+{more} more)" if more > 0 else "")


def stories(ctx: ReportContext) -> list[Table]:
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    lists: dict[tuple[str, str], list[int]] = defaultdict(list)
    for v in ctx.relation_verdicts:
        if v.relation != STORY:
            continue
        data = ctx.case_data.get(v.case_id, {})
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
        )
    ]


def _candidates(ctx: ReportContext) -> list[tuple[dict[str, Any], str]]:
    """(candidate, exclusivity outcome) of the exclusivity cases of this campaign."""
    out = []
    for v in ctx.relation_verdicts:
        if v.relation == EXCLUSIVITY:
            out.append((ctx.case_data.get(v.case_id, {}), v.outcome))
    return out


def _settings(ctx: ReportContext) -> dict[str, Any]:
    row = ctx.log.connection.execute(
        "SELECT payload FROM events WHERE campaign = ? AND kind = 'CampaignStarted'",
        (ctx.campaign,),
    ).fetchone()
    config = json.loads(row[0])["config"] if row else {}
    for rel in config.get("relations", []):
        if rel.get("name") == EXCLUSIVITY:
            options = rel.get("options", {})
            return {"source_campaign": options.get("source_campaign")} | options.get("analysis", {})
    return {}


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
            ],
            note="keep_by p: associations kept by the raw chi-squared p, as the paper does; "
            "p_bh is Benjamini-Hochberg over every concept test of the analysis ('tests')",
        )
    ]
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
            ],
            [
                [
                    c["arm"],
                    c["identity_category"],
                    c["location_category"],
                    c["identity"],
                    c["concept"],
                    rounded(c["score"]),
                    c["a"],
                    c["n"],
                    _sig(c["p"]),
                    _sig(c["p_bh"]),
                    "; ".join(m for m in c.get("members", []) if m != c["concept"]),
                    _links(c.get("cases", []), c["a"]),
                ]
                for c in order
            ],
            note="score = (a - min over the other identities) / N; a of N concept lists of the "
            "identity hold the concept; stories: case ids (harness show DB CASE)",
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
            )
        )
    tables.append(_table2(kept))
    tables.append(_top(kept, int(ctx.options.get("top", 10))))
    comparison = _released_beside(ctx, kept)
    if comparison is not None:
        tables.append(comparison)
    return tables


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
    )


def _released_rows(ctx: ReportContext) -> list[dict[str, Any]]:
    cur = ctx.log.connection.execute(
        "SELECT evidence FROM verdicts WHERE relation = ? AND source = 'relation'", (RELEASED,)
    )
    return [json.loads(e or "{}") for (e,) in cur]


def _released_beside(ctx: ReportContext, kept: list[dict[str, Any]]) -> Table | None:
    """Ours and the authors' per location category and identity: counts and shared phrases
    (a released phrase is shared when it is one of the phrases of one of our concepts)."""
    released = _released_rows(ctx)
    if not released:
        return None
    ours: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in kept:
        ours[(c["location_category"], c["identity"])].update([c["concept"], *c.get("members", [])])
    ours_count = Counter((c["location_category"], c["identity"]) for c in kept)
    theirs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in released:
        theirs[(r["location_category"], r["identity"])].append(r["phrase"])
    rows = []
    for key in sorted(set(ours_count) | set(theirs)):
        shared = sorted({p for p in theirs.get(key, []) if p in ours.get(key, set())})
        rows.append(
            [
                *key,
                ours_count.get(key, 0),
                len(theirs.get(key, [])),
                len(shared),
                "; ".join(shared[:5]),
            ]
        )
    return Table(
        "badf_released_comparison",
        "BADF: our associations beside the authors' released ones",
        ["location_category", "identity", "ours", "released", "shared", "shared_phrases"],
        rows,
        note="released = rows of the authors' association files imported into this log "
        "(harness import badf); shared = the same phrase (lower case) among our concept's phrases",
    )


def released(ctx: ReportContext) -> list[Table]:
    rows = [v.evidence for v in ctx.relation_verdicts if v.relation == RELEASED]
    if not rows:
        return []
    rows.sort(
        key=lambda r: (r["location_category"], r["identity"], -(r.get("score") or 0), r["phrase"])
    )
    return [
        Table(
            "badf_released",
            "BADF associations released by the authors (imported)",
            [
                "source_file",
                "location_category",
                "identity",
                "phrase",
                "score",
                "p",
                "prompt_response",
            ],
            [
                [
                    r["source_file"],
                    r["location_category"],
                    r["identity"],
                    r["phrase"],
                    r.get("score"),
                    r.get("p"),
                    r.get("prompt_response", ""),
                ]
                for r in rows
            ],
            note="category and identity names mapped to ours (relations/badf/importer.py)",
        )
    ]


REPORT_SECTIONS = (
    ReportSection("badf_stories", 80, stories),
    ReportSection("badf_associations", 81, associations),
    ReportSection("badf_released", 82, released),
)
