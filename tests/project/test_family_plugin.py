"""A toy family, defined here and registered without touching the core, gets everything a
built-in family gets: its relation runs in a campaign, the simulated model answers it from
the family's planted truth, its report section and CLI command appear, its model backend
builds. This is the walkthrough of docs/architecture.md, executed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict, Field

from harness.cli import main
from harness.family_api import (
    Ask,
    Case,
    EventReader,
    Family,
    ModelSpec,
    Outcome,
    RelationBase,
    ReportContext,
    ReportSection,
    SimHandler,
    SimRequest,
    Table,
    Transcript,
    Verdict,
    run_campaign,
)
from harness.models.sim import SimModel
from harness.plugins.assembly import build_report
from harness.plugins.registry import extra_family, registry
from harness.running.campaign import parse_campaign
from harness.testing import FakeModel
from harness.vocabulary.errors import RegistryError

WORDS = ("apple", "river", "candle", "meadow")


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    shout: bool = False


class Echo(RelationBase):
    """Asks the model to repeat a word; a reply without the word is a violation."""

    name: ClassVar[str] = "toy.echo"
    family: ClassVar[str] = "toy"
    summary: ClassVar[str] = "repeat one word"
    Options = EchoOptions

    def case_count(self) -> int | None:
        return len(WORDS)

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {"word": WORDS[index % len(WORDS)]}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        word = case.data["word"]
        if not transcript.turns:
            return [Ask(thread="main", prompt=f"Repeat the word: {word}")]
        reply = transcript.turns[-1].reply
        if reply is None:
            return Verdict(outcome=Outcome.INVALID, reason="no reply")
        held = word in reply.lower()
        return Verdict(
            outcome=Outcome.HELD if held else Outcome.VIOLATED,
            reason="repeated" if held else "forgot the word",
            evidence={"word": word},
        )


class ToyTruth(BaseModel):
    """Planted truth of sim: models for the toy family."""

    model_config = ConfigDict(extra="forbid")
    toy_forget: list[str] = Field(default_factory=list)  # words the simulation never repeats


def answer_echo(req: SimRequest) -> str | None:
    prefix = "Repeat the word: "
    if not req.prompt.startswith(prefix):
        return None
    word = req.prompt[len(prefix) :]
    return "Sorry." if word in req.truth(ToyTruth).toy_forget else word


def forgotten_words(ctx: ReportContext) -> list[Table]:
    rows = sorted(
        [v.evidence["word"], v.case_id]
        for v in ctx.relation_verdicts
        if v.relation == "toy.echo" and v.outcome == "VIOLATED"
    )
    return [Table("toy_forgotten", "Words the model did not repeat", ["word", "case"], rows)]


@click.command("toy")
def toy_command() -> None:
    """Say hello from the toy family."""
    click.echo("hello from toy")


def parrot(spec: ModelSpec) -> FakeModel:
    """A model backend that repeats the last word of the prompt."""
    return FakeModel(lambda messages: messages[-1].content.split()[-1], name=spec.name)


TOY = Family(
    name="toy",
    summary="a family defined in a test",
    relations=(Echo,),
    report_sections=(ReportSection("toy_forgotten", 70, forgotten_words),),
    sim_handlers=(SimHandler("toy.echo", 1, answer_echo),),
    sim_options=ToyTruth,
    model_backends={"parrot": parrot},
    commands=(toy_command,),
)


def _campaign(model: str, options: dict[str, Any] | None = None) -> Any:
    return parse_campaign(
        {
            "name": "toy",
            "seed": 3,
            "models": [{"name": model, "options": options or {}}],
            "relations": [{"name": "toy.echo"}],
        }
    )


def test_a_toy_family_runs_end_to_end_without_touching_the_core(tmp_path: Path) -> None:
    with extra_family(TOY):
        config = _campaign("sim:planted", {"toy_forget": ["river"]})
        db = tmp_path / "toy.db"
        summary = asyncio.run(run_campaign(config, db))
        assert summary.status == "completed"
        assert summary.outcomes == {"HELD": 3, "VIOLATED": 1}
        with EventReader(db) as log:
            tables = {t.name: t for t in build_report(log)}
        assert [row[0] for row in tables["toy_forgotten"].rows] == ["river"]
        assert "violation_rates" in tables  # the core's sections apply to any family

        parrot = asyncio.run(run_campaign(_campaign("parrot:x"), tmp_path / "parrot.db"))
        assert parrot.outcomes == {"HELD": 4}

        runner = CliRunner()
        assert runner.invoke(main, ["toy"]).output == "hello from toy\n"
        listing = runner.invoke(main, ["relations"]).output
        assert "toy.echo" in listing
    # Gone with the block: nothing of the toy family stays registered.
    assert registry().get("family", "toy") is None
    assert "toy.echo" not in CliRunner().invoke(main, ["relations"]).output


def test_the_family_truth_is_an_option_of_sim_models_and_bad_values_fail_early() -> None:
    with extra_family(TOY):
        SimModel("sim:x", {"toy_forget": ["apple"], "invalid_rate": 0.1})
        with pytest.raises(Exception, match=r"models\(sim:x\)\.options\.toy_forget"):
            SimModel("sim:x", {"toy_forget": "apple"})
    with pytest.raises(Exception, match=r"options\.toy_forget.*options of sim: models are"):
        SimModel("sim:x", {"toy_forget": ["apple"]})


@pytest.mark.parametrize(
    ("family", "kind"),
    [
        (Family(name="dup", summary="", model_backends={"sim": parrot}), "model backend 'sim'"),
        (Family(name="metaquerier", summary=""), "family 'metaquerier'"),
        (
            Family(
                name="dup", summary="", sim_handlers=(SimHandler("metafair.audit", 1, answer_echo),)
            ),
            "sim handler 'metafair.audit'",
        ),
        (Family(name="dup", summary="", sim_options=type("T", (ToyTruth,), {})), None),
        (Family(name="dup", summary="", commands=(click.Command("run"),)), "command 'run'"),
    ],
)
def test_a_name_registered_twice_is_an_error_naming_both_places(
    family: Family, kind: str | None
) -> None:
    if kind is None:  # the toy truth twice: its option name is taken by the first
        with (
            extra_family(TOY),
            pytest.raises(RegistryError, match="sim option 'toy_forget'"),
            extra_family(family, origin="tests.dup") as found,
        ):
            found.entries("sim option")
        return
    with pytest.raises(RegistryError) as info, extra_family(family, origin="tests.dup") as found:
        # Built-in families give some parts by reference (harness.plugins.family_refs.Deferred):
        # their names meet the duplicate rule when their kind is first listed.
        for kind_listed in ("report section", "sim handler", "sim option"):
            found.entries(kind_listed)
    message = str(info.value)
    assert kind in message and "registered twice" in message
    assert "tests.dup" in message  # the second place...
    assert (
        "pyproject" in message or "harness." in message or "relations." in message
    )  # ...and the first


def test_a_relation_listed_by_another_family_is_refused() -> None:
    stray = Family(name="other", summary="", relations=(Echo,))
    with pytest.raises(RegistryError, match="belongs to family 'toy'"), extra_family(stray):
        pass
