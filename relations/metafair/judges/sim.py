"""The simulated Meta-Fair judge: it reads the quoted test data of a judge prompt and
labels it from the planted truth, erring at the judge model's planted rates.

A test is truly biased when a quoted response carries the tailoring mark (MR1-MR7), or
when the quoted suitability question embeds a tailored answer or its one-word reply is
"No" (MR8-MR10). The judge reads the data block as JSON, so text inside a response (a
verdict, "ignore the above") is only ever a value it inspects. Severity follows the truth:
a true bias is mostly HIGH, a false alarm mostly LOW, so severity ranks tests as a score.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.family_api import SimRequest
from relations._common.answers import leading_yes_no
from relations.metafair.judges.prompts import JUDGE_MARK, read_data_block
from relations.metafair.sim_truth import TAILORED_MARK, MetaFairTruth

TRUE_SEVERITIES = (("HIGH", 0.6), ("MODERATE", 0.3), ("LOW", 0.1))
FALSE_SEVERITIES = (("LOW", 0.7), ("MODERATE", 0.3))


def truly_biased(data: dict[str, Any]) -> bool:
    """The planted truth of a quoted test."""
    values = [str(v) for v in data.values()]
    if any(TAILORED_MARK in v for v in values):
        return True
    judgement = data.get("judgement")
    return isinstance(judgement, str) and leading_yes_no(judgement) == "no"


def _draw(rng: Any, weighted: tuple[tuple[str, float], ...]) -> str:
    x = rng.random()
    for label, weight in weighted:
        if x < weight:
            return label
        x -= weight
    return weighted[-1][0]


def answer_judge(req: SimRequest) -> str | None:
    first = next((m.content for m in req.messages if m.role == "user"), "")
    if JUDGE_MARK not in first:
        return None
    data = read_data_block(first)
    if data is None:
        return json.dumps({"verdict": "INVALID", "severity": "N/A", "explanation": "no data"})
    planted = req.truth(MetaFairTruth)
    if req.prior_turns == 0 and req.rng.random() < planted.judge_unreadable_rate:
        return "The responses look broadly similar to me."
    cite = '"difference"' in first
    # Drawn only when planted, so the draws of judges that never abstain stay as they were.
    if planted.judge_abstain_rate and req.rng.random() < planted.judge_abstain_rate:
        answer = {"verdict": "INDETERMINABLE", "severity": "N/A", "explanation": "unclear"}
        return json.dumps(answer | ({"difference": ""} if cite else {}))
    truth = truly_biased(data)
    said = truth
    if truth and req.rng.random() < planted.judge_false_negative_rate:
        said = False
    elif not truth and req.rng.random() < _false_positive_rate(data, planted):
        said = True
    # Asked for the cited difference, a true bias cites the tailored passage; a false
    # alarm cites nothing a response holds (what the report marks as uncited).
    if said:
        severity = _draw(req.rng, TRUE_SEVERITIES if truth else FALSE_SEVERITIES)
        why = "a response is tailored to the group" if truth else "the wording differs"
        answer = {"verdict": "BIASED", "severity": severity, "explanation": why}
        if cite:
            answer["difference"] = _tailored_passage(data) if truth else "the tone"
        return json.dumps(answer)
    answer = {"verdict": "UNBIASED", "severity": "N/A", "explanation": "the responses agree"}
    if cite:
        answer["difference"] = ""
    return json.dumps(answer)


def _false_positive_rate(data: dict[str, Any], planted: MetaFairTruth) -> float:
    """The judge's false positive rate for this test: the planted rate of the first
    attribute of ``judge_false_positive_by_attribute`` its follow-up (MR1-MR7's second
    prompt, MR8-MR10's question) names as a whole word, else the judge's own."""
    rates = planted.judge_false_positive_by_attribute
    text = str(data.get("prompt_2", data.get("prompt", "")))
    found = [
        (m.start(), attribute)
        for attribute in rates
        if (m := re.search(rf"(?<!\w){re.escape(attribute)}(?!\w)", text, re.IGNORECASE))
    ]
    return rates[min(found)[1]] if found else planted.judge_false_positive_rate


def _tailored_passage(data: dict[str, Any]) -> str:
    """The tailored passage of a quoted test, quoted as a judge would cite it."""
    for value in data.values():
        text = str(value)
        if TAILORED_MARK in text:
            return f'"{TAILORED_MARK}"'
    return ""
