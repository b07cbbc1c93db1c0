"""``harness relations --verbose``: every option shows its real default ("(required)" only
when it has none) and a description."""

from __future__ import annotations

import json

from click.testing import CliRunner
from pydantic import BaseModel, Field

from harness.cli import main
from harness.cli.commands.relations import _default
from harness.plugins.family_parts import relation_classes


def test_every_option_of_every_relation_has_a_description() -> None:
    missing = [
        f"{name}.{opt}"
        for name, cls in relation_classes().items()
        if cls.__module__.startswith("relations.")
        for opt, field in cls.Options.model_fields.items()
        if not field.description
    ]
    assert missing == []


def test_verbose_shows_defaults_and_descriptions() -> None:
    result = CliRunner().invoke(main, ["relations", "--verbose"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for name, cls in relation_classes().items():
        if not cls.__module__.startswith("relations."):
            continue
        for opt, field in cls.Options.model_fields.items():
            shown = next(line.strip() for line in lines if line.strip().startswith(f"{opt} = "))
            assert field.is_required() or "(required)" not in shown, f"{name}.{opt}: {shown}"
            assert field.description is not None and field.description in result.output
    # Defaults made by a factory are shown as values, e.g. every group of MetaQuerier.
    assert "groups = (required)" not in result.output
    assert 'types = ["Yes/No", "Choice", "Why"]' in result.output


def test_required_options_are_marked_required() -> None:
    class Opts(BaseModel):
        needed: int = Field(description="no default")
        made: list[int] = Field(default_factory=lambda: [1, 2], description="factory")

    assert _default(Opts.model_fields["needed"]) == "(required)"
    assert json.loads(_default(Opts.model_fields["made"])) == [1, 2]
