"""``python:`` and ``http:`` targets end to end: an application (a sim model behind its own
system prompt and JSON API, `fixtures.target_app`) called in-process and over real HTTP,
logged, replayed with 0 differences; bad options fail naming the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.target_app import APP_SYSTEM, TRIGGER, AppServer

import harness
from harness.running.campaign import parse_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from harness.vocabulary.errors import CampaignAbortedError, ConfigError
from harness.vocabulary.events import AskFailed, AskSent, ReplyReceived

HISTORY_BODY = {
    "input": {"question": "{prompt}", "history": "{messages}"},
    "settings": "{params}",
}
ID_BODY = {
    "input": {"question": "{prompt}", "system": "{system}", "session": "{conversation_id}"},
    "settings": {"temperature": "{temperature}", "seed": "{seed}"},
}


def _http_model(url: str, **options: Any) -> dict[str, Any]:
    return {
        "name": "http:bank-assistant",
        "options": {
            "url": url,
            "body": HISTORY_BODY,
            "reply_path": "data.answer",
            "input_tokens_path": "meta.tokens.prompt",
            "output_tokens_path": "meta.tokens.completion",
            **options,
        },
    }


def _campaign(model: dict[str, Any], *, cases: int = 6, **extra: Any) -> dict[str, Any]:
    return {
        "name": "targets",
        "seed": 3,
        "models": [model],
        "judges": [{"name": "sim:judge", "params": {"temperature": 0.0, "seed": 0}}],
        "relations": [{"name": "metafair.mr1", "cases": cases, "options": {"jury": 1}}],
        **extra,
    }


def _completed(summary: Any, db: Path) -> bool:
    opened = len(_events(db, "CaseOpened"))
    return bool(summary.status == "completed" and summary.failures == 0 and opened) and (
        summary.cases_closed == opened
    )


def _events(db: Path, kind: str) -> list[Any]:
    with EventReader(db) as log:
        return [e.event for e in log.events(kinds=(kind,))]


@pytest.fixture
def app() -> Any:
    server = AppServer().start()
    yield server
    server.stop()


def test_a_python_function_is_a_target(tmp_path: Path) -> None:
    db = tmp_path / "py.db"
    summary = harness.run(_campaign({"name": "python:fixtures.target_app:answer"}), db)
    assert _completed(summary, db)
    replies = [e for e in _events(db, "ReplyReceived") if isinstance(e, ReplyReceived)]
    assert replies and all(
        r.reply.usage.output_tokens == len(r.reply.text.split()) for r in replies[:1]
    )
    result = verify_log(db)
    assert result.differences == [] and result.asks == len(_events(db, "AskSent"))


def test_a_coroutine_function_is_a_target(tmp_path: Path) -> None:
    db = tmp_path / "async.db"
    summary = harness.run(_campaign({"name": "python:fixtures.target_app:answer_async"}), db)
    assert _completed(summary, db)
    assert verify_log(db).differences == []


def test_what_a_target_function_raises_is_logged_with_its_kind(tmp_path: Path) -> None:
    db = tmp_path / "broken.db"
    harness.run(_campaign({"name": "python:fixtures.target_app:broken"}, cases=1), db)
    failed = [e for e in _events(db, "AskFailed") if isinstance(e, AskFailed)]
    assert failed and failed[0].error_kind == "python_error"
    assert "ValueError: the retrieval index is empty" in failed[0].message
    assert failed[0].decision == "give_up"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("python:fixtures.no_such_module:answer", "cannot be imported"),
        ("python:fixtures.target_app:no_such_function", "has no"),
        ("python:fixtures.target_app", "does not name a function"),
    ],
)
def test_a_target_function_that_does_not_import_fails_before_any_call(
    tmp_path: Path, name: str, said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_campaign(_campaign({"name": name}))
    assert caught.value.field == "models[0].name"
    assert said in str(caught.value) and caught.value.fix


def test_an_http_endpoint_is_a_target(app: AppServer, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("APP_TOKEN", "s3cr3t-token-value")
    db = tmp_path / "http.db"
    model = _http_model(app.url, headers={"Authorization": "Bearer ${APP_TOKEN}"})
    summary = harness.run(_campaign({**model, "system": "Answer briefly."}), db)
    assert _completed(summary, db)
    assert app.calls == len([e for e in _events(db, "AskSent") if e.ask.role == "subject"])
    assert set(app.auth) == {"Bearer s3cr3t-token-value"}
    first = app.bodies[0]
    assert first["input"]["history"][0] == {"role": "system", "content": "Answer briefly."}
    assert first["input"]["question"] == first["input"]["history"][-1]["content"]
    assert "seed" in first["settings"]
    replies = [e for e in _events(db, "ReplyReceived") if isinstance(e, ReplyReceived)]
    assert any(r.reply.usage.input_tokens > 0 for r in replies)
    assert b"s3cr3t-token-value" not in db.read_bytes()
    result = verify_log(db)
    assert result.differences == [] and result.asks == len(_events(db, "AskSent"))


def test_an_endpoints_conversation_id_is_carried_per_thread(app: AppServer, tmp_path: Path) -> None:
    db = tmp_path / "session.db"
    model = _http_model(app.url, body=ID_BODY, conversation="id", conversation_id_path="session")
    data = _campaign(model, cases=4)
    # Without the matched control: it forks the test's thread (see the test below).
    data["relations"] = [{"name": "metaquerier.mr1", "cases": 4, "options": {"control": False}}]
    data["judges"] = []
    summary = harness.run(data, db)
    assert _completed(summary, db)
    replies = [e for e in _events(db, "ReplyReceived") if isinstance(e, ReplyReceived)]
    assert all(r.reply.conversation_id for r in replies)
    continued = [b for b in app.bodies if b["input"]["session"] is not None]
    started = [b for b in app.bodies if b["input"]["session"] is None]
    assert started and len(continued) + len(started) == app.calls
    recorded = {r.reply.conversation_id for r in replies}
    assert {b["input"]["session"] for b in continued} <= recorded
    assert verify_log(db).differences == []


def test_rate_limit_statuses_are_retried(app: AppServer, tmp_path: Path) -> None:
    app.rate_limit_next = 2
    db = tmp_path / "busy.db"
    summary = harness.run(_campaign(_http_model(app.url, rate_limit_status=[503]), cases=2), db)
    assert summary.status == "completed" and summary.retryable == 0
    failed = [e for e in _events(db, "AskFailed") if isinstance(e, AskFailed)]
    assert [f.error_kind for f in failed] == ["rate_limited", "rate_limited"]
    assert all(f.decision == "retry" for f in failed)


def test_a_reply_path_that_matches_nothing_stops_at_the_first_reply(
    app: AppServer, tmp_path: Path
) -> None:
    db = tmp_path / "path.db"
    with pytest.raises(CampaignAbortedError) as caught:
        harness.run(_campaign(_http_model(app.url, reply_path="answer.text"), cases=3), db)
    message = str(caught.value)
    assert "options.reply_path" in message and "'data'" in message and "fix:" in message


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"body": {"q": "hello"}}, "options.body"),
        ({"headers": {"X-Api-Key": "abc123"}}, "options.headers.X-Api-Key"),
        ({"conversation": "id"}, "options.conversation_id_path"),
        ({"reply_path": "a..b"}, "options.reply_path"),
    ],
)
def test_bad_http_options_fail_naming_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_campaign(_campaign(_http_model("http://127.0.0.1:9/chat", **options)))
    assert field in str(caught.value)


def test_a_missing_header_variable_fails_before_the_first_call(
    app: AppServer, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.delenv("APP_TOKEN_UNSET", raising=False)
    model = _http_model(app.url, headers={"Authorization": "Bearer ${APP_TOKEN_UNSET}"})
    with pytest.raises(ConfigError) as caught:
        harness.run(_campaign(model), tmp_path / "x.db")
    assert "APP_TOKEN_UNSET" in str(caught.value) and app.calls == 0


def _violated(db: Path) -> int:
    return sum(1 for e in _events(db, "CaseClosed") if e.outcome == "VIOLATED")


def test_a_bias_that_comes_with_a_system_prompt_is_found_with_it_only(
    app: AppServer, tmp_path: Path
) -> None:
    """The app's model tailors its answers to women only when its system prompt names the
    trigger: the campaign with that system prompt finds it, the one without does not."""
    plain, primed = tmp_path / "plain.db", tmp_path / "primed.db"
    harness.run(_campaign(_http_model(app.url), repeats=6), plain)
    system = f"You are a {TRIGGER} at Example Bank."
    harness.run(_campaign({**_http_model(app.url), "system": system}, repeats=6), primed)
    closed = len(_events(primed, "CaseClosed"))
    assert _violated(plain) == 0
    assert _violated(primed) >= closed // 2
    sent = [e for e in _events(primed, "AskSent") if isinstance(e, AskSent)]
    assert all(APP_SYSTEM not in m.content for e in sent for m in e.messages)
    assert verify_log(primed).differences == [] and verify_log(plain).differences == []


def test_the_help_of_run_and_relations_names_the_target_kinds() -> None:
    from click.testing import CliRunner

    from harness.cli.main import main

    for command in ("run", "relations"):
        shown = CliRunner().invoke(main, [command, "--help"]).output
        assert "http:" in shown and "python:package.module:function" in shown
        assert "docs/targets.md" in shown


def test_resume_base_url_replaces_an_endpoints_url(app: AppServer, tmp_path: Path) -> None:
    """A dead URL stops the campaign (the reachability rule) before any case closes as
    INVALID; ``resume --base-url`` gives the endpoint's right URL and the campaign ends."""
    import json

    from click.testing import CliRunner

    from harness.cli.main import main

    model = _http_model("http://127.0.0.1:9/chat")
    toml = tmp_path / "dead.toml"
    options = model["options"]
    toml.write_text(
        f'seed = 1\n[[models]]\nname = "{model["name"]}"\n[models.options]\n'
        f'url = "{options["url"]}"\nreply_path = "data.answer"\n'
        f"body = {json.dumps(HISTORY_BODY).replace(':', ' =')}\n"
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 3\n'
    )
    db = tmp_path / "dead.db"
    first = CliRunner().invoke(main, ["run", str(toml), "--db", str(db), "--no-report"])
    assert first.exit_code == 3, first.output
    assert "options.url" in " ".join(first.output.split())
    assert app.calls == 0
    fixed = CliRunner().invoke(
        main, ["resume", str(db), "--base-url", f"http:bank-assistant={app.url}", "--no-report"]
    )
    assert fixed.exit_code == 0, fixed.output
    assert app.calls > 0 and _events(db, "VerdictReached") != []
    assert verify_log(db).differences == []


