"""Structured answers: declared shapes, the answer_format option, the log and the report.

The vendor adapters are tested over real HTTP in tests/core/models/vendor/test_vendor_adapters.py
and the local model in tests/core/models/test_local_model.py (marker local_model).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.plugins.assembly import build_relation, build_report
from harness.running.campaign import embedded_campaign, parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.store.schema import connect
from harness.verifying.replay import verify_log
from harness.vocabulary.answer_shape import AnswerShape
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import GenerationParams, Message, request_key
from harness.vocabulary.relation import Ask, Case, Outcome, Transcript, Turn, Verdict

RELATIONS = [
    {"name": "metaquerier.mr1", "cases": 6, "options": {"list_size": 5}},
    {"name": "metaquerier.mr2", "cases": 6, "options": {"list_size": 5, "insert_size": 2}},
    {"name": "metafair.mr8", "cases": 6},
]


def both_formats(**extra: Any) -> dict[str, Any]:
    return {
        "name": "formats",
        "seed": 3,
        "models": [
            {"name": "sim:default", "answer_format": "free"},
            {"name": "sim:structured", "backend": "sim:default", "answer_format": "structured"},
        ],
        "relations": RELATIONS,
        **extra,
    }


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("formats") / "formats.db"
    summary = asyncio.run(run_campaign(parse_campaign(both_formats()), db))
    assert summary.status == "completed" and summary.cases_closed == 36
    return db


def _sent(db: Path) -> list[tuple[str, dict[str, Any]]]:
    with connect(db) as conn:
        rows = conn.execute(
            "SELECT case_id, payload FROM events WHERE kind = 'AskSent' ORDER BY gseq"
        ).fetchall()
    return [(case_id, json.loads(payload)) for case_id, payload in rows]


def test_the_log_records_the_shape_only_for_structured_models(log: Path) -> None:
    sent = _sent(log)
    assert sent
    for case_id, payload in sent:
        shape = payload["params"].get("answer_shape")
        declared = payload["ask"].get("answer")
        if case_id.endswith("@sim:structured"):
            assert shape == declared  # every declared shape was sent
        else:
            assert shape is None  # free requests carry no shape
    kinds = {p["ask"]["answer"]["kind"] for _, p in sent if p["ask"].get("answer")}
    assert kinds == {"terms", "yes_no"}


def test_free_request_keys_are_those_of_a_request_without_shapes(log: Path) -> None:
    for case_id, payload in _sent(log):
        if case_id.endswith("@sim:structured"):
            continue
        messages = [Message.model_validate(m) for m in payload["messages"]]
        params = GenerationParams.model_validate(payload["params"])
        legacy = params.model_dump(exclude_none=True)
        assert "answer_shape" not in legacy
        assert payload["request_key"] == request_key(payload["model"], messages, params)


def test_structured_replies_are_json_of_the_shape_and_parse_to_the_same_evidence(
    log: Path,
) -> None:
    with connect(log) as conn:
        rows = conn.execute(
            "SELECT case_id, relation, outcome, reason FROM verdicts ORDER BY case_id"
        ).fetchall()
        replies = dict(
            ((case_id, turn), reply)
            for case_id, turn, reply in conn.execute("SELECT case_id, turn, reply FROM turns")
        )
    shaped = [
        (case_id, p["turn"])
        for case_id, p in _sent(log)
        if case_id.endswith("@sim:structured") and p["params"].get("answer_shape")
    ]
    assert shaped
    for key in shaped:
        shape = AnswerShape.model_validate(
            next(p for c, p in _sent(log) if (c, p["turn"]) == key)["params"]["answer_shape"]
        )
        assert shape.read(replies[key]) is not None, replies[key]
    structured = [r for r in rows if r[0].endswith("@sim:structured")]
    free = [r for r in rows if r[0].endswith("@sim:default")]
    assert len(structured) == len(free) == 18
    assert not [r for r in structured if r[2] == "INVALID"], structured


def test_replay_verify_of_both_formats_finds_no_difference(log: Path) -> None:
    assert verify_log(log).differences == []


def test_the_report_names_the_format_of_each_model(log: Path) -> None:
    with EventReader(log) as reader:
        tables = {t.name: t for t in build_report(reader)}
    table = tables["answer_formats"]
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    by = {(r["model"], r["answer_format"], r["relation"]) for r in rows}
    assert ("sim:default", "free", "(all)") in by
    assert ("sim:structured", "structured", "(all)") in by
    assert all(r["cases"] == 18 for r in rows if r["relation"] == "(all)")


def test_a_free_only_campaign_has_no_format_table(tmp_path: Path) -> None:
    db = tmp_path / "free.db"
    config = parse_campaign({**both_formats(), "models": [{"name": "sim:default"}]})
    asyncio.run(run_campaign(config, db))
    with EventReader(db) as reader:
        assert "answer_formats" not in {t.name for t in build_report(reader)}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"answer_format": "json"}, "answer_format"),
        ({"models": [{"name": "sim:a", "answer_format": "grammar"}]}, "answer_format"),
        ({"models": [{"name": "sim:a", "params": {"answer_shape": {"kind": "yes_no"}}}]}, "params"),
        ({"models": [{"name": "x", "backend": "nope:a"}]}, "backend"),
    ],
)
def test_bad_format_configuration_fails_before_the_first_call(
    change: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as err:
        parse_campaign({**both_formats(), **change})
    assert err.value.field is not None and field in err.value.field
    assert err.value.fix


def test_the_demo_runs_both_formats_of_one_model() -> None:
    config = embedded_campaign("demo")
    formats = {(m.target, config.answer_format_of(m)) for m in config.models}
    assert formats == {("local:smollm2", "free"), ("local:smollm2", "structured")}


# --- shapes ------------------------------------------------------------------------------


def _case(name: str) -> Case:
    rel = build_relation(name, {})
    return Case(
        case_id="c", relation=name, model="m", index=0, repeat=0, seed=1, data=rel.make_case(0, 1)
    )


def test_relations_declare_their_answer_shape() -> None:
    case = _case("metaquerier.mr1")
    [ask] = build_relation("metaquerier.mr1", {}).step(case, Transcript())  # type: ignore[misc]
    assert ask.answer == AnswerShape.terms(case.data["terms"])
    mr8 = build_relation("metafair.mr8", {})
    case8 = _case("metafair.mr8")
    [source] = mr8.step(case8, Transcript())  # type: ignore[misc]
    assert source.answer is None  # a free-text answer has no shape
    transcript = Transcript(turns=(Turn(index=0, ask=source, reply="Be kind."),))
    [check] = mr8.step(case8, transcript)  # type: ignore[misc]
    assert check.answer == AnswerShape.yes_no()


def test_a_structured_list_naming_every_term_is_an_answer_not_an_echo() -> None:
    rel = build_relation("metaquerier.mr2", {"list_size": 3, "insert_size": 1})
    case = _case("metaquerier.mr2").model_copy(
        update={"data": rel.make_case(0, 1), "relation": "metaquerier.mr2"}
    )
    terms = case.data["terms"]
    [ask] = rel.step(case, Transcript())  # type: ignore[misc]
    shape = AnswerShape.terms(terms)
    reply = shape.encode(terms)
    result = rel.step(case, Transcript(turns=(Turn(index=0, ask=ask, reply=reply),)))
    assert isinstance(result, list)  # the follow-up is asked
    free = rel.step(case, Transcript(turns=(Turn(index=0, ask=ask, reply=str(terms)),)))
    assert isinstance(free, Verdict) and free.outcome is Outcome.INVALID


def test_old_asks_decode_without_a_shape() -> None:
    old = {"thread": "t", "prompt": "p", "role": "subject", "judge": 0, "system": None}
    assert Ask.model_validate(old).answer is None


SHAPES = st.one_of(
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True).map(
        AnswerShape.terms
    ),
    st.just(AnswerShape.yes_no()),
    st.lists(st.text(min_size=1, max_size=8), min_size=2, max_size=4, unique=True).map(
        AnswerShape.choice
    ),
    st.just(AnswerShape(kind="score", low=1, high=5)),
)


@given(shape=SHAPES, data=st.data())
def test_an_encoded_answer_reads_back(shape: AnswerShape, data: st.DataObject) -> None:
    if shape.kind == "terms":
        value: Any = data.draw(st.lists(st.sampled_from(shape.options), unique=True))
    elif shape.kind == "score":
        value = data.draw(st.integers(shape.low, shape.high))
    else:
        value = data.draw(st.sampled_from(shape.options))
    text = shape.encode(value)
    assert shape.read(text) == value
    schema = shape.json_schema()
    assert schema["required"] == list(json.loads(text))


@given(text=st.text(max_size=60), shape=SHAPES)
def test_any_text_reads_as_a_value_or_none_never_an_exception(
    text: str, shape: AnswerShape
) -> None:
    shape.read(text)
    assert isinstance(shape.free_text(text), str)


def test_langbite_value_templates_declare_a_json_shape_and_others_none(tmp_path: Path) -> None:
    from tests.conftest import campaign_dict

    data = campaign_dict(
        ("langbite", None, {"concerns": ["nationality", "religion"], "languages": ["en"]}),
        model="sim:planted",
    )
    data["relations"][0].pop("cases")
    data["answer_format"] = "structured"
    db = tmp_path / "langbite.db"
    asyncio.run(run_campaign(parse_campaign(data), db))
    by_op: dict[str, set[str]] = {}
    for case_id, payload in _sent(db):
        shape = payload["params"].get("answer_shape")
        with connect(db) as conn:
            (case_data,) = conn.execute(
                "SELECT payload FROM events WHERE kind = 'CaseOpened' AND case_id = ?", (case_id,)
            ).fetchone()
        op = json.loads(case_data)["case"]["data"]["oracle"]["op"]
        by_op.setdefault(op, set()).add(shape["kind"] if shape else "none")
    assert by_op.pop("allSameValue") == {"json"}
    assert by_op and all(kinds == {"none"} for kinds in by_op.values()), by_op
    with connect(db) as conn:
        outcomes = [o for (o,) in conn.execute("SELECT outcome FROM verdicts")]
    assert outcomes.count("INVALID") < len(outcomes)


def test_a_log_from_before_shapes_verifies_without_differences(log: Path, tmp_path: Path) -> None:
    """Asks logged before relations declared shapes have none: replay must not count the
    shape today's relation declares as a difference (a free request is the same)."""
    import shutil

    old = tmp_path / "old.db"
    shutil.copy(log, old)
    with connect(old) as conn:
        rows = conn.execute(
            "SELECT gseq, payload FROM events"
            " WHERE kind = 'AskSent' AND case_id LIKE '%@sim:default'"
        ).fetchall()
        for seq, payload in rows:
            data = json.loads(payload)
            data["ask"].pop("answer", None)
            conn.execute("UPDATE events SET payload = ? WHERE gseq = ?", (json.dumps(data), seq))
        conn.execute("DROP TABLE case_digests")  # a log that old had no digests either
    assert rows
    assert verify_log(old).differences == []


