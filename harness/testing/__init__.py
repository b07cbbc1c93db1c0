"""The testing kit for relation authors: strategies, a fake model, an offline driver, a
planted-truth sim handler and the relation contract, shipped with the package.

What for: a family written in its own package tests its relations as ours are tested,
without copying our fixtures or guessing the engine's conventions (docs/testing-relations.md).
It stands at the top of ``harness/`` beside `harness.family_api`: it may import any room,
no room imports it, and a family's *tests* (never its runtime modules) import it.

It needs hypothesis, installed by the ``testing`` extra (``pip install
'bias-harness[testing]'``); without it, importing this package fails with that line.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401  (checked first: the modules below import it)
except ImportError as exc:  # pragma: no cover - exercised by hiding the module in a test
    from harness.vocabulary.extras import install_command

    raise ImportError(
        f"harness.testing needs the 'testing' extra (hypothesis): {install_command('testing')}"
    ) from exc

from harness.testing.contract import RelationContractError, check_relation
from harness.testing.driving import (
    DEFAULT_MAX_STEPS,
    case_for,
    drive_case,
    drive_case_async,
    replay_case,
)
from harness.testing.fake_model import FakeModel, ScriptExhausted, SentRequest
from harness.testing.strategies import (
    FAILURE_KINDS,
    HOSTILE_SAMPLES,
    REFUSAL_SAMPLES,
    DrivenCase,
    any_replies,
    cases,
    drive_with,
    failed_turns,
    failures,
    fitting_replies,
    hostile_texts,
    relation_of,
    replies,
    transcripts,
)
from harness.vocabulary.simulation import mentioned, planted_handler

__all__ = [
    "DEFAULT_MAX_STEPS",
    "FAILURE_KINDS",
    "HOSTILE_SAMPLES",
    "REFUSAL_SAMPLES",
    "DrivenCase",
    "FakeModel",
    "RelationContractError",
    "ScriptExhausted",
    "SentRequest",
    "any_replies",
    "case_for",
    "cases",
    "check_relation",
    "drive_case",
    "drive_case_async",
    "drive_with",
    "failed_turns",
    "failures",
    "fitting_replies",
    "hostile_texts",
    "mentioned",
    "planted_handler",
    "relation_of",
    "replay_case",
    "replies",
    "transcripts",
]
