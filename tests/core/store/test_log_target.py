"""The log target parser (`harness.store.target`) and the `Log` it opens: a file path or a
postgresql:// URL, every other connection string refused by name, never echoing a password;
SQLite refusing the features only PostgreSQL has, naming them."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.running.campaign import parse_campaign
from harness.running.postgres_budgets import SharedBudgets
from harness.running.postgres_spend import SharedSpend
from harness.running.worker import run_worker
from harness.store.log import Log
from harness.store.target import URL_FORM, LogTargetError, parse_target
from harness.store.verdict_counts import count_verdicts
from harness.vocabulary.errors import ConfigError

_SEGMENT = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", min_size=1
).filter(lambda s: s not in (".", ".."))
PATHS = st.builds(
    lambda parts, absolute, ext: ("/" if absolute else "") + "/".join(parts) + ext,
    st.lists(_SEGMENT, min_size=1, max_size=4),
    st.booleans(),
    st.sampled_from(["", ".db", ".sqlite", ".log"]),
)
# A password: printable, no space or quote (libpq would need quoting), marked by a prefix
# that no message holds, so finding it in one is no coincidence.
PASSWORDS = st.builds(
    "Zq".__add__,
    st.text(
        alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="'\\\"@/:"),
        min_size=6,
        max_size=24,
    ),
)
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
_KEYWORDS = st.sampled_from(["host", "hostaddr", "dbname", "user", "port", "sslmode", "service"])


@st.composite
def libpq_strings(draw: st.DrawFn) -> tuple[str, str]:
    """A libpq key=value connection string holding a password, and the password."""
    password = draw(PASSWORDS)
    pairs = [f"{key}{draw(st.sampled_from(['=', ' = ']))}{draw(_WORD)}" for key in draw(
        st.lists(_KEYWORDS, max_size=4, unique=True)
    )]  # fmt: skip
    pairs.insert(draw(st.integers(0, len(pairs))), f"password={password}")
    return " ".join(pairs), password


@st.composite
def schemeless_addresses(draw: st.DrawFn) -> tuple[str, str]:
    """``user:password@host[:port][/db]`` without a scheme, and the password."""
    password = draw(PASSWORDS)
    port = draw(st.sampled_from(["", ":5432"]))
    db = draw(st.sampled_from(["", "/bias"]))
    return f"{draw(_WORD)}:{password}@{draw(_WORD)}{port}{db}", password


@st.composite
def other_scheme_urls(draw: st.DrawFn) -> tuple[str, str]:
    password = draw(PASSWORDS)
    scheme = draw(st.sampled_from(["mysql", "sqlite", "mariadb", "redis", "http", "file"]))
    return f"{scheme}://{draw(_WORD)}:{password}@{draw(_WORD)}/db", password


@given(PATHS)
def test_a_path_is_a_file_log(text: str) -> None:
    log = Log.at(text, field="--db")
    assert log.path == Path(text)
    assert not log.is_postgres
    assert log.shown == str(Path(text))


@given(st.one_of(libpq_strings(), schemeless_addresses(), other_scheme_urls()), st.sampled_from(
    ["--db", "store", "DB"]
))  # fmt: skip
def test_a_dsn_is_never_a_path_and_its_password_never_shown(
    dsn: tuple[str, str], field: str
) -> None:
    text, password = dsn
    with pytest.raises(LogTargetError) as caught:
        parse_target(text, field=field)
    message = str(caught.value)
    assert message.startswith(f"{field}: ")
    assert URL_FORM in message
    assert password not in message
    assert password not in repr(caught.value.args)


@given(
    st.sampled_from(["postgresql", "postgres", "PostgreSQL"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.~!$&()*+,;=", min_size=6).map(
        "Zq".__add__
    ),
)
def test_a_postgres_url_is_a_database_shown_without_its_password(
    scheme: str, password: str
) -> None:
    url = f"{scheme}://bias:{password}@db.example:5432/campaigns"
    log = Log.at(url)
    assert log.is_postgres and log.path is None
    assert password not in log.shown and password not in str(log) and password not in repr(log)
    assert log.postgres("case leases").url == url


def test_the_refusal_says_what_kind_of_string_it_saw() -> None:
    with pytest.raises(ConfigError, match="libpq key=value"):
        parse_target("host=localhost dbname=x user=u password=secret", field="--db")
    with pytest.raises(ConfigError, match="mysql://"):
        parse_target("mysql://u@h/db", field="--db")
    with pytest.raises(ConfigError, match="without a scheme"):
        parse_target("u:secret@localhost:5432/x", field="--db")
    with pytest.raises(ConfigError, match="empty"):
        parse_target("", field="--db")
    with pytest.raises(ConfigError, match="well-formed"):
        parse_target("postgresql://u:secret@host:notaport/x", field="--db")


def test_names_close_to_a_dsn_stay_files() -> None:
    # "@" without credentials or a port, "=" after a directory: file names people use.
    for text in ["run@2024.db", "runs/user=bob.db", "./host=a.db", "a b.db", "C:\\logs\\x.db"]:
        assert Log.at(text).path == Path(text)


def test_a_campaign_files_store_is_parsed_as_a_target() -> None:
    data = {
        "models": [{"name": "sim:planted"}],
        "relations": [{"name": "metaquerier.mr1", "cases": 2}],
    }
    with pytest.raises(ConfigError, match="store") as caught:
        parse_campaign({**data, "store": "host=db dbname=x password=hunter2hunter2"}, source="c")
    assert "hunter2hunter2" not in str(caught.value)
    assert URL_FORM in str(caught.value)
    assert parse_campaign({**data, "store": "runs/x.db"}, source="c").store == "runs/x.db"


def test_sqlite_refuses_postgres_features_naming_them(tmp_path: Path) -> None:
    log = Log.at(tmp_path / "x.db")
    for feature in ("case leases", "shared budgets", "--workers"):
        with pytest.raises(ConfigError, match=f"{feature} needs a PostgreSQL log") as caught:
            log.postgres(feature)
        assert "postgresql://" in str(caught.value)
    with pytest.raises(ConfigError, match="case leases needs a PostgreSQL log"):
        asyncio.run(log.leases("c1"))
    with pytest.raises(ConfigError, match="shared budgets needs a PostgreSQL log"):
        asyncio.run(SharedBudgets.share(log, "c1", {}))
    with pytest.raises(ConfigError, match="spending ceiling needs a PostgreSQL log"):
        asyncio.run(SharedSpend.open(log, "c1", "me", ceiling_usd=1.0, spent_in_log=0.0))
    with pytest.raises(ConfigError, match=r"^DB_URL: workers needs a PostgreSQL log"):
        asyncio.run(run_worker(log))


def test_a_database_refuses_file_only_features() -> None:
    with pytest.raises(ConfigError, match=r"^DB: badf analyze works on a SQLite log file"):
        Log.at("postgresql://u@h/db").file("badf analyze")


def test_the_logs_counts_are_the_stores(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "events_v1.db"
    log = Log.at(fixture)
    with log.reader() as reader:
        campaign = reader.latest_campaign()
        outcomes = Counter(
            row[0]
            for row in reader.connection.execute(
                "SELECT outcome FROM verdicts WHERE campaign = ? AND source = 'relation'",
                (campaign,),
            )
        )
        assert log.verdict_counts(campaign) == count_verdicts(reader.connection, campaign)
    assert outcomes and log.relation_outcomes(campaign) == outcomes
