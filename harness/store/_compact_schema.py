"""Log format 2, the compact SQLite layout: each long string of a payload stored once in
``texts``, integer keys for campaign, case and kind, and the spend in an indexed column.

The ``events`` relation of format 1 survives as a view with the same columns and the same
payload bytes, so every reader that queries ``events`` (with ``json_extract``) or the
``turns`` / ``verdicts`` views works unchanged on either format.

How a payload is stored (`harness.store._compact_rows` splits it): every JSON string value of
at least `harness.store._compact_rows.MIN_TEXT` characters, up to `SLOTS` of them, the longest
first, is cut out and replaced by a marker ``\\x01<slot>\\x01``; the case id, where it appears
as a value, by ``\\x01c\\x01``. What is left (the *shape*) is itself a text. A text is the
escaped body of a JSON string literal (what sits between the quotes), so putting it back is
a plain ``replace`` that restores the writer's bytes exactly; a raw control character never
occurs in encoded JSON, so a marker cannot clash with data. Many events share a shape
(every AskSent of an import, say), and a question asked in three places is one text.

``texts.data`` follows the SQLite Archive convention: zlib-compressed when that is smaller,
``size`` the length before compression; ``sqlar_uncompress(data, size)`` reads either. The
stock ``sqlite3`` shell has that function; the harness registers its own on every connection
it opens (`harness.store._sqlar`); plain Python ``sqlite3`` or DuckDB must register it too.
"""

from __future__ import annotations

from typing import Any

LOG_FORMAT_2 = "bias-harness-event-log/2"
SLOTS = 4  # long string values cut out into texts per payload; more stay in the shape
INLINE = 4  # short varying tokens cut out into the row itself (columns i0..i3)
CASE_MARKER = "\x01c\x01"


def slot_marker(slot: int) -> str:
    return f"\x01{slot}\x01"


def inline_marker(slot: int) -> str:
    return f"\x01i{slot}\x01"


# Text ``x`` as stored: a text stored as is (SQL type TEXT) is read without a call of
# ``sqlar_uncompress``, which on a Python connection is a Python function (about a
# microsecond a call before any inflating; a full read makes one or two calls a row).
# A text packed in a block (``x.block``: the texts of one commit, zlib-compressed together,
# 2x smaller than each on its own) is bytes ``start``.. of the inflated block (`substr` of a
# blob counts bytes). Logs written before blocks have no ``blocks`` table and keep their
# own views (views live in the file).
_INFLATED = (
    "CASE WHEN x.block IS NOT NULL THEN CAST(substr((SELECT sqlar_uncompress(b.data, b.size)"
    " FROM blocks b WHERE b.key = x.block), x.start, x.size) AS TEXT)"
    " WHEN typeof(x.data) = 'text' THEN x.data"
    " ELSE CAST(sqlar_uncompress(x.data, x.size) AS TEXT) END"
)


def _text(key: str) -> str:
    """The JSON string literal of text ``key`` (SQL)."""
    return f"(SELECT '\"' || {_INFLATED} || '\"' FROM texts x WHERE x.key = {key})"


def _filled(expr: str, slots: list[tuple[str, str, str]]) -> str:
    """``expr`` with each (column, marker, value) of ``slots`` replaced up to the first NULL
    column: the writer fills slots in order, so a NULL column means no marker from there on,
    and a row skips the replace calls (about a microsecond each) of its empty slots. The
    branches repeat ``expr`` in the SQL text; only one of them runs."""
    branches, filled = [], expr
    for column, marker, value in slots:
        branches.append(f"WHEN {column} IS NULL THEN {filled}")
        filled = f"replace({filled}, {marker}, {value})"
    return f"CASE {' '.join(branches)} ELSE {filled} END"


def _marker_sql(tag: str) -> str:
    return f"char(1) || '{tag}' || char(1)"


