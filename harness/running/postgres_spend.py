"""The spending ceiling of a campaign, held in its PostgreSQL database for all its workers.

``spend`` holds what the campaign's calls cost so far (at least what its log says, taken
again at every worker start); ``spend_holds`` what each live worker has reserved for its
calls in flight (the worst case of each, as one process reserves it). A call may start only
if spent + every live worker's holds + its own worst case stays under the ceiling, checked
and booked in one transaction under the campaign's row lock: N workers together never
commit more than the ceiling. A dead worker's holds lapse with its lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any

from harness.models.providers import VendorGate
from harness.running.batch_waves import BatchGate
from harness.store.log import Log, LogLike
from harness.store.postgres_driver import psycopg
from harness.store.postgres_schema import SCHEMA_LOCK
from harness.store.postgres_url import PostgresUrl
from harness.vocabulary.errors import BudgetExceededError, ModelError, StoreError
from harness.vocabulary.model import Reply

SPEND = """
CREATE TABLE IF NOT EXISTS spend (
    campaign TEXT COLLATE "C" PRIMARY KEY,
    spent    DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS spend_holds (
    campaign   TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C" NOT NULL,
    amount     DOUBLE PRECISION NOT NULL DEFAULT 0,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (campaign, owner)
);
"""


class SharedSpend:
    """One worker's side of the campaign's shared spend."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        target: PostgresUrl,
        campaign: str,
        owner: str,
        ceiling_usd: float | None,
        ttl_s: float,
    ) -> None:
        self._conn = conn
        self.target = target
        self.campaign = campaign
        self.owner = owner
        self.ceiling_usd = ceiling_usd
        self.ttl_s = ttl_s
        self._pending: set[asyncio.Task[None]] = set()
        # The calls of this worker share one connection: one transaction on it at a time.
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        log: LogLike,
        campaign: str,
        owner: str,
        *,
        ceiling_usd: float | None,
        spent_in_log: float,
        ttl_s: float = 30.0,
    ) -> SharedSpend:
        target = Log.at(log).postgres("a shared spending ceiling")
        try:
            conn = await psycopg.AsyncConnection.connect(target.url, autocommit=True)
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                await conn.execute(SPEND)
            await conn.execute(
                "INSERT INTO spend (campaign, spent) VALUES (%s, %s) ON CONFLICT (campaign)"
                " DO UPDATE SET spent = greatest(spend.spent, EXCLUDED.spent)",
                (campaign, spent_in_log),
            )
        except psycopg.Error as exc:
            raise StoreError(f"shared spend in {target}: {target.scrub(str(exc))}") from exc
        return cls(conn, target, campaign, owner, ceiling_usd, ttl_s)

    def _fail(self, exc: psycopg.Error) -> StoreError:
        return StoreError(f"shared spend in {self.target}: {self.target.scrub(str(exc))}")

    async def reserve(self, model: str, amount: float) -> None:
        """Book ``amount`` for a call, or raise `BudgetExceededError` (nothing booked)."""
        try:
            async with self._lock, self._conn.transaction():
                cur = await self._conn.execute(
                    "SELECT spent FROM spend WHERE campaign = %s FOR UPDATE", (self.campaign,)
                )
                spent = float((await cur.fetchone() or (0.0,))[0])
                cur = await self._conn.execute(
                    "SELECT coalesce(sum(amount), 0) FROM spend_holds WHERE campaign = %s"
                    " AND expires_at > clock_timestamp()",
                    (self.campaign,),
                )
                held = float((await cur.fetchone() or (0.0,))[0])
                if self.ceiling_usd is not None and spent + held + amount > self.ceiling_usd:
                    raise BudgetExceededError(
                        f"the next call to {model} could cost up to ${amount:.4f}; the "
                        f"campaign's workers spent ${spent:.4f} (+${held:.4f} in flight) of "
                        f"the ${self.ceiling_usd:.2f} ceiling; raise it on resume: harness "
                        "resume LOG --spend-ceiling USD"
                    )
                await self._conn.execute(
                    "INSERT INTO spend_holds (campaign, owner, amount, expires_at)"
                    " VALUES (%s, %s, %s, clock_timestamp() + %s * interval '1 second')"
                    " ON CONFLICT (campaign, owner) DO UPDATE SET"
                    " amount = spend_holds.amount + EXCLUDED.amount,"
                    " expires_at = EXCLUDED.expires_at",
                    (self.campaign, self.owner, amount, self.ttl_s),
                )
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    async def settle(self, reserved: float, actual: float) -> None:
        """A call ended: its hold goes, what it cost is spent."""
        try:
            async with self._lock, self._conn.transaction():
                await self._conn.execute(
                    "UPDATE spend SET spent = spent + %s WHERE campaign = %s",
                    (actual, self.campaign),
                )
                await self._conn.execute(
                    "UPDATE spend_holds SET amount = greatest(0, amount - %s),"
                    " expires_at = clock_timestamp() + %s * interval '1 second'"
                    " WHERE campaign = %s AND owner = %s",
                    (reserved, self.ttl_s, self.campaign, self.owner),
                )
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    def settle_later(self, reserved: float, actual: float) -> None:
        task = asyncio.get_running_loop().create_task(self.settle(reserved, actual))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def renew(self) -> None:
        try:
            async with self._lock:
                await self._conn.execute(
                    "UPDATE spend_holds SET expires_at = clock_timestamp()"
                    " + %s * interval '1 second' WHERE campaign = %s AND owner = %s",
                    (self.ttl_s, self.campaign, self.owner),
                )
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    async def spent(self) -> float:
        async with self._lock:
            cur = await self._conn.execute(
                "SELECT spent FROM spend WHERE campaign = %s", (self.campaign,)
            )
            return float((await cur.fetchone() or (0.0,))[0])

    async def close(self) -> None:
        with contextlib.suppress(StoreError):
            await asyncio.gather(*self._pending)
        await self._conn.close()


@dataclass
class _Hold:
    amount: float


class SharedSpendGate:
    """A `VendorGate` (or a batch model's `BatchGate`) whose calls also reserve against the
    campaign's shared ceiling (implements `harness.models.gates.CallGate`)."""

    def __init__(self, inner: VendorGate | BatchGate, spend: SharedSpend) -> None:
        self.inner = inner
        self.spend = spend
        self._hold: contextvars.ContextVar[_Hold | None] = contextvars.ContextVar(
            f"spend-hold-{inner.model}", default=None
        )

    async def acquire(self, estimated_tokens: int) -> None:
        price = self.inner.price
        amount = price.worst_case(estimated_tokens) if price is not None else 0.0
        await self.spend.reserve(self.inner.model, amount)
        try:
            await self.inner.acquire(estimated_tokens)
        except BaseException:
            self.spend.settle_later(amount, 0.0)
            raise
        self._hold.set(_Hold(amount))

    async def ready(self) -> None:
        await self.inner.ready()

    def release(self, reply: Reply | None, error: ModelError | None) -> None:
        hold = self._hold.get() or _Hold(0.0)
        self._hold.set(None)
        self.inner.release(reply, error)
        cost = 0.0
        if reply is not None:
            cost = reply.cost_usd if reply.cost_usd is not None else 0.0
            if reply.cost_usd is None and self.inner.price is not None:
                cost = self.inner.price.cost(reply.usage)
        self.spend.settle_later(hold.amount, cost)
