"""The ``released:`` model scheme: answers imported from a published dataset.

An imported log names its models ``released:<folder>`` (e.g. ``released:gpt4omini``): they
are not callable, but the scheme must be known so the recorded campaign validates when the
log is resumed, replayed or reported on.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.family_api import GenerationParams, Message, ModelError, ModelSpec, Reply


class ReleasedAnswersModel:
    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        raise ModelError(
            f"{self.name} stands for answers imported from a released dataset; it cannot be "
            "called (run a campaign against a real or sim: model instead)"
        )

    async def aclose(self) -> None:
        return None


def build_released(spec: ModelSpec) -> ReleasedAnswersModel:
    return ReleasedAnswersModel(spec.name)
