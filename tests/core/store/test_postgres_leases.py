"""Case leases on PostgreSQL (`harness.store.postgres_leases`): every case goes to exactly one
worker, and a worker's many concurrent claims share round trips (issue 15, the throughput
proof: one statement per claim cost the workers more CPU than the claims were worth)."""

from __future__ import annotations

import asyncio
from typing import Any

from harness.store.log import Log
from harness.store.open import open_writer
from harness.store.postgres_leases import CaseLeases
from harness.store.writer import PendingEvent
from harness.vocabulary.errors import ConcurrencyError
from harness.vocabulary.events import CaseClosed

CASES = [f"r/{i}" for i in range(300)]


def _count_statements(leases: CaseLeases) -> list[int]:
    """A counter of the statements ``leases`` sends on its connections from now on."""
    sent = [0]
    for conn in leases._conns:
        execute = conn.execute

        async def counted(*args: Any, _execute: Any = execute, **kwargs: Any) -> Any:
            sent[0] += 1
            return await _execute(*args, **kwargs)

        conn.execute = counted  # type: ignore[method-assign]
    return sent


async def test_concurrent_claims_of_two_workers_grant_each_case_once_in_few_round_trips(
    pg_url: str,
) -> None:
    async with await open_writer(pg_url):
        pass
    a = await Log.at(pg_url).leases("c1")
    b = await Log.at(pg_url).leases("c1")
    try:
        sent = [_count_statements(a), _count_statements(b)]
        # Both walk the plan in the same order, as two workers do.
        got_a, got_b = await asyncio.gather(
            asyncio.gather(*(a.claim(c) for c in CASES)),
            asyncio.gather(*(b.claim(c) for c in CASES)),
        )
        won_a = {c for c, (ok, _) in zip(CASES, got_a, strict=True) if ok}
        won_b = {c for c, (ok, _) in zip(CASES, got_b, strict=True) if ok}
        assert won_a.isdisjoint(won_b)
        assert won_a | won_b == set(CASES)
        assert a.held == won_a and b.held == won_b
        # Before: one statement per claim, 300 each.
        assert sent[0][0] <= 10 and sent[1][0] <= 10, sent
        # A case this worker runs already is not granted twice. (On an idle machine one
        # worker's batch may win every case: test with whichever won some.)
        owner, other = (a, b) if won_a else (b, a)
        some = next(iter(owner.held))
        assert await owner.claim(some) == (False, None)
        # Released open: claimable again at once; closed: never again.
        await owner.release(some, closed=False)
        assert (await other.claim(some))[0] is True
        await other.release(some, closed=True)
        assert await owner.claim(some) == (False, None)
        assert await other.claim(some) == (False, None)
    finally:
        await a.close()
        await b.close()


async def test_concurrent_releases_share_round_trips_and_never_deadlock_with_claims(
    pg_url: str,
) -> None:
    """Closing cases release their leases in groups (issue 36: one statement a case was a
    third of a worker's statements), racing another worker's claims of the same cases
    without losing a release or granting a closed case."""
    async with await open_writer(pg_url):
        pass
    a = await Log.at(pg_url).leases("c2")
    b = await Log.at(pg_url).leases("c2")
    try:
        assert all(ok for ok, _ in await asyncio.gather(*(a.claim(c) for c in CASES)))
        sent = _count_statements(a)
        closed = set(CASES[::2])
        # a releases in reverse case order (half closed, half given back) while b claims
        # every case in case order: only the given-back ones may go to b.
        _, got_b = await asyncio.gather(
            asyncio.gather(*(a.release(c, closed=c in closed) for c in reversed(CASES))),
            asyncio.gather(*(b.claim(c) for c in CASES)),
        )
        assert sent[0] <= 10, sent  # before: 300 statements
        assert a.release_round_trips == sent[0]
        assert not a.held
        won_b = {c for c, (ok, _) in zip(CASES, got_b, strict=True) if ok}
        assert won_b <= set(CASES) - closed
        # Every release landed: closed ones are never granted again, given-back ones are
        # (to b, now or on a second claim).
        again = await asyncio.gather(*(b.claim(c) for c in CASES if c not in won_b))
        regained = {c for c, (ok, _) in zip([c for c in CASES if c not in won_b], again,
                                             strict=True) if ok}  # fmt: skip
        assert won_b | regained == set(CASES) - closed
    finally:
        await a.close()
        await b.close()


async def _lease_rows(pg_url: str, campaign: str) -> dict[str, tuple[str | None, bool]]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT case_id, owner, done FROM leases WHERE campaign = %s", (campaign,)
        )
        return {c: (owner, done) for c, owner, done in await cur.fetchall()}


async def test_a_case_closed_marks_its_lease_done_in_the_same_commit(pg_url: str) -> None:
    """Issue 36: a worker's writer marks the lease of a case done in the commit of its
    CaseClosed, so closing a case costs no release statement (and no commit) of its own;
    only this worker's leases, and a commit racing another worker's claims never deadlocks."""
    async with await open_writer(pg_url) as writer:
        a = await Log.at(pg_url).leases("c3")
        b = await Log.at(pg_url).leases("c3")
        try:
            mine, theirs = CASES[:200], CASES[200:]
            assert all(ok for ok, _ in await asyncio.gather(*(a.claim(c) for c in mine)))
            assert all(ok for ok, _ in await asyncio.gather(*(b.claim(c) for c in theirs)))
            assert a.release_closed_in(writer) and a.closed_in_commit
            sent = _count_statements(a)
            closing = [
                writer.append_soon([PendingEvent("c3", c, 1, CaseClosed(outcome="HELD"))])
                for c in reversed(CASES)  # a's and (a case another worker holds) b's
            ]
            # ... while b tries to take every case over (refused: every lease is live).
            _, got_b = await asyncio.gather(
                asyncio.gather(*closing), asyncio.gather(*(b.claim(c) for c in CASES))
            )
            assert not any(ok for ok, _ in got_b)
            rows = await _lease_rows(pg_url, "c3")
            assert all(rows[c] == (None, True) for c in mine)
            assert all(rows[c] == (b.owner, False) for c in theirs)  # left to its holder
            await asyncio.gather(*(a.release(c, closed=True, committed=True) for c in mine))
            assert sent[0] == 0 and not a.held
            # A group with a taken position commits batch by batch: the batches that
            # commit release their leases, the failing one alone fails.
            assert (await a.claim("late"))[0] is True
            assert (await a.claim("late2"))[0] is True
            taken = writer.append_soon([PendingEvent("c3", "late", 1, CaseClosed(outcome="HELD"))])
            fine = writer.append_soon([PendingEvent("c3", "late2", 1, CaseClosed(outcome="HELD"))])
            first = writer.append_soon([PendingEvent("c3", "late", 1, CaseClosed(outcome="HELD"))])
            results = await asyncio.gather(taken, fine, first, return_exceptions=True)
            assert sum(isinstance(r, ConcurrencyError) for r in results) == 1
            rows = await _lease_rows(pg_url, "c3")
            assert rows["late2"] == (None, True) and rows["late"] == (None, True)
        finally:
            await a.close()
            await b.close()
