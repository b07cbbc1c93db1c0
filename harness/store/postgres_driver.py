"""psycopg, the PostgreSQL driver of the ``postgres`` extra, imported in one place.

What for: every PostgreSQL module of the harness takes ``psycopg`` from here, so whichever
path reaches PostgreSQL first (``--db postgresql://...``, ``harness worker``, ``harness
copy``, ``harness.run``) stops with the same one-line `ConfigError` naming the install
command when the extra is missing, before any connection or model call, instead of a
``ModuleNotFoundError`` traceback. tests/project/test_extras.py checks that no other module
imports psycopg itself.
"""

from __future__ import annotations

from harness.vocabulary.extras import require_extra

require_extra("postgres", field="--db")

# After the check, on purpose: the import is what fails without the extra.
import psycopg  # noqa: E402
import psycopg.adapt  # noqa: E402
import psycopg.errors  # noqa: E402
import psycopg.pq  # noqa: E402

__all__ = ["psycopg"]
