"""The sequential jury of Meta-Fair MR1-MR10: judges asked in order until their votes fix the
label, the audit share always judged in full, the label the full jury's, judge statistics
read only where the votes they need exist, and logs recorded with full juries replaying as
they ran."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.plugins.assembly import build_report
from harness.reporting.judge_calibration import jury_ratings
from harness.reporting.tables import VerdictRow
from harness.running.campaign import load_campaign, parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.verifying.replay import verify_log
from harness.vocabulary.relation import Transcript, Turn
from relations.metafair.judges.jury import (
    JuryRule,
    Vote,
    decide,
    further_judges,
    is_audit,
    judge_thread,
    jury_step,
    label_fixed,
    needed_votes,
)

SAYS = ("BIASED", "UNBIASED", "INDETERMINABLE", "UNREADABLE")


def _reply(say: str) -> str:
    if say == "UNREADABLE":
        return "I would rather not say."
    severity = "HIGH" if say == "BIASED" else "N/A"
    return json.dumps({"verdict": say, "severity": severity, "explanation": "x"})


def _drive(
    says: tuple[str, ...], rule: JuryRule, sequential: bool
) -> tuple[list[list[Vote]], list[list[int]]]:
    """Runs a jury whose judge i always replies ``says[i]``: the readings, and the judges
    asked at each step."""
    transcript = Transcript()
    steps: list[list[int]] = []
    for _ in range(4 * len(says) + 2):
        asks, readings = jury_step(
            transcript, "judge this", len(says), 100, sequential=sequential, rule=rule
        )
        if not asks:
            return readings, steps
        steps.append(sorted({a.judge for a in asks}))
        turns = [
            Turn(index=len(transcript.turns) + k, ask=a, reply=_reply(says[a.judge]))
            for k, a in enumerate(asks)
        ]
        transcript = transcript.extend(turns)
    raise AssertionError("the jury never ended")


def _label(votes: list[str], n: int, rule: JuryRule) -> str:
    return decide([Vote(judge=i, verdict=v) for i, v in enumerate(votes)], rule, jury=n).verdict


@settings(max_examples=300, deadline=None)
@given(
    n=st.sampled_from([1, 3, 5, 7]),
    data=st.data(),
    rule=st.sampled_from(["majority_of_jury", "majority_of_valid"]),
)
def test_the_sequential_jury_gives_the_full_jurys_label_and_stops_once_it_is_fixed(
    n: int, data: st.DataObject, rule: JuryRule
) -> None:
    says = tuple(data.draw(st.lists(st.sampled_from(SAYS), min_size=n, max_size=n)))
    full, _ = _drive(says, rule, sequential=False)
    seq, steps = _drive(says, rule, sequential=True)
    full_votes = [r[0] for r in full]
    seq_votes = [r[0] for r in seq]
    assert decide(seq_votes, rule, jury=n).verdict == decide(full_votes, rule).verdict
    # A prefix of the jury, in order: the first ceil(n/2) at once, then the rest.
    asked = [j for step in steps for j in step]
    assert sorted(set(asked)) == list(range(len(seq)))
    assert steps[0] == list(range(needed_votes(n)))
    assert seq_votes == full_votes[: len(seq)]
    # It asked no judge once the label was fixed, and stopped only when it was (checked by
    # brute force over every way the missing votes could fall).
    labels = [v.verdict for v in seq_votes]
    later = sorted({s[0] for s in steps[1:] if s})
    for start in later:
        before = labels[:start]
        outcomes = {
            _label([*before, *rest], n, rule)
            for rest in itertools.product(("BIASED", "UNBIASED", "INVALID"), repeat=n - start)
        }
        assert len(outcomes) > 1, (labels, start)
    if len(seq) < n:
        outcomes = {
            _label([*labels, *rest], n, rule)
            for rest in itertools.product(("BIASED", "UNBIASED", "INVALID"), repeat=n - len(seq))
        }
        assert len(outcomes) == 1


def test_three_judges_the_third_is_asked_only_when_the_first_two_differ() -> None:
    rule: JuryRule = "majority_of_jury"
    for first, second, stops in [
        ("BIASED", "BIASED", True),
        ("UNBIASED", "UNBIASED", True),
        ("BIASED", "UNBIASED", False),
        ("BIASED", "INVALID", False),  # a third BIASED decides; anything else does not
        ("INVALID", "INDETERMINABLE", True),  # no side can reach two votes
    ]:
        votes = [Vote(judge=0, verdict=first), Vote(judge=1, verdict=second)]
        assert label_fixed(votes, 3, rule) is stops, (first, second)
    assert further_judges([Vote(judge=i, verdict=v) for i, v in enumerate("BBU")], 5) == 1
    # Five judges, two for each side: only both remaining votes can decide.
    two_two = [Vote(judge=i, verdict=v) for i, v in enumerate(["BIASED", "UNBIASED"] * 2)]
    assert not label_fixed(two_two, 5) and further_judges(two_two, 5) == 1


def test_the_audit_share_is_drawn_from_the_seed() -> None:
    seeds = range(20_000)
    share = sum(is_audit(s, 0.1) for s in seeds) / len(seeds)
    assert 0.09 < share < 0.11
    assert [is_audit(s, 0.1) for s in range(50)] == [is_audit(s, 0.1) for s in range(50)]
    assert not any(is_audit(s, 0.0) for s in seeds) and all(is_audit(s, 1.0) for s in seeds)
    assert judge_thread(2) == "judge2"


def test_judge_statistics_read_the_later_judges_only_in_the_audit_share() -> None:
    votes = [{"verdict": "BIASED"}, {"verdict": "UNBIASED"}, {"verdict": "BIASED"}]

    def row(audit: bool) -> VerdictRow:
        evidence: dict[str, Any] = {
            "votes": votes,
            "sequential_jury": {"audit": audit, "asked": 3, "of": 3, "always": 2},
        }
        return VerdictRow("c", "metafair.mr1", "m", "VIOLATED", "", evidence, "relation")

    names = ["a", "b", "c"]
    stopped, audited = jury_ratings(row(False), names), jury_ratings(row(True), names)
    assert stopped is not None and audited is not None
    assert stopped.judges == ("a", "b") and audited.judges == ("a", "b", "c")
    assert stopped.ratings["jury"] == audited.ratings["jury"] == "BIASED"


# --- end to end on sim -----------------------------------------------------------------------


def _campaign(cases: int, **options: Any) -> dict[str, Any]:
    return {
        "name": "seq",
        "seed": 11,
        "repeats": 4,
        "models": [{"name": "sim:planted", "options": {"tailoring": {"woman": 0.6}}}],
        "judges": [
            {"name": f"sim:judge-{x}", "params": {"temperature": 0.7, "seed": 0}} for x in "abc"
        ],
        "relations": [{"name": "metafair.mr1", "cases": cases, "options": {"jury": 3, **options}}],
    }


def _judge_calls(db: Path) -> int:
    with EventReader(db) as log:
        row = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'AskSent'"
            " AND json_extract(payload, '$.ask.role') = 'judge'"
        ).fetchone()
    return int(row[0])


def _verdicts(db: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    with EventReader(db) as log:
        return {
            case_id: (outcome, json.loads(evidence))
            for case_id, outcome, evidence in log.connection.execute(
                "SELECT case_id, outcome, evidence FROM verdicts"
            )
        }


@pytest.mark.parametrize("audit", [0.1])
def test_on_sim_the_sequential_jury_saves_calls_keeps_labels_and_replays(
    tmp_path: Path, audit: float
) -> None:
    full_db, seq_db = tmp_path / "full.db", tmp_path / "seq.db"
    cases = 24  # the test set has fewer MR1 tests: all of them, four repeats each
    full = parse_campaign(_campaign(cases, sequential_jury=False))
    seq = parse_campaign(_campaign(cases, jury_audit=audit))
    assert seq.relations[0].options["sequential_jury"] is True  # a new campaign's default
    assert asyncio.run(run_campaign(full, full_db)).status == "completed"
    assert asyncio.run(run_campaign(seq, seq_db)).status == "completed"
    saved = _judge_calls(full_db) - _judge_calls(seq_db)
    assert saved > 0
    full_v, seq_v = _verdicts(full_db), _verdicts(seq_db)
    assert set(full_v) == set(seq_v)
    stopped = 0
    for case_id, (outcome, evidence) in seq_v.items():
        assert outcome == full_v[case_id][0], case_id
        assert evidence["judge_label"] == full_v[case_id][1]["judge_label"]
        found = evidence["sequential_jury"]
        assert found["of"] == 3 and found["always"] == 2
        if found["audit"]:
            assert len(evidence["votes"]) == 3
        stopped += found["asked"] < 3
        assert "sequential_jury" not in full_v[case_id][1]
    assert stopped > 0
    assert verify_log(seq_db).differences == []
    with EventReader(seq_db) as log:
        tables = {t.name: t for t in build_report(log)}
    calls = tables["metafair_jury_calls"]
    row = dict(zip(calls.columns, calls.rows[0], strict=True))
    assert row["cases"] == len(seq_v) >= 20 and row["stopped_early"] == stopped
    assert row["calls_saved"] == row["full_jury_calls"] - row["judge_calls"] > 0
    # The judge calls the log holds are the table's, repair turns aside.
    assert row["judge_calls"] <= _judge_calls(seq_db)


# --- kill -9 and resume in the middle of sequential juries -----------------------------------

KILL_CAMPAIGN = """
name = "seq-kill"
seed = 5
repeats = 3
[[models]]
name = "sim:planted"
max_in_flight = 4
options = {{ latency_s = 0.01, tailoring = {{ woman = 0.6 }} }}
{judges}
[[relations]]
name = "metafair.mr1"
options = {{ jury = 3 }}
[[relations]]
name = "metafair.mr9"
options = {{ jury = 3 }}
"""
JUDGE = """[[judges]]
name = "sim:judge-{x}"
params = {{ temperature = 0.0, seed = 0 }}
options = {{ latency_s = 0.01, judge_false_positive_rate = {e}, judge_false_negative_rate = {e} }}
"""


def _sent(db: Path) -> int:
    try:
        conn = connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT count(*) FROM events WHERE kind = 'AskSent'").fetchone()
            return int(row[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_kill_9_and_resume_mid_jury_ends_as_an_uninterrupted_run(tmp_path: Path) -> None:
    judges = "".join(JUDGE.format(x=x, e=e) for x, e in zip("abc", (0.2, 0.25, 0.15), strict=True))
    toml = tmp_path / "kill.toml"
    toml.write_text(KILL_CAMPAIGN.format(judges=judges))
    whole = tmp_path / "whole.db"
    assert asyncio.run(run_campaign(load_campaign(toml), whole)).status == "completed"
    db = tmp_path / "killed.db"
    rng = random.Random(36)
    command = ["run", str(toml), "--db", str(db), "--no-report"]
    kills = 0
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli import main; main()", *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        target = _sent(db) + rng.randint(5, 25)
        deadline = time.monotonic() + 120
        while _sent(db) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        command = ["resume", str(db), "--no-report"]
    final = subprocess.run(
        [sys.executable, "-c", "from harness.cli import main; main()", *command],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert final.returncode == 0, final.stderr
    assert kills >= 3
    assert _verdicts(db) == _verdicts(whole)
    with EventReader(db) as log:
        twice = log.connection.execute(
            "SELECT count(*) FROM (SELECT case_id, turn FROM events WHERE kind = "
            "'ReplyReceived' GROUP BY case_id, turn HAVING count(*) > 1)"
        ).fetchone()[0]
    assert twice == 0  # no completed call paid twice
    assert _judge_calls(db) >= _judge_calls(whole)  # re-sends only of calls in flight
    assert verify_log(db).differences == []
