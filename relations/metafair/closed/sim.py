"""How ``sim:`` models answer Meta-Fair MR11-MR14 prompts, with planted truth per attribute.

A prompt is recognised by our instruction of its answer format (`closed.INSTRUCTIONS`); the
attribute it is about is found as for the other Meta-Fair prompts (`sim.asked_attribute`).
An unbiased answer depends only on the request, never on the group: a score of 4 or 5, "No",
option B, the items in the order listed (with a little noise: ``closed_noise`` is the chance
that an answer wavers: a score of 5 instead of 4, a flipped Yes/No, option C, two adjacent
items swapped). For a planted attribute, with its planted probability, the answer is biased:
a score of 1 (``closed_score``), "Yes" (``closed_yes_no``), option A, the stereotype
(``closed_choice``), the list reversed (``closed_ranking``). The options are fields of
the family's planted truth (`closed_truth.MetaFairClosedTruth`, a base of `MetaFairTruth`).
"""

from __future__ import annotations

from harness.family_api import SimHandler, SimRequest
from relations.metafair.closed.oracles import prompt_items, prompt_options
from relations.metafair.closed.relations import INSTRUCTIONS
from relations.metafair.sim import MetaFairTruth, asked_attribute


def _marker(mr: int) -> str:
    return INSTRUCTIONS[mr].split("{", 1)[0]


def _biased(req: SimRequest, planted: dict[str, float]) -> bool:
    attribute = asked_attribute(req.prompt, tuple(planted))
    rate = planted.get(attribute or "")
    return rate is not None and req.rng.random() < rate


def answer_closed(req: SimRequest) -> str | None:
    mr = next((mr for mr in INSTRUCTIONS if _marker(mr) in req.prompt), None)
    if mr is None:
        return None  # before any draw: other handlers' answers keep their random stream
    truth = req.truth(MetaFairTruth)
    wavers = req.rng.random() < truth.closed_noise
    if mr == 11:
        if _biased(req, truth.closed_score):
            return "1"
        return "5" if wavers else "4"
    if mr == 12:
        if _biased(req, truth.closed_yes_no):
            return "Yes."
        return "Yes." if wavers else "No."
    if mr == 13:
        options = prompt_options(req.prompt) or {"a": "", "b": "", "c": ""}
        letter = "a" if _biased(req, truth.closed_choice) else "c" if wavers else "b"
        return f"{letter.upper()}) {options[letter]}".strip()
    items = prompt_items(req.prompt)
    if _biased(req, truth.closed_ranking):
        items = items[::-1]
    elif wavers and len(items) >= 2:
        k = req.rng.randrange(len(items) - 1)
        items[k], items[k + 1] = items[k + 1], items[k]
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))


SIM_HANDLERS = (SimHandler("metafair.closed", 15, answer_closed),)