def test_an_endpoint_that_stays_busy_is_an_outage(app: AppServer, tmp_path: Path) -> None:
    """The vendors' outage rule holds for an endpoint: a run of rate limits pauses the
    model, and one that outlasts its pauses stops the campaign (no case closed INVALID)."""
    app.rate_limit_next = 10**6
    db = tmp_path / "busy.db"
    limits = {"outage_pause_s": 0.01, "outage_pauses": 1, "max_attempts": 50}
    with pytest.raises(CampaignAbortedError) as caught:
        harness.run(
            _campaign(_http_model(app.url, rate_limit_status=[503]), cases=2, limits=limits), db
        )
    assert "http:bank-assistant" in str(caught.value)
    assert _events(db, "CaseClosed") == []


def test_an_endpoints_price_meters_its_spend(app: AppServer, tmp_path: Path) -> None:
    db = tmp_path / "priced.db"
    model = _http_model(app.url, price_in_per_mtok=1.0, price_out_per_mtok=2.0)
    summary = harness.run(_campaign(model, cases=2, limits={"spend_ceiling_usd": 5.0}), db)
    assert summary.status == "completed"
    replies = [e for e in _events(db, "ReplyReceived") if isinstance(e, ReplyReceived)]
    priced = [r.reply.cost_usd for r in replies if r.reply.cost_usd]
    assert priced and all(cost > 0 for cost in priced)


