"""The report sections about the BADF authors' released associations: the imported rows
themselves, and ours beside theirs per location category and identity."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from harness.family_api import ReportContext, Table

RELEASED = "badf.released"


def significant_digits(p: float | None) -> float | None:
    """A p-value to four significant digits (tiny ones stay readable, never 0.0)."""
    return None if p is None or p != p else float(f"{p:.4g}")


def _released_rows(ctx: ReportContext) -> list[dict[str, Any]]:
    cur = ctx.log.connection.execute(
        "SELECT evidence FROM verdicts WHERE relation = ? AND source = 'relation'", (RELEASED,)
    )
    return [json.loads(e or "{}") for (e,) in cur]


def released_beside(ctx: ReportContext, kept: list[dict[str, Any]]) -> Table | None:
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
    rows = [v.evidence for v in ctx.relation_verdicts_of(lambda r: r == RELEASED)]
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
