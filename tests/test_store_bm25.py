"""The PostgreSQL store ranks keywords with the SQLite store's BM25: one corpus indexed
into both, the scores of 50 queries compared item by item."""

from __future__ import annotations

import math
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

from smartcontext.model import Item
from smartcontext.retrieval.keyword import KeywordSearcher
from smartcontext.store import KeywordTerm, open_store
from smartcontext.store import bm25

TESTS = Path(__file__).parent
_DEF = re.compile(r"^(?:async )?(def|class) (\w+)", re.M)


def _items(path: str, text: str) -> list[Item]:
    """A module item and one item per top-level def/class: real code text, nested as the
    code source nests it (the module's text holds its members')."""
    lines = text.splitlines()
    module = Item(id=path, path=path, kind="module", name=Path(path).stem, qualname=Path(path).stem,
                  start_line=1, end_line=max(1, len(lines)), text=text, language="python", tokens=len(text) // 4)
    out = [module]
    starts = [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in _DEF.finditer(text)]
    for n, (line, kind, name) in enumerate(starts):
        end = starts[n + 1][0] - 1 if n + 1 < len(starts) else len(lines)
        body = "\n".join(lines[line - 1 : end])
        if any(o.id == f"{path}::{name}" for o in out):
            continue
        out.append(Item(id=f"{path}::{name}", path=path, kind="class" if kind == "class" else "function",
                        name=name, qualname=name, start_line=line, end_line=end, text=body,
                        signature=lines[line - 1], parent_id=path, language="python", tokens=len(body) // 4))
    return out


def _corpus() -> dict[str, str]:
    """A few hundred files: this repository's tests and sources, plus a note with diacritics."""
    root = TESTS.parent
    files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
             for pattern in ("tests/test_*.py", "src/smartcontext/**/*.py") for p in sorted(root.glob(pattern))}
    files["notes/café.md"] = "Le café naïve Ärger über Straße\nCAFÉ cafe naive\nfile filé"
    return files


def _put(store, path: str, text: str, hash_: str = "h") -> None:
    items = _items(path, text)
    store.replace_file(path=path, mtime_ns=1, size=len(text), hash=hash_, language="python",
                       source="code", module=path.rsplit(".", 1)[0], warnings=[],
                       items=[(it, it.qualname, 3, f"c:{it.id}:{hash_}") for it in items], edges=[])


def _queries(files: dict[str, str]) -> list[list[KeywordTerm]]:
    """50 queries as retrieval builds them: words, weights, identifier phrases, and message
    phrases, from lines of the corpus, plus a few written out."""
    rng = random.Random(7)
    lines = [ln.strip() for text in files.values() for ln in text.splitlines() if len(ln.split()) >= 4]
    queries = [
        [KeywordTerm("store"), KeywordTerm("keyword", 2), KeywordTerm("search", 3)],
        [KeywordTerm("café"), KeywordTerm("naive")],
        [KeywordTerm("file")],
        [KeywordTerm("make store"), KeywordTerm("replace file")],
        [KeywordTerm("assert"), KeywordTerm("assert")],
    ]
    while len(queries) < 50:
        words = re.findall(r"[A-Za-z_]\w+", rng.choice(lines))
        terms = [KeywordTerm(w.lower(), rng.choice((1, 1, 2, 3))) for w in words[:8]]
        if len(words) >= 3:
            terms.append(KeywordTerm(" ".join(w.lower() for w in words[:3])))
        queries.append(terms)
    return queries


def _by_id(store, ranked):
    ids = {r: s.item.id for r, s in store.items_by_rowids([r for r, _ in ranked]).items()}
    return [(ids[r], score) for r, score in ranked]


def _assert_same(left, right, what):
    """Equal scores item by item; the order may differ only among equal scores."""
    assert len(left) == len(right), what
    ls, rs = dict(left), dict(right)
    shared = set(ls) & set(rs)
    for key in shared:
        assert math.isclose(ls[key], rs[key], rel_tol=1e-9, abs_tol=1e-12), (what, key, ls[key], rs[key])
    for (_, a), (_, b) in zip(left, right):  # the n-th best scores agree
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), what
    # an item only one side lists ties with the last score listed (cut at the limit)
    last = left[-1][1] if left else 0.0
    for key in set(ls) ^ set(rs):
        assert math.isclose(ls.get(key, rs.get(key)), last, rel_tol=1e-9), (what, key)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, pg_url):
    """The corpus indexed into both stores once for the module's read-only tests."""
    from smartcontext.store.postgres import drop_workspace

    files = _corpus()
    lite = open_store(tmp_path_factory.mktemp("bm25") / "i.db")
    name = f"bm25_{os.getpid()}"
    pg = open_store(pg_url, workspace=name)
    for store in (lite, pg):
        with store.batch():
            for path, text in files.items():
                _put(store, path, text)
    yield lite, pg, files
    lite.close()
    pg.close()
    drop_workspace(pg_url, name, clear_cache=True)