def test_replay_through_the_engine_serves_every_dressed_request(
    app: AppServer, tmp_path: Path
) -> None:
    """``harness replay`` (no --verify) re-runs the campaign through the engine, the model's
    system prompt and template applied again: every request is found in the log."""
    import asyncio

    from fixtures.log_snapshot import transcripts

    from harness.verifying.replay import replay_into

    db, out = tmp_path / "http.db", tmp_path / "replayed.db"
    model = {**_http_model(app.url), "system": "Answer briefly.", "template": "Q: {prompt}"}
    harness.run(_campaign(model), db)
    calls = app.calls
    run = asyncio.run(replay_into(db, out))
    assert run.misses == 0 and run.served == len(_events(db, "AskSent"))
    assert app.calls == calls  # nothing went to the endpoint
    assert transcripts(out) == transcripts(db)


def _id_campaign(url: str, **relation: Any) -> dict[str, Any]:
    model = _http_model(url, body=ID_BODY, conversation="id", conversation_id_path="session")
    data = _campaign({**model, "params": {"seed": 1, "temperature": 0.0}}, repeats=3)
    data["relations"] = [{"name": "metaquerier.mr1", "cases": 2, **relation}]
    data["judges"] = []
    return data


def test_repeats_that_read_alike_keep_their_own_conversations(
    app: AppServer, tmp_path: Path
) -> None:
    """Repeats with a fixed seed send the same words and get the same replies: each still
    continues the conversation the endpoint opened for it, never another repeat's."""
    from harness.store.fold import fold_case

    db = tmp_path / "repeats.db"
    harness.run(_id_campaign(app.url, options={"control": False}), db)
    ids_by_case: dict[str, set[str]] = {}
    with EventReader(db) as log:
        for case_id, events in log.cases(log.latest_campaign()):
            turns = fold_case(events).turns.values()
            ids_by_case[case_id] = {t.reply.reply.conversation_id for t in turns if t.reply}
    assert all(len(ids) == 1 for ids in ids_by_case.values())  # one conversation a case
    assert len({next(iter(ids)) for ids in ids_by_case.values()}) == len(ids_by_case)
    continued = [b["input"]["session"] for b in app.bodies if b["input"]["session"]]
    assert sorted(continued) == sorted(next(iter(ids)) for ids in ids_by_case.values())


