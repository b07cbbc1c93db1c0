"""Two logs of the same import, row for row: the guard of an import speed-up (issue 14).

    python bench/compare_import_logs.py OLD.db NEW.db

Compares (gseq, case_id, seq, kind, schema_version, turn, attempt, batch, payload) in gseq
order, each log's campaign id replaced by one name and CampaignStarted's code version left
out (the two things that differ between two imports of one folder by two commits); prints
the first differences, the number of differing rows, and each log's summary tables
(`harness.store._log_summary`). Exits 1 when a row differs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

from harness.store.schema import connect  # either log format (format 2's views need it)

COLUMNS = "gseq, case_id, seq, kind, schema_version, turn, attempt, batch, payload"


def rows(db: str) -> Iterator[tuple[object, ...]]:
    conn = connect(db)
    (campaign,) = conn.execute("SELECT DISTINCT campaign FROM events").fetchone()
    for row in conn.execute(f"SELECT {COLUMNS} FROM events ORDER BY gseq"):
        *head, payload = row
        payload = payload.replace(campaign, "CAMPAIGN")
        if head[3] == "CampaignStarted":
            started = json.loads(payload)
            started.pop("code_version", None)
            payload = json.dumps(started, sort_keys=True)
        yield (*head, payload)


def main() -> None:
    old, new = sys.argv[1], sys.argv[2]
    compared = differ = 0
    for a, b in zip(rows(old), rows(new), strict=True):
        compared += 1
        if a != b:
            differ += 1
            if differ <= 3:
                print("DIFF", a[:8], str(a[-1])[:300], "\n    ", b[:8], str(b[-1])[:300])
    print(f"{compared} rows compared, {differ} differ")
    for db in (old, new):
        conn = connect(db)
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'summary_marks'").fetchone():
            continue  # format 2 keeps no summary tables
        marks = conn.execute("SELECT through_gseq, usd FROM summary_marks").fetchall()
        cases = conn.execute("SELECT count(*), sum(closed) FROM summary_cases").fetchone()
        print(f"{db}: summary marks {marks}, summary cases (count, closed) {cases}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
