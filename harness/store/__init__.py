"""The store: the event log, an append-only record of versioned events in SQLite (WAL,
synchronous=FULL) or PostgreSQL.

What lives here: appending (`writer.EventWriter`, one writer task with group commit, and
`append_many` for bulk writers; `postgres_writer`), reading (`reader.EventReader`,
synchronous and streaming, never blocking the writer; `postgres_reader`), the file's layout
and connection settings (`schema`, with `schema.connect` for ad-hoc SQL), log format 2
(private to the store, in `_compact_*` and `_sqlar`: written only through the writer, read
only through the readers), a log's location parsed once (`target`) and the `log.Log` opened
from it (`open` for short), whole-log copies (`copy`, `fresh_log`), a case's events folded
into its state (`fold`), the streamed verdict counts (`verdict_counts`), resume's summary
(`_log_summary`), a family's side tables (`side_tables`) and PostgreSQL's case leases and
worker registry.

What it may import: the vocabulary and runtime.
"""
