"""The event store: an append-only SQLite log of versioned events.

`writer.EventWriter` appends (one writer task, group commit); `reader.EventReader` reads
(synchronous, streaming, never blocking the writer); `schema` holds the file's layout and
connection settings.
"""
