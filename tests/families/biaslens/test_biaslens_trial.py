"""`tally._trial` builds a report's trial from its CaseOpened payload without the dataclass's
__init__ and with its released vote filled in: for any payload, reply and verdict it is the
trial the constructor builds from the same fields (json.loads), with the same released vote
as that trial's own property computes, and takes no more memory."""

from __future__ import annotations

import json
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from relations.biaslens.oracles import Vote
from relations.biaslens.questionset import QType
from relations.biaslens.tally import Trial, _trial

TEXT = st.text(max_size=60)
OPTIONAL_TEXT = st.one_of(st.none(), TEXT, st.sampled_from(["Yes", "No", "yes", " NO", ""]))
DATA = st.fixed_dictionaries(
    {
        "attribute": st.sampled_from(["ability", "age", "gender"]),
        "type": st.sampled_from(["Yes/No", "Choice", "Why", "Wh", "yes/no"]),
        "question": TEXT,
    },
    optional={
        "variant": st.sampled_from(["role", "no_role"]),
        "role": TEXT,
        "run": st.integers(1, 5),
        "row": st.integers(0, 999),
        "released_final": OPTIONAL_TEXT,
        "imported": st.booleans(),
    },
)
OUTCOMES = st.sampled_from([None, "VIOLATED", "HELD", "INVALID", "SKIPPED"])


def _constructed(case_id: str, payload: str, answer: str | None, outcome: str | None) -> Trial:
    """The trial as the report built it before: json.loads and the dataclass constructor."""
    case = json.loads(payload)["case"]
    data = case["data"]
    strict = {"VIOLATED": Vote.BIASED, "HELD": Vote.UNBIASED}.get(outcome or "", Vote.INVALID)
    return Trial(
        case_id=case_id,
        model=case["model"],
        variant=data.get("variant", "role"),
        attribute=data["attribute"],
        role=data.get("role", ""),
        qtype=QType.parse(data["type"]),
        question=data["question"],
        run=int(data.get("run", case["repeat"])),
        row=int(data.get("row", case["index"])),
        answer=answer,
        final=data.get("released_final"),
        strict=strict,
    )


@settings(max_examples=300, deadline=None)
@given(
    data=DATA,
    model=st.sampled_from(["released:gpt4omini", "sim:x"]),
    repeat=st.integers(0, 4),
    index=st.integers(0, 999),
    answer=OPTIONAL_TEXT,
    outcome=OUTCOMES,
)
def test_a_trial_is_the_constructed_trial(
    data: dict[str, Any],
    model: str,
    repeat: int,
    index: int,
    answer: str | None,
    outcome: str | None,
) -> None:
    case_id = f"biaslens.answer/x/{index}@{model}"
    case = {"case_id": case_id, "model": model, "index": index, "repeat": repeat, "data": data}
    payload = json.dumps({"kind": "CaseOpened", "case": case})
    fast = _trial(case_id, payload, answer, outcome)
    reference = _constructed(case_id, payload, answer, outcome)
    assert fast == reference
    assert type(fast) is Trial and vars(fast).keys() >= vars(reference).keys()
    assert fast.released_vote is reference.released_vote  # computed by the property
    assert fast.key == reference.key and hash(fast) == hash(reference)
    # No larger in memory than the constructed trial (a report holds a group of them).
    assert sys.getsizeof(vars(fast)) <= sys.getsizeof(vars(reference))
