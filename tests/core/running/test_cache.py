"""Answer cache across campaigns: keyed by model, params, full history and repeat index
(not the engine's derived per-turn seed); misses are explained part by part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.models.sim import SimModel
from harness.plugins.assembly import build_report
from harness.reporting.report import to_json
from harness.running.cache import LogAnswerCache, cache_key
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.testing import FakeModel
from harness.verifying.replay import verify_log
from harness.vocabulary.model import GenerationParams, Message


def counting_sim() -> FakeModel:
    """The simulated model, its calls counted (``calls``)."""
    return FakeModel(name="sim:planted", wraps=SimModel("sim:planted"))


def config(cases: int = 10, repeats: int = 1, **defaults: Any) -> Any:
    return parse_campaign(
        {
            "name": "cache-test",
            "seed": 4,
            "repeats": repeats,
            "defaults": defaults,
            "models": [{"name": "sim:planted"}],
            "relations": [
                {"name": "metaquerier.mr1", "cases": cases, "options": {"list_size": 6}},
                {"name": "metafair.mr8", "cases": cases},
            ],
        }
    )


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    import asyncio

    db = tmp_path / "old.db"
    asyncio.run(run_campaign(config(), db))
    return db


async def test_same_campaign_is_answered_entirely_from_the_cache(
    old_db: Path, tmp_path: Path
) -> None:
    model = counting_sim()
    cache = LogAnswerCache.from_logs([old_db])
    new = tmp_path / "new.db"
    summary = await run_campaign(config(), new, overrides={"sim:planted": model}, cache=cache)
    print(
        f"cache: {len(cache.entries)} entries, {summary.cached} answers reused, "
        f"{model.calls} model calls"
    )
    # 10 MR1 cases of 3 turns (source, follow-up, and the matched control in its own
    # thread: a separate entry) and 10 MR8 cases of 2.
    assert model.calls == 0 and summary.calls == 0
    assert summary.cached == 50
    # Two cases of the plan send the very same request: they share one entry.
    assert len(cache.entries) <= 50
    with EventReader(old_db) as a, EventReader(new) as b:
        assert to_json(build_report(a)) == to_json(build_report(b))
        cached = b.connection.execute(
            "SELECT count(*) FROM events WHERE kind='ReplyReceived' "
            "AND json_extract(payload, '$.cached')"
        ).fetchone()[0]
    assert cached == 50
    assert verify_log(new).differences == []


async def test_new_cases_and_repeats_miss_and_the_rest_hits(old_db: Path, tmp_path: Path) -> None:
    model = counting_sim()
    cache = LogAnswerCache.from_logs([old_db])
    summary = await run_campaign(
        config(cases=15, repeats=2),
        tmp_path / "more.db",
        overrides={"sim:planted": model},
        cache=cache,
    )
    print(f"grown campaign: {summary.cached} reused, {model.calls} paid ({cache.lookups} lookups)")
    # Repeat 0 of the first 10 cases of each relation hit (and a new case whose request is
    # identical to an old one); repeat 1 always misses: the old log has repeat 0 only.
    assert summary.cached >= 40
    assert model.calls + summary.cached == 2 * 15 * (3 + 2)  # repeats x cases x turns
    with EventReader(tmp_path / "more.db") as log:
        cached_by_repeat = dict(
            log.connection.execute(
                "SELECT json_extract(o.payload, '$.case.repeat'), count(*) FROM events r "
                "JOIN events o ON o.case_id = r.case_id AND o.kind = 'CaseOpened' "
                "WHERE r.kind = 'ReplyReceived' AND json_extract(r.payload, '$.cached') "
                "GROUP BY 1"
            )
        )
    assert cached_by_repeat == {0: summary.cached}


def test_cache_key_leaves_out_only_the_derived_seed() -> None:
    msgs = [Message(role="user", content="hi")]
    a = GenerationParams(temperature=0.7, seed=1)
    b = GenerationParams(temperature=0.7, seed=2)
    assert cache_key("m", msgs, a, seed_derived=True) == cache_key("m", msgs, b, seed_derived=True)
    assert cache_key("m", msgs, a, seed_derived=False) != cache_key(
        "m", msgs, b, seed_derived=False
    )
    other = GenerationParams(temperature=0.2, seed=1)
    assert cache_key("m", msgs, a, seed_derived=True) != cache_key(
        "m", msgs, other, seed_derived=True
    )


async def test_explain_names_what_differs(old_db: Path, tmp_path: Path) -> None:
    new = tmp_path / "changed.db"
    await run_campaign(config(repeats=2, temperature=0.2), new)
    runner = CliRunner()
    out = runner.invoke(
        main, ["cache", "explain", str(new), "metafair.mr8/3/r1", "--from", str(old_db)]
    ).output
    print(out)
    assert "turn 0 [source]: MISS" in out
    assert "params   temperature 0.2 vs recorded None" in out
    assert "repeat   repeat 1 vs recorded 0" in out
    assert "messages" not in out.split("turn 1")[0]  # the source prompt is the same
    # A hit is reported as such.
    same = tmp_path / "same.db"
    await run_campaign(config(), same)
    hit = runner.invoke(
        main, ["cache", "explain", str(same), "metaquerier.mr1/2/r0", "--from", str(old_db)]
    ).output
    assert "turn 0 [conversation]: HIT from" in hit and "MISS" not in hit
    # A changed prompt: the first differing message and where it differs.
    other = tmp_path / "other.db"
    changed = config().model_copy(deep=True)
    relations = [
        r.model_copy(update={"options": {"list_size": 7}}) if r.name == "metaquerier.mr1" else r
        for r in changed.relations
    ]
    await run_campaign(changed.model_copy(update={"relations": relations}), other)
    diff = runner.invoke(
        main,
        [
            "cache",
            "explain",
            str(other),
            "metaquerier.mr1/0/r0",
            "--from",
            str(old_db),
            "--turn",
            "0",
        ],
    ).output
    print(diff)
    assert "turn 0 [conversation]: MISS" in diff
    assert "messages message 1 of 1 (user) differs at character" in diff
