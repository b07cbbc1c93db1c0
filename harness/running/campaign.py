"""Campaign files (TOML): models x relations x cases x repeats, plus limits.

Everything is validated before the first call; every error names the field (and the line
for TOML syntax) and says how to fix it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.models.providers import check_vendor_options
from harness.plugins.assembly import build_relation, known_schemes
from harness.plugins.family_parts import families, family_distribution, relation_class
from harness.plugins.registry import ENTRY_POINT_GROUP
from harness.store.target import LogTargetError, parse_target
from harness.vocabulary.answer_shape import AnswerFormat
from harness.vocabulary.config_bounds import (
    MAX_CONFIG_BYTES,
    MAX_SECONDS,
    check_config_tree,
)
from harness.vocabulary.config_errors import config_error
from harness.vocabulary.errors import ConfigError, FamilyNotInstalledError, strip_url_credentials
from harness.vocabulary.extras import require_extra
from harness.vocabulary.model import PROMPT_PLACEHOLDER, GenerationParams, ModelSpec
from harness.vocabulary.relation import ChangedDefault


class RelationSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    # Strict: ``cases = "3"`` (a string) is a mistake in the file, not a number to guess.
    cases: int | None = Field(default=None, ge=1, strict=True)  # None: every case it has
    options: dict[str, Any] = Field(default_factory=dict)


class Limits(BaseModel):
    """Campaign-wide limits. Per-provider rate limits live in ``models[].options``."""

    # Finite and bounded: every wait of the harness ends (harness.vocabulary.config_bounds).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    max_attempts: int = Field(default=4, ge=1, le=50)
    call_timeout_s: float = Field(default=120.0, gt=0, le=MAX_SECONDS)
    spend_ceiling_usd: float | None = Field(default=None, ge=0)
    stop_grace_s: float = Field(default=8.0, ge=0, le=MAX_SECONDS)
    # A vendor outage (harness.running.reachability.OutageWatch): the first pause of a model
    # whose calls fail in a row, doubled each time, and the pauses before the campaign
    # aborts (exit 3). Left out of the recorded config at their defaults, so the config hash
    # of every campaign written before them is unchanged.
    outage_pause_s: float = Field(
        default=1.0, gt=0, le=3600, allow_inf_nan=False, exclude_if=lambda v: v == 1.0
    )
    outage_pauses: int = Field(default=4, ge=0, le=100, exclude_if=lambda v: v == 4)


class BatchOptions(BaseModel):
    """How models in ``mode = "batch"`` are sent (docs/batch.md): a wave goes to the vendor
    when it holds ``wave_size`` requests or its oldest is ``wave_age_s`` old; a batch is
    polled every ``poll_s``, the wait growing by half each poll up to ``poll_max_s``."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    wave_size: int = Field(default=1000, ge=1, le=50_000)
    wave_age_s: float = Field(default=2.0, gt=0, le=MAX_SECONDS)
    poll_s: float = Field(default=5.0, gt=0, le=MAX_SECONDS)
    poll_max_s: float = Field(default=300.0, gt=0, le=MAX_SECONDS)


