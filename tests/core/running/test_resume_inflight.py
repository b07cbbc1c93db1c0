"""Resume of calls in flight at a crash: each is re-sent once with its recorded request, and
the case then continues after it (the re-sent turn is never asked again as a new turn)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness.models.sim import SimModel
from harness.running.campaign import parse_campaign
from harness.running.plan import Plan
from harness.running.runner import code_version, harness_version, resume_campaign
from harness.store.fold import messages_for
from harness.store.schema import connect
from harness.store.writer import EventWriter, PendingEvent
from harness.testing import FakeModel
from harness.verifying.replay import verify_log
from harness.vocabulary.events import AskSent, CampaignStarted, CaseOpened
from harness.vocabulary.model import GenerationParams, request_key
from harness.vocabulary.relation import Transcript, derive_seed


async def test_in_flight_turns_are_resent_once_and_not_asked_again(tmp_path: Path) -> None:
    config = parse_campaign(
        {
            "name": "inflight",
            "seed": 9,
            "models": [{"name": "sim:planted", "max_in_flight": 4}],
            "relations": [
                # Without the matched control: two turns a case (the requests counted below).
                {"name": "metaquerier.mr1", "cases": 6, "options": {"control": False}},
                {"name": "metafair.mr8", "cases": 6},
            ],
        }
    )
    db = tmp_path / "crash.db"
    crashed = 0
    async with await EventWriter.open(db) as store:
        started = CampaignStarted(
            name=config.name,
            config=config.resolved(),
            config_hash=config.config_hash(),
            code_version=code_version(),
            harness_version=harness_version(),
        )
        await store.append([PendingEvent("c1", "", 1, started)])
        # A crash with the first call of every other case under way: AskSent, no outcome.
        for i, (case, relation) in enumerate(Plan(config).all_cases()):
            if i % 2:
                continue
            ask = relation.step(case, Transcript())
            assert isinstance(ask, list)
            messages = messages_for(ask[0], Transcript())
            params = GenerationParams(seed=derive_seed(config.seed, case.case_id, 0) % (2**31))
            sent = AskSent(
                turn=0,
                ask=ask[0],
                model=case.model,
                messages=messages,
                params=params,
                request_key=request_key(case.model, messages, params),
            )
            await store.append(
                [
                    PendingEvent("c1", case.case_id, 1, CaseOpened(case=case)),
                    PendingEvent("c1", case.case_id, 2, sent),
                ]
            )
            crashed += 1
    model = FakeModel(name="sim:planted", wraps=SimModel("sim:planted"))
    summary = await resume_campaign(db, overrides={"sim:planted": model})
    requests = Counter(request_key(model.name, r.messages, r.params) for r in model.requests)
    conn = connect(db)
    replies_per_turn = conn.execute(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'ReplyReceived' "
        "GROUP BY case_id, turn)"
    ).fetchone()[0]
    sends_per_turn = conn.execute(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM events WHERE kind = 'AskSent' "
        "GROUP BY case_id, turn)"
    ).fetchone()[0]
    conn.close()
    print(
        f"resume after a crash: {summary.resent_in_flight} in-flight calls re-sent of "
        f"{crashed}; {model.calls} model calls for "
        f"{len(requests)} requests; at most {replies_per_turn} reply per turn"
    )
    assert summary.resent_in_flight == crashed == 6
    assert summary.cases_closed == 12
    assert replies_per_turn == 1
    assert sends_per_turn == 2  # the crashed attempt and its one re-send
    assert max(requests.values()) == 1  # no request was sent twice by the resume
    assert sum(requests.values()) == 24
    assert verify_log(db).differences == []
