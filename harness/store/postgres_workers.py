"""Which processes are running a campaign stored in PostgreSQL right now (workers, and
``harness resume`` beside them): one row per process, renewed with its leases, deleted when
it leaves, lapsing when it dies.

Leases alone cannot say it: a worker between two cases holds none for a moment. A
process that stops or aborts records the campaign's end (`harness.running.worker`) only when no
other process is running it, so nobody appends case events after a recorded end.
"""

from __future__ import annotations

from typing import Any

from harness.store.postgres_driver import psycopg
from harness.store.postgres_schema import SCHEMA_LOCK

RUNNERS = """
CREATE TABLE IF NOT EXISTS campaign_runners (
    campaign   TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C" NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (campaign, owner)
);
"""


class CampaignRunners:
    """This process's row among the runners of one campaign (the database's clock)."""

    def __init__(
        self, conn: psycopg.AsyncConnection[Any], campaign: str, owner: str, ttl_s: float
    ) -> None:
        self._conn = conn
        self.campaign = campaign
        self.owner = owner
        self.ttl_s = ttl_s

    async def join(self) -> None:
        async with self._conn.transaction():
            await self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            await self._conn.execute(RUNNERS)
        await self.renew()

    async def renew(self) -> None:
        await self._conn.execute(
            "INSERT INTO campaign_runners (campaign, owner, expires_at)"
            " VALUES (%s, %s, clock_timestamp() + %s * interval '1 second')"
            " ON CONFLICT (campaign, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at",
            (self.campaign, self.owner, self.ttl_s),
        )

    async def others_running(self) -> int:
        """How many other processes run this campaign now (rows not yet lapsed)."""
        cur = await self._conn.execute(
            "SELECT count(*) FROM campaign_runners WHERE campaign = %s AND owner <> %s"
            " AND expires_at > clock_timestamp()",
            (self.campaign, self.owner),
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def live_owners(self) -> set[str]:
        """The owners of every process running this campaign now (this one too)."""
        cur = await self._conn.execute(
            "SELECT owner FROM campaign_runners WHERE campaign = %s"
            " AND expires_at > clock_timestamp()",
            (self.campaign,),
        )
        return {str(row[0]) for row in await cur.fetchall()}

    async def leave(self) -> None:
        await self._conn.execute(
            "DELETE FROM campaign_runners WHERE campaign = %s AND owner = %s",
            (self.campaign, self.owner),
        )
