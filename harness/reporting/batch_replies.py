"""Which replies came through a vendor batch (batch mode, docs/batch.md): a count per model.

A reply recorded from a batch carries its batch's tag (`ReplyReceived.batch`); a campaign run
without batch mode has none, and its report shows no such table."""

from __future__ import annotations

from harness.reporting.tables import ReportContext, Table

# Each batch reply with its model (the AskSent of the same turn: a turn's attempts all go to
# one model). The tag is read first, so a direct reply costs one json_extract.
_BATCH_REPLIES_SQL = (
    "SELECT (SELECT json_extract(a.payload, '$.model') FROM events a"
    " WHERE a.campaign = r.campaign AND a.case_id = r.case_id AND a.turn = r.turn"
    " AND a.kind = 'AskSent' LIMIT 1), json_extract(r.payload, '$.batch'),"
    " json_extract(r.payload, '$.reply.cost_usd')"
    " FROM events r WHERE r.campaign = ? AND r.kind = 'ReplyReceived'"
    " AND json_extract(r.payload, '$.batch') IS NOT NULL"
)


def batch_replies(ctx: ReportContext) -> list[Table]:
    """Per model: its replies that came through a batch, the batches they came in, and
    what they cost at the batch rate (None when a reply came without a price)."""
    replies: dict[str, int] = {}
    tags: dict[str, set[str]] = {}
    costs: dict[str, float | None] = {}
    for model, tag, cost in ctx.log.connection.execute(_BATCH_REPLIES_SQL, (ctx.campaign,)):
        name = str(model)
        replies[name] = replies.get(name, 0) + 1
        tags.setdefault(name, set()).add(str(tag))
        # One unpriced reply makes the model's total unknown rather than too low.
        known = costs.get(name, 0.0)
        costs[name] = None if cost is None or known is None else known + float(cost)
    if not replies:
        return []
    rows = [[name, replies[name], len(tags[name]), costs[name]] for name in sorted(replies)]
    return [
        Table(
            "batch_replies",
            "Replies that came through a vendor batch",
            ["model", "replies", "batches", "cost_usd"],
            rows,
            unit="a recorded reply",
            note="batch mode (docs/batch.md): priced at the rate each batch client reported",
        )
    ]
