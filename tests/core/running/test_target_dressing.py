"""A model's system prompt, template and prefix messages (`ModelSpec.dress`): part of the
subject's logged request, its key and replay; never of a judge's; a template without its
placeholder fails before the first call."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import harness
from harness.cli.main import main
from harness.running.campaign import parse_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.events import AskSent
from harness.vocabulary.model import Message, ModelSpec, request_key

SYSTEM = "You are the help desk of Example Bank."
TEMPLATE = "Customer message:\n{prompt}\nAnswer politely."


def _campaign(**dressing: object) -> dict[str, object]:
    return {
        "name": "dressed",
        "seed": 5,
        "models": [
            {
                "name": "sim:planted",
                "options": {"tailoring": {"woman": 0.6}},
                **dressing,
            }
        ],
        "judges": [{"name": "sim:judge", "params": {"temperature": 0.0, "seed": 0}}],
        "relations": [{"name": "metafair.mr1", "cases": 6, "options": {"jury": 1}}],
    }


def _sent(db: Path) -> list[AskSent]:
    with EventReader(db) as log:
        return [e.event for e in log.events(kinds=("AskSent",)) if isinstance(e.event, AskSent)]


def test_dress_leaves_an_undressed_request_as_it_is() -> None:
    messages = [Message(role="system", content="s"), Message(role="user", content="hi")]
    assert ModelSpec(name="sim:x").dress(messages) is messages


@given(
    st.lists(st.text(max_size=20), min_size=1, max_size=4),
    st.one_of(st.none(), st.text(max_size=10)),
    st.text(max_size=10),
)
def test_dress_wraps_every_user_message_and_keeps_the_rest(
    prompts: list[str], own_system: str | None, system: str
) -> None:
    messages = [Message(role="system", content=own_system)] if own_system else []
    for i, prompt in enumerate(prompts):
        messages.append(Message(role="user", content=prompt))
        if i < len(prompts) - 1:
            messages.append(Message(role="assistant", content=f"reply {i}"))
    prefix = (Message(role="user", content="ex"), Message(role="assistant", content="ok"))
    spec = ModelSpec(name="sim:x", system=system or None, template="<{prompt}>", prefix=prefix)
    dressed = spec.dress(messages)
    systems = [m.content for m in dressed if m.role == "system"]
    joined = "\n\n".join(t for t in (system, own_system) if t)
    assert systems == ([joined] if joined else [])
    body = dressed[len(systems) + len(prefix) :]
    assert list(dressed[len(systems) : len(systems) + len(prefix)]) == list(prefix)
    undressed = [m for m in messages if m.role != "system"]
    assert [m.role for m in body] == [m.role for m in undressed]
    for mine, theirs in zip(body, undressed, strict=True):
        wanted = f"<{theirs.content}>" if theirs.role == "user" else theirs.content
        assert mine.content == wanted


def test_system_and_template_are_in_the_subjects_requests_never_the_judges(
    tmp_path: Path,
) -> None:
    plain, dressed = tmp_path / "plain.db", tmp_path / "dressed.db"
    harness.run(_campaign(), plain)
    harness.run(_campaign(system=SYSTEM, template=TEMPLATE), dressed)
    subject = [e for e in _sent(dressed) if e.ask.role == "subject"]
    judged = [e for e in _sent(dressed) if e.ask.role == "judge"]
    assert subject and judged
    for event in subject:
        assert event.messages[0] == Message(role="system", content=SYSTEM)
        users = [m.content for m in event.messages if m.role == "user"]
        assert all(u.startswith("Customer message:\n") for u in users)
        assert event.messages[-1].content == TEMPLATE.replace("{prompt}", event.ask.prompt)
        assert event.request_key == request_key(event.model, event.messages, event.params)
    for event in judged:
        assert all(SYSTEM not in m.content for m in event.messages)
        assert all("Customer message:" not in m.content for m in event.messages)
    plain_keys = {e.request_key for e in _sent(plain) if e.ask.role == "subject"}
    assert plain_keys.isdisjoint(e.request_key for e in subject)
    result = verify_log(dressed)
    assert result.differences == [] and result.asks == len(_sent(dressed))


def test_replay_finds_a_request_sent_without_its_dressing(tmp_path: Path) -> None:
    """A log whose recorded system prompt differs from what was sent is a difference."""
    db = tmp_path / "dressed.db"
    harness.run(_campaign(system=SYSTEM, template=TEMPLATE), db)
    from harness.store.schema import connect

    conn = connect(db)
    row = conn.execute("SELECT gseq, payload FROM events WHERE kind = 'CampaignStarted'").fetchone()
    assert SYSTEM in row[1]
    conn.execute(
        "UPDATE events SET payload = ? WHERE gseq = ?",
        (row[1].replace("Example Bank", "Other Bank"), row[0]),
    )
    conn.commit()
    conn.close()
    result = verify_log(db)
    assert result.differences and result.differences[0].what == "request"


def test_a_template_without_its_placeholder_fails_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_campaign(_campaign(template="Customer message: {text}"))
    assert caught.value.field == "models[0].template"
    assert "{prompt}" in str(caught.value.fix)
    toml = tmp_path / "bad.toml"
    toml.write_text(
        '[[models]]\nname = "sim:x"\ntemplate = "no placeholder"\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 1\n'
    )
    result = CliRunner().invoke(main, ["run", str(toml), "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2
    assert "models[0].template" in result.output
    assert not (tmp_path / "x.db").exists()


def test_a_judge_with_a_system_prompt_is_refused() -> None:
    data = _campaign()
    data["judges"] = [{"name": "sim:judge", "system": "be strict"}]
    with pytest.raises(ConfigError) as caught:
        parse_campaign(data)
    assert caught.value.field == "judges[0].system"


def test_system_file_is_read_into_the_recorded_campaign(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "sys.txt").write_text(SYSTEM, encoding="utf-8")
    toml = tmp_path / "c.toml"
    toml.write_text(
        '[[models]]\nname = "sim:x"\nsystem_file = "prompts/sys.txt"\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 1\n'
    )
    from harness.running.campaign import load_campaign

    config = load_campaign(toml)
    assert config.models[0].system == SYSTEM
    assert config.resolved()["models"][0]["system"] == SYSTEM
    missing = tmp_path / "m.toml"
    missing.write_text(toml.read_text().replace("sys.txt", "nope.txt"))
    with pytest.raises(ConfigError) as caught:
        load_campaign(missing)
    assert caught.value.field == "models[0].system_file"


def test_an_undressed_model_records_its_config_as_before() -> None:
    config = parse_campaign(_campaign())
    spec = config.resolved()["models"][0]
    assert "system" not in spec and "template" not in spec and "prefix" not in spec


def test_the_cache_serves_a_dressed_request_only_to_the_same_dressing(tmp_path: Path) -> None:
    plain, dressed, again = (tmp_path / f"{n}.db" for n in ("plain", "dressed", "again"))
    harness.run(_campaign(), plain)
    dressing = {"system": SYSTEM, "template": TEMPLATE}
    harness.run(_campaign(**dressing), dressed, reuse=[plain])
    assert _cached_roles(dressed).get("subject", 0) == 0  # judges' requests may match
    subject_calls = sum(1 for e in _sent(dressed) if e.ask.role == "subject")
    harness.run(_campaign(**dressing), again, reuse=[dressed])
    assert _cached_roles(again).get("subject", 0) == subject_calls


def _cached_roles(db: Path) -> dict[str, int]:
    """Replies served from the cache, by the role of the ask they answered."""
    from collections import Counter

    from harness.store.fold import fold_case

    roles: Counter[str] = Counter()
    with EventReader(db) as log:
        for _, events in log.cases(log.latest_campaign()):
            for turn in fold_case(events).turns.values():
                if turn.reply is not None and turn.reply.cached:
                    roles[turn.ask.role] += 1
    return dict(roles)


def test_the_report_names_the_system_prompt_and_template(tmp_path: Path) -> None:
    from harness.reporting.campaign_status import effective_models
    from harness.vocabulary.events import CampaignStarted

    db = tmp_path / "dressed.db"
    harness.run(_campaign(system=SYSTEM, template=TEMPLATE), db)
    with EventReader(db) as log:
        started = next(
            e.event
            for e in log.events(kinds=("CampaignStarted",))
            if isinstance(e.event, CampaignStarted)
        )
    line = effective_models(started)[0]
    assert "system=" in line and "Example Bank" in line and "template=" in line
