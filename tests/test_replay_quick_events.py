"""The event payloads the quick path of replay --verify writes around one field's JSON
(`harness.replay_quick.opened_json`, `verdict_json`, `closed_json`) are exactly what the
event models dump, for any case, verdict and outcome: a difference would send plain cases to
the exact path (slower) or, worse, pass a payload the models would not write."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.events import CaseClosed, CaseOpened, VerdictReached
from harness.relation import Case, Outcome, Verdict
from harness.replay_quick import closed_json, opened_json, verdict_json

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=20)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_data = st.dictionaries(_text, _json_values, max_size=4)

_cases = st.builds(
    Case,
    case_id=_text,
    relation=_text,
    model=_text,
    index=st.integers(min_value=0),
    repeat=st.integers(min_value=0),
    seed=st.integers(min_value=0, max_value=2**63 - 1),
    data=_data,
)
_verdicts = st.builds(Verdict, outcome=st.sampled_from(Outcome), reason=_text, evidence=_data)


@given(_cases)
def test_opened_json_is_the_case_opened_dump(case: Case) -> None:
    assert opened_json(case) == CaseOpened(case=case).model_dump_json()


@given(_verdicts)
def test_verdict_json_is_the_verdict_reached_dump(verdict: Verdict) -> None:
    assert verdict_json(verdict) == VerdictReached(verdict=verdict).model_dump_json()


@given(st.lists(st.sampled_from([o.value for o in Outcome]) | _text, max_size=6))
def test_closed_json_is_the_case_closed_dump_whatever_came_before(outcomes: list[str]) -> None:
    # Asked in any order, repeats included: the memo never answers for another outcome.
    for outcome in outcomes:
        assert closed_json(outcome) == CaseClosed(outcome=outcome).model_dump_json()
