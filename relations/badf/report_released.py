"""The report sections about the BADF authors' released associations: the imported rows
themselves, and ours beside theirs per location category and identity."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import PurePosixPath
from typing import Any

from harness.family_api import ReportContext, Table
from relations.badf.corpus import IDENTITY_CATEGORIES, identities

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
        unit="an association (identity, location category, concept or phrase)",
    )


def as_written(row: dict[str, Any]) -> str:
    """A released row's identity as its file writes it ("Judaism"; logs keep it under
    ``released``), not our name for it ("Jewish", ``identity``)."""
    written = (row.get("released") or {}).get("identity")
    return " ".join(str(written).split()) if written else str(row["identity"])


def setting_of(row: dict[str, Any]) -> str:
    """The setting a released file holds (the paper's Table 2 rows: two-character base,
    negative, ...): the folder the file is in, else the file's name without its extension."""
    path = PurePosixPath(str(row.get("source_file", "")).replace("\\", "/"))
    return str(path.parent) if str(path.parent) not in ("", ".") else path.stem


def released_table2(rows: list[dict[str, Any]]) -> Table:
    """The paper's Table 2 layout of the released associations: one row per setting, one
    column per identity (as the files write it, grouped by identity category), the number
    of associations."""
    order = {
        name: i for i, name in enumerate(i for c in IDENTITY_CATEGORIES for i in identities(c))
    }
    written: dict[str, str] = {}
    for r in rows:
        written.setdefault(as_written(r), str(r["identity"]))
    columns = sorted(written, key=lambda w: (order.get(written[w], len(order)), w))
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        counts[setting_of(r)][as_written(r)] += 1
    return Table(
        "badf_released_table2",
        "BADF associations released by the authors per setting and identity (the paper's "
        "Table 2 layout)",
        ["setting", *columns],
        [[setting, *(counts[setting][c] for c in columns)] for setting in sorted(counts)],
        note="setting: the folder of the released file (else its name); identities as the "
        "files write them, in the order gender, race, religion; every location category "
        "summed",
        unit="an association (identity, location category, phrase) as released",
    )


def released(ctx: ReportContext) -> list[Table]:
    # The names as the files write them are in each case's data (``released``), kept out
    # of the verdict's evidence.
    rows = [
        {**v.evidence, "released": data.get("released") or {}}
        for v, data in ctx.relation_verdicts_with_data_of(lambda r: r == RELEASED)
    ]
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
                "identity_ours",
            ],
            [
                [
                    r["source_file"],
                    r["location_category"],
                    as_written(r),
                    r["phrase"],
                    r.get("score"),
                    r.get("p"),
                    r.get("prompt_response", ""),
                    r["identity"],
                ]
                for r in rows
            ],
            note="identity: as the file writes it, every identity alike; identity_ours: our "
            "name for it (relations/badf/released.py), the one ours and theirs are compared "
            "by (badf_released_comparison); location categories mapped to ours",
            unit="an association as released (a row of the files)",
        ),
        released_table2(rows),
    ]