@pytest.fixture
def both(indexed):
    return indexed


@pytest.fixture
def fresh(tmp_path, pg_url, pg_workspace):
    """Both stores with a slice of the corpus, for tests that write."""
    files = dict(list(_corpus().items())[:60])
    lite = open_store(tmp_path / "i.db")
    pg = open_store(pg_url, workspace=pg_workspace)
    for store in (lite, pg):
        with store.batch():
            for path, text in files.items():
                _put(store, path, text)
    yield lite, pg, files
    lite.close()
    pg.close()


def test_keyword_scores_are_equal_on_both_stores(both):
    lite, pg, files = both
    assert len(files) > 100 and pg.item_count() == lite.item_count() > 1000
    queries = _queries(files)
    matched = 0
    for n, terms in enumerate(queries):
        a = _by_id(lite, lite.keyword_search(terms, 30))
        b = _by_id(pg, pg.keyword_search(terms, 30))
        _assert_same(a, b, (n, terms))
        matched += bool(a)
        a = _by_id(lite, lite.keyword_search(terms, 10, files_only=True))
        b = _by_id(pg, pg.keyword_search(terms, 10, files_only=True))
        _assert_same(a, b, (n, "files", terms))
    assert matched >= 45


def test_the_rankings_with_files_and_within_agree(both):
    lite, pg, files = both
    for terms in _queries(files)[:20]:
        a_items, a_files = lite.keyword_search_with_files(terms, 20, lambda r: True)
        b_items, b_files = pg.keyword_search_with_files(terms, 20, lambda r: True)
        _assert_same(_by_id(lite, a_items), _by_id(pg, b_items), terms)
        # SQLite's second list comes from the callable; PostgreSQL's from its file rows
        a_files = lite.keyword_search(terms, 20, files_only=True)
        _assert_same(_by_id(lite, a_files), _by_id(pg, b_files), ("files", terms))
        # within: the rows of one folder's half, by id on each side
        ids = sorted(i for i, _ in _by_id(lite, lite.keyword_search(terms, 200)))[::2]
        lite_rows = [s.rowid for s in lite.items_by_ids(ids).values()]
        pg_rows = [s.rowid for s in pg.items_by_ids(ids).values()]
        _assert_same(_by_id(lite, lite.keyword_search(terms, 10, within=lite_rows)),
                     _by_id(pg, pg.keyword_search(terms, 10, within=pg_rows)), ("within", terms))


def test_vocabulary_counts_agree_and_follow_writes(fresh):
    lite, pg, files = fresh
    words = ["store", "café", "cafe", "file", "function", "module", "assert", "zzznothing"]
    assert lite.doc_freqs(words) == pg.doc_freqs(words)
    for prefix in ("sto", "caf", "keyw", "a"):
        assert lite.terms_with_prefix(prefix) == pg.terms_with_prefix(prefix)
    # Several prefixes at once (one statement on PostgreSQL), also inside a snapshot
    # whose answers are kept for its generation.
    prefixes = ["sto", "caf", "keyw", "a", "zzq", "sto"]
    expected = {p: lite.terms_with_prefix(p, 5) for p in prefixes}
    assert lite.terms_with_prefixes(prefixes, 5) == expected == pg.terms_with_prefixes(prefixes, 5)
    for _ in range(2):
        with pg.snapshot():
            assert pg.terms_with_prefixes(prefixes, 5) == expected
    # Replacing and deleting files keeps the statistics exact on both.
    victims = sorted(files)[:5]
    for store in (lite, pg):
        store.delete_files(victims[:2])
        _put(store, victims[2], "def store_keyword(): return 'café search'", hash_="h2")
    assert lite.doc_freqs(words) == pg.doc_freqs(words)
    terms = [KeywordTerm("store"), KeywordTerm("keyword", 2), KeywordTerm("café")]
    _assert_same(_by_id(lite, lite.keyword_search(terms, 30)), _by_id(pg, pg.keyword_search(terms, 30)), "after")


def test_searcher_queries_built_from_questions_agree(both):
    """Retrieval's own query building (word forms from the vocabulary, phrases) gives the
    same query and so the same ranking on both."""
    lite, pg, _ = both
    for question in ("How does replace_file keep keyword statistics?", "copy the store with --force",
                     'error "no workspace named" when dropping'):
        a_terms, _ = KeywordSearcher(lite).build_match(question)
        b_terms, _ = KeywordSearcher(pg).build_match(question)
        assert a_terms == b_terms
        _assert_same(_by_id(lite, lite.keyword_search(a_terms, 20)),
                     _by_id(pg, pg.keyword_search(b_terms, 20)), question)


