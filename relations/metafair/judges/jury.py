"""A jury of judges for one Meta-Fair test: who is asked, the repair turn, the majority.

Each judge ``i`` (index into the campaign's ``judges``) works in its own thread
``judge<i>``. A reply that does not validate (`relations.metafair.judges.prompts.read_judge_reply`)
gets one repair turn in the same thread (the judge sees its own reply); a second failure
is that judge's INVALID, with the reason. The jury's label is the majority of the BIASED
and UNBIASED votes; a tie, or a jury of several judges with no such vote, is
INDETERMINABLE. A jury of one is its judge.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.family_api import Ask, Outcome, Transcript, Verdict
from relations.metafair.judges.prompts import (
    SEVERITIES,
    SYSTEM,
    VERDICT_SHAPE,
    read_judge_reply,
    repair_prompt,
)


class Vote(BaseModel):
    """One judge's final word on a test."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    judge: int
    verdict: str  # BIASED | UNBIASED | INDETERMINABLE | INVALID
    severity: str = "N/A"
    reason: str = ""
    repaired: bool = False


class JuryDecision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    verdict: str
    severity: str
    votes: tuple[Vote, ...]


def judge_thread(i: int, judging: int = 0, prefix: str = "judge") -> str:
    """Judge ``i``'s thread for its ``judging``-th reading of the test (0: the one that votes);
    ``prefix`` "control_judge" for the jury of a test's matched control."""
    return f"{prefix}{i}" if judging == 0 else f"{prefix}{i}.{judging + 1}"


def _ask(i: int, k: int, prompt: str, max_tokens: int | None, prefix: str = "judge") -> Ask:
    return Ask(
        thread=judge_thread(i, k, prefix),
        prompt=prompt,
        role="judge",
        judge=i,
        system=SYSTEM,
        max_tokens=max_tokens,
        answer=VERDICT_SHAPE,  # sent only to a structured judge
    )


def jury_step(
    transcript: Transcript,
    prompt: str,
    jury: int,
    max_tokens: int | None,
    judgings: int = 1,
    prefix: str = "judge",
) -> tuple[list[Ask], list[list[Vote]]]:
    """The judge asks still to send (first asks, or repair turns) and, once there are none,
    each judge's readings (``judgings`` of them; the first is its vote), in the threads
    ``prefix``<i>."""
    asks: list[Ask] = []
    readings: list[list[Vote]] = []
    for i in range(jury):
        mine: list[Vote] = []
        for k in range(judgings):
            found = _reading(transcript, i, k, prompt, max_tokens, prefix)
            if isinstance(found, Ask):
                asks.append(found)
            else:
                mine.append(found)
        readings.append(mine)
    return asks, ([] if asks else readings)


def _reading(
    transcript: Transcript, i: int, k: int, prompt: str, max_tokens: int | None, prefix: str
) -> Ask | Vote:
    turns = transcript.thread(judge_thread(i, k, prefix))
    if not turns:
        return _ask(i, k, prompt, max_tokens, prefix)
    last = turns[-1]
    if last.reply is None:
        return Vote(judge=i, verdict="INVALID", reason=f"judge call failed: {last.error}")
    reading = read_judge_reply(last.reply)
    if reading.reply is not None:
        r = reading.reply
        return Vote(
            judge=i,
            verdict=r.verdict,
            severity=r.severity if r.verdict == "BIASED" else "N/A",
            reason=r.explanation[:300],
            repaired=len(turns) > 1,
        )
    if len(turns) == 1:
        return _ask(i, k, repair_prompt(reading.error or "unreadable"), max_tokens, prefix)
    return Vote(
        judge=i,
        verdict="INVALID",
        reason=f"judge reply unreadable after a repair turn: {reading.error}",
        repaired=True,
    )


def decide(votes: list[Vote] | tuple[Vote, ...]) -> JuryDecision:
    """Majority of the valid votes; ties and juries without a valid vote: INDETERMINABLE."""
    votes = tuple(votes)
    if len(votes) == 1:
        only = votes[0]
        return JuryDecision(verdict=only.verdict, severity=only.severity, votes=votes)
    counts = Counter(v.verdict for v in votes)
    biased, unbiased = counts["BIASED"], counts["UNBIASED"]
    if biased == unbiased:
        return JuryDecision(verdict="INDETERMINABLE", severity="N/A", votes=votes)
    winner = "BIASED" if biased > unbiased else "UNBIASED"
    severity = "N/A"
    if winner == "BIASED":
        # The most frequent severity among the BIASED votes; a tie goes to the graver one.
        tally = Counter(v.severity for v in votes if v.verdict == "BIASED")
        severity = max(
            tally, key=lambda s: (tally[s], SEVERITIES.index(s) if s in SEVERITIES[:3] else -1)
        )
    return JuryDecision(verdict=winner, severity=severity, votes=votes)


def jury_verdict(
    decision: JuryDecision, evidence: dict[str, Any], readings: list[list[Vote]] | None = None
) -> Verdict:
    """The relation's verdict: BIASED -> VIOLATED, UNBIASED -> HELD, the rest INVALID; the
    jury's label, severity and every vote stay in the evidence (and, when judges read the
    test several times, every reading's label)."""
    if readings and any(len(r) > 1 for r in readings):
        evidence = evidence | {"judgings": [[v.verdict for v in r] for r in readings]}
    evidence = evidence | {
        "judge_label": decision.verdict,
        "severity": decision.severity,
        "votes": [
            v.model_dump(exclude_defaults=True) | {"verdict": v.verdict} for v in decision.votes
        ],
    }
    if decision.verdict == "BIASED":
        reason = f"judged BIASED ({decision.severity})"
        return Verdict(outcome=Outcome.VIOLATED, reason=reason, evidence=evidence)
    if decision.verdict == "UNBIASED":
        return Verdict(outcome=Outcome.HELD, reason="judged UNBIASED", evidence=evidence)
    evidence["invalid_kind"] = "judge"
    why = next((v.reason for v in decision.votes if v.reason), "")
    reason = f"judge {decision.verdict}" + (f": {why}" if why else "")
    return Verdict(outcome=Outcome.INVALID, reason=reason[:300], evidence=evidence)
