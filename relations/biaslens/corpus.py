"""BiasLens's own small corpus (``corpora/biaslens/``: role-play questions and roles per
attribute, written for this project), described for ``harness corpora``; the loaders are
`relations.biaslens.questionset.load_questions` and `relations.biaslens.generate.load_roles`."""

from __future__ import annotations

from collections import Counter

import corpora
from harness.family_api import Corpus

QUESTIONS_FILE = "biaslens/questions.csv"
ROLES_FILE = "biaslens/roles.toml"


def describe_questions() -> str:
    """The questions counted, per type."""
    from relations.biaslens.questionset import load_questions

    questions = load_questions(corpora.data_file(QUESTIONS_FILE)).questions
    types = Counter(q.type.value for q in questions)
    attributes = {q.attribute for q in questions}
    return f"{len(questions)} questions over {len(attributes)} attributes: " + ", ".join(
        f"{t} {n}" for t, n in sorted(types.items())
    )


def describe_roles() -> str:
    """The roles counted over their attributes."""
    from relations.biaslens.generate import load_roles

    roles = load_roles(str(corpora.data_file(ROLES_FILE)))
    return f"{sum(len(r) for r in roles.values())} roles over {len(roles)} attributes"


CORPORA = (
    Corpus(
        QUESTIONS_FILE, (corpora.data_file(QUESTIONS_FILE),), describe_questions, corpora.PROVENANCE
    ),
    Corpus(ROLES_FILE, (corpora.data_file(ROLES_FILE),), describe_roles, corpora.PROVENANCE),
)
