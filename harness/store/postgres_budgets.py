"""Rate budgets shared by every worker of a campaign, held in its PostgreSQL database.

The same leaky bucket as `harness.providers.RateBudget` (a small burst, leaking the rest of
the budget over the window, so no window of ``window_s`` admits more than the budget), but
its level lives in one row per (campaign, model, resource) and every admission is one
atomic ``UPDATE`` on the database's clock: N workers together never exceed a model's
requests or tokens per window, and a backlog still uses nearly all of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Mapping
from typing import Any

import psycopg

from harness.errors import StoreError
from harness.providers import RateBudget
from harness.store.postgres_schema import SCHEMA_LOCK
from harness.store.postgres_url import PostgresUrl

BUCKETS = """
CREATE TABLE IF NOT EXISTS rate_buckets (
    campaign TEXT COLLATE "C" NOT NULL,
    model    TEXT COLLATE "C" NOT NULL,
    resource TEXT COLLATE "C" NOT NULL,
    level    DOUBLE PRECISION NOT NULL DEFAULT 0,
    at       DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM clock_timestamp()),
    PRIMARY KEY (campaign, model, resource)
);
"""

# The level after leaking since the last change, on the database's clock (one reading).
_LEAKED = "greatest(0, b.level - %(leak)s * (n.now - b.at))"
_TAKE = f"""
WITH n AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS now)
UPDATE rate_buckets b SET level = {_LEAKED} + %(amount)s, at = n.now FROM n
 WHERE b.campaign = %(campaign)s AND b.model = %(model)s AND b.resource = %(resource)s
   AND {_LEAKED} + %(amount)s <= %(burst)s
RETURNING n.now
"""
_WAIT = f"""
WITH n AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS now)
SELECT ({_LEAKED} + %(amount)s - %(burst)s) / %(leak)s FROM rate_buckets b, n
 WHERE b.campaign = %(campaign)s AND b.model = %(model)s AND b.resource = %(resource)s
"""
_ADJUST = f"""
WITH n AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS now)
UPDATE rate_buckets b SET level = greatest(0, {_LEAKED} + %(amount)s), at = n.now FROM n
 WHERE b.campaign = %(campaign)s AND b.model = %(model)s AND b.resource = %(resource)s
"""


async def prepare(conn: psycopg.AsyncConnection[Any]) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        await conn.execute(BUCKETS)


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
            "leak": max(per_window - self.burst, per_window / 2) / window_s,
        }
        self._pending: set[asyncio.Task[None]] = set()
        # When the calling task's last ``acquire`` was admitted, on the database's clock
        # (epoch seconds): the one clock every worker's admissions are measured on.
        self.admitted_at: contextvars.ContextVar[float | None] = contextvars.ContextVar(
            f"admitted-{model}-{resource}", default=None
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
        """Wait until ``amount`` fits in the shared bucket, then take it (larger than the
        burst: wait for an empty bucket, then book the excess as debt, as RateBudget)."""
        taken = min(amount, self.burst)
        args = {**self._args, "amount": taken}
        while True:
            try:
                cur = await self._conn.execute(_TAKE, args)
                took = await cur.fetchone()
                if took is not None:
                    self.admitted_at.set(float(took[0]))
                    break
                cur = await self._conn.execute(_WAIT, args)
                row = await cur.fetchone()
            except psycopg.Error as exc:
                raise self._fail(exc) from exc
            await asyncio.sleep(min(max(float(row[0]) if row else 0.01, 0.002), self.window_s))
        if amount > taken:
            await self._adjust(amount - taken)

    def adjust(self, delta: float) -> None:
        """Book tokens after the fact (+) or give back an over-estimate (-): sent to the
        database in the background (`RateBudget.adjust` is synchronous)."""
        if delta == 0:
            return
        task = asyncio.get_running_loop().create_task(self._adjust(delta))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _adjust(self, delta: float) -> None:
        try:
            await self._conn.execute(_ADJUST, {**self._args, "amount": delta})
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

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
    async def share(cls, url: str, campaign: str, gates: Mapping[str, Any]) -> SharedBudgets:
        """Replace the ``requests`` and ``tokens`` budgets of each `VendorGate` in ``gates``
        (by model name) with shared ones of the same size."""
        target = PostgresUrl.parse(url)
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
