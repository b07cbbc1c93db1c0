"""Case leases in a PostgreSQL log: which worker runs which case of a campaign.

A worker *claims* a case before running it: one ``INSERT ... ON CONFLICT DO UPDATE`` that
succeeds when nobody holds the case or its holder's lease has expired (time is the
database's clock, never a worker's). The holder renews its leases while it runs; a worker
that dies stops renewing, and after ``ttl_s`` another worker takes its cases over and
continues each from the log exactly as ``harness resume`` does (folded events: completed
turns are never asked again, turns in flight are re-sent). A closed case is marked done and
never claimed again.

Leases decide who *should* run a case; the log's unique (campaign, case, seq) positions
decide who *can*: a worker that lost a lease it still thought it held fails its next append
with `ConcurrencyError` before sending anything, and drops the case.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from harness.store.fold import CaseState, fold_case
from harness.store.postgres_driver import psycopg
from harness.store.postgres_schema import FINISH_LOCK, SCHEMA_LOCK
from harness.store.postgres_url import PostgresUrl
from harness.store.postgres_workers import CampaignRunners
from harness.store.postgres_writer import PgEventWriter
from harness.store.reader import StoredEvent
from harness.vocabulary.errors import StoreError
from harness.vocabulary.events import decode_event

LEASES = """
CREATE TABLE IF NOT EXISTS leases (
    campaign   TEXT COLLATE "C" NOT NULL,
    case_id    TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C",
    expires_at TIMESTAMPTZ NOT NULL,
    done       BOOLEAN NOT NULL DEFAULT false,
    takeovers  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign, case_id)
);
CREATE INDEX IF NOT EXISTS leases_by_owner ON leases (owner) WHERE NOT done;
CREATE INDEX IF NOT EXISTS leases_open ON leases (campaign, expires_at) WHERE NOT done;
"""

# Slices of the plan (issue 36): a worker walking the plan claims a slice (a run of
# consecutive cases, named by `CaseLeases.slice_of`) the first time it meets one of its
# cases, and claims the cases of the slices it won only; another worker's live slice is
# passed without a claim. So N workers walking one plan no longer race for every case
# (granted cases per claim fell to 2.7-4.5 at N = 4). A slice is *walked* once its owner's
# walk went past it (every case of it claimed, so case leases carry on from there); a
# worker that stops gives its unwalked slices back, a dead one's lapse with its leases, and
# either way another worker takes the slice over and walks it again (closed cases are
# refused by their leases, never run twice).
SLICES = """
CREATE TABLE IF NOT EXISTS lease_slices (
    campaign   TEXT COLLATE "C" NOT NULL,
    slice      TEXT COLLATE "C" NOT NULL,
    lane       TEXT COLLATE "C" NOT NULL,
    block      INTEGER NOT NULL,
    owner      TEXT COLLATE "C",
    expires_at TIMESTAMPTZ NOT NULL,
    walked     BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (campaign, slice)
);
"""
_CLAIM_SLICE = """
INSERT INTO lease_slices (campaign, slice, lane, block, owner, expires_at)
VALUES (%(campaign)s, %(lane)s || '/' || %(block)s, %(lane)s, %(block)s, %(owner)s,
        clock_timestamp() + %(ttl)s * interval '1 second')
ON CONFLICT (campaign, slice) DO UPDATE
   SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
 WHERE NOT lease_slices.walked AND lease_slices.expires_at < clock_timestamp()
RETURNING slice
"""
# A slice refused: the lane's later slices other workers hold or walked come back with the
# refusal, so a worker behind the others passes them without a claim each (else each of N
# workers would claim every slice once: as many statements as cases at N = 8).
_TAKEN_AHEAD = """
SELECT block FROM lease_slices
 WHERE campaign = %(campaign)s AND lane = %(lane)s AND block > %(block)s
   AND owner IS DISTINCT FROM %(owner)s AND (walked OR expires_at >= clock_timestamp())