def test_exact_vector_search_agrees(fresh):
    lite, pg, _ = fresh
    rng = np.random.default_rng(3)
    ids = [s.item.id for s in lite.items_by_rowids([r.rowid for r in lite.item_light_rows()[:300]]).values()]
    matrix = rng.standard_normal((len(ids), 16)).astype(np.float32)
    for store in (lite, pg):
        rows = store.items_by_ids(ids)
        store.put_vectors("m", [rows[i].rowid for i in ids], matrix)
    query = rng.standard_normal(16).astype(np.float32)
    a = _by_id(lite, lite.nearest("m", query, 10, among=[s.rowid for s in lite.items_by_ids(ids).values()]))
    b = _by_id(pg, pg.nearest("m", query, 10, among=[s.rowid for s in pg.items_by_ids(ids).values()]))
    assert [i for i, _ in a] == [i for i, _ in b]
    assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-6)


def test_tokens_are_fts5s():
    assert bm25.query_tokens(["Café.Naïve_X", "get netrc auth", "_"]) == [
        ("cafe", "naive", "x"), ("get", "netrc", "auth"), ()]
    row = bm25.analyse([("Foo", "a/foo.py", "foo bar foo", "file")])[0]
    assert row.length == 8 and row.file_row  # Foo, a foo py, foo bar foo, file
    assert row.terms["foo"][0] == 4 + 2 + 1 + 1


def test_an_index_made_before_the_statistics_upgrades_in_place(tmp_path, pg_url, pg_workspace):
    """An index of the ts_rank_cd format (a tsvector, no statistics) gets its statistics
    from its stored text when opened, and ranks as SQLite does."""
    import psycopg

    files = dict(list(_corpus().items())[:40])
    lite = open_store(tmp_path / "i.db")
    pg = open_store(pg_url, workspace=pg_workspace)
    for store in (lite, pg):
        with store.batch():
            for path, text in files.items():
                _put(store, path, text)
    schema = pg.schema
    pg.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # back to the format before m004
        for statement in (
            "DROP TABLE {s}.fts_terms, {s}.fts_postings, {s}.fts_stats",
            "ALTER TABLE {s}.items DROP COLUMN fts_len",
            "ALTER TABLE {s}.items ADD COLUMN tsv tsvector NOT NULL DEFAULT ''",
            "DELETE FROM {s}._migrations WHERE name = 'm004_bm25'",
        ):
            conn.execute(statement.format(s=f'"{schema}"'))
    pg = open_store(pg_url, workspace=pg_workspace)
    try:
        terms = [KeywordTerm("store"), KeywordTerm("keyword", 2), KeywordTerm("make store")]
        _assert_same(_by_id(lite, lite.keyword_search(terms, 30)), _by_id(pg, pg.keyword_search(terms, 30)), "upgraded")
        assert lite.doc_freqs(["store", "file"]) == pg.doc_freqs(["store", "file"])
    finally:
        pg.close()
        lite.close()


