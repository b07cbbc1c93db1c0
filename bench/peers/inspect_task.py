"""The inspect_ai side of bench/bench_peers.py: one single-turn sample per prompt.

Each line of the dataset file is ``{"id": ..., "messages": [{"role", "content"}, ...]}``:
the requests the harness sent in the same benchmark. The solver is ``generate()`` alone
and the scorer a plain string match, so the time measured is inspect's own per-sample
machinery, not a judge.
"""

import json

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


def _message(m: dict):
    return (
        ChatMessageSystem(content=m["content"])
        if m["role"] == "system"
        else ChatMessageUser(content=m["content"])
    )


@task
def bench_peers(dataset: str) -> Task:
    with open(dataset, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    samples = [
        Sample(id=r["id"], input=[_message(m) for m in r["messages"]], target="Yes") for r in rows
    ]
    return Task(dataset=MemoryDataset(samples), solver=generate(), scorer=includes())
