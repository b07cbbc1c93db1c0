"""The store: the event log, an append-only record of versioned events in SQLite (WAL,
synchronous=FULL) or PostgreSQL.

What lives here: appending (`writer.EventWriter`, one writer task with group commit;
`postgres_writer`), reading (`reader.EventReader`, synchronous and streaming, never blocking
the writer; `postgres_reader`), the file's layout and connection settings (`schema`, log
format 2 in `compact_*` and `sqlar`), a log's location parsed once (`target`) and the
`log.Log` opened from it (`open` for short), whole-log copies (`copy`, `fresh_log`), a
case's events folded into its state
(`fold`), the streamed verdict counts (`verdict_counts`), resume's summary (`log_summary`)
and PostgreSQL's case leases and worker registry.

What it may import: the vocabulary and runtime.
"""
