"""Rate budgets shared by every worker of a campaign, held in its PostgreSQL database.

Two rules admit a call, both checked and booked in one transaction under the bucket's row
lock, on the database's clock read after that lock (so admissions are numbered in time in
the order they were serialized, whichever worker made them):

- **Pacing**: the same leaky bucket as `harness.models.providers.RateBudget` (a small burst, the
  rest of the budget leaked over the window), so a backlog is spread over the window
  instead of spent in one burst.
- **The bound**: a log of the admissions still inside the window (`rate_admissions`), each
  booked with its amount and corrected to what the call really used when it ends. A call
  is admitted only if the amounts booked in the last ``window_s`` plus its own fit in the
  budget. The leaky bucket alone does not bound a window: a call larger than the burst is
  booked as debt and lets ``budget - burst + largest call`` through in one window (a
  28,000-token window of 8,000-token calls against 25,000), and an over-estimate given back
  lowers the level after other calls were admitted on it. The log does: any window's calls
  were all in the window checked when its last call was admitted, booked at least at what
  they used (an estimate, or the use once known).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Mapping
from typing import Any

from harness.models.providers import RateBudget
from harness.store.log import Log, LogLike
from harness.store.postgres_driver import psycopg
from harness.store.postgres_schema import SCHEMA_LOCK
from harness.store.postgres_url import PostgresUrl
from harness.vocabulary.errors import StoreError

# An admission stays in the window this much longer than ``window_s``: epoch seconds are
# doubles (a quarter of a microsecond apart today), and a window measured by anyone
# reading the admission times must never contain two admissions the database saw apart.
CLOCK_GUARD_S = 1e-5

BUCKETS = """
CREATE TABLE IF NOT EXISTS rate_buckets (
    campaign TEXT COLLATE "C" NOT NULL,
    model    TEXT COLLATE "C" NOT NULL,
    resource TEXT COLLATE "C" NOT NULL,
    level    DOUBLE PRECISION NOT NULL DEFAULT 0,
    at       DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM clock_timestamp()),
    PRIMARY KEY (campaign, model, resource)
);
ALTER TABLE rate_buckets ADD COLUMN IF NOT EXISTS held DOUBLE PRECISION NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS rate_admissions (
    id       BIGSERIAL PRIMARY KEY,
    campaign TEXT COLLATE "C" NOT NULL,
    model    TEXT COLLATE "C" NOT NULL,
    resource TEXT COLLATE "C" NOT NULL,
    at       DOUBLE PRECISION NOT NULL,
    amount   DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_admissions_window
    ON rate_admissions (campaign, model, resource, at);
"""

# One call per admission (one round trip). Each statement of a PL/pgSQL function takes a
# fresh snapshot, so the sums below see every admission committed before the row lock was
# granted: a READ COMMITTED single statement would have summed a snapshot taken before it
# waited for the lock, and two workers could both have seen room.
TAKE_FUNCTION = """
CREATE OR REPLACE FUNCTION harness_rate_take(
    p_campaign TEXT, p_model TEXT, p_resource TEXT, p_amount FLOAT8,
    p_burst FLOAT8, p_leak FLOAT8, p_limit FLOAT8, p_window FLOAT8,
    OUT admission BIGINT, OUT admitted_at FLOAT8, OUT wait_s FLOAT8)
LANGUAGE plpgsql AS $fn$
DECLARE
    b rate_buckets%ROWTYPE;
    expired FLOAT8;
    lvl FLOAT8;
    need FLOAT8;
    frees_at FLOAT8;
BEGIN
    SELECT * INTO b FROM rate_buckets
     WHERE campaign = p_campaign AND model = p_model AND resource = p_resource FOR UPDATE;
    -- Read after the lock, never behind the last change: time order = admission order.
    admitted_at := greatest(extract(epoch FROM clock_timestamp())::float8, b.at);
    WITH gone AS (
        DELETE FROM rate_admissions
         WHERE campaign = p_campaign AND model = p_model AND resource = p_resource
           AND at <= admitted_at - p_window - $guard$
        RETURNING amount)
    SELECT coalesce(sum(amount), 0) INTO expired FROM gone;
    b.held := greatest(0, b.held - expired);
    lvl := greatest(0, b.level - p_leak * (admitted_at - b.at));
    IF lvl + least(p_amount, p_burst) > p_burst THEN
        wait_s := (lvl + least(p_amount, p_burst) - p_burst) / p_leak;
    ELSIF b.held > 0 AND b.held + p_amount > p_limit THEN
        -- Wait until enough of the oldest admissions leave the window.
        need := least(b.held + p_amount - p_limit, b.held);
        SELECT w.at INTO frees_at FROM (
            SELECT a.at, sum(a.amount) OVER (ORDER BY a.at, a.id) AS freed
              FROM rate_admissions a
             WHERE a.campaign = p_campaign AND a.model = p_model AND a.resource = p_resource
        ) w WHERE w.freed >= need ORDER BY w.at LIMIT 1;
        wait_s := coalesce(frees_at + p_window + $guard$ - admitted_at, 0.001);
    ELSE
        INSERT INTO rate_admissions (campaign, model, resource, at, amount)
        VALUES (p_campaign, p_model, p_resource, admitted_at, p_amount)
        RETURNING id INTO admission;
        UPDATE rate_buckets SET level = lvl + p_amount, at = admitted_at,
                                held = b.held + p_amount
         WHERE campaign = p_campaign AND model = p_model AND resource = p_resource;
        wait_s := 0;
        RETURN;
    END IF;
    UPDATE rate_buckets SET held = b.held
     WHERE campaign = p_campaign AND model = p_model AND resource = p_resource;
END
$fn$;
""".replace("$guard$", repr(CLOCK_GUARD_S))

# Book what a call really used (+ more, - an over-estimate given back): on its admission
# when it is still in the window (the window then counts the use, at the time it was
# admitted), else a use above the estimate as a new admission now.
ADJUST_FUNCTION = """
CREATE OR REPLACE FUNCTION harness_rate_adjust(
    p_campaign TEXT, p_model TEXT, p_resource TEXT, p_admission BIGINT, p_delta FLOAT8,
    p_leak FLOAT8) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    b rate_buckets%ROWTYPE;
    now_ FLOAT8;
    booked FLOAT8;
BEGIN
    SELECT * INTO b FROM rate_buckets
     WHERE campaign = p_campaign AND model = p_model AND resource = p_resource FOR UPDATE;
    now_ := greatest(extract(epoch FROM clock_timestamp())::float8, b.at);
    SELECT amount INTO booked FROM rate_admissions WHERE id = p_admission;
    IF FOUND THEN
        UPDATE rate_admissions SET amount = greatest(0, booked + p_delta) WHERE id = p_admission;
        b.held := b.held + greatest(0, booked + p_delta) - booked;
    ELSIF p_delta > 0 THEN
        INSERT INTO rate_admissions (campaign, model, resource, at, amount)
        VALUES (p_campaign, p_model, p_resource, now_, p_delta);
        b.held := b.held + p_delta;
    END IF;
    UPDATE rate_buckets
       SET level = greatest(0, greatest(0, b.level - p_leak * (now_ - b.at)) + p_delta),
           at = now_, held = b.held
     WHERE campaign = p_campaign AND model = p_model AND resource = p_resource;
END
$fn$;
"""

_TAKE = (
    "SELECT admission, admitted_at, wait_s FROM harness_rate_take("
    "%(campaign)s, %(model)s, %(resource)s, %(amount)s, %(burst)s, %(leak)s, %(limit)s,"
    " %(window)s)"
)
_ADJUST = (
    "SELECT harness_rate_adjust(%(campaign)s, %(model)s, %(resource)s, %(admission)s,"
    " %(amount)s, %(leak)s)"
)


async def prepare(conn: psycopg.AsyncConnection[Any]) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        await conn.execute(BUCKETS)
        await conn.execute(TAKE_FUNCTION)
        await conn.execute(ADJUST_FUNCTION)


class SharedRateBudget:
    """`RateBudget`'s interface (``acquire``, ``adjust``) over a bucket in the database."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        target: PostgresUrl,
        campaign: str,
        model: str,
        resource: str,
        per_window: float,
        window_s: float = 60.0,
    ) -> None:
        shape = RateBudget(per_window, window_s)  # the same burst and leak as one process
        self.per_window = per_window
        self.window_s = window_s
        self.burst = shape.burst
        self._conn = conn
        self._target = target
        self._args: dict[str, Any] = {
            "campaign": campaign,
            "model": model,
            "resource": resource,
            "burst": self.burst,
            "leak": shape.window.leak_per_s,
            "limit": per_window,
            "window": window_s,
        }
        self._pending: set[asyncio.Task[None]] = set()
        self._turn = asyncio.Lock()
        self._changed = asyncio.Event()  # a call of this worker gave tokens back
        self._poll_s = min(window_s / 100, 0.05)
        # When the calling task's last ``acquire`` was admitted, on the database's clock
        # (epoch seconds): the one clock every worker's admissions are measured on.
        self.admitted_at: contextvars.ContextVar[float | None] = contextvars.ContextVar(
            f"admitted-{model}-{resource}", default=None
        )
        # Which admission the calling task's ``adjust`` corrects (`VendorGate` acquires
        # and releases a call in one task).
        self._admission: contextvars.ContextVar[int | None] = contextvars.ContextVar(
            f"admission-{model}-{resource}", default=None
        )

    async def create(self) -> None:
        await self._conn.execute(
            "INSERT INTO rate_buckets (campaign, model, resource) VALUES (%s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            (self._args["campaign"], self._args["model"], self._args["resource"]),
        )

    def _fail(self, exc: psycopg.Error) -> StoreError:
        return StoreError(f"shared budget in {self._target}: {self._target.scrub(str(exc))}")

    async def acquire(self, amount: float) -> None:
        """Wait until ``amount`` fits both the pacing and the window, then book it (more
        than the whole budget: alone, once the window is empty, as `RateBudget` does)."""
        args = {**self._args, "amount": float(amount)}
        # One task per worker asks the database at a time, in arrival order; it waits for
        # the time the database names, but no longer than a poll (another worker may give
        # back an over-estimate sooner) and wakes at once when a call of its own does.
        async with self._turn:
            while True:
                self._changed.clear()
                try:
                    cur = await self._conn.execute(_TAKE, args)
                    row = await cur.fetchone()
                except psycopg.Error as exc:
                    raise self._fail(exc) from exc
                if row is None:
                    raise StoreError(f"shared budget in {self._target}: no bucket")
                admission, at, wait_s = row
                if admission is not None:
                    self._admission.set(int(admission))
                    self.admitted_at.set(float(at))
                    return
                with contextlib.suppress(TimeoutError):
                    wait = min(max(float(wait_s), 0.002), self._poll_s)
                    await asyncio.wait_for(self._changed.wait(), wait)

    def adjust(self, delta: float) -> None:
        """Correct the calling task's last admission by what its call really used (+) or
        give back an over-estimate (-): sent to the database in the background
        (`RateBudget.adjust` is synchronous)."""
        admission = self._admission.get()
        self._admission.set(None)  # one correction per admission
        if delta == 0:
            return
        task = asyncio.get_running_loop().create_task(self._adjust(admission, delta))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _adjust(self, admission: int | None, delta: float) -> None:
        args = {**self._args, "admission": admission, "amount": float(delta)}
        try:
            await self._conn.execute(_ADJUST, args)
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        if delta < 0:
            self._changed.set()

    async def drain(self) -> None:
        """Wait for the adjustments still on their way to the database."""
        with contextlib.suppress(StoreError):
            await asyncio.gather(*self._pending)


class SharedBudgets:
    """The rate budgets of a worker's vendor gates, moved into the database."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], budgets: list[SharedRateBudget]):
        self._conn = conn
        self.budgets = budgets

    @classmethod
    async def share(cls, log: LogLike, campaign: str, gates: Mapping[str, Any]) -> SharedBudgets:
        """Replace the ``requests`` and ``tokens`` budgets of each `VendorGate` in ``gates``
        (by model name) with shared ones of the same size."""
        target = Log.at(log).postgres("shared budgets")
        try:
            conn = await psycopg.AsyncConnection.connect(target.url, autocommit=True)
            await prepare(conn)
        except psycopg.Error as exc:
            raise StoreError(f"shared budgets in {target}: {target.scrub(str(exc))}") from exc
        shared = []
        for model, gate in gates.items():
            for resource in ("requests", "tokens"):
                local = getattr(gate, resource, None)
                if not isinstance(local, RateBudget):
                    continue
                budget = SharedRateBudget(
                    conn, target, campaign, model, resource, local.per_window, local.window_s
                )
                await budget.create()
                setattr(gate, resource, budget)
                shared.append(budget)
        return cls(conn, shared)

    async def close(self) -> None:
        for budget in self.budgets:
            await budget.drain()
        await self._conn.close()
