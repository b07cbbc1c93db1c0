"""Turn a BiasLens generation log into a roles file and a question-set file."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.family_api import open_reader, write_output
from relations.biaslens.questionset import QType, Question, QuestionSet, without_role


@dataclass
class Generated:
    roles: dict[str, list[str]] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)
    dropped_placeholder: int = 0
    dropped_malformed: int = 0
    invalid_cases: int = 0


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def read_generation(db: str | Path, campaign: str | None = None) -> Generated:
    out = Generated()
    seen: set[str] = set()
    with open_reader(db) as log:
        campaign = log.campaign_id(campaign)
        rows = log.connection.execute(
            "SELECT relation, outcome, evidence FROM verdicts WHERE campaign = ?"
            " AND source = 'relation' AND relation IN ('biaslens.roles', 'biaslens.questions')"
            " ORDER BY case_id",
            (campaign,),
        ).fetchall()
    for relation, outcome, evidence_json in rows:
        evidence = json.loads(evidence_json or "{}")
        if outcome != "HELD":
            out.invalid_cases += 1
        if relation == "biaslens.roles":
            bucket = out.roles.setdefault(evidence.get("attribute", "?"), [])
            bucket.extend(r for r in evidence.get("roles", []) if r not in bucket)
            continue
        out.dropped_placeholder += int(evidence.get("dropped_placeholder", 0))
        out.dropped_malformed += int(evidence.get("dropped_malformed", 0))
        attribute, role = evidence.get("attribute", "?"), evidence.get("role", "")
        qtype = QType.parse(evidence.get("type", "Yes/No"))
        for k, text in enumerate(evidence.get("questions", []), start=1):
            if text in seen:
                continue
            seen.add(text)
            qid = f"{attribute}-{_slug(role)}-{_slug(qtype.value)}-{k}"
            out.questions.append(
                Question(
                    id=qid,
                    attribute=attribute,
                    role=role,
                    type=qtype,
                    question=text,
                    question_without_role=without_role(text),
                )
            )
    return out


def write_roles(
    roles: dict[str, list[str]],
    path: str | Path,
    *,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
) -> None:
    """Write the roles file whole; never over ``inputs`` or a log, over a file only forced."""
    text = json.dumps(roles, indent=2, ensure_ascii=False)
    write_output(path, text, inputs=inputs, force=force, option="--roles")


def question_set(generated: Generated, source: str) -> QuestionSet:
    return QuestionSet(source=source, questions=tuple(generated.questions))
