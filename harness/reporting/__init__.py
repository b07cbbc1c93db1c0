"""Reporting: what a report is made of and how it is rendered.

What lives here: the report framework (`tables`: Table, plot hints, ReportContext,
ReportSection), the statistics behind every claim (`stats`), the report over a given list
of sections (`report`), the core's shared sections (`report`, `format_report`,
`judge_agreement`), the campaign header (`campaign_status`), exports (`export_tables`,
`conversation_export`), the self-contained HTML page (`html/`), the rules for files a
command writes (`output_files`) and model text made safe for a terminal (`terminal_text`).

What it may import: the vocabulary, runtime and store. Not the plug-ins: the sections to
report are handed in by the caller (the CLI, the library façade), so the framework that
families build their sections on sits below the registry that lists them.
"""
