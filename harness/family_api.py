"""The public surface for families: everything a relation family may use, in one place.

A family (built in under ``relations/`` or a third party's package) imports from here and
nowhere else in ``harness``; `tests/project/test_family_api.py` pins `__all__` and fails when a
built-in family imports any other module of the core. Everything not named here is private
to the core and may change without notice; what is named here changes only with a note in
CHANGELOG.md.

Names are imported on first use (PEP 562): importing this module costs nothing, so a family
module that needs `Ask` does not pull in the engine, the report or the vendor SDKs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Command-line arguments naming a log: parsed where they are typed
    from harness.cli.log_params import (
        LogFileParam as LogFileParam,
    )
    from harness.cli.log_params import (
        LogParam as LogParam,
    )

    # Relations: the pure step function and what it reads and returns
    from harness.cli.progress import (
        RichProgress as RichProgress,
    )

    # Vendor SDK calls a family makes itself (embeddings): keys and errors as the core reads them
    from harness.models.providers import (
        endpoint_for as endpoint_for,
    )
    from harness.models.providers._errors import (
        from_transport as error_from_transport,
    )
    from harness.models.providers._errors import (
        unexpected as unexpected_vendor_error,
    )
    from harness.models.providers._options import (
        read_key as read_api_key,
    )
    from harness.models.providers._sdk_errors import (
        translate_genai as translate_genai,
    )
    from harness.models.providers._sdk_errors import (
        translate_stainless as translate_stainless,
    )
    from harness.plugins.assembly import (
        build_relation as build_relation,
    )
    from harness.plugins.family_parts import (
        relation_class as relation_class,
    )
    from harness.plugins.family_refs import (
        Deferred as Deferred,
    )
    from harness.plugins.family_refs import (
        Lazy as Lazy,
    )
    from harness.plugins.family_refs import (
        package_attribute as package_attribute,
    )

    # Describing a family
    from harness.plugins.registry import (
        Family as Family,
    )
    from harness.reporting.campaign_status import (
        IMPORT_TOPIC as IMPORT_TOPIC,
    )
    from harness.reporting.campaign_status import (
        campaign_statuses as campaign_statuses,
    )
    from harness.reporting.excess import (
        paired_excess as paired_excess,
    )
    from harness.reporting.judge_stats import (
        bootstrap_interval as bootstrap_interval,
    )
    from harness.reporting.judge_stats import (
        fleiss_kappa_of as fleiss_kappa_of,
    )
    from harness.reporting.judge_stats import (
        krippendorff_alpha as krippendorff_alpha,
    )

    # Files a family's command writes
    from harness.reporting.output_files import (
        check_new_log as check_new_log,
    )
    from harness.reporting.output_files import (
        check_output as check_output,
    )
    from harness.reporting.output_files import (
        write_output as write_output,
    )
    from harness.reporting.output_files import (
        write_stdout as write_stdout,
    )
    from harness.reporting.stats import (
        ALPHA as ALPHA,
    )
    from harness.reporting.stats import (
        COMPARISON_COLUMNS as COMPARISON_COLUMNS,
    )
    from harness.reporting.stats import (
        TEST_COLUMNS as TEST_COLUMNS,
    )
    from harness.reporting.stats import (
        cluster_rate_interval as cluster_rate_interval,
    )
    from harness.reporting.stats import (
        compare_groups as compare_groups,
    )
    from harness.reporting.stats import (
        compare_to_rest as compare_to_rest,
    )
    from harness.reporting.stats import (
        compare_to_rest_stratified as compare_to_rest_stratified,
    )
    from harness.reporting.stats import (
        exact_min_p as exact_min_p,
    )
    from harness.reporting.stats import (
        fdr_adjust as fdr_adjust,
    )
    from harness.reporting.stats import (
        fdr_adjust_tarone as fdr_adjust_tarone,
    )
    from harness.reporting.stats import (
        load as load_statistics,
    )
    from harness.reporting.stats import (
        majority_per_case as majority_per_case,
    )
    from harness.reporting.stats import (
        mcnemar_exact as mcnemar_exact,
    )
    from harness.reporting.stats import (
        mcnemar_min_p as mcnemar_min_p,
    )
    from harness.reporting.stats import (
        mean_of_shares_interval as mean_of_shares_interval,
    )
    from harness.reporting.stats import (
        mean_per_case as mean_per_case,
    )
    from harness.reporting.stats import (
        report_number as report_number,
    )
    from harness.reporting.stats import (
        tied_cases as tied_cases,
    )
    from harness.reporting.stats import (
        wilson_interval as wilson_interval,
    )
    from harness.reporting.tables import (
        Bars as Bars,
    )
    from harness.reporting.tables import (
        Forest as Forest,
    )
    from harness.reporting.tables import (
        Heatmap as Heatmap,
    )
    from harness.reporting.tables import (
        Network as Network,
    )
    from harness.reporting.tables import (
        Paired as Paired,
    )
    from harness.reporting.tables import (
        PartAside as PartAside,
    )
    from harness.reporting.tables import (
        ReportContext as ReportContext,
    )
    from harness.reporting.tables import (
        ReportSection as ReportSection,
    )
    from harness.reporting.tables import (
        Table as Table,
    )
    from harness.reporting.tables import (
        VerdictRow as VerdictRow,
    )
    from harness.reporting.tables import (
        rounded as rounded,
    )
    from harness.running.cache import (
        LogAnswerCache as LogAnswerCache,
    )

    # Campaigns a family's command runs
    from harness.running.campaign import (
        CampaignConfig as CampaignConfig,
    )
    from harness.running.campaign import (
        RelationSpec as RelationSpec,
    )
    from harness.running.campaign import (
        read_toml_file as read_toml_file,
    )
    from harness.running.campaign import (
        read_user_text as read_user_text,
    )
    from harness.running.engine import (
        ProgressSink as ProgressSink,
    )
    from harness.running.plan import (
        case_id_for as case_id_for,
    )
    from harness.running.retry import (
        RetryPolicy as RetryPolicy,
    )
    from harness.running.runner import (
        campaign_started as campaign_started,
    )
    from harness.running.runner import (
        resume_campaign as resume_campaign,
    )
    from harness.running.runner import (
        run_campaign as run_campaign,
    )

    # Report sections and their statistics
    # Work computed in a second process: an iterator's items (an importer's reading half)
    from harness.runtime.process_call import (
        ProcessItems as ProcessItems,
    )
    from harness.store.fresh_log import (
        FreshLog as FreshLog,
    )

    # Reading and writing a log
    from harness.store.log import (
        Log as Log,
    )
    from harness.store.open import (
        open_reader as open_reader,
    )
    from harness.store.reader import (
        EventReader as EventReader,
    )
    from harness.store.side_tables import (
        SideTable as SideTable,
    )
    from harness.store.writer import (
        EncodedEvent as EncodedEvent,
    )
    from harness.store.writer import (
        EventWriter as EventWriter,
    )
    from harness.store.writer import (
        PendingEvent as PendingEvent,
    )
    from harness.store.writer import (
        write_imported_events as write_imported_events,
    )
    from harness.vocabulary.answer_shape import (
        AnswerFormat as AnswerFormat,
    )
    from harness.vocabulary.answer_shape import (
        AnswerShape as AnswerShape,
    )
    from harness.vocabulary.config_errors import (
        config_error as config_error,
    )

    # Describing a family's data files
    from harness.vocabulary.corpus import (
        Corpus as Corpus,
    )

    # Errors: the one error tree
    from harness.vocabulary.errors import (
        ConfigError as ConfigError,
    )
    from harness.vocabulary.errors import (
        HarnessError as HarnessError,
    )
    from harness.vocabulary.errors import (
        MalformedResponseError as MalformedResponseError,
    )
    from harness.vocabulary.errors import (
        ModelError as ModelError,
    )
    from harness.vocabulary.errors import (
        ReplayMissError as ReplayMissError,
    )
    from harness.vocabulary.errors import (
        StoreError as StoreError,
    )

    # Events of the log
    from harness.vocabulary.events import (
        AskSent as AskSent,
    )
    from harness.vocabulary.events import (
        CampaignFinished as CampaignFinished,
    )
    from harness.vocabulary.events import (
        CampaignStarted as CampaignStarted,
    )
    from harness.vocabulary.events import (
        CaseClosed as CaseClosed,
    )
    from harness.vocabulary.events import (
        CaseOpened as CaseOpened,
    )
    from harness.vocabulary.events import (
        Event as Event,
    )
    from harness.vocabulary.events import (
        Note as Note,
    )
    from harness.vocabulary.events import (
        ReplyReceived as ReplyReceived,
    )
    from harness.vocabulary.events import (
        VerdictReached as VerdictReached,
    )
    from harness.vocabulary.events import (
        dump_json as dump_json,
    )
    from harness.vocabulary.events import (
        encode_event as encode_event,
    )

    # Optional dependencies: a one-line error naming the extra to install
    from harness.vocabulary.extras import (
        require_extra as require_extra,
    )

    # Models: requests and replies
    from harness.vocabulary.model import (
        GenerationParams as GenerationParams,
    )
    from harness.vocabulary.model import (
        Message as Message,
    )
    from harness.vocabulary.model import (
        Model as Model,
    )
    from harness.vocabulary.model import (
        ModelFactory as ModelFactory,
    )
    from harness.vocabulary.model import (
        ModelSpec as ModelSpec,
    )
    from harness.vocabulary.model import (
        Reply as Reply,
    )
    from harness.vocabulary.model import (
        Usage as Usage,
    )
    from harness.vocabulary.model import (
        request_key as request_key,
    )

    # Refusals: the one rule every family classifies REFUSED replies by
    from harness.vocabulary.refusal import (
        READING_KEY as READING_KEY,
    )
    from harness.vocabulary.refusal import (
        READING_VERSION as READING_VERSION,
    )
    from harness.vocabulary.refusal import (
        reading_version as reading_version,
    )
    from harness.vocabulary.refusal import (
        refusal_reason as refusal_reason,
    )
    from harness.vocabulary.relation import (
        Ask as Ask,
    )
    from harness.vocabulary.relation import (
        Case as Case,
    )
    from harness.vocabulary.relation import (
        ChangedDefault as ChangedDefault,
    )
    from harness.vocabulary.relation import (
        NoOptions as NoOptions,
    )
    from harness.vocabulary.relation import (
        Outcome as Outcome,
    )
    from harness.vocabulary.relation import (
        PlannedCalls as PlannedCalls,
    )
    from harness.vocabulary.relation import (
        Relation as Relation,
    )
    from harness.vocabulary.relation import (
        RelationBase as RelationBase,
    )
    from harness.vocabulary.relation import (
        Transcript as Transcript,
    )
    from harness.vocabulary.relation import (
        Turn as Turn,
    )
    from harness.vocabulary.relation import (
        Verdict as Verdict,
    )
    from harness.vocabulary.relation import (
        case_rng as case_rng,
    )
    from harness.vocabulary.relation import (
        derive_seed as derive_seed,
    )
    from harness.vocabulary.relation import (
        seed_deriver as seed_deriver,
    )

    # Judges: what a judge is asked about a family's cases
    from harness.vocabulary.rubric import (
        JudgeRubric as JudgeRubric,
    )
    from harness.vocabulary.rubric import (
        JudgeTask as JudgeTask,
    )

    # The simulated model: a family's answer rules
    from harness.vocabulary.simulation import (
        SimHandler as SimHandler,
    )
    from harness.vocabulary.simulation import (
        SimOptions as SimOptions,
    )
    from harness.vocabulary.simulation import (
        SimRequest as SimRequest,
    )
    from harness.vocabulary.simulation import (
        planted_handler as planted_handler,
    )

# Each public name: the module that defines it and its name there.
_WHERE: dict[str, tuple[str, str]] = {
    "Ask": ("harness.vocabulary.relation", "Ask"),
    "Case": ("harness.vocabulary.relation", "Case"),
    "ChangedDefault": ("harness.vocabulary.relation", "ChangedDefault"),
    "NoOptions": ("harness.vocabulary.relation", "NoOptions"),
    "Outcome": ("harness.vocabulary.relation", "Outcome"),
    "PlannedCalls": ("harness.vocabulary.relation", "PlannedCalls"),
    "Relation": ("harness.vocabulary.relation", "Relation"),
    "RelationBase": ("harness.vocabulary.relation", "RelationBase"),
    "Transcript": ("harness.vocabulary.relation", "Transcript"),
    "Turn": ("harness.vocabulary.relation", "Turn"),
    "Verdict": ("harness.vocabulary.relation", "Verdict"),
    "case_rng": ("harness.vocabulary.relation", "case_rng"),
    "derive_seed": ("harness.vocabulary.relation", "derive_seed"),
    "seed_deriver": ("harness.vocabulary.relation", "seed_deriver"),
    "READING_KEY": ("harness.vocabulary.refusal", "READING_KEY"),
    "READING_VERSION": ("harness.vocabulary.refusal", "READING_VERSION"),
    "reading_version": ("harness.vocabulary.refusal", "reading_version"),
    "refusal_reason": ("harness.vocabulary.refusal", "refusal_reason"),
    "AnswerFormat": ("harness.vocabulary.answer_shape", "AnswerFormat"),
    "AnswerShape": ("harness.vocabulary.answer_shape", "AnswerShape"),
    "GenerationParams": ("harness.vocabulary.model", "GenerationParams"),
    "Message": ("harness.vocabulary.model", "Message"),
    "Model": ("harness.vocabulary.model", "Model"),
    "ModelFactory": ("harness.vocabulary.model", "ModelFactory"),
    "ModelSpec": ("harness.vocabulary.model", "ModelSpec"),
    "Reply": ("harness.vocabulary.model", "Reply"),
    "Usage": ("harness.vocabulary.model", "Usage"),
    "request_key": ("harness.vocabulary.model", "request_key"),
    "JudgeRubric": ("harness.vocabulary.rubric", "JudgeRubric"),
    "JudgeTask": ("harness.vocabulary.rubric", "JudgeTask"),
    "SimHandler": ("harness.vocabulary.simulation", "SimHandler"),
    "SimOptions": ("harness.vocabulary.simulation", "SimOptions"),
    "SimRequest": ("harness.vocabulary.simulation", "SimRequest"),
    "planted_handler": ("harness.vocabulary.simulation", "planted_handler"),
    "AskSent": ("harness.vocabulary.events", "AskSent"),
    "CampaignFinished": ("harness.vocabulary.events", "CampaignFinished"),
    "CampaignStarted": ("harness.vocabulary.events", "CampaignStarted"),
    "CaseClosed": ("harness.vocabulary.events", "CaseClosed"),
    "CaseOpened": ("harness.vocabulary.events", "CaseOpened"),
    "Event": ("harness.vocabulary.events", "Event"),
    "Note": ("harness.vocabulary.events", "Note"),
    "ReplyReceived": ("harness.vocabulary.events", "ReplyReceived"),
    "VerdictReached": ("harness.vocabulary.events", "VerdictReached"),
    "dump_json": ("harness.vocabulary.events", "dump_json"),
    "encode_event": ("harness.vocabulary.events", "encode_event"),
    "ConfigError": ("harness.vocabulary.errors", "ConfigError"),
    "HarnessError": ("harness.vocabulary.errors", "HarnessError"),
    "MalformedResponseError": ("harness.vocabulary.errors", "MalformedResponseError"),
    "ModelError": ("harness.vocabulary.errors", "ModelError"),
    "ReplayMissError": ("harness.vocabulary.errors", "ReplayMissError"),
    "StoreError": ("harness.vocabulary.errors", "StoreError"),
    "config_error": ("harness.vocabulary.config_errors", "config_error"),
    "require_extra": ("harness.vocabulary.extras", "require_extra"),
    "Family": ("harness.plugins.registry", "Family"),
    "Corpus": ("harness.vocabulary.corpus", "Corpus"),
    "Deferred": ("harness.plugins.family_refs", "Deferred"),
    "Lazy": ("harness.plugins.family_refs", "Lazy"),
    "package_attribute": ("harness.plugins.family_refs", "package_attribute"),
    "relation_class": ("harness.plugins.family_parts", "relation_class"),
    "build_relation": ("harness.plugins.assembly", "build_relation"),
    "Bars": ("harness.reporting.tables", "Bars"),
    "Forest": ("harness.reporting.tables", "Forest"),
    "Heatmap": ("harness.reporting.tables", "Heatmap"),
    "Network": ("harness.reporting.tables", "Network"),
    "Paired": ("harness.reporting.tables", "Paired"),
    "ReportContext": ("harness.reporting.tables", "ReportContext"),
    "PartAside": ("harness.reporting.tables", "PartAside"),
    "ReportSection": ("harness.reporting.tables", "ReportSection"),
    "Table": ("harness.reporting.tables", "Table"),
    "VerdictRow": ("harness.reporting.tables", "VerdictRow"),
    "rounded": ("harness.reporting.tables", "rounded"),
    "ALPHA": ("harness.reporting.stats", "ALPHA"),
    "COMPARISON_COLUMNS": ("harness.reporting.stats", "COMPARISON_COLUMNS"),
    "TEST_COLUMNS": ("harness.reporting.stats", "TEST_COLUMNS"),
    "compare_groups": ("harness.reporting.stats", "compare_groups"),
    "compare_to_rest": ("harness.reporting.stats", "compare_to_rest"),
    "compare_to_rest_stratified": ("harness.reporting.stats", "compare_to_rest_stratified"),
    "cluster_rate_interval": ("harness.reporting.stats", "cluster_rate_interval"),
    "exact_min_p": ("harness.reporting.stats", "exact_min_p"),
    "fdr_adjust_tarone": ("harness.reporting.stats", "fdr_adjust_tarone"),
    "mcnemar_min_p": ("harness.reporting.stats", "mcnemar_min_p"),
    "paired_excess": ("harness.reporting.excess", "paired_excess"),
    "tied_cases": ("harness.reporting.stats", "tied_cases"),
    "fdr_adjust": ("harness.reporting.stats", "fdr_adjust"),
    "majority_per_case": ("harness.reporting.stats", "majority_per_case"),
    "mcnemar_exact": ("harness.reporting.stats", "mcnemar_exact"),
    "mean_of_shares_interval": ("harness.reporting.stats", "mean_of_shares_interval"),
    "mean_per_case": ("harness.reporting.stats", "mean_per_case"),
    "report_number": ("harness.reporting.stats", "report_number"),
    "wilson_interval": ("harness.reporting.stats", "wilson_interval"),
    "load_statistics": ("harness.reporting.stats", "load"),
    "bootstrap_interval": ("harness.reporting.judge_stats", "bootstrap_interval"),
    "fleiss_kappa_of": ("harness.reporting.judge_stats", "fleiss_kappa_of"),
    "krippendorff_alpha": ("harness.reporting.judge_stats", "krippendorff_alpha"),
    "IMPORT_TOPIC": ("harness.reporting.campaign_status", "IMPORT_TOPIC"),
    "campaign_statuses": ("harness.reporting.campaign_status", "campaign_statuses"),
    "check_new_log": ("harness.reporting.output_files", "check_new_log"),
    "check_output": ("harness.reporting.output_files", "check_output"),
    "write_output": ("harness.reporting.output_files", "write_output"),
    "write_stdout": ("harness.reporting.output_files", "write_stdout"),
    "Log": ("harness.store.log", "Log"),
    "LogFileParam": ("harness.cli.log_params", "LogFileParam"),
    "LogParam": ("harness.cli.log_params", "LogParam"),
    "open_reader": ("harness.store.open", "open_reader"),
    "SideTable": ("harness.store.side_tables", "SideTable"),
    "EventReader": ("harness.store.reader", "EventReader"),
    "EventWriter": ("harness.store.writer", "EventWriter"),
    "EncodedEvent": ("harness.store.writer", "EncodedEvent"),
    "ProcessItems": ("harness.runtime.process_call", "ProcessItems"),
    "PendingEvent": ("harness.store.writer", "PendingEvent"),
    "write_imported_events": ("harness.store.writer", "write_imported_events"),
    "FreshLog": ("harness.store.fresh_log", "FreshLog"),
    "CampaignConfig": ("harness.running.campaign", "CampaignConfig"),
    "RelationSpec": ("harness.running.campaign", "RelationSpec"),
    "read_toml_file": ("harness.running.campaign", "read_toml_file"),
    "read_user_text": ("harness.running.campaign", "read_user_text"),
    "case_id_for": ("harness.running.plan", "case_id_for"),
    "RetryPolicy": ("harness.running.retry", "RetryPolicy"),
    "campaign_started": ("harness.running.runner", "campaign_started"),
    "resume_campaign": ("harness.running.runner", "resume_campaign"),
    "run_campaign": ("harness.running.runner", "run_campaign"),
    "ProgressSink": ("harness.running.engine", "ProgressSink"),
    "LogAnswerCache": ("harness.running.cache", "LogAnswerCache"),
    "RichProgress": ("harness.cli.progress", "RichProgress"),
    "endpoint_for": ("harness.models.providers", "endpoint_for"),
    "read_api_key": ("harness.models.providers._options", "read_key"),
    "error_from_transport": ("harness.models.providers._errors", "from_transport"),
    "unexpected_vendor_error": ("harness.models.providers._errors", "unexpected"),
    "translate_genai": ("harness.models.providers._sdk_errors", "translate_genai"),
    "translate_stainless": ("harness.models.providers._sdk_errors", "translate_stainless"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ALPHA",
    "COMPARISON_COLUMNS",
    "IMPORT_TOPIC",
    "READING_KEY",
    "READING_VERSION",
    "TEST_COLUMNS",
    "AnswerFormat",
    "AnswerShape",
    "Ask",
    "AskSent",
    "Bars",
    "CampaignConfig",
    "CampaignFinished",
    "CampaignStarted",
    "Case",
    "CaseClosed",
    "CaseOpened",
    "ChangedDefault",
    "ConfigError",
    "Corpus",
    "Deferred",
    "EncodedEvent",
    "Event",
    "EventReader",
    "EventWriter",
    "Family",
    "Forest",
    "FreshLog",
    "GenerationParams",
    "HarnessError",
    "Heatmap",
    "JudgeRubric",
    "JudgeTask",
    "Lazy",
    "Log",
    "LogAnswerCache",
    "LogFileParam",
    "LogParam",
    "MalformedResponseError",
    "Message",
    "Model",
    "ModelError",
    "ModelFactory",
    "ModelSpec",
    "Network",
    "NoOptions",
    "Note",
    "Outcome",
    "Paired",
    "PartAside",
    "PendingEvent",
    "PlannedCalls",
    "ProcessItems",
    "ProgressSink",
    "Relation",
    "RelationBase",
    "RelationSpec",
    "ReplayMissError",
    "Reply",
    "ReplyReceived",
    "ReportContext",
    "ReportSection",
    "RetryPolicy",
    "RichProgress",
    "SideTable",
    "SimHandler",
    "SimOptions",
    "SimRequest",
    "StoreError",
    "Table",
    "Transcript",
    "Turn",
    "Usage",
    "Verdict",
    "VerdictReached",
    "VerdictRow",
    "bootstrap_interval",
    "build_relation",
    "campaign_started",
    "campaign_statuses",
    "case_id_for",
    "case_rng",
    "check_new_log",
    "check_output",
    "cluster_rate_interval",
    "compare_groups",
    "compare_to_rest",
    "compare_to_rest_stratified",
    "config_error",
    "derive_seed",
    "dump_json",
    "encode_event",
    "endpoint_for",
    "error_from_transport",
    "exact_min_p",
    "fdr_adjust",
    "fdr_adjust_tarone",
    "fleiss_kappa_of",
    "krippendorff_alpha",
    "load_statistics",
    "majority_per_case",
    "mcnemar_exact",
    "mcnemar_min_p",
    "mean_of_shares_interval",
    "mean_per_case",
    "open_reader",
    "package_attribute",
    "paired_excess",
    "planted_handler",
    "read_api_key",
    "read_toml_file",
    "read_user_text",
    "reading_version",
    "refusal_reason",
    "relation_class",
    "report_number",
    "request_key",
    "require_extra",
    "resume_campaign",
    "rounded",
    "run_campaign",
    "seed_deriver",
    "tied_cases",
    "translate_genai",
    "translate_stainless",
    "unexpected_vendor_error",
    "wilson_interval",
    "write_imported_events",
    "write_output",
    "write_stdout",
]
