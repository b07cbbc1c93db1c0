"""The order cases run in: interleaved across relations by default (seeded, derivable from
the recorded campaign), so a stop at k % leaves every relation with about k % of its cases;
file order for logs recorded before the order existed, and resume keeps each log's order."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.running.campaign import CampaignConfig, parse_campaign, parse_recorded_campaign
from harness.running.engine import Engine, NullProgress
from harness.running.plan import Plan, interleaved_positions
from harness.running.runner import resume_campaign, run_campaign
from harness.store.reader import EventReader
from harness.vocabulary.relation import Case, Verdict

FIXTURES = Path(__file__).parents[2] / "fixtures"
RELATIONS = (  # three sizes, the largest last: file order would run it last
    ("metaquerier.mr1", 30, {}),
    ("metaquerier.mr2", 60, {}),
    ("metafair.mr8", 90, {}),
)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**63),
    sizes=st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=6),
)
def test_every_prefix_of_the_interleave_holds_each_relations_share(
    seed: int, sizes: list[int]
) -> None:
    names = [f"family.r{i}" for i in range(len(sizes))]
    order = list(interleaved_positions(seed, names, sizes))
    assert Counter(order) == Counter({i: n for i, n in enumerate(sizes) if n})
    total = sum(sizes)
    done = [0] * len(sizes)
    for m, position in enumerate(order, start=1):
        done[position] += 1
        for r, n in enumerate(sizes):
            # Within one case of its share, plus the spread of the others' offsets.
            assert abs(done[r] - n * m / total) <= len(sizes) + 1, (m, done, sizes)
    # Derived from the seed alone: the same seed gives the same order.
    assert list(interleaved_positions(seed, names, sizes)) == order


def test_the_seed_decides_which_relation_leads() -> None:
    names, sizes = ["a.x", "a.y", "a.z"], [10, 10, 10]
    firsts = {next(interleaved_positions(seed, names, sizes)) for seed in range(40)}
    assert firsts == {0, 1, 2}


def test_a_new_campaign_interleaves_and_an_old_log_keeps_file_order(
    make_campaign: Callable[..., CampaignConfig],
) -> None:
    config = make_campaign(*RELATIONS)
    assert config.order == "interleaved"
    assert config.resolved()["order"] == "interleaved"  # recorded, so resume keeps it
    again = parse_campaign(config.resolved(), source="log", recorded=True)
    assert again.order == "interleaved" and again.config_hash() == config.config_hash()
    # A campaign recorded without the option ran in file order, and keeps its hash.
    old = {k: v for k, v in config.resolved().items() if k != "order"}
    recorded = parse_campaign(old, source="log", recorded=True)
    assert recorded.order == "file" and "order" not in recorded.resolved()
    file_order = make_campaign(*RELATIONS, order="file")
    assert file_order.config_hash() == recorded.config_hash()
    relations = [c.relation for c, _ in Plan(recorded).cases_for("sim:test")]
    assert relations == sorted(relations, key=[n for n, _, _ in RELATIONS].index)


@pytest.mark.parametrize("fixture", ["events_v1.db", "events_v2.db"])
def test_logs_written_before_the_order_existed_read_as_file_order(fixture: str) -> None:
    with EventReader(FIXTURES / fixture) as log:
        started = next(s.event for s in log.events(kinds=("CampaignStarted",)))
    config = parse_recorded_campaign(started.config, source=fixture)
    assert config.order == "file"
    assert "order" not in started.config and "order" not in config.resolved()


class _StopAt(NullProgress):
    """Stops the engine (as Ctrl-C does) once ``at`` cases have closed."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.closed = 0
        self.engine: Engine | None = None

    def case_closed(self, case: Case, verdict: Verdict) -> None:
        self.closed += 1
        if self.closed == self.at and self.engine is not None:
            self.engine.request_stop("test stop")


