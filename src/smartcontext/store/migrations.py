"""One way to version every table we own: named, ordered migration lists.

Each set of tables (the core index, the embedding cache, the Smart Connections parse
cache, ...) is a :class:`Migrations` with a name and an ordered list of functions.
``apply(db)`` runs the ones not yet recorded in the ``_migrations`` table, each in its
own transaction together with its record, so a crash leaves a migration either wholly
applied or not at all. Add new migrations at the end; never edit one that shipped.

    core = Migrations("core")

    @core()
    def m001_initial(db): db.execute("CREATE TABLE ...")
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import IndexCorrupt

# A SQLite step takes the connection; a PostgreSQL one (pg_schema.py) the connection and schema.
Migration = Callable[..., None]

_TABLE = """
CREATE TABLE IF NOT EXISTS _migrations (
    migration_set TEXT NOT NULL,
    name TEXT NOT NULL,
    applied_at REAL NOT NULL,
    PRIMARY KEY (migration_set, name)
)
"""


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Run several statements inside the caller's transaction (``executescript`` would
    COMMIT first and break it)."""
    # Statements end where SQLite says a statement is complete, so a ";" inside a string
    # literal, a comment or a trigger body does not cut one in two.
    statement = ""
    for piece in re.split(r"(?<=;)", script):
        statement += piece
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        db.execute(statement)  # the last statement may leave out its ";"


@dataclass
class Migrations:
    """An ordered list of migrations for one set of tables, identified by ``name``."""

    name: str
    steps: list[tuple[str, Migration]] = field(default_factory=list)

    def __call__(self, name: str | None = None) -> Callable[[Migration], Migration]:
        """Decorator adding a migration at the end (its name defaults to the function's)."""

        def add(fn: Migration) -> Migration:
            step = name or fn.__name__
            if any(s == step for s, _ in self.steps):
                raise ValueError(f"migration {self.name}/{step} is defined twice")
            self.steps.append((step, fn))
            return fn

        return add

    def applied(self, db: sqlite3.Connection) -> list[str]:
        db.execute(_TABLE)
        return [
            r[0]
            for r in db.execute(
                "SELECT name FROM _migrations WHERE migration_set = ? ORDER BY applied_at, rowid",
                (self.name,),
            )
        ]

    def pending(self, db: sqlite3.Connection) -> list[str]:
        done = set(self.applied(db))
        return [s for s, _ in self.steps if s not in done]

    def apply(self, db: sqlite3.Connection) -> list[str]:
        """Run every pending migration in order; returns the names that ran.

        ``db`` must be in autocommit mode (``isolation_level=None``): each migration
        runs in a ``BEGIN IMMEDIATE`` transaction of its own, so two processes opening a
        new index at once apply each step exactly once.
        """
        known = {s for s, _ in self.steps}
        ran: list[str] = []
        db.execute(_TABLE)
        done = set(self.applied(db))
        unknown = done - known
        if unknown:
            raise IndexCorrupt(
                f"the index was written by a newer Smart Context ({self.name} migrations "
                f"{', '.join(sorted(unknown))} are unknown here); upgrade smartcontext or "
                f"rebuild with `smartcontext index --rebuild`"
            )
        for step, fn in self.steps:
            if step in done:
                continue
            db.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have applied it while we waited for the lock.
                if db.execute(
                    "SELECT 1 FROM _migrations WHERE migration_set = ? AND name = ?",
                    (self.name, step),
                ).fetchone():
                    db.execute("COMMIT")
                    continue
                fn(db)
                db.execute(
                    "INSERT INTO _migrations(migration_set, name, applied_at) VALUES (?, ?, ?)",
                    (self.name, step, time.time()),
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            ran.append(step)
        return ran
