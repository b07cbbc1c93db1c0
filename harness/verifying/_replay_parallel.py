"""``replay --verify`` on two processes: the cases of a large SQLite log split in two ranges
of case ids, the second verified in a forked child while the parent verifies the first.

What for: verifying is pure CPU per case (derive, compare), cases are independent, and the
machines this runs on have two cores. Nothing is verified differently: each process runs the
same per-case loop over its own reader, the child sends back its `VerifyResult` (counts and
differences, in case-id order), and the parent appends it after its own, so the result is
the serial one, difference for difference. If the child fails in any way its range is
verified again in the parent, so an error is raised exactly as the serial loop raises it.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any

from harness.store.log import Log, LogLike

# Below this many cases a fork costs more than it saves (and small logs stay in one process).
PARALLEL_MIN_CASES = 2_000

# The case id at an offset in case-id order. ``+kind``: not by the (campaign, kind) index,
# which holds no case id (a table lookup per case, then a sort: 35-45 ms before the fork
# on a 10,000-case log), but in order along the covering (campaign, case_id, kind) one
# (6-9 ms). A format-2 log's ``events`` view plans it as before.
MIDDLE_CASE_SQL = (
    "SELECT case_id FROM events WHERE campaign = ? AND +kind = 'CaseOpened'"
    " ORDER BY case_id LIMIT 1 OFFSET ?"
)

VerifyRange = Callable[[str | None, str | None], Any]  # (first id, end id) -> VerifyResult


def split_point(db: LogLike, connection: Any, campaign: str) -> str | None:
    """The case id that splits ``campaign``'s cases in two halves, or None when the log is
    verified in one process (a PostgreSQL log, no fork, one core, or a small campaign)."""
    if Log.at(db).is_postgres or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        return None
    sql = "SELECT count(*) FROM events WHERE campaign = ? AND kind = 'CaseOpened'"
    (opened,) = connection.execute(sql, (campaign,)).fetchone()
    if opened < PARALLEL_MIN_CASES:
        return None
    row = connection.execute(MIDDLE_CASE_SQL, (campaign, opened // 2)).fetchone()
    return str(row[0]) if row else None


def verify_in_two(verify_range: VerifyRange, boundary: str) -> Any:
    """``verify_range(None, boundary)`` here and ``verify_range(boundary, None)`` in a forked
    child, merged in case-id order. The caller holds no open connection (each side opens its
    own reader after the fork)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: verify the second range, send the result, leave at once
        os.close(read_fd)
        try:
            data = pickle.dumps(verify_range(boundary, None))
        except BaseException:  # the parent verifies this range again and raises it there
            data = b""
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(write_fd)
    try:
        first = verify_range(None, boundary)
    finally:
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
    second = pickle.loads(data) if data and status == 0 else verify_range(boundary, None)
    first.cases += second.cases
    first.asks += second.asks
    first.verdicts += second.verdicts
    first.open_cases += second.open_cases
    first.differences.extend(second.differences)
    return first