def test_structured_judges_in_a_campaign_are_sent_yes_no_and_vote_alike(tmp_path: Path) -> None:
    """The BiasLens jury and the LangBiTe re-assessment ask their judges Yes/No: a judge
    listed with answer_format = "structured" is sent that shape, and its JSON answer is read
    as the same vote a free judge gives."""
    import tomllib

    from harness.running.campaign import parse_campaign
    from harness.running.runner import run_campaign
    from harness.store.reader import EventReader
    from harness.vocabulary.events import AskSent

    repo = Path(__file__).resolve().parents[3]
    for example in ("biaslens_sim.toml", "langbite.toml"):
        data = tomllib.loads((repo / "examples" / example).read_text(encoding="utf-8"))
        outcomes = []
        for fmt in ("free", "structured"):
            for judge in data["judges"]:
                judge["answer_format"] = fmt
            db = tmp_path / f"{example}-{fmt}.db"
            summary = asyncio.run(run_campaign(parse_campaign(data), db))
            outcomes.append(summary.outcomes)
            with EventReader(db) as log:
                judged = [
                    e.event.params.answer_shape
                    for e in log.events(log.latest_campaign(), kinds=("AskSent",))
                    if isinstance(e.event, AskSent) and e.event.ask.role == "judge"
                ]
            assert judged, example
            if fmt == "free":
                assert all(shape is None for shape in judged)
            else:
                assert all(shape is not None and shape.kind == "yes_no" for shape in judged)
        assert outcomes[0] == outcomes[1], example