"""
# Passed slices are marked walked a few at a time (one statement for several).
MARK_EVERY = 4

CONNECTIONS = 4  # per worker, for claims and releases

# Every claim waiting when a round trip starts goes in it (as in a group commit): a worker's
# hundreds of calls in flight need a case each, and beside another worker half the claims
# are refused (both walk one plan), so one statement per claim would cost more than the
# claims were worth. Rows are taken in case order, so two workers' batches cannot deadlock.
_CLAIM = """
INSERT INTO leases (campaign, case_id, owner, expires_at)
SELECT %(campaign)s, c, %(owner)s, clock_timestamp() + %(ttl)s * interval '1 second'
  FROM unnest(%(case_ids)s::text[]) AS c ORDER BY c
ON CONFLICT (campaign, case_id) DO UPDATE
   SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
       takeovers = leases.takeovers + (leases.owner IS NOT NULL)::int
 WHERE NOT leases.done AND leases.expires_at < clock_timestamp()
RETURNING case_id, (xmax = 0) AS fresh, takeovers
"""
_CLAIMS_PER_ROUND_TRIP = 256

# Releases are grouped the same way: every case closing gives its lease up, one statement a
# case was a third of a worker's statements (issue 36). The rows are locked in case order
# first (the sort sits below the row locks), as claims take them: an UPDATE joined to a list
# locks in whatever order its join runs, and two workers' batches could then deadlock.
_RELEASE = """
WITH wanted AS (
    SELECT l.case_id, u.closed
      FROM leases AS l
      JOIN unnest(%(case_ids)s::text[], %(closed)s::boolean[]) AS u(c, closed)
        ON l.case_id = u.c
     WHERE l.campaign = %(campaign)s AND l.owner = %(owner)s
     ORDER BY l.case_id
       FOR UPDATE OF l
)
UPDATE leases SET done = wanted.closed, owner = NULL, expires_at = clock_timestamp()
  FROM wanted
 WHERE leases.campaign = %(campaign)s AND leases.case_id = wanted.case_id
