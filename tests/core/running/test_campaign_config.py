"""Campaign files: every mistake is a ConfigError naming the field (or line) and the fix,
raised while loading, before any model is built or called."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.plugins.assembly import build_model
from harness.running.campaign import CampaignConfig, load_campaign
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.model import ModelSpec

GOOD = """\
name = "ok"
seed = 3
repeats = 2

[[models]]
name = "sim:planted"
max_in_flight = 4
params = { temperature = 0.5, max_tokens = 64 }

[[relations]]
name = "metaquerier.mr1"
cases = 5
options = { list_size = 6 }

[[relations]]
name = "metafair.mr8"
cases = 3
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def fails(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_campaign(write(tmp_path, text))
    return err.value


def test_a_good_campaign_loads(tmp_path: Path) -> None:
    config = load_campaign(write(tmp_path, GOOD))
    assert isinstance(config, CampaignConfig)
    assert config.repeats == 2
    assert config.models[0].params.max_tokens == 64
    assert [r.name for r in config.relations] == ["metaquerier.mr1", "metafair.mr8"]
    assert config.config_hash() == load_campaign(write(tmp_path, GOOD)).config_hash()


def test_bad_toml_names_the_line(tmp_path: Path) -> None:
    err = fails(tmp_path, GOOD.replace("cases = 5", "cases = = 5"))
    line = GOOD.splitlines().index("cases = 5") + 1
    assert f"line {line}" in str(err)
    assert err.fix and "TOML" in err.fix


@pytest.mark.parametrize(
    ("change", "field", "fix_hint"),
    [
        (("repeats = 2", 'repeats = 2\ncolour = "red"'), "colour", "spelling"),
        (
            ("max_in_flight = 4", "max_in_flight = 4\nspeed = 3"),
            "models[0](sim:planted).speed",
            "spelling",
        ),
        (('name = "sim:planted"', 'name = "quantum:qpu"'), "models[0].name", "scheme"),
        (('name = "sim:planted"', 'name = "planted"'), "models[0].name", "scheme"),
        (
            ('name = "metaquerier.mr1"', 'name = "metaquerier.mr9"'),
            "relations[0].name",
            "harness relations",
        ),
        (("{ list_size = 6 }", "{ list_sise = 6 }"), "relations[0].options.list_sise", "relations"),
        (("{ list_size = 6 }", "{ list_size = 1 }"), "relations[0].options.list_size", "relations"),
        (
            ("{ list_size = 6 }", '{ groups = ["astrology"] }'),
            "relations[0].options.groups",
            "relations",
        ),
        (
            ("cases = 3", 'cases = 3\noptions = { dimensions = ["height"] }'),
            "relations[1].options.dimensions",
            "relations",
        ),
        (("cases = 5", "cases = 0"), "relations[0](metaquerier.mr1).cases", None),
        (("repeats = 2", "repeats = 0"), "repeats", None),
        (("max_in_flight = 4", "max_in_flight = 0"), "models[0](sim:planted).max_in_flight", None),
        (
            ("temperature = 0.5", "temprature = 0.5"),
            "models[0](sim:planted).params.temprature",
            "spelling",
        ),
    ],
)
def test_mistakes_name_the_field_and_the_fix(
    tmp_path: Path, change: tuple[str, str], field: str, fix_hint: str | None
) -> None:
    old, new = change
    assert old in GOOD
    err = fails(tmp_path, GOOD.replace(old, new, 1))
    assert err.field == field, str(err)
    assert err.fix, str(err)
    if fix_hint:
        assert fix_hint in err.fix, err.fix
    assert field in str(err) and err.fix in str(err)


def test_no_models_or_relations(tmp_path: Path) -> None:
    err = fails(tmp_path, 'name = "x"\n[[models]]\nname = "sim:a"\n')
    assert err.field == "relations" and err.fix == "add it"
    err = fails(tmp_path, 'name = "x"\nmodels = []\n[[relations]]\nname = "metafair.mr8"\n')
    assert err.field == "models" and err.fix


def test_a_relation_without_a_size_needs_cases(tmp_path: Path) -> None:
    err = fails(tmp_path, GOOD.replace("cases = 5\n", ""))
    assert err.field == "relations[0].cases"
    assert err.fix and "cases =" in err.fix


def test_a_model_listed_twice(tmp_path: Path) -> None:
    twice = GOOD.replace("[[relations]]", '[[models]]\nname = "sim:planted"\n\n[[relations]]', 1)
    err = fails(tmp_path, twice)
    assert "listed twice" in str(err)


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "does not exist"), (b"\xff\xfe\x00bad", "UTF-8")],
)
def test_unreadable_files(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "campaign.toml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        load_campaign(path)


def test_bad_backend_options_fail_when_the_model_is_built() -> None:
    # Built in Session.build, before the store is opened and before any call.
    with pytest.raises(ConfigError) as err:
        build_model(ModelSpec(name="sim:x", options={"latency": 1}))
    assert err.value.field == "models(sim:x).options.latency"
    with pytest.raises(ConfigError) as err:
        build_model(ModelSpec(name="local:gpt5"))
    assert err.value.field == "models.name" and err.value.fix


def test_errors_are_raised_before_any_model_call(tmp_path: Path, monkeypatch) -> None:
    # The CLI loads and validates the file first; nothing may be built or written.
    from click.testing import CliRunner

    import harness.plugins.assembly
    import harness.running.runner
    from harness.cli import main

    built: list[str] = []
    real = harness.plugins.assembly.build_model

    def recording(spec: ModelSpec) -> object:
        built.append(spec.name)
        return real(spec)

    monkeypatch.setattr(harness.plugins.assembly, "build_model", recording)
    monkeypatch.setattr(harness.running.runner, "build_model", recording)
    path = write(tmp_path, GOOD.replace("{ list_size = 6 }", "{ list_size = 600 }"))
    db = tmp_path / "out.db"
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(db)])
    assert result.exit_code == 2
    assert "relations[0].options.list_size" in result.output
    assert built == [] and not db.exists()
