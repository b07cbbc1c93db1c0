"""Batch mode end to end against the sim's batch service: a multi-turn MetaQuerier relation
and a judged Meta-Fair relation give the same verdicts as a direct run with the same seeds,
replay verifies the batch log with 0 differences, waves follow turns (not cases), failed and
expired requests are sent again without paying any request twice, and a scheme with no batch
API is refused before the first call."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fixtures.log_snapshot import transcripts

from harness.models.sim_batch import billed_requests
from harness.reporting.batch_replies import batch_replies
from harness.reporting.tables import ReportContext
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.events import AskSent, Note, ReplyReceived

CORPUS = Path(__file__).resolve().parents[3] / "corpora" / "metafair" / "crossed_open_tests.json"


def campaign(sim_dir: Path, mode: str, **sim: Any) -> dict[str, Any]:
    options = {"batch_dir": str(sim_dir), **sim}
    return {
        "name": "batch-e2e",
        "seed": 11,
        "models": [{"name": "sim:planted", "mode": mode, "options": options}],
        "judges": [
            {
                "name": "sim:judge-a",
                "mode": mode,
                "answer_format": "structured",
                "params": {"temperature": 0.0, "seed": 0},
                "options": {"batch_dir": str(sim_dir), "judge_false_positive_rate": 0.1},
            }
        ],
        "relations": [
            {"name": "metaquerier.mr1", "cases": 12},
            {"name": "metafair.mr1", "cases": 6, "options": {"jury": 1, "testset": str(CORPUS)}},
        ],
        "batch": {"wave_size": 200, "wave_age_s": 0.05, "poll_s": 0.02, "poll_max_s": 0.05},
        "limits": {"max_attempts": 4},
    }


def run(data: dict[str, Any], db: Path) -> None:
    summary = asyncio.run(run_campaign(parse_campaign(data), db))
    assert summary.status == "completed" and not summary.retryable, summary.reason


def batch_notes(db: Path) -> list[Note]:
    with EventReader(db) as log:
        return [e.event for e in log.events(kinds=("Note",)) if isinstance(e.event, Note)]


def test_batch_run_equals_direct_run_and_replays(tmp_path: Path) -> None:
    sim_dir = tmp_path / "sim"
    run(campaign(sim_dir, "direct"), tmp_path / "direct.db")
    run(campaign(sim_dir, "batch"), tmp_path / "batch.db")
    direct, batched = transcripts(tmp_path / "direct.db"), transcripts(tmp_path / "batch.db")
    assert direct.keys() == batched.keys() and len(direct) == 18
    assert direct == batched
    verified = verify_log(tmp_path / "batch.db")
    assert verified.cases == 18 and not verified.differences

    with EventReader(tmp_path / "batch.db") as log:
        replies = [e.event for e in log.events(kinds=("ReplyReceived",))]
    assert replies and all(isinstance(r, ReplyReceived) and r.batch for r in replies)
    notes = batch_notes(tmp_path / "batch.db")
    waves = [n for n in notes if n.topic == "batch.wave"]
    ended = [n for n in notes if n.topic == "batch.ended"]
    assert len(ended) == len(waves) == len([n for n in notes if n.topic == "batch.submitted"])
    # MetaQuerier MR1 takes 2 steps and Meta-Fair MR1 a subject step and a judge step: the
    # subject's waves follow the steps, not the 18 cases.
    subject_waves = [w for w in waves if w.data["model"] == "sim:planted"]
    assert 2 <= len(subject_waves) <= 4
    billed = billed_requests(sim_dir)
    assert max(billed.values()) == 1 and sum(billed.values()) == len(replies)

    # The report counts the replies that came through a batch, per model; a direct log none.
    with EventReader(tmp_path / "batch.db") as log:
        (table,) = batch_replies(ReportContext(log, log.campaign_id(None)))
        asked = Counter(
            e.event.model for e in log.events(kinds=("AskSent",)) if isinstance(e.event, AskSent)
        )
    assert {row[0]: row[1] for row in table.rows} == asked
    assert {row[0]: row[2] for row in table.rows} == Counter(w.data["model"] for w in waves)
    with EventReader(tmp_path / "direct.db") as log:
        assert batch_replies(ReportContext(log, log.campaign_id(None))) == []


def test_failed_and_expired_requests_are_sent_again_once(tmp_path: Path) -> None:
    sim_dir = tmp_path / "sim"
    data = campaign(sim_dir, "batch", batch_fail_every=4, batch_expire_every=3)
    data["relations"] = data["relations"][:1]
    data["judges"] = []
    direct = dict(data, models=[{**data["models"][0], "mode": "direct"}])
    run(direct, tmp_path / "direct.db")
    run(data, tmp_path / "batch.db")
    assert transcripts(tmp_path / "direct.db") == transcripts(tmp_path / "batch.db")
    with EventReader(tmp_path / "batch.db") as log:
        failed = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'AskFailed'"
        ).fetchone()[0]
        replies = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'ReplyReceived'"
        ).fetchone()[0]
    notes = batch_notes(tmp_path / "batch.db")
    ended = [n.data["state"] for n in notes if n.topic == "batch.ended"]
    assert "expired" in ended and failed > 0
    billed = billed_requests(sim_dir)
    assert max(billed.values()) == 1 and sum(billed.values()) == replies


def test_a_scheme_without_a_batch_api_is_refused_before_the_first_call(tmp_path: Path) -> None:
    data = {
        "name": "no-batch",
        "models": [{"name": "local:llama", "mode": "batch"}],
        "relations": [{"name": "metaquerier.mr1", "cases": 1}],
    }
    with pytest.raises(ConfigError) as caught:
        run(data, tmp_path / "x.db")
    assert caught.value.field == "models['local:llama'].mode"
    assert not (tmp_path / "x.db").exists()


def test_direct_mode_and_default_batch_options_leave_the_config_hash_alone() -> None:
    relations = [{"name": "metaquerier.mr1", "cases": 2}]
    base = {"name": "h", "models": [{"name": "sim:planted"}], "relations": relations}
    explicit = {
        **base,
        "models": [{"name": "sim:planted", "mode": "direct"}],
        "batch": {"wave_size": 1000},
    }
    plain, same = parse_campaign(base), parse_campaign(explicit)
    assert plain.config_hash() == same.config_hash()
    assert "batch" not in plain.resolved() and "mode" not in plain.resolved()["models"][0]
    batched = parse_campaign({**base, "models": [{"name": "sim:planted", "mode": "batch"}]})
    assert batched.config_hash() != plain.config_hash()


def test_harness_run_batch_from_the_command_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli.main import main

    toml = tmp_path / "c.toml"
    toml.write_text(
        'name = "cli"\nseed = 2\n[[models]]\nname = "sim:planted"\n'
        f'options = {{ batch_dir = "{tmp_path / "sim"}" }}\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 3\n'
        "[batch]\nwave_age_s = 0.05\npoll_s = 0.02\n"
    )
    db = tmp_path / "cli.db"
    result = CliRunner().invoke(main, ["run", str(toml), "--batch", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "vendor batch" in result.output  # the report's batch_replies table
    assert sum(billed_requests(tmp_path / "sim").values()) == 9
    refused = tmp_path / "refused.toml"
    refused.write_text(
        'name = "cli"\n[[models]]\nname = "local:smol"\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 1\n'
    )
    result = CliRunner().invoke(main, ["run", str(refused), "--batch", "--db", str(db) + "2"])
    assert result.exit_code == 2 and "mode" in result.output