class Stopping(BaseModel):
    """Stopping when decided (opt-in; `harness.reporting.sequential`): every ``look_every``
    closed cases of a relation (per model), its excess over its matched control is read by
    a sequential method at ``alpha`` (Bonferroni over the campaign's relations and models);
    a relation decided (an effect, or none as large as ``smallest_effect``) draws no more
    cases."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    # "group-sequential": Lan-DeMets O'Brien-Fleming alpha spending over the planned looks
    # (about the fixed plan's power at its full size); "confidence-sequence": anytime-valid
    # (betting), valid at any look, wider at the full plan (bench/RESULTS.md).
    method: Literal["group-sequential", "confidence-sequence"] = "group-sequential"
    look_every: int = Field(default=50, ge=1, strict=True)
    alpha: float = Field(default=0.05, gt=0, le=0.2)
    smallest_effect: float = Field(default=0.05, gt=0, lt=1)
    # The decisions that stop a relation: leave out "no_effect" to keep drawing the cases
    # of a relation with no excess, whose finer findings (a group against the others, a
    # term) need them (docs/controls.md).
    stop_on: tuple[Literal["effect", "no_effect"], ...] = Field(
        default=("effect", "no_effect"), min_length=1
    )


class CampaignConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = "campaign"
    seed: int = 0
    # Unbounded on purpose: the plan walks repeats and cases lazily (harness.running.plan).
    repeats: int = Field(default=1, ge=1, strict=True)
    models: list[ModelSpec] = Field(min_length=1)
    judges: list[ModelSpec] = Field(default_factory=list)
    relations: list[RelationSpec] = Field(min_length=1)
    limits: Limits = Field(default_factory=Limits)
    # Left out of the recorded config at its defaults: old config hashes are unchanged.
    batch: BatchOptions = Field(
        default_factory=BatchOptions, exclude_if=lambda value: value == BatchOptions()
    )
    defaults: GenerationParams = Field(default_factory=GenerationParams)
    # "structured": answers constrained to each ask's declared shape (see harness/answer_shape)
    answer_format: AnswerFormat = "free"
    # A judge that is also a subject (same backend and model) grades its own answers: refused
    # unless allowed here, and then flagged in the report (docs/judges.md).
    allow_self_judging: bool = False
    # The order cases run in (`harness.running.plan.Plan.cases_for`): "interleaved" mixes
    # the relations in a seeded order, so a stop at k % leaves every relation with about
    # k % of its cases; "file" runs relation after relation. A log recorded before the
    # option ran in file order and resumes in it (`parse_campaign(..., recorded=True)`);
    # "file" is left out of the recorded config, so those logs keep their config hash.
    order: Literal["interleaved", "file"] = Field(
        default="interleaved", exclude_if=lambda v: v == "file"
    )
    # Where `harness run` writes the log when given no --db: a SQLite file or a
    # postgresql:// URL (docs/scale-out.md). Where a campaign is stored is not what it is:
    # left out of the recorded config and its hash.
    store: str | None = None
    # Opt-in: left out of the recorded config when unset, so older config hashes stand.
    stopping: Stopping | None = Field(default=None, exclude_if=lambda v: v is None)

    @field_validator("store")
    @classmethod
    def _store_without_password(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            target = parse_target(value, field="store")
        except LogTargetError as exc:  # pydantic reports the field; the reason says the fix
            raise ValueError(exc.reason) from exc
        if target.url is not None and target.url.secrets:
            raise ValueError(
                "the store URL holds a password; a campaign file never holds secrets: give "
                "the URL without it and the password in PGPASSWORD or ~/.pgpass"
            )
        return value

    def answer_format_of(self, spec: ModelSpec) -> AnswerFormat:
        return spec.answer_format or self.answer_format

    @model_validator(mode="after")
    def _unique_models(self) -> CampaignConfig:
        names = [m.name for m in self.models]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"model {dupes[0]!r} is listed twice; give each model once")
        return self

    def resolved(self) -> dict[str, Any]:
        """The campaign as stored in CampaignStarted. Keys never belong in a config; a
        credential inside a URL option (``http://user:key@host``, ``?key=``) is removed."""
        data = self.model_dump(mode="json", exclude={"store"})
        if not self.allow_self_judging:
            # Left out when off: campaigns recorded before it existed keep their hash.
            del data["allow_self_judging"]
        for group in ("models", "judges"):
            for spec in data[group]:
                spec["options"] = _without_url_credentials(spec["options"])
        return data

    def config_hash(self) -> str:
        blob = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def all_in_batch_mode(config: CampaignConfig) -> CampaignConfig:
    """``config`` with every model and judge in ``mode = "batch"`` (``harness run --batch``)."""
    return config.model_copy(
        update={
            group: [s.model_copy(update={"mode": "batch"}) for s in getattr(config, group)]
            for group in ("models", "judges")
        }
    )


def _without_url_credentials(value: Any) -> Any:
    if isinstance(value, str):
        return strip_url_credentials(value)
    if isinstance(value, dict):
        return {k: _without_url_credentials(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_url_credentials(v) for v in value]
    return value


def parse_campaign(
    data: dict[str, Any],
    *,
    source: str = "campaign",
    recorded: bool = False,
    base: Path | None = None,
) -> CampaignConfig:
    """A campaign from its file's data. ``recorded``: the data is a log's recorded campaign
    (replay, resume): options a relation added later are read with the value the log ran
    with (`RelationBase.changed_defaults`), and what a log may hold although a new campaign
    is refused (a self-judging jury recorded before the rule) is not refused; a log that
    records no ``order`` ran its cases in file order and keeps it. ``base``: the directory a
    model's ``system_file`` is relative to (default: the current one)."""
    # Depth and finiteness first, for the options too (free-form dicts pydantic passes on).
    check_config_tree(data, source=source)
    if recorded and "order" not in data:  # recorded before the order existed: file order
        data = {**data, "order": "file"}
    data = _inline_system_files(data, base or Path())
    try:
        config = CampaignConfig.model_validate(data)
    except ValidationError as exc:
        raise config_error(
            exc, fix="see the campaign format in README.md", data=data, source=source
        ) from exc
    config = _pinned_options(config, recorded=recorded, recorded_keys=frozenset(data))
    _check_references(config)
    if not recorded:
        check_self_judging(config)
        _check_forked_threads(config)
        # A recorded campaign is replayed without calling its functions: no import then.
        _check_python_targets(config)
    return config


def _check_forked_threads(config: CampaignConfig) -> None:
    """An ``http:`` subject that keeps its conversation on the endpoint (``conversation =
    "id"``) cannot answer a thread forked from another's history (the endpoint holds one
    conversation per thread and cannot copy it): with a relation that forks threads every
    such case would be INVALID at call time, so the pair is refused before the first call.
    A recorded campaign is not refused (its log may hold such cases)."""
    held = [
        (i, spec)
        for i, spec in enumerate(config.models)
        if spec.scheme == "http" and spec.options.get("conversation") == "id"
    ]
    if not held:
        return  # no relation is built twice for nothing
    forking = [
        rel.name
        for i, rel in enumerate(config.relations)
        if getattr(build_relation(rel.name, rel.options, field=f"relations[{i}]"),
                   "forks_threads", False)
    ]  # fmt: skip
    if forking:
        i, spec = held[0]
        raise ConfigError(
            f"model {spec.name!r} keeps its conversation on the endpoint "
            f'(conversation = "id"), and relation {forking[0]} asks in threads forked '
            "from another's history, which the endpoint cannot copy",
            field=f"models[{i}].options.conversation",
            fix='set conversation = "history" for this model (the whole conversation is '
            "sent each turn), or run "
            + ", ".join(forking)
            + " without the option that forks (its family's docs name it)",
        )


def _check_python_targets(config: CampaignConfig) -> None:
    """Every ``python:`` model's function imports, before the first call."""
    from harness.models.python_target import check_python_options, resolve_target

    for group in ("models", "judges"):
        for i, spec in enumerate(getattr(config, group)):
            if spec.scheme == "python":
                check_python_options(spec, f"{group}[{i}]")
                name = "backend" if spec.backend else "name"
                resolve_target(spec.identifier, f"{group}[{i}].{name}")


def _inline_system_files(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """``system_file`` read into ``system`` (of models; a judge's is refused by
    `_check_dressing`): the recorded campaign holds the text itself, so a log replays and
    resumes without the file, and a changed file is a changed config."""
    out = dict(data)
    for group in ("models", "judges"):
        specs = data.get(group)
        if not isinstance(specs, list):
            continue
        inlined: list[Any] = []
        for i, spec in enumerate(specs):
            if not isinstance(spec, dict) or "system_file" not in spec:
                inlined.append(spec)
                continue
            where = f"{group}[{i}].system_file"
            if "system" in spec:
                raise ConfigError(
                    "a model has both system and system_file",
                    field=where,
                    fix="keep one: the prompt itself (system) or the file that holds it",
                )
            name = spec["system_file"]
            if not isinstance(name, str) or not name:
                raise ConfigError(
                    "system_file must be a file's path", field=where, fix='e.g. "prompts/sys.txt"'
                )
            try:
                text = read_user_text(base / name, "system prompt file")
            except ConfigError as exc:
                raise ConfigError(
                    f"{exc.args[0].split(' (fix:')[0]}",
                    field=where,
                    fix="give the path of a UTF-8 text file, relative to the campaign file",
                ) from exc
            spec = {k: v for k, v in spec.items() if k != "system_file"}
            spec["system"] = text
            inlined.append(spec)
        out[group] = inlined
    return out


def _check_dressing(config: CampaignConfig) -> None:
    """A template must say where the prompt goes; judges are never dressed (a judge reads
    its rubric's request as written, whatever the subject's application wraps around)."""
    for i, spec in enumerate(config.models):
        if spec.template is not None and PROMPT_PLACEHOLDER not in spec.template:
            raise ConfigError(
                f"the template of {spec.name} has no {PROMPT_PLACEHOLDER} placeholder: the "
                "ask's text would never be sent",
                field=f"models[{i}].template",
                fix=f"put {PROMPT_PLACEHOLDER} where the user's text goes, e.g. "
                f'template = "Customer message: {PROMPT_PLACEHOLDER}"',
            )
    for i, spec in enumerate(config.judges):
        for name in ("system", "template", "prefix"):
            if getattr(spec, name):
                raise ConfigError(
                    f"judge {spec.name} has a {name}: judges read their rubric's request "
                    "as written",
                    field=f"judges[{i}].{name}",
                    fix=f"remove {name} from the judge (system prompts and templates belong "
                    "to the [[models]] under test)",
                )


def _pinned_options(
    config: CampaignConfig, *, recorded: bool, recorded_keys: frozenset[str] = frozenset()
) -> CampaignConfig:
    """Each relation's options with its `changed_defaults` filled in where the file leaves
    them out: the new value in a new campaign (so the log records what it ran with), the
    value an older log ran with in a recorded one (``recorded_keys``: the top-level keys of
    its recorded config, which date it; `ChangedDefault.older_without`)."""

    def pinned(change: ChangedDefault) -> Any:
        if not recorded:
            return change.new
        if change.older_without is not None and change.older_without not in recorded_keys:
            return change.older
        return change.recorded

    specs = []
    for spec in config.relations:
        cls = relation_class(spec.name)
        changed: Mapping[str, ChangedDefault] = getattr(cls, "changed_defaults", {}) if cls else {}
        missing = [k for k in changed if k not in spec.options]
        if not missing:
            specs.append(spec)
            continue
        fill = {k: pinned(changed[k]) for k in missing}
        specs.append(spec.model_copy(update={"options": {**spec.options, **fill}}))
    return config.model_copy(update={"relations": specs})


def self_judging(config: CampaignConfig) -> list[tuple[int, ModelSpec, ModelSpec]]:
    """Each judge that is also a subject of the campaign (same backend and model), with its
    index in ``judges`` and the subject."""
    subjects = {m.target: m for m in config.models}
    return [(i, j, subjects[j.target]) for i, j in enumerate(config.judges) if j.target in subjects]


def check_self_judging(config: CampaignConfig) -> None:
    """A judge that grades its own answers is refused before the first call, unless the
    campaign says ``allow_self_judging = true``."""
    if config.allow_self_judging:
        return
    found = self_judging(config)
    if found:
        i, judge, subject = found[0]
        raise ConfigError(
            f"judge {judge.name!r} is the subject model {subject.name!r} ({judge.target}): "
            "it would grade its own answers",
            field=f"judges[{i}]." + ("backend" if judge.backend else "name"),
            fix="name another model as the judge, or set allow_self_judging = true at the "
            "top of the campaign file (the report then flags the self-judged verdicts)",
        )


def parse_recorded_campaign(data: dict[str, Any], *, source: str) -> CampaignConfig:
    """The campaign a log's CampaignStarted recorded, as `parse_campaign` reads it, except that
    a relation no installed family registers is `FamilyNotInstalledError`: the log is not
    wrong, a package is missing. The family is the relation name's prefix (``family.name``,
    as every relation is named; logs do not record the distribution)."""
    relations = data.get("relations")
    for spec in relations if isinstance(relations, list) else []:
        name = spec.get("name") if isinstance(spec, dict) else None
        if isinstance(name, str) and relation_class(name) is None:
            raise _missing_relation(name, source)
    return parse_campaign(data, source=source, recorded=True)


def _missing_relation(relation: str, source: str) -> FamilyNotInstalledError:
    family = relation.partition(".")[0]
    if family in [f.name for f in families()]:
        installed = family_distribution(family)
        provider = f" (installed: {installed})" if installed else ""
        message = (
            f"{source} needs relation {relation!r} of family {family!r}, which the installed "
            f"family{provider} does not register; install the version of the package that "
            f"provides it (the log was written with another one)"
        )
    else:
        message = (
            f"{source} needs relation {relation!r} of family {family!r}, which is not "
            f"installed; install the package that provides the {family!r} family (entry "
            f"point group {ENTRY_POINT_GROUP})"
        )
    return FamilyNotInstalledError(message, relation=relation, family=family)


def _check_references(config: CampaignConfig) -> None:
    schemes = known_schemes()
    for i, spec in enumerate([*config.models, *config.judges]):
        group, idx = ("models", i) if i < len(config.models) else ("judges", i - len(config.models))
        name_field = f"{group}[{idx}]." + ("backend" if spec.backend else "name")
        if spec.scheme not in schemes or ":" not in spec.target:
            raise ConfigError(
                f"unknown model backend in {spec.target!r}",
                field=name_field,
                fix=f"name models as 'scheme:identifier' with scheme one of {schemes}",
            )
        if spec.scheme == "local":  # llama.cpp and the model file: the 'local' extra
            require_extra("local", field=name_field)
        for params, where in (
            (spec.params, f"{group}[{idx}].params"),
            (config.defaults, "defaults"),
        ):
            if params.answer_shape is not None:
                raise ConfigError(
                    "answer_shape is set by the engine from each relation's asks",
                    field=f"{where}.answer_shape",
                    fix='remove it; set answer_format = "structured" on the model or campaign',
                )
    check_vendor_options(config)
    _check_params(config)
    _check_dressing(config)
    for i, rel in enumerate(config.relations):
        relation = build_relation(rel.name, rel.options, field=f"relations[{i}]")
        needed = int(getattr(relation, "judges_needed", 0))
        if needed > len(config.judges):
            raise ConfigError(
                f"relation {rel.name} needs {needed} judge model(s), the campaign has "
                f"{len(config.judges)}",
                field="judges",
                fix='add [[judges]] entries (e.g. name = "sim:judge")',
            )
        if rel.cases is None and relation.case_count() is None:
            raise ConfigError(
                f"relation {rel.name} can generate any number of cases",
                field=f"relations[{i}].cases",
                fix="say how many cases to run, e.g. cases = 50",
            )


# Sampling parameters every backend accepts; outside them a vendor rejects every call, or a
# local model samples nonsense (a negative temperature) without saying so.
_PARAM_RANGES = {
    "temperature": (0.0, 2.0, "a temperature from 0 (greedy) to 2"),
    "top_p": (0.0, 1.0, "a top_p above 0 and at most 1"),
    "max_tokens": (1, None, "a max_tokens of at least 1, or leave it out"),
}


def _check_params(config: CampaignConfig) -> None:
    """Sampling parameters in range, before the first call (``defaults`` and per model)."""
    where = [("defaults", config.defaults)]
    for group in ("models", "judges"):
        where += [(f"{group}[{i}].params", s.params) for i, s in enumerate(getattr(config, group))]
    for prefix, params in where:
        for name, (low, high, fix) in _PARAM_RANGES.items():
            value = getattr(params, name)
            if value is None:
                continue
            too_low = value <= low if name == "top_p" else value < low
            in_range = not too_low and (high is None or value <= high)
            if not in_range or value != value:  # NaN: every comparison is False
                raise ConfigError(
                    f"{name} = {value} is out of range", field=f"{prefix}.{name}", fix=f"give {fix}"
                )


def read_user_text(path: Path, what: str, *, encoding: str = "utf-8") -> str:
    """A user's file as text, or a ConfigError that says what is wrong with it."""
    try:
        return path.read_text(encoding=encoding)
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} {path} does not exist", fix="check the path") from exc
    except IsADirectoryError as exc:
        raise ConfigError(
            f"{what} {path} is a directory", fix="give the path of a file inside it"
        ) from exc
    except OSError as exc:
        raise ConfigError(
            f"{what} {path} cannot be read: {exc.strerror}", fix="check the path"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text", fix="save it as UTF-8") from exc


def read_toml_file(path: Path, what: str) -> dict[str, Any]:
    """A user's TOML file; a syntax error names its line and column. A file larger than
    `MAX_CONFIG_BYTES`, nested deeper than the bounds or holding a non-finite number is a
    `ConfigError` too (harness.vocabulary.config_bounds), never a MemoryError or a
    RecursionError."""
    with contextlib.suppress(OSError):  # unreadable: read_user_text says why
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES and path.is_file():
            raise ConfigError(
                f"{what} {path} is {size} bytes, more than the {MAX_CONFIG_BYTES} a "
                "configuration file may hold",
                field=str(path),
                fix="give a campaign file, not data; large inputs go in the files that "
                "relations' options name",
            )
    try:
        data = tomllib.loads(read_user_text(path, what))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}", fix="correct the TOML syntax at that line"
        ) from exc
    except RecursionError as exc:
        raise ConfigError(
            f"{what} {path} nests arrays or tables too deep to read",
            field=str(path),
            fix="flatten the nested value; no option of the harness nests more than a few deep",
        ) from exc
    check_config_tree(data, source=str(path))
    return data


def load_campaign(path: str | Path) -> CampaignConfig:
    path = Path(path)
    return parse_campaign(read_toml_file(path, "campaign file"), source=str(path), base=path.parent)


EMBEDDED = ("demo", "sim")


def embedded_campaign(name: str) -> CampaignConfig:
    """A campaign shipped inside the package (``demo``: the local model; ``sim``)."""
    text = resources.files("harness.running.campaigns").joinpath(f"{name}.toml").read_text("utf-8")
    return parse_campaign(tomllib.loads(text), source=f"embedded campaign {name!r}")


def resolve_campaign(target: str | None) -> tuple[CampaignConfig, str]:
    """A campaign named on the command line (a TOML path or an embedded name; default
    ``demo``) and the stem its log is named after."""
    if target is None:
        return embedded_campaign("demo"), "demo"
    if target in EMBEDDED and not Path(target).exists():
        return embedded_campaign(target), target
    config = load_campaign(target)
    return config, Path(target).stem