def test_ascii_rows_are_tokenized_as_fts5_does():
    """Rows all in ASCII are tokenized in Python (faster than reading FTS5's vocabulary
    back): the same terms, weights, positions and lengths as FTS5's unicode61, for every
    ASCII character and for random text of them."""
    every = "".join(chr(c) for c in range(1, 128))
    rng = random.Random(4)
    alphabet = every + "aaaeeeiiooXYZ__--09" * 3
    rows = [(every, "a/b_c.py", every[::-1], "file"), ("", "", "", ""), ("Fix_HTTPError", "x.py", "x " * 40, "file")]
    rows += [tuple("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300))) for _ in range(3))
             + (rng.choice(["file", "function", "file line", "x"]),) for _ in range(200)]
    rows.append(("a" * 1500, "B" * 1200 + " b" * 3, "tail", "class"))  # tokens cut to 1,000 bytes
    fast = [bm25._analyse_ascii(r) for r in rows]
    # FTS5's own path: a non-ASCII value sends a row there; each row alone, with a suffix
    # that adds one non-ASCII token to the kind column (weight 0, no position).
    slow = bm25.analyse([(*r[:3], r[3] + " ŋŋ") for r in rows])
    for row, a, b in zip(rows, fast, slow):
        assert b.terms.pop("ŋŋ") == [0.0, []] and b.length == a.length + 1, row
        assert a.file_row == b.file_row, row
        assert {t: (w, sorted(p)) for t, (w, p) in a.terms.items()} == {
            t: (w, sorted(p)) for t, (w, p) in b.terms.items()}, row


def test_file_postings_are_those_of_fts5s_tokens(monkeypatch):
    """A file's postings, tokenized in Python and grouped by numpy (words past ASCII by
    FTS5 alone), equal those of ``analyse``, which reads every row that is not all ASCII
    from FTS5: the same rows, terms, weights, lengths and positions."""
    every = "".join(chr(c) for c in range(1, 128))
    rng = random.Random(5)
    alphabet = every + "aaeeiioXYZ__--09" * 3 + "éÉßŋ—–ñÑçå日本語 ﬁ½²ⅷ\u0301" * 2
    rows = [(every, "a/b_c.py", every[::-1], "file"), ("", "", "", ""), ("Café_Straße", "x.py", "naïve " * 30, "file")]
    rows += [tuple("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300))) for _ in range(3))
             + (rng.choice(["file", "function", "file line", "x"]),) for _ in range(200)]
    rows.append(("é" * 600 + "a" * 900, "B" * 1200 + " b" * 3, "tail ünï", "class"))  # tokens cut to 1,000 bytes
    shape, found = bm25.file_postings(rows)
    stats = bm25.analyse(rows)
    assert shape == [(st.length, st.file_row) for st in stats]
    expected = bm25.postings(stats)

    def lines(p):
        return sorted(p.lines([n for n, _ in shape], [f for _, f in shape]).splitlines())

    assert lines(found) == lines(expected) and len(found) > 2000

    # A column with more tokens than positions can hold goes analyse's way, beside the rest.
    monkeypatch.setattr(bm25, "_MAX_OFFSET", 40)
    rows.append(("Long_row", "long.py", " ".join(f"w{k % 7}" for k in range(100)), "function"))
    shape, found = bm25.file_postings(rows)
    stats = bm25.analyse(rows)
    assert shape == [(st.length, st.file_row) for st in stats]
    assert lines(found) == lines(bm25.postings(stats))
    assert shape[-1] == (105, False) and found.terms.count("w3") == 1


def test_postings_sent_inline_equal_those_copied(pg_url, pg_workspace, monkeypatch):
    """A small write sends its posting lines as one parameter, a large one counts its terms
    in the client and COPYs its postings in binary: both give the same postings (empty
    position arrays too) and term counts, and the same scores."""
    from smartcontext.store import postgres

    files = dict(list(_corpus().items())[:25])
    files["notes/café.md"] = _corpus()["notes/café.md"]
    stores = {}
    for way, inline in (("inline", 10**9), ("copied", 0)):
        monkeypatch.setattr(postgres, "_INLINE_POSTINGS", inline)
        store = stores[way] = open_store(pg_url, workspace=f"{pg_workspace}_{way}")
        for path, text in files.items():  # a file at a time, as a tool's write
            _put(store, path, text)
    try:
        rows = {}
        for way, store in stores.items():
            with store._conn() as conn:
                rows[way] = (
                    conn.execute(
                        "SELECT t.term, i.id, p.wtf, p.dl, p.file_row, p.pos FROM fts_postings p "
                        "JOIN fts_terms t ON t.id = p.term_id JOIN items i ON i.rowid = p.item "
                        "ORDER BY t.term, i.id COLLATE \"C\""
                    ).fetchall(),
                    conn.execute("SELECT term, docs, text_docs FROM fts_terms ORDER BY term").fetchall(),
                    conn.execute("SELECT rows, tokens FROM fts_stats").fetchall(),
                )
        assert rows["inline"] == rows["copied"] and len(rows["inline"][0]) > 1000
        assert any(not pos for *_, pos in rows["inline"][0]) and any(len(pos) > 1 for *_, pos in rows["inline"][0])
        assert any(t == "straße" for t, *_ in rows["inline"][1])  # the note without ASCII
        for terms in _queries(files)[:20]:
            _assert_same(_by_id(stores["inline"], stores["inline"].keyword_search(terms, 30)),
                         _by_id(stores["copied"], stores["copied"].keyword_search(terms, 30)), terms)
    finally:
        for way, store in stores.items():
            store.close()
            postgres.drop_workspace(pg_url, f"{pg_workspace}_{way}")


def test_the_parse_workers_integer_weights_are_the_column_weights():
    # file_postings sums the column weights as integers in numpy: a fractional weight in
    # WEIGHTS would be cut there and the PostgreSQL scores would drift from SQLite's.
    assert bm25._INT_WEIGHTS == tuple(bm25.WEIGHTS[:-1])