def _inline(column: str) -> str:
    """An inline token as JSON text: stored as an INTEGER (a canonical integer: `replace`
    writes it back in decimal), a BLOB (a quoted lowercase-hex string, half the bytes) or
    the token itself (`harness.store._compact_rows.inline_value`)."""
    blob = f"'\"' || lower(hex({column})) || '\"'"
    return f"CASE typeof({column}) WHEN 'blob' THEN {blob} ELSE {column} END"


def ts_sql(log: str) -> str:
    """Row ``log``'s timestamp: its own, or (NULL) its batch's, stored once a batch."""
    return f"coalesce({log}.ts, (SELECT b.ts FROM batches b WHERE b.batch = {log}.batch))"


def payload_sql(log: str, case: str) -> str:
    """The SQL expression rebuilding the payload of row ``log`` (a ``log`` alias) whose case
    row is ``case`` (a ``cases`` alias). Markers are replaced in the shape first (inline
    tokens), then texts: no token, case id or text holds a raw control character, so the
    order does not change the result."""
    expr = f"(SELECT {_INFLATED} FROM texts x WHERE x.key = {log}.shape)"
    expr = f"replace({expr}, {_marker_sql('c')}, '\"' || {case}.name || '\"')"
    inline = [(f"{log}.i{n}", _marker_sql(f"i{n}"), _inline(f"{log}.i{n}")) for n in range(INLINE)]
    texts = [(f"{log}.t{n}", _marker_sql(str(n)), _text(f"{log}.t{n}")) for n in range(SLOTS)]
    return _filled(_filled(expr, inline), texts)


def payload_join(log: str, case: str, alias: str) -> str:
    """A join giving row ``log``'s payload once, as ``{alias}.value``: each mention of a
    view's column that holds ``payload_sql`` is evaluated again (SQLite flattens views and
    subqueries into the query, copying the expression), so a view reading five fields of a
    payload would rebuild it five times. A table-valued function's argument is evaluated
    once per row: ``json_each(json_array(P))`` has one row whose value is P, text for text
    (a NULL P, a LEFT JOIN's missing row, gives one NULL row: the join never drops a row).
    Used by ``turns`` and ``verdicts``, whose columns are payload fields; not by ``events``,
    where it would build every payload even for ``count(*)`` or ``DISTINCT case_id``."""
    return f"JOIN json_each(json_array({payload_sql(log, case)})) {alias}"


def _kind(name: str) -> str:
    return f"(SELECT key FROM kinds WHERE name = '{name}')"


# Inline columns have no type (no affinity): a token is stored as the writer gives it, an
# INTEGER, a BLOB or TEXT (a TEXT column would turn an integer back into its digits).
_SLOT_COLUMNS = ", ".join(
    [f"t{slot} INTEGER" for slot in range(SLOTS)] + [f"i{slot}" for slot in range(INLINE)]
)
_SLOTS_NULL = ", ".join(
    [f"t{slot} = NULL" for slot in range(SLOTS)] + [f"i{slot} = NULL" for slot in range(INLINE)]
)

# The view's own writes (tests simulate damaged or foreign rows through them): a payload
# written through the view is stored whole, as its own shape, uncompressed.
_INTERN = """
  INSERT OR IGNORE INTO campaigns (name) VALUES (NEW.campaign);
  INSERT OR IGNORE INTO kinds (name) VALUES (NEW.kind);
  INSERT OR IGNORE INTO cases (campaign, name)
    VALUES ((SELECT key FROM campaigns WHERE name = NEW.campaign), NEW.case_id);
  INSERT INTO texts (hash, size, data)
    VALUES (0, length(CAST(NEW.payload AS BLOB)), NEW.payload);
"""
_KEYS = """
    (SELECT key FROM campaigns WHERE name = NEW.campaign),
    (SELECT c.key FROM cases c JOIN campaigns p ON p.key = c.campaign
      WHERE p.name = NEW.campaign AND c.name = NEW.case_id),
    NEW.seq,
    (SELECT key FROM kinds WHERE name = NEW.kind)"""