"""


class CaseLeases:
    """The leases of one worker on one campaign (implements `harness.running.engine.CaseLease`)."""

    def __init__(
        self,
        conns: list[psycopg.AsyncConnection[Any]],
        target: PostgresUrl,
        campaign: str,
        *,
        ttl_s: float,
        had_events: set[str],
    ) -> None:
        # Every case of a worker claims and releases: several connections, so hundreds of
        # cases in flight do not queue behind one connection's round trips.
        self._conns = conns
        self._conn = conns[0]  # renewals, the finish lock and this process's runner row
        self._turn = 0
        self.target = target
        self.campaign = campaign
        self.ttl_s = ttl_s
        self.owner = uuid.uuid4().hex[:12]
        self.held: set[str] = set()
        self.taken_over = 0  # cases continued from another worker's log
        self.lost = 0  # leases found gone at renewal
        self._had_events = had_events  # open cases when this worker started
        # Claims waiting for the next round trip: case id -> its answer (granted, fresh).
        self._waiting: dict[str, asyncio.Future[tuple[bool, bool]]] = {}
        self._claimer: asyncio.Task[None] | None = None
        # Releases waiting for the next round trip: case id -> (closed, its completion).
        self._releasing: dict[str, tuple[bool, asyncio.Future[None]]] = {}
        self._releaser: asyncio.Task[None] | None = None
        self.release_round_trips = 0
        self.claims_sent = 0  # case claims sent to the database (granted or not)
        # Slices: set by the worker (`harness.running.worker_reclaim`). While ``walking``,
        # a case whose slice another worker holds is refused without a claim.
        # ``slice_of`` names a case's slice as (lane, block): the walk meets the blocks of a
        # lane in increasing order, so a block is passed once the walk meets a later one.
        self.slice_of: Callable[[str], tuple[str, int] | None] | None = None
        self.walking = False
        # lane -> block -> won by this worker; blocks before the walk's latest are dropped.
        self._lanes: dict[str, dict[int, asyncio.Future[bool]]] = {}
        self._latest: dict[str, int] = {}  # lane -> the latest block the walk met
        self._passed: set[str] = set()  # slices won and passed, not yet marked walked
        self._marker: asyncio.Task[None] | None = None
        self._claim_failed = False  # a claim failed: no slice is marked walked in the walk
        self._entering: dict[tuple[str, int], int] = {}  # slice -> claims awaiting its answer
        self.slices_walked = 0
        # Set when this worker's writer marks a lease done in the commit of its CaseClosed
        # (`release_closed_in`): a case closed then needs no release statement of its own.
        self.closed_in_commit = False

    @classmethod
    async def open(
        cls,
        target: PostgresUrl,
        campaign: str,
        *,
        ttl_s: float = 30.0,
        had_events: set[str] | None = None,
    ) -> CaseLeases:
        """The leases of a new owner on ``campaign`` (`harness.store.log.Log.leases`)."""
        conns: list[psycopg.AsyncConnection[Any]] = []
        try:
            for _ in range(CONNECTIONS):
                conns.append(await psycopg.AsyncConnection.connect(target.url, autocommit=True))
            async with conns[0].transaction():
                await conns[0].execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                await conns[0].execute(LEASES)
                await conns[0].execute(SLICES)
        except psycopg.Error as exc:
            for conn in conns:
                await conn.close()
            raise StoreError(f"cannot lease cases in {target}: {target.scrub(str(exc))}") from exc
        return cls(conns, target, campaign, ttl_s=ttl_s, had_events=had_events or set())

    def _pick(self) -> psycopg.AsyncConnection[Any]:
        self._turn = (self._turn + 1) % len(self._conns)
        return self._conns[self._turn]

    def _fail(self, exc: psycopg.Error) -> StoreError:
        return StoreError(f"leasing cases in {self.target} failed: {self.target.scrub(str(exc))}")

    async def claim(self, case_id: str) -> tuple[bool, CaseState | None]:
        """(granted, the case's state folded from the log when it has events)."""
        if case_id in self._waiting or case_id in self.held:
            return False, None  # this worker claims or runs it already
        part: tuple[str, int] | None = None
        if self.walking and self.slice_of is not None:
            part = self.slice_of(case_id)
            if part is not None:
                self._meet(*part)
                # Entering: the slice is not marked walked before this claim is registered.
                self._entering[part] = self._entering.get(part, 0) + 1
        try:
            if part is not None and not await self._own_slice(*part):
                return False, None  # another worker walks this slice
            answer: asyncio.Future[tuple[bool, bool]] = asyncio.get_running_loop().create_future()
            self._waiting[case_id] = answer
        finally:
            if part is not None:
                self._entering[part] -= 1
                if not self._entering[part]:
                    del self._entering[part]
        if self._claimer is None or self._claimer.done():
            self._claimer = asyncio.create_task(self._claim_waiting(), name="lease-claims")
        granted, fresh = await answer
        if not granted:
            return False, None
        if fresh and case_id not in self._had_events:
            return True, None
        state = await self._fold(case_id)
        if state is None:
            return True, None
        if not fresh:
            self.taken_over += 1
        if state.closed:  # closed by a worker that died before its lease was marked done
            await self.release(case_id, closed=True)
            return False, None
        return True, state

    def _meet(self, lane: str, block: int) -> None:
        """The walk met ``block`` of ``lane``: the earlier blocks this worker won are passed
        (every case of theirs handed to a claim, registered before this one)."""
        latest = self._latest.get(lane)
        if latest is not None and block <= latest:
            return
        self._latest[lane] = block
        known = self._lanes.get(lane)
        if not known:
            return
        for earlier in [b for b in known if b < block]:
            won = known[earlier]
            if not won.done():
                continue  # its answer is awaited: marked at the walk's end
            del known[earlier]
            if not won.cancelled() and won.exception() is None and won.result():
                self._passed.add(f"{lane}/{earlier}")
        ready = len(self._passed) >= MARK_EVERY
        if ready and (self._marker is None or self._marker.done()):
            self._marker = asyncio.create_task(self._mark_passed(), name="slices-walked")

    async def _mark_passed(self) -> None:
        """Mark the passed slices walked once the claims registered before are answered
        (their leases exist): from then on, case leases carry them."""
        while self._passed and not self._claim_failed:
            if self._claimer is not None and not self._claimer.done():
                await asyncio.shield(self._claimer)
                continue  # a claim of a passed slice may have been registered meanwhile
            # A slice some claim is still entering waits for a later round (or the walk's end).
            entering = {f"{lane}/{block}" for lane, block in self._entering}
            parts = sorted(self._passed - entering)
            if not parts or self._claim_failed:
                return
            self._passed.difference_update(parts)
            try:
                cur = await self._conn.execute(
                    "UPDATE lease_slices SET walked = true, owner = NULL"
                    " WHERE campaign = %s AND owner = %s AND slice = ANY(%s) AND NOT walked",
                    (self.campaign, self.owner, parts),
                )
            except psycopg.Error:
                return  # left unwalked: marked at the walk's end, or taken over when lapsed
            self.slices_walked += cur.rowcount

    async def _own_slice(self, lane: str, block: int) -> bool:
        """Whether this worker walks slice ``block`` of ``lane``: claimed once, on the first
        of its cases met; the answer holds for the rest of the walk."""
        blocks = self._lanes.setdefault(lane, {})
        known = blocks.get(block)
        if known is None:
            known = asyncio.get_running_loop().create_future()
            blocks[block] = known
            args = {"campaign": self.campaign, "lane": lane, "block": block, "owner": self.owner}
            try:
                cur = await self._pick().execute(_CLAIM_SLICE, {**args, "ttl": self.ttl_s})
                won = await cur.fetchone() is not None
                if not won:
                    cur = await self._pick().execute(_TAKEN_AHEAD, args)
                    loop = asyncio.get_running_loop()
                    for (later,) in await cur.fetchall():
                        if later not in blocks:
                            blocks[later] = loop.create_future()
                            blocks[later].set_result(False)
                known.set_result(won)
            except psycopg.Error as exc:
                blocks.pop(block, None)
                known.set_exception(self._fail(exc))
                known.exception()  # raised below to this claimant; others await it
                raise self._fail(exc) from exc
            except BaseException:
                blocks.pop(block, None)
                known.cancel()
                raise
        return await asyncio.shield(known)

    async def walked(self) -> int:
        """Mark every slice this worker holds walked (its walk claimed each of their cases,
        so their leases carry on); how many."""
        self._lanes.clear()
        self._latest.clear()
        self._passed.clear()
        if self._marker is not None and not self._marker.done():
            await asyncio.shield(self._marker)
        try:
            cur = await self._conn.execute(
                "UPDATE lease_slices SET walked = true, owner = NULL"
                " WHERE campaign = %s AND owner = %s AND NOT walked",
                (self.campaign, self.owner),
            )
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        return cur.rowcount

    async def lapsed_slices(self) -> list[str]:
        """Take over the unwalked slices nobody holds (their worker stopped or died before
        its walk went past them): this worker walks them now."""
        try:
            cur = await self._conn.execute(
                "SELECT lane, block FROM lease_slices WHERE campaign = %s AND NOT walked"
                " AND expires_at < clock_timestamp() ORDER BY slice",
                (self.campaign,),
            )
            candidates = await cur.fetchall()
            won = []
            for lane, block in candidates:  # one row a statement: no lock order to keep
                args = {"campaign": self.campaign, "lane": lane, "block": block}
                cur = await self._conn.execute(
                    _CLAIM_SLICE, {**args, "owner": self.owner, "ttl": self.ttl_s}
                )
                if (row := await cur.fetchone()) is not None:
                    won.append(str(row[0]))
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        return won

    async def slices_elsewhere(self) -> list[str]:
        """The unwalked slices other workers hold under a live lease (their walks have not
        gone past them yet)."""
        try:
            cur = await self._conn.execute(
                "SELECT slice FROM lease_slices WHERE campaign = %s AND NOT walked"
                " AND expires_at >= clock_timestamp() AND owner IS DISTINCT FROM %s"
                " ORDER BY slice",
                (self.campaign, self.owner),
            )
            return [row[0] for row in await cur.fetchall()]
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    async def _claim_waiting(self) -> None:
        """Claim every waiting case, a round trip at a time, until none waits."""
        while self._waiting:
            ids = list(self._waiting)[:_CLAIMS_PER_ROUND_TRIP]
            answers = [self._waiting.pop(case_id) for case_id in ids]
            args = {"campaign": self.campaign, "owner": self.owner, "ttl": self.ttl_s}
            self.claims_sent += len(ids)
            try:
                cur = await self._pick().execute(_CLAIM, {**args, "case_ids": ids})
                granted = {row[0]: bool(row[1]) for row in await cur.fetchall()}
            except psycopg.Error as exc:
                self._claim_failed = True
                for answer in answers:
                    if not answer.done():
                        answer.set_exception(self._fail(exc))
                continue
            except BaseException:  # cancelled: no claim may wait forever
                for answer in [*answers, *self._waiting.values()]:
                    answer.cancel()
                self._waiting.clear()
                raise
            # Held even when its claimant was cancelled meanwhile: released at close, not
            # renewed for nobody until this worker stops.
            self.held.update(granted)
            for case_id, answer in zip(ids, answers, strict=True):
                if not answer.done():
                    answer.set_result((case_id in granted, granted.get(case_id, False)))

    async def _fold(self, case_id: str) -> CaseState | None:
        try:
            cur = await self._pick().execute(
                "SELECT gseq, campaign, case_id, seq, ts, kind, schema_version, payload"
                " FROM events WHERE campaign = %s AND case_id = %s ORDER BY seq",
                (self.campaign, case_id),
            )
            rows = await cur.fetchall()
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        events = [
            StoredEvent(g, c, i, s, ts, decode_event(kind, version, payload))
            for g, c, i, s, ts, kind, version, payload in rows
        ]
        return fold_case(events) if events else None

    def release_closed_in(self, store: object) -> bool:
        """Have ``store`` (this worker's PostgreSQL writer) mark each lease of this owner
        done in the commit of its case's CaseClosed; False when ``store`` cannot."""
        if not isinstance(store, PgEventWriter):
            return False
        store.release_leases_on_close(self.owner)
        self.closed_in_commit = True
        return True

    async def release(self, case_id: str, *, closed: bool, committed: bool = False) -> None:
        """Give a case up: done for good when ``closed``, else claimable again at once.
        Returns once the lease row is updated (in one statement with every release waiting
        meanwhile). A case closed whose CaseClosed this worker's writer ``committed`` had its
        lease marked done in that very commit (`release_closed_in`): nothing is sent."""
        self.held.discard(case_id)
        if closed and committed and self.closed_in_commit:
            return
        if case_id in self._releasing:  # released twice at once: the first one decides
            await asyncio.shield(self._releasing[case_id][1])
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._releasing[case_id] = (closed, done)
        if self._releaser is None or self._releaser.done():
            self._releaser = asyncio.create_task(self._release_waiting(), name="lease-releases")
        await done  # a caller cancelled meanwhile: its case is still released with the batch

    async def _release_waiting(self) -> None:
        """Release every waiting case, a round trip at a time, until none waits."""
        while self._releasing:
            ids = list(self._releasing)[:_CLAIMS_PER_ROUND_TRIP]
            batch = [self._releasing.pop(case_id) for case_id in ids]
            args = {
                "campaign": self.campaign,
                "owner": self.owner,
                "case_ids": ids,
                "closed": [closed for closed, _ in batch],
            }
            try:
                await self._pick().execute(_RELEASE, args)
                self.release_round_trips += 1
            except psycopg.Error as exc:
                for _, done in batch:
                    if not done.done():
                        done.set_exception(self._fail(exc))
                continue
            except BaseException:
                for _, done in [*batch, *self._releasing.values()]:
                    done.cancel()
                self._releasing.clear()
                raise
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def given_back(self, limit: int = _CLAIMS_PER_ROUND_TRIP) -> list[str]:
        """Open cases nobody holds: given back by a worker that stopped, or whose holder's
        lease expired (it died or lost the database). At most ``limit``, in case order."""
        try:
            cur = await self._pick().execute(
                "SELECT case_id FROM leases WHERE campaign = %s AND NOT done"
                " AND expires_at < clock_timestamp() ORDER BY case_id LIMIT %s",
                (self.campaign, limit),
            )
            return [row[0] for row in await cur.fetchall()]
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    async def held_elsewhere(self) -> bool:
        """Whether another worker holds an open case or an unwalked slice under a live
        lease (it may yet close it, or give it back)."""
        try:
            cur = await self._pick().execute(
                "SELECT EXISTS (SELECT 1 FROM leases WHERE campaign = %s AND NOT done"
                " AND expires_at >= clock_timestamp() AND owner IS DISTINCT FROM %s)"
                " OR EXISTS (SELECT 1 FROM lease_slices WHERE campaign = %s AND NOT walked"
                " AND expires_at >= clock_timestamp() AND owner IS DISTINCT FROM %s)",
                (self.campaign, self.owner, self.campaign, self.owner),
            )
            row = await cur.fetchone()
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        return bool(row and row[0])

    async def renew(self) -> int:
        """Extend every lease (of a case or a slice) this worker holds; how many cases it
        no longer holds (taken over)."""
        try:
            cur = await self._conn.execute(
                "UPDATE leases SET expires_at = clock_timestamp() + %s * interval '1 second'"
                " WHERE campaign = %s AND owner = %s AND NOT done RETURNING case_id",
                (self.ttl_s, self.campaign, self.owner),
            )
            kept = {r[0] for r in await cur.fetchall()}
            await self._conn.execute(
                "UPDATE lease_slices SET expires_at = clock_timestamp() + %s * interval"
                " '1 second' WHERE campaign = %s AND owner = %s AND NOT walked",
                (self.ttl_s, self.campaign, self.owner),
            )
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        gone = self.held - kept
        self.lost += len(gone)
        return len(gone)

    @contextlib.asynccontextmanager
    async def finish_lock(self) -> AsyncIterator[None]:
        """Held while this process joins the campaign or records its end: one process at a
        time (a session-level advisory lock on the database)."""
        await self._conn.execute("SELECT pg_advisory_lock(%s)", (FINISH_LOCK,))
        try:
            yield
        finally:
            await self._conn.execute("SELECT pg_advisory_unlock(%s)", (FINISH_LOCK,))

    def runners(self, ttl_s: float) -> CampaignRunners:
        """This process's row among the processes running the campaign, on the leases'
        connection (it expires ``ttl_s`` after its last renewal)."""
        return CampaignRunners(self._conn, self.campaign, self.owner, ttl_s)

    async def close(self) -> None:
        """Release what is still held (a stopped worker's cases go to the others at once)."""
        if self._marker is not None and not self._marker.done():
            self._marker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._marker
        if self._claimer is not None and not self._claimer.done():
            self._claimer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._claimer
        if self._releaser is not None and not self._releaser.done():
            with contextlib.suppress(asyncio.CancelledError, StoreError):
                await self._releaser  # releases under way finish: none is lost
        try:
            await asyncio.gather(*(self.release(c, closed=False) for c in sorted(self.held)))
            # Slices this worker's walk had not gone past go to the others at once.
            with contextlib.suppress(psycopg.Error):
                await self._conn.execute(
                    "UPDATE lease_slices SET owner = NULL, expires_at = clock_timestamp()"
                    " WHERE campaign = %s AND owner = %s AND NOT walked",
                    (self.campaign, self.owner),
                )
        finally:
            for conn in self._conns:
                await conn.close()


async def reopen_open_cases(leases: CaseLeases, case_ids: list[str]) -> int:
    """Make claimable again the cases the log shows open but the leases mark done (a log
    restored or edited behind its leases): ``harness resume`` continues what the log says
    is open. A case closed meanwhile is seen closed when claimed, and marked done again."""
    if not case_ids:
        return 0
    try:
        cur = await leases._conn.execute(
            "UPDATE leases SET done = false, owner = NULL, expires_at = clock_timestamp()"
            " WHERE campaign = %s AND case_id = ANY(%s) AND done",
            (leases.campaign, case_ids),
        )
    except psycopg.Error as exc:
        raise leases._fail(exc) from exc
    return cur.rowcount