async def _run_until(config: CampaignConfig, db: Path, at: int) -> None:
    progress = _StopAt(at)
    original = Engine.run

    async def capture(self: Engine) -> Any:
        progress.engine = self
        return await original(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "run", capture)
        summary = await run_campaign(config, db, progress=progress)
    assert summary.status == "stopped"


def _opened(db: Path) -> tuple[list[str], Counter[str], CampaignConfig]:
    """The case ids in the order the log opened them, the closed cases per relation, and the
    campaign as the log recorded it."""
    with EventReader(db) as log:
        started = next(s.event for s in log.events(kinds=("CampaignStarted",)))
        opened = [s.case_id for s in log.events(kinds=("CaseOpened",))]
        closed = Counter(s.case_id.partition("/")[0] for s in log.events(kinds=("CaseClosed",)))
    return opened, closed, parse_recorded_campaign(started.config, source=str(db))


async def test_a_stop_at_30_percent_leaves_every_relation_a_third_done_and_resume_continues(
    make_campaign: Callable[..., CampaignConfig], tmp_path: Path
) -> None:
    config = make_campaign(*RELATIONS, max_in_flight=1)
    plan = Plan(config)
    db = tmp_path / "order.db"
    await _run_until(config, db, at=plan.total_cases * 3 // 10)
    opened, closed, recorded = _opened(db)
    shares = {name: closed[name] / count for name, _, count in plan.relations}
    print(f"stopped at {sum(closed.values())}/{plan.total_cases}: {shares}")
    assert all(0.2 <= share <= 0.4 for share in shares.values()), shares
    # The order is derived from the recorded campaign alone: one case at a time, the log
    # opened the cases in exactly the plan's order.
    planned = [c.case_id for c, _ in Plan(recorded).cases_for("sim:test")]
    assert opened == planned[: len(opened)]

    summary = await resume_campaign(db)
    assert summary.status == "completed"
    opened_after, closed_after, _ = _opened(db)
    assert sum(closed_after.values()) == plan.total_cases
    assert opened_after == planned  # resume continued the same order, nothing twice


async def test_a_log_in_file_order_resumes_in_file_order(
    make_campaign: Callable[..., CampaignConfig], tmp_path: Path
) -> None:
    config = make_campaign(*RELATIONS, max_in_flight=1, order="file")
    db = tmp_path / "file.db"
    await _run_until(config, db, at=20)
    _, closed, recorded = _opened(db)
    assert recorded.order == "file"
    assert set(closed) == {"metaquerier.mr1"}  # the first relation only, as before
    await resume_campaign(db)
    opened, _, _ = _opened(db)
    relations = [case_id.partition("/")[0] for case_id in opened]
    assert [k for k, _ in itertools.groupby(relations)] == [n for n, _, _ in RELATIONS]


def test_the_interleaved_plan_stays_lazy(make_campaign: Callable[..., CampaignConfig]) -> None:
    """A million cases over three relations: the plan's cursor holds one case per relation."""
    import tracemalloc

    config = make_campaign(
        ("metaquerier.mr1", 400_000, {}), ("metaquerier.mr2", 100_000, {}), repeats=2
    )
    plan = Plan(config)
    tracemalloc.start()
    try:
        cases = plan.cases_for("sim:test")
        for _ in itertools.islice(cases, 2_000):
            pass
        _, after_few = tracemalloc.get_traced_memory()
        seen = Counter(c.relation for c, _ in itertools.islice(cases, 20_000))
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert current < 2_000_000 and peak < after_few + 2_000_000, (after_few, peak)
    assert abs(seen["metaquerier.mr1"] / 20_000 - 0.8) < 0.01  # 4:1, as the sizes


def test_every_models_cases_follow_the_same_order(
    make_campaign: Callable[..., CampaignConfig],
) -> None:
    config = make_campaign(*RELATIONS)
    plan = Plan(config)
    first = [(c.relation, c.index) for c, _ in plan.cases_for("sim:a")]
    assert first == [(c.relation, c.index) for c, _ in plan.cases_for("sim:b")]