_COST = """CASE WHEN NEW.kind = 'ReplyReceived' AND json_valid(NEW.payload)
      AND NOT coalesce(json_extract(NEW.payload, '$.cached'), 0)
      THEN json_extract(NEW.payload, '$.reply.cost_usd') END"""

# Planner statistics for a new format-2 log. Without any, SQLite weighed the (campaign,
# kind) index logs written before blocks have above UNIQUE (case_key, seq) and answered
# "this case's reply" by scanning every reply of the campaign: quadratic (a BiasLens report
# of a 500,000-event log ran for over ten minutes). These say what holds in any log: a case
# has a handful of events. `harness copy --compact` replaces them by ANALYZE.
PLANNER_STATS = """
ANALYZE;
DELETE FROM sqlite_stat1;
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
    ('log', 'sqlite_autoindex_log_1', '1000000 8 1');
"""

SCHEMA_2 = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaigns (key INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS kinds (key INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS cases (
    key       INTEGER PRIMARY KEY,
    campaign  INTEGER NOT NULL,
    name      TEXT    NOT NULL,                          -- '' for campaign-level events
    UNIQUE (campaign, name)
);
CREATE TABLE IF NOT EXISTS texts (
    key   INTEGER PRIMARY KEY,
    hash  INTEGER NOT NULL,                              -- 64-bit blake2b, to find it again
    size  INTEGER NOT NULL,                              -- bytes before compression (sqlar)
    data  BLOB,                                          -- zlib when smaller, else the text;
    block INTEGER,                                       -- or NULL and bytes start..start+size-1
    start INTEGER                                        -- of blocks.key = block, inflated
);
CREATE TABLE IF NOT EXISTS blocks (
    key   INTEGER PRIMARY KEY,
    size  INTEGER NOT NULL,                              -- the sqlar convention, as texts
    data  BLOB    NOT NULL
);
-- The timestamp every row of a batch shares (the writer stamps a batch once): a row's own
-- ts is NULL when it is its batch's.
CREATE TABLE IF NOT EXISTS batches (batch INTEGER PRIMARY KEY, ts REAL NOT NULL);
CREATE INDEX IF NOT EXISTS texts_by_hash ON texts (hash);
CREATE TABLE IF NOT EXISTS log (
    gseq            INTEGER PRIMARY KEY AUTOINCREMENT,   -- global order of commits
    campaign        INTEGER NOT NULL,
    case_key        INTEGER NOT NULL,                    -- cases.key (a case is in one campaign)
    seq             INTEGER NOT NULL,
    kind            INTEGER NOT NULL,
    schema_version  INTEGER NOT NULL,
    turn            INTEGER,
    attempt         INTEGER,
    batch           INTEGER NOT NULL,
    ts              REAL,                                -- NULL: batches.ts of its batch
    cost_usd        REAL,                                -- ReplyReceived paid for, else NULL
    shape           INTEGER NOT NULL,                    -- texts.key of the payload's shape
    {_SLOT_COLUMNS},
    UNIQUE (case_key, seq)
);
-- The views join cases on (key, campaign) so that a filter on campaign and case id is one
-- lookup in UNIQUE (campaign, name), then UNIQUE (case_key, seq), whatever the statistics.
-- Turns and verdicts find a case's other events through UNIQUE (case_key, seq): a case has
-- a handful, so format 1's two other (campaign, case_id, ...) indexes are not needed. No
-- (campaign, kind) index either: a row is ~40 bytes, so reading every row of a kind is a
-- scan of the table in log order (no sort for ORDER BY gseq), about as fast as the index's
-- seeks, and the index was 8 % of the log.
CREATE INDEX IF NOT EXISTS log_spend ON log (campaign, cost_usd) WHERE cost_usd IS NOT NULL;

CREATE VIEW IF NOT EXISTS events AS
SELECT e.gseq, p.name AS campaign, c.name AS case_id, e.seq, k.name AS kind,
       e.schema_version, e.turn, e.attempt, e.batch, {ts_sql("e")} AS ts,
       {payload_sql("e", "c")} AS payload
FROM log e
JOIN campaigns p ON p.key = e.campaign
JOIN cases c ON c.key = e.case_key AND c.campaign = e.campaign
JOIN kinds k ON k.key = e.kind;

CREATE TRIGGER IF NOT EXISTS events_insert INSTEAD OF INSERT ON events BEGIN
{_INTERN}
  INSERT INTO log (gseq, campaign, case_key, seq, kind, schema_version, turn, attempt, batch,
                   ts, cost_usd, shape)
  VALUES (NEW.gseq, {_KEYS}, NEW.schema_version, NEW.turn, NEW.attempt, NEW.batch, NEW.ts,
          {_COST}, last_insert_rowid());
END;

CREATE TRIGGER IF NOT EXISTS events_update INSTEAD OF UPDATE ON events BEGIN
{_INTERN}
  UPDATE log SET shape = last_insert_rowid(), {_SLOTS_NULL},
    campaign = (SELECT key FROM campaigns WHERE name = NEW.campaign),
    case_key = (SELECT c.key FROM cases c JOIN campaigns p ON p.key = c.campaign
                WHERE p.name = NEW.campaign AND c.name = NEW.case_id),
    seq = NEW.seq, kind = (SELECT key FROM kinds WHERE name = NEW.kind),
    schema_version = NEW.schema_version, turn = NEW.turn, attempt = NEW.attempt,
    batch = NEW.batch, ts = NEW.ts, cost_usd = {_COST}
  WHERE gseq = OLD.gseq;
END;

CREATE TRIGGER IF NOT EXISTS events_delete INSTEAD OF DELETE ON events BEGIN
  DELETE FROM log WHERE gseq = OLD.gseq;
END;

-- One row per attempt at a turn, with its outcome (the columns of format 1's view).
CREATE VIEW IF NOT EXISTS turns AS
SELECT p.name AS campaign,
       c.name AS case_id,
       s.turn,
       s.attempt,
       json_extract(sp.value, '$.model')       AS model,
       json_extract(sp.value, '$.ask.thread')  AS thread,
       json_extract(sp.value, '$.ask.role')    AS role,
       json_extract(sp.value, '$.ask.prompt')  AS prompt,
       json_extract(sp.value, '$.request_key') AS request_key,
       json_extract(rp.value, '$.reply.text')  AS reply,
       json_extract(rp.value, '$.reply.usage.input_tokens')  AS input_tokens,
       json_extract(rp.value, '$.reply.usage.output_tokens') AS output_tokens,
       json_extract(rp.value, '$.reply.latency_s')           AS latency_s,
       json_extract(rp.value, '$.reply.finish_reason')       AS finish_reason,
       json_extract(fp.value, '$.error_kind')  AS error_kind,
       json_extract(fp.value, '$.decision')    AS decision,
       {ts_sql("s")} AS sent_at
FROM log s
JOIN campaigns p ON p.key = s.campaign
JOIN cases c ON c.key = s.case_key AND c.campaign = s.campaign
LEFT JOIN log r ON r.case_key = s.case_key AND r.turn = s.turn AND r.attempt = s.attempt
      AND r.kind = {_kind("ReplyReceived")}
LEFT JOIN log f ON f.case_key = s.case_key AND f.turn = s.turn AND f.attempt = s.attempt
      AND f.kind = {_kind("AskFailed")}
{payload_join("s", "c", "sp")}
{payload_join("r", "c", "rp")}
{payload_join("f", "c", "fp")}
WHERE s.kind = {_kind("AskSent")};

-- One row per verdict (the relation's own, and any later judge's).
CREATE VIEW IF NOT EXISTS verdicts AS
SELECT p.name AS campaign,
       c.name AS case_id,
       json_extract(op.value, '$.case.relation') AS relation,
       json_extract(op.value, '$.case.model')    AS model,
       json_extract(op.value, '$.case.repeat')   AS repeat,
       json_extract(vp.value, '$.verdict.outcome') AS outcome,
       json_extract(vp.value, '$.verdict.reason')  AS reason,
       json_extract(vp.value, '$.verdict.evidence') AS evidence,
       json_extract(vp.value, '$.source')          AS source,
       {ts_sql("v")} AS decided_at
FROM log v
JOIN campaigns p ON p.key = v.campaign
JOIN cases c ON c.key = v.case_key AND c.campaign = v.campaign
JOIN log o ON o.case_key = v.case_key AND o.kind = {_kind("CaseOpened")}
{payload_join("o", "c", "op")}
{payload_join("v", "c", "vp")}
WHERE v.kind = {_kind("VerdictReached")};
"""


# Each case's digest chain (`harness.store.case_digest`), keyed by the case's integer key:
# the same chain as format 1's ``case_digests`` table, which survives as a view (readers,
# `harness copy` and hand-made edits use it unchanged), without the campaign and case id
# texts in every row (they were a third of a BiasLens import's format-2 log).
_CASE_KEY = (
    "(SELECT c.key FROM cases c JOIN campaigns p ON p.key = c.campaign"
    " WHERE p.name = {campaign} AND c.name = {case})"
)
CHAIN_STATEMENTS_2 = (
    "CREATE TABLE IF NOT EXISTS case_chains (case_key INTEGER PRIMARY KEY,"
    " seq INTEGER NOT NULL, links BLOB NOT NULL)",
    "CREATE VIEW IF NOT EXISTS case_digests AS SELECT p.name AS campaign, c.name AS case_id,"
    " h.seq AS seq, h.links AS links FROM case_chains h JOIN cases c ON c.key = h.case_key"
    " JOIN campaigns p ON p.key = c.campaign",
    "CREATE TRIGGER IF NOT EXISTS case_digests_insert INSTEAD OF INSERT ON case_digests BEGIN"
    " INSERT OR IGNORE INTO campaigns (name) VALUES (NEW.campaign);"
    " INSERT OR IGNORE INTO cases (campaign, name)"
    " VALUES ((SELECT key FROM campaigns WHERE name = NEW.campaign), NEW.case_id);"
    " INSERT OR REPLACE INTO case_chains (case_key, seq, links) VALUES ("
    + _CASE_KEY.format(campaign="NEW.campaign", case="NEW.case_id")
    + ", NEW.seq, NEW.links); END",
    "CREATE TRIGGER IF NOT EXISTS case_digests_update INSTEAD OF UPDATE ON case_digests BEGIN"
    " UPDATE case_chains SET seq = NEW.seq, links = NEW.links WHERE case_key = "
    + _CASE_KEY.format(campaign="OLD.campaign", case="OLD.case_id")
    + "; END",
    "CREATE TRIGGER IF NOT EXISTS case_digests_delete INSTEAD OF DELETE ON case_digests BEGIN"
    " DELETE FROM case_chains WHERE case_key = "
    + _CASE_KEY.format(campaign="OLD.campaign", case="OLD.case_id")
    + "; END",
)
# The writer's statements, with the parameters of `case_digest.SQLITE_START` / `_EXTEND`.
CHAIN_START_2 = (
    "INSERT OR REPLACE INTO case_chains (case_key, seq, links) VALUES ("
    + _CASE_KEY.format(campaign="?", case="?")
    + ", ?, ?)"
)
CHAIN_EXTEND_2 = (
    "UPDATE case_chains SET seq = ?, links = harness_chain(links, ?) WHERE case_key = "
    + _CASE_KEY.format(campaign="?", case="?")
)


def has_blocks(conn: Any) -> bool:
    """Whether the format-2 log on ``conn`` has this module's current layout (texts packed
    in blocks, batch timestamps, typed inline tokens); a log written before keeps writing
    and reading its own (texts each on their own, every ts in its row, text tokens)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'blocks'").fetchone()
    return row is not None
