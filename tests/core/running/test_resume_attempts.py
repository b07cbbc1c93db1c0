"""Only attempts that got an answer or a vendor error count toward ``max_attempts``: calls
cancelled at a stop or lost in a crash do not use up a turn's retries."""

from __future__ import annotations

from pathlib import Path

from harness.models.sim import SimModel
from harness.running.campaign import parse_campaign
from harness.running.plan import Plan
from harness.running.runner import code_version, harness_version, resume_campaign
from harness.store.fold import messages_for
from harness.store.reader import EventReader
from harness.store.writer import EventWriter, PendingEvent
from harness.testing import FakeModel
from harness.vocabulary.errors import RateLimitedError
from harness.vocabulary.events import AskFailed, AskSent, CampaignStarted, CaseOpened, ReplyReceived
from harness.vocabulary.model import GenerationParams, request_key
from harness.vocabulary.relation import Transcript, derive_seed


async def test_interrupted_attempts_do_not_use_up_the_retries(tmp_path: Path) -> None:
    config = parse_campaign(
        {
            "name": "attempts",
            "seed": 3,
            "models": [{"name": "sim:planted", "max_in_flight": 1}],
            "relations": [{"name": "metaquerier.mr1", "cases": 1}],
            "limits": {"max_attempts": 3},
        }
    )
    db = tmp_path / "kills.db"
    case, relation = next(iter(Plan(config).all_cases()))
    asks = relation.step(case, Transcript())
    assert isinstance(asks, list)
    messages = messages_for(asks[0], Transcript())
    params = GenerationParams(seed=derive_seed(config.seed, case.case_id, 0) % (2**31))

    def sent(attempt: int) -> AskSent:
        return AskSent(
            turn=0,
            attempt=attempt,
            ask=asks[0],
            model=case.model,
            messages=messages,
            params=params,
            request_key=request_key(case.model, messages, params),
        )

    cancelled = AskFailed(
        turn=0,
        attempt=2,
        error_kind="cancelled",
        message="call cancelled at stop",
        retryable=True,
        decision="retry",
    )
    # Three interruptions with the first turn under way: a kill -9 (no outcome), a stop
    # past its grace period (cancelled), another kill -9.
    async with await EventWriter.open(db) as store:
        started = CampaignStarted(
            name=config.name,
            config=config.resolved(),
            config_hash=config.config_hash(),
            code_version=code_version(),
            harness_version=harness_version(),
        )
        await store.append([PendingEvent("c1", "", 1, started)])
        events = [CaseOpened(case=case), sent(1), sent(2), cancelled, sent(3)]
        await store.append(
            [PendingEvent("c1", case.case_id, i + 1, ev) for i, ev in enumerate(events)]
        )
    # Answers 429 to its first call, then like the simulator.
    model = FakeModel(
        name="sim:planted",
        wraps=SimModel("sim:planted"),
        fail_first=[RateLimitedError("slow down", status=429, retry_after=0.01)],
    )
    summary = await resume_campaign(db, overrides={"sim:planted": model})
    with EventReader(db) as log:
        turn0 = [e.event for e in log.events("c1") if getattr(e.event, "turn", None) == 0]
    failures = [e for e in turn0 if isinstance(e, AskFailed)]
    # The 429 is the first attempt that reached the model: it is retried, not given up.
    assert [f.decision for f in failures] == ["retry", "retry"]
    assert any(isinstance(e, ReplyReceived) for e in turn0)
    assert summary.cases_closed == 1 and summary.outcomes["invalid"] == 0