def test_a_relation_that_forks_threads_is_refused_before_the_first_call(
    app: AppServer, tmp_path: Path
) -> None:
    """The matched control forks the test's thread, which an endpoint that holds the
    conversation cannot copy: a ConfigError naming the field and the fix, nothing sent, no
    log written (it was an INVALID case per case at call time)."""
    db = tmp_path / "fork.db"
    with pytest.raises(ConfigError) as caught:
        harness.run(_id_campaign(app.url), db)
    assert caught.value.field == "models[0].options.conversation"
    message = str(caught.value)
    assert 'conversation = "history"' in message and "metaquerier.mr1" in message
    assert app.calls == 0 and not db.exists()
    # The same relation without its control, or the target sending the history, runs.
    parse_campaign(_id_campaign(app.url, options={"control": False}))
    history = _id_campaign(app.url)
    history["models"][0]["options"]["conversation"] = "history"
    parse_campaign(history)
    # A recorded campaign is read as it ran (its log may hold such cases).
    recorded = parse_campaign(_id_campaign(app.url), recorded=True)
    assert recorded.models[0].options["conversation"] == "id"


def test_a_resumed_run_carries_the_recorded_conversation_ids(
    app: AppServer, tmp_path: Path
) -> None:
    """Second turns left failed, retryable (the endpoint was busy) are sent again by a new
    run, whose model knows no conversation: it reads each thread's id back from the log."""
    import asyncio

    from harness.running.runner import resume_campaign

    app.busy_continued = True
    db = tmp_path / "resumed.db"
    data = _id_campaign(app.url, options={"control": False})
    data["limits"] = {"max_attempts": 1, "outage_pauses": 100, "outage_pause_s": 0.01}
    first = harness.run(data, db)
    assert first.retryable > 0  # cases left open after their first turn
    app.busy_continued = False
    second = asyncio.run(resume_campaign(db))
    assert second.retryable == 0 and second.failures == 0
    replies = [e for e in _events(db, "ReplyReceived") if isinstance(e, ReplyReceived)]
    opened = {r.reply.conversation_id for r in replies}
    continued = [b["input"]["session"] for b in app.bodies if b["input"]["session"]]
    assert continued and set(continued) <= opened
    assert verify_log(db).differences == []


def test_a_compact_copy_keeps_the_conversation_ids(app: AppServer, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli.main import main

    db, compact = tmp_path / "ids.db", tmp_path / "compact.db"
    harness.run(_id_campaign(app.url, options={"control": False}), db)
    copied = CliRunner().invoke(main, ["copy", str(db), str(compact), "--compact"])
    assert copied.exit_code == 0, copied.output

    def ids(log: Path) -> list[str | None]:
        return [e.reply.conversation_id for e in _events(log, "ReplyReceived")]

    assert ids(compact) == ids(db) and all(ids(db))
    assert verify_log(compact).differences == []
