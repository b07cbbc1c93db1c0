"""Replay: unchanged code reproduces every ask and verdict; changed code is pinpointed;
no network is ever touched; replays and the live run give identical reports."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.counting_vendor import CountingVendor

from harness.cli import main
from harness.plugins.assembly import build_report
from harness.plugins.family_parts import relation_classes
from harness.reporting.report import to_json
from harness.running.campaign import CampaignConfig, parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import describe, replay_into, verify_log
from harness.vocabulary.relation import Outcome, Verdict

TRANSCRIPT = Path(__file__).resolve().parents[3] / "transcripts" / "smollm2.db"


def sim_campaign(cases: int = 20, *, model: dict[str, Any] | None = None) -> CampaignConfig:
    return parse_campaign(
        {
            "name": "replay-test",
            "seed": 11,
            "repeats": 2,
            "models": [model or {"name": "sim:planted", "max_in_flight": 8}],
            "relations": [
                {"name": "metaquerier.mr1", "cases": cases},
                {"name": "metaquerier.mr2", "cases": cases},
                {"name": "metafair.mr8", "cases": cases},
            ],
        }
    )


@pytest.fixture(scope="module")
def live_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    db = tmp_path_factory.mktemp("replay") / "live.db"
    asyncio.run(run_campaign(sim_campaign(), db))
    return db


def _count(db: Path, kind: str) -> int:
    with EventReader(db) as log:
        row = log.connection.execute("SELECT count(*) FROM events WHERE kind = ?", (kind,))
        return int(row.fetchone()[0])


def test_unchanged_code_replays_with_zero_differences(live_db: Path) -> None:
    result = verify_log(live_db)
    print(
        f"replay: {result.cases} cases, {result.asks} asks, {result.verdicts} verdicts, "
        f"{len(result.differences)} differences, {result.elapsed_s:.2f}s"
    )
    assert result.differences == []
    assert result.cases == 120
    assert result.asks == _count(live_db, "AskSent")
    assert result.verdicts == _count(live_db, "VerdictReached") == 120


def test_changed_follow_up_is_listed_case_by_case(
    live_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = relation_classes()["metaquerier.mr1"]
    original = cls.step

    def step(self: Any, case: Any, transcript: Any) -> Any:
        result = original(self, case, transcript)
        if isinstance(result, list) and transcript.turns and case.index % 3 == 0:
            return [a.model_copy(update={"prompt": a.prompt + " Be brief."}) for a in result]
        return result

    monkeypatch.setattr(cls, "step", step)
    result = verify_log(live_db)
    expected = {f"metaquerier.mr1/{i}/r{r}@sim:planted" for i in range(0, 20, 3) for r in (0, 1)}
    print(f"changed MR1 follow-up: {len(result.differences)} differences in {len(expected)} cases")
    assert {m.case_id for m in result.differences} == expected
    assert all(m.what == "ask" and m.turn == 1 for m in result.differences)
    assert all(
        "Be brief." in m.replayed and "Be brief." not in m.recorded for m in result.differences
    )


def test_changed_verdict_is_listed_and_verify_fails(
    live_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = relation_classes()["metafair.mr8"]
    original = cls.step

    def step(self: Any, case: Any, transcript: Any) -> Any:
        result = original(self, case, transcript)
        if isinstance(result, Verdict) and result.outcome == Outcome.VIOLATED:
            return result.model_copy(update={"outcome": Outcome.HELD})
        return result

    monkeypatch.setattr(cls, "step", step)
    with EventReader(live_db) as log:
        violated = {
            row[0]
            for row in log.connection.execute(
                "SELECT case_id FROM verdicts WHERE relation = 'metafair.mr8' "
                "AND outcome = 'VIOLATED'"
            )
        }
    result = verify_log(live_db)
    print(f"flipped MR8 verdicts: {len(result.differences)} differences, {len(violated)} expected")
    assert violated
    assert {m.case_id for m in result.differences} == violated
    assert all(m.what == "verdict" for m in result.differences)
    cli = CliRunner().invoke(main, ["replay", str(live_db), "--verify"])
    assert cli.exit_code == 1
    assert f"{len(violated)} differences" in cli.output
    assert "verdict differs" in cli.output


def test_changed_case_generation_is_reported(
    live_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = relation_classes()["metaquerier.mr2"]
    original = cls.make_case

    def make_case(self: Any, index: int, seed: int) -> dict[str, Any]:
        data = original(self, index, seed)
        if index != 4:
            return data
        return {**data, "gender": "male" if data["gender"] == "female" else "female"}

    monkeypatch.setattr(cls, "make_case", make_case)
    result = verify_log(live_db)
    print(f"changed make_case of one case: {len(result.differences)} differences")
    assert {m.case_id for m in result.differences} == {
        "metaquerier.mr2/4/r0@sim:planted",
        "metaquerier.mr2/4/r1@sim:planted",
    }
    assert all(m.what == "case data" for m in result.differences)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    attempts: list[object] = []

    def forbidden(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network is forbidden in this test")

    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(socket.socket, "connect_ex", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)
    return attempts


async def test_replay_of_a_vendor_campaign_is_offline_and_reports_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vendor = CountingVendor((0.0, 2.0)).start()
    try:
        config = sim_campaign(
            8,
            model={
                "name": "openai-compat:sim",
                "options": {"base_url": vendor.url},
                "max_in_flight": 8,
            },
        )
        live = tmp_path / "live.db"
        await run_campaign(config, live)
    finally:
        vendor.stop()
    calls = vendor.total
    live_report = to_json(build_report(EventReader(live)))

    attempts: list[object] = []

    def forbidden(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network is forbidden in this test")

    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(socket.socket, "connect_ex", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)
    reports = []
    for i in range(3):
        out = tmp_path / f"replay{i}.db"
        run = await replay_into(live, out)
        assert run.misses == 0
        assert run.served == calls
        with EventReader(out) as log:
            reports.append(to_json(build_report(log)))
    verified = verify_log(live)
    print(
        f"offline replay: {calls} live vendor calls, 3 replays, {len(attempts)} connection "
        f"attempts, {len(verified.differences)} differences, reports identical: "
        f"{all(r == live_report for r in reports)}"
    )
    assert attempts == []
    assert verified.differences == []
    assert json.loads(live_report)["violation_rates"]["rows"]
    assert all(r == live_report for r in reports)


def test_recorded_smollm2_transcript_replays_offline(no_network: list[object]) -> None:
    if not TRANSCRIPT.exists():
        pytest.fail(f"{TRANSCRIPT} is missing: it is committed with the repository")
    result = verify_log(TRANSCRIPT)
    print(
        f"transcripts/smollm2.db: {result.cases} cases, {result.asks} asks, "
        f"{len(result.differences)} differences, {len(no_network)} connection attempts"
    )
    assert result.cases >= 10
    assert result.differences == [], (
        "today's relations compute other asks or verdicts than the recorded SmolLM2 campaign: "
        "if the change is intended, re-record it (see transcripts/smollm2.toml)\n"
        + "\n".join(describe(result))
    )
    assert no_network == []


async def test_replay_into_refuses_to_overwrite(live_db: Path, tmp_path: Path) -> None:
    from harness.vocabulary.errors import StoreError

    out = tmp_path / "exists.db"
    out.write_bytes(b"")
    with pytest.raises(StoreError, match="exists"):
        await replay_into(live_db, out)


async def test_a_replay_model_standing_in_for_a_recorded_one_serves_its_answers(
    tmp_path: Path,
) -> None:
    # `replay:LOG` with options.model: the campaign knows the model by its own name, the
    # log by the recorded one (this crashed the engine with a KeyError before).
    seeded = {"name": "sim:planted", "max_in_flight": 4, "params": {"seed": 7}}
    recorded = tmp_path / "recorded.db"
    live = await run_campaign(sim_campaign(5, model=seeded), recorded)
    stand_in = {
        "name": f"replay:{recorded}",
        "max_in_flight": 4,
        "params": {"seed": 7},
        "options": {"model": "sim:planted"},
    }
    replayed = await run_campaign(sim_campaign(5, model=stand_in), tmp_path / "again.db")
    assert replayed.failures == 0 and replayed.calls == live.calls
    assert replayed.outcomes == live.outcomes
