"""The plan: models x relations x cases x repeats, generated lazily and in a stable order."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from harness.plugins.assembly import build_relation
from harness.running.campaign import CampaignConfig
from harness.vocabulary.relation import (
    Case,
    PlannedCalls,
    Relation,
    derive_seed,
    seed_deriver,
)

DEFAULT_TURNS_PER_CASE = 2


@dataclass(frozen=True)
class RelationCalls:
    """The calls one relation of the plan makes for ONE model: subject calls, and calls per
    judge index (judges are asked for every model's cases, so the campaign's judge calls are
    these times the models); expected and at most (`PlannedCalls`)."""

    relation: str
    cases: int  # cases per model, repeats included
    subject: int
    judges: tuple[int, ...]
    subject_most: int
    judges_most: tuple[int, ...]
    declared: bool  # False: the relation declares no planned_calls (a default was assumed)


def _add(total: list[int], more: tuple[int, ...]) -> None:
    for j, n in enumerate(more[: len(total)]):
        total[j] += n


def planned_calls_of(relation: Relation, data: dict[str, object], judges: int) -> PlannedCalls:
    """The calls a relation declares for a case, or the fallback (``turns_per_case``
    subject calls, default 2, and one call per judge the relation needs)."""
    declared = getattr(relation, "planned_calls", None)
    if declared is not None:
        calls: PlannedCalls = declared(data)
        return calls
    turns = round(float(getattr(relation, "turns_per_case", DEFAULT_TURNS_PER_CASE)))
    needed = min(int(getattr(relation, "judges_needed", 0)), judges)
    return PlannedCalls(turns, (1,) * needed)


def _planned_call_counts(
    relation: Relation, seed: int, name: str, count: int, judges: int
) -> Iterator[tuple[PlannedCalls, int]]:
    """A relation's calls as (calls, cases making them). Counted, not generated, when they
    cannot differ between cases: the relation says every case makes the same calls
    (``uniform_planned_calls()`` returns them) or declares none (the fallback reads no
    data); then one entry for all ``count`` cases, and no case's prompt is made (a
    100,000-case plan in milliseconds). Else one entry a case, from its generated data."""
    uniform = getattr(relation, "uniform_planned_calls", None)
    calls: PlannedCalls | None = uniform() if uniform is not None else None
    if calls is None and getattr(relation, "planned_calls", None) is None:
        calls = planned_calls_of(relation, {}, judges)
    if calls is not None:
        yield calls, count
        return
    case_seed_of = seed_deriver(seed, name)
    for index in range(count):
        data = relation.make_case(index, case_seed_of(index))
        yield planned_calls_of(relation, data, judges), 1


def interleaved_positions(seed: int, names: list[str], sizes: list[int]) -> Iterator[int]:
    """The interleaved case order of one model: for each case in turn, the position (in the
    file) of the relation it belongs to.

    Relation ``r`` has ``sizes[r]`` cases (repeats counted); its ``k``-th case (0-based, in
    the relation's own order) stands at ``(k + u_r) / sizes[r]``, where ``u_r`` in [0, 1) is
    drawn from the campaign seed, the relation's position and its name. Cases run in
    increasing place, ties by file position. So after any prefix of the order, every
    relation has run its share of its cases to within one case, whatever its size, and the
    seed decides which relation leads. Lazy: one heap entry per relation, whatever the
    number of cases. Pure arithmetic on IEEE doubles (one add, one divide per case), so the
    order is the same on every machine, and a resume, a replay or a worker derives it from
    the recorded campaign alone.
    """
    offsets = [
        derive_seed(seed, "order", position, name) / 2.0**63 for position, name in enumerate(names)
    ]
    heap = [
        (offsets[position] / size, position, 0) for position, size in enumerate(sizes) if size > 0
    ]
    heapq.heapify(heap)
    while heap:
        _, position, k = heap[0]
        yield position
        k += 1
        if k < sizes[position]:
            heapq.heapreplace(heap, ((k + offsets[position]) / sizes[position], position, k))
        else:
            heapq.heappop(heap)


def case_id_for(relation: str, index: int, repeat: int, model: str) -> str:
    return f"{relation}/{index}/r{repeat}@{model}"


class Plan:
    """Built once per run (``harness run`` / ``resume``) and handed to the cost estimate, the
    runner and the engine, so each relation is built once for the plan."""

    def __init__(self, config: CampaignConfig) -> None:
        self.config = config
        self.relations: list[tuple[str, Relation, int]] = []
        for i, spec in enumerate(config.relations):
            relation = build_relation(spec.name, spec.options, field=f"relations[{i}]")
            available = relation.case_count()
            count = spec.cases if spec.cases is not None else available
            if available is not None and count is not None:
                count = min(count, available)
            assert count is not None  # checked when the campaign was parsed
            self.relations.append((spec.name, relation, count))

    def calls(self) -> list[RelationCalls]:
        """Every planned case's declared calls, per relation, for one model (cached)."""
        return self._calls

    @cached_property
    def _calls(self) -> list[RelationCalls]:
        judges = len(self.config.judges)
        repeats = self.config.repeats
        out = []
        for name, relation, count in self.relations:
            subject = subject_most = 0
            per_judge, per_judge_most = [0] * judges, [0] * judges
            for calls, times in _planned_call_counts(
                relation, self.config.seed, name, count, judges
            ):
                most = calls.most
                times *= repeats
                subject += calls.subject * times
                subject_most += most.subject * times
                _add(per_judge, tuple(n * times for n in calls.judges))
                _add(per_judge_most, tuple(n * times for n in most.judges))
            out.append(
                RelationCalls(
                    name,
                    count * repeats,
                    subject,
                    tuple(per_judge),
                    subject_most,
                    tuple(per_judge_most),
                    hasattr(relation, "planned_calls"),
                )
            )
        return out

    def call_totals(self, most: bool = False) -> tuple[int, tuple[int, ...]]:
        """Subject calls per model, and calls per judge over every model's cases (``most``:
        every repair turn taken)."""
        models = len(self.config.models)
        subject = 0
        judges = [0] * len(self.config.judges)
        for row in self.calls():
            subject += row.subject_most if most else row.subject
            _add(judges, tuple(n * models for n in (row.judges_most if most else row.judges)))
        return subject, tuple(judges)

    @property
    def total_cases(self) -> int:
        per_model = sum(count for _, _, count in self.relations) * self.config.repeats
        return per_model * len(self.config.models)

    def cases_for(
        self, model: str, skip: Callable[[str], bool] | None = None
    ) -> Iterator[tuple[Case, Relation]]:
        """Every case of one model, generated on demand, in the campaign's ``order``: nothing
        is held but one cursor per relation.

        ``interleaved`` (the default of new campaigns): each relation's cases, in their own
        order, are merged by `interleaved_positions`, so a run stopped after a share of its
        cases has run about that share of every relation. ``file``: relation after relation
        in file order (campaigns recorded before the order existed).

        Cases whose id ``skip`` accepts (closed ones, on resume) are left out before they are
        generated: ``make_case`` runs only for an index with at least one repeat to run.
        """
        streams = [
            self._relation_cases(name, relation, count, model, skip)
            for name, relation, count in self.relations
        ]
        if self.config.order == "file":
            for stream in streams:
                yield from (item for item in stream if item is not None)
            return
        sizes = [count * self.config.repeats for _, _, count in self.relations]
        for position in interleaved_positions(self.config.seed, self.relations_named(), sizes):
            item = next(streams[position])
            if item is not None:
                yield item

    def relations_named(self) -> list[str]:
        """The plan's relation names, in file order."""
        return [name for name, _, _ in self.relations]

    def _relation_cases(
        self,
        name: str,
        relation: Relation,
        count: int,
        model: str,
        skip: Callable[[str], bool] | None,
    ) -> Iterator[tuple[Case, Relation] | None]:
        """One relation's cases for one model, index after index, each index's repeats
        together; None stands for a case ``skip`` accepts, so the interleave keeps its
        place in the order whatever was skipped."""
        seed = self.config.seed
        repeats = self.config.repeats
        case_seed_of = seed_deriver(seed, name)  # derive_seed(seed, name, index)
        # `case_id_for` in pieces: on resume this loop walks every closed case before the
        # first open one (143,000 on a million-event log), so its per-index cost counts.
        # Nothing here grows with `repeats` or `count`: a campaign of a billion repeats
        # is walked one id at a time, never listed (invariant 6).
        head = f"{name}/"
        tail = f"@{model}"
        for index in range(count):
            stem = f"{head}{index}/r"
            case_seed: int | None = None
            data: dict[str, Any] = {}
            for repeat in range(repeats):
                case_id = f"{stem}{repeat}{tail}"
                if skip is not None and skip(case_id):
                    yield None
                    continue
                if case_seed is None:  # generated once per index, and only if it runs
                    case_seed = case_seed_of(index)
                    data = relation.make_case(index, case_seed)
                yield (
                    Case(
                        case_id=case_id,
                        relation=name,
                        model=model,
                        index=index,
                        repeat=repeat,
                        seed=case_seed,
                        data=data,
                    ),
                    relation,
                )

    def case(self, case_id: str) -> tuple[Case, Relation] | None:
        """The planned case with this id, generated alone (None: no such case in the plan).
        Workers continue cases other workers gave back by id (`harness.running.worker_reclaim`)."""
        name, _, rest = case_id.partition("/")
        index_text, _, rest = rest.partition("/r")
        repeat_text, _, model = rest.partition("@")
        if not (index_text.isdigit() and repeat_text.isdigit()):
            return None
        index, repeat = int(index_text), int(repeat_text)
        models = {spec.name for spec in self.config.models}
        for relation_name, relation, count in self.relations:
            if relation_name != name:
                continue
            if index >= count or repeat >= self.config.repeats or model not in models:
                return None
            if case_id_for(name, index, repeat, model) != case_id:
                return None  # not the canonical spelling of the id (leading zeros...)
            case_seed = derive_seed(self.config.seed, name, index)
            data = relation.make_case(index, case_seed)
            case = Case(
                case_id=case_id,
                relation=name,
                model=model,
                index=index,
                repeat=repeat,
                seed=case_seed,
                data=data,
            )
            return case, relation
        return None

    def all_cases(self) -> Iterator[tuple[Case, Relation]]:
        for spec in self.config.models:
            yield from self.cases_for(spec.name)
