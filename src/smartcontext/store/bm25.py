"""FTS5's BM25, for a store that is not SQLite: the same terms, statistics and formula.

The SQLite store ranks with FTS5's ``bm25()`` over the columns name, path, body and kind.
For another store to give the same scores it needs the same terms and the same
arithmetic (``fts5_aux.c``):

    score(row) = sum over the query's phrases p of
        idf(p) * f(p, row) * (k1 + 1) / (f(p, row) + k1 * (1 - b + b * len(row) / avgdl))

- ``k1 = 1.2``, ``b = 0.75`` (fixed in FTS5);
- ``f(p, row)``: each instance of ``p`` in the row counts its column's weight (name 4,
  path 2, body 1, kind 0);
- ``len(row)``: the row's tokens in all four columns; ``avgdl``: all rows' tokens over
  the number of rows;
- ``idf(p) = log((N - n + 0.5) / (n + 0.5))`` with ``n`` the rows holding ``p`` in the
  searched columns (name, path, body), and 1e-6 when that is not positive;
- a phrase (several tokens) matches where its tokens follow each other in one column.

Terms come from SQLite's own unicode61 tokenizer (an in-memory FTS5 table read back
through ``fts5vocab``), so both stores index exactly the same tokens, diacritics and
case folding included.
"""

from __future__ import annotations

import re
import sqlite3
from array import array
from itertools import chain, count, repeat
from operator import itemgetter
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ..model import kind_traits
from .base import KeywordTerm
from .shared import fts_values
from .text import pack_file

K1 = 1.2
B = 0.75
# Weights of the FTS columns name, path, body and kind.
WEIGHTS = (4.0, 2.0, 1.0, 0.0)
COLUMNS = ("name", "path", "body", "kind")
TOKENIZE = "unicode61 remove_diacritics 2"
# FTS5's floor for the idf of a phrase in half the rows or more.
IDF_FLOOR = 1e-6

# A term position packs its column and offset: (column << OFFSET_BITS) | offset.
OFFSET_BITS = 28
_MAX_OFFSET = (1 << OFFSET_BITS) - 1
# Terms are kept in a B-tree (prefix search): PostgreSQL refuses index entries of a third
# of a page, so longer tokens (base64 blobs) are cut to this many bytes. No question asks
# for one (question words are at most 100 characters).
MAX_TERM_BYTES = 1000
# Query tokenizations remembered (a server is asked the same words again).
_QUERY_CACHE = 20_000


def bm25_sql_weights() -> str:
    """The ``bm25()`` call of the SQLite store's FTS table."""
    return "bm25(items_fts, " + ", ".join(str(w) for w in WEIGHTS) + ")"


def fts_kind(kind: str, start_line: int) -> str:
    """The kind column's value: ``file`` for a row that stands for its whole file (the
    rows a files-only search ranks)."""
    return "file" if kind_traits(kind).file_row and start_line == 1 else kind


def clip_term(term: str) -> str:
    raw = term.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_TERM_BYTES:
        return term
    return raw[:MAX_TERM_BYTES].decode("utf-8", "ignore")


@dataclass
class RowTerms:
    """One row's statistics: its length in tokens (all columns), whether its kind column
    holds ``file``, and per term [weighted frequency over name, path and body, packed
    positions there in order]; a term only in the kind column has frequency 0 and no
    position."""

    length: int = 0
    file_row: bool = False
    terms: dict[str, list] = field(default_factory=dict)


def _analysis_sql() -> str:
    weight = " ".join(f"WHEN '{c}' THEN {w}" for c, w in zip(COLUMNS, WEIGHTS))
    packed = " ".join(
        f"WHEN '{c}' THEN ({i} << {OFFSET_BITS}) | offset" for i, c in enumerate(COLUMNS[:-1])
    )
    # Grouped in SQLite (C), faster than a Python loop per token; by term first, the order
    # fts5vocab reads them in.
    return (
        f"SELECT doc, term, sum(CASE col {weight} ELSE 0 END), "
        f"group_concat(CASE WHEN offset <= {_MAX_OFFSET} THEN CASE col {packed} END END, ','), "
        f"count(*), max(col = '{COLUMNS[-1]}') FROM v GROUP BY term, doc"
    )


class _Tokenizer(threading.local):
    """An in-memory FTS5 table per thread, tokenizing as the SQLite store's index does."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None)
        self.db.execute(
            f"CREATE VIRTUAL TABLE t USING fts5({', '.join(COLUMNS)}, tokenize = '{TOKENIZE}')"
        )
        self.db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")

    def read(self, rows: Sequence[Sequence[str]], query: str) -> list[tuple]:
        """``query`` over the tokens of ``rows`` (``v``: term, doc from 1, col, offset)."""
        db = self.db
        db.execute("BEGIN")
        try:
            db.executemany(
                "INSERT INTO t(rowid, name, path, body, kind) VALUES (?, ?, ?, ?, ?)",
                [(n, *row) for n, row in enumerate(rows, 1)],
            )
            return db.execute(query).fetchall()
        finally:
            db.execute("ROLLBACK")  # nothing to keep: the next call starts empty


_tokenizer = _Tokenizer()
_ANALYSIS = _analysis_sql()
_query_cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()
_query_lock = threading.Lock()


# unicode61's tokens in ASCII text: runs of letters and digits, folded to lower case (no
# diacritics to remove); every other ASCII character separates. Checked against FTS5 for
# every ASCII character and random text (tests/test_store_bm25.py).
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9]+")


def _analyse_ascii(row: Sequence[str]) -> RowTerms:
    """``analyse`` of one row whose values are all ASCII, in Python: reading FTS5's
    vocabulary back cost 4 us a token (4 s of pytest's 491 files), this a tenth. A
    column's text is folded to lower case at once and the loop per token does no more
    than it must (positions counted from the column's packed base): a parse worker's
    tokenizing is a PostgreSQL cold index's longest step."""
    out = RowTerms()
    found: dict[str, list] = out.terms
    get = found.get
    kind = len(COLUMNS) - 1
    for col, text in enumerate(row):
        tokens = _ASCII_TOKEN.findall(text.lower())
        if not tokens:
            continue
        out.length += len(tokens)
        if len(text) > MAX_TERM_BYTES and len(max(tokens, key=len)) > MAX_TERM_BYTES:
            tokens = [t[:MAX_TERM_BYTES] for t in tokens]
        if col == kind:  # weight 0 and no positions: the term is there, for files-only search
            out.file_row = out.file_row or "file" in tokens
            for token in tokens:
                if token not in found:
                    found[token] = [0.0, []]
            continue
        weight = WEIGHTS[col]
        if len(tokens) > _MAX_OFFSET + 1:  # offsets past the packed range keep no position
            for offset, token in enumerate(tokens):
                entry = get(token)
                if entry is None:
                    found[token] = entry = [0.0, []]
                entry[0] += weight
                if offset <= _MAX_OFFSET:
                    entry[1].append((col << OFFSET_BITS) | offset)
            continue
        # base | offset == base + offset: offsets stay below 1 << OFFSET_BITS
        for position, token in enumerate(tokens, col << OFFSET_BITS):
            entry = get(token)
            if entry is None:
                found[token] = [weight, [position]]
            else:
                entry[0] += weight
                entry[1].append(position)
    return out


def analyse(rows: Sequence[Sequence[str]]) -> list[RowTerms]:
    """The statistics of rows of (name, path, body, kind) values."""
    ascii_rows = [all(v.isascii() for v in row) for row in rows]
    out = [_analyse_ascii(row) if plain else RowTerms() for row, plain in zip(rows, ascii_rows)]
    rest = [n for n, plain in enumerate(ascii_rows) if not plain]
    if not rest:
        return out
    for doc, term, wtf, pos, instances, in_kind in _tokenizer.read([rows[n] for n in rest], _ANALYSIS):
        doc = rest[doc - 1] + 1
        if len(term) > MAX_TERM_BYTES // 4:
            term = clip_term(term)
        row = out[doc - 1]
        row.length += instances
        if in_kind and term == "file":
            row.file_row = True
        places = [int(p) for p in pos.split(",")] if pos else []
        old = row.terms.get(term)
        if old is not None:  # two long terms clipped alike
            wtf, places = old[0] + wtf, old[1] + places
        row.terms[term] = [wtf, places]
    return out


@dataclass
class Postings:
    """The postings of a file's rows in columns: ``terms`` the file's distinct terms, and
    per posting its row's index (from 0), its term's index in ``terms``, its weighted
    frequency and number of positions; ``pos`` all the positions one after another.
    Plain arrays of ints: they come back from a parse worker pickled as bytes, and the
    store turns them into binary COPY rows with numpy (as text, formatting each posting
    and its positions was most of a worker's tokenizing)."""

    terms: list[str]
    row: array
    term: array
    wtf: array
    npos: array
    pos: array

    def __len__(self) -> int:
        return len(self.row)

    def lines(self, lengths: Sequence[int], file_rows: Sequence[bool]) -> str:
        """As COPY text lines: the row's index, the term, its weighted frequency, the
        row's length, whether it stands for its file, positions."""
        out = []
        at = 0
        for n, k, wtf, npos in zip(self.row, self.term, self.wtf, self.npos):
            term = self.terms[k]
            if "\\" in term:  # COPY's escape; unicode61 keeps no tab or newline in a token
                term = term.replace("\\", "\\\\")
            places = ",".join(map(str, self.pos[at : at + npos]))
            at += npos
            out.append(f"{n}\t{term}\t{wtf}\t{lengths[n]}\t{'t' if file_rows[n] else 'f'}\t{{{places}}}\n")
        return "".join(out)


def postings(stats: Sequence[RowTerms]) -> Postings:
    """The ``Postings`` of rows' statistics (``analyse``), in C loops (``map``) rather than
    a Python step per posting."""
    index = {t: k for k, t in enumerate(dict.fromkeys(t for st in stats for t in st.terms))}
    rows, terms, wtfs, npos, pos = array("i"), array("i"), array("i"), array("i"), array("i")
    for n, st in enumerate(stats):
        found = st.terms
        rows.extend(repeat(n, len(found)))
        terms.extend(map(index.__getitem__, found))
        values = list(found.values())
        wtfs.extend(map(int, map(_first, values)))
        places = list(map(_second, values))
        npos.extend(map(len, places))
        pos.extend(chain.from_iterable(places))
    return Postings(list(index), rows, terms, wtfs, npos, pos)


_first, _second = itemgetter(0), itemgetter(1)


def file_postings(rows: Sequence[Sequence[str]]) -> tuple[list[tuple[int, bool]], Postings]:
    """Each row's (length, stands for its file) and the ``Postings`` of rows of (name,
    path, body, kind) values: ``postings(analyse(rows))``, in another order. Text is
    tokenized as ``_analyse_ascii`` does, as UTF-8 bytes (``_ASCII_FOLD``, then
    ``bytes.split``; words past ASCII by FTS5), and Python only numbers each token (a
    ``defaultdict`` whose missing keys get the next number, in C); numpy groups the
    tokens of all rows by row and term: a parse worker's tokenizing was most of the CPU
    a PostgreSQL cold index spends beyond SQLite's. A row with a column past the packed
    offsets goes through ``analyse``."""
    import numpy as np

    number: defaultdict[bytes, int] = defaultdict(count().__next__)  # terms as UTF-8 until the end
    numbered = number.__getitem__
    term: list[int] = []  # every token's number, column after column
    runs: list[tuple[int, int, int]] = []  # per column with tokens: (row, column, tokens)
    shape: list[tuple[int, bool]] = []
    slow: list[int] = []
    kind = len(COLUMNS) - 1
    plain = [all(v.isascii() for v in values) for values in rows]
    # Outside ASCII: a word is a run of characters none of which is an ASCII separator,
    # its ASCII letters folded (FTS5 folds them alike wherever they are); one holding a
    # character past ASCII is tokenized by FTS5 (unicode61 reads each character alone).
    mixed = {n: [text.encode("utf-8", "surrogatepass").translate(_ASCII_FOLD).split() for text in rows[n]]
             for n, ascii in enumerate(plain) if not ascii}
    outside = list(dict.fromkeys(w for columns in mixed.values() for words in columns for w in words
                                 if not w.isascii()))
    found = _fts5_tokens([w.decode("utf-8", "surrogatepass") for w in outside]) if outside else []
    split = {w: tuple(t.encode("utf-8", "surrogatepass") for t in tokens) for w, tokens in zip(outside, found)}
    for n, values in enumerate(rows):
        if plain[n]:
            columns = [text.encode("ascii").translate(_ASCII_FOLD).split() for text in values]
        else:
            columns = [[t for w in words for t in split.get(w, (w,))] for words in mixed[n]]
        if any(len(tokens) > _MAX_OFFSET + 1 for tokens in columns):
            slow.append(n)  # offsets past the packed range: analyse's way
            shape.append((0, False))
            continue
        length, file_row = 0, False
        for col, (text, tokens) in enumerate(zip(values, columns)):
            if not tokens:
                continue
            if len(text) > MAX_TERM_BYTES and max(map(len, tokens)) > MAX_TERM_BYTES:
                tokens = [t[:MAX_TERM_BYTES] for t in tokens]
            length += len(tokens)
            term.extend(map(numbered, tokens))
            if col == kind:  # weight 0 and no position
                file_row = b"file" in tokens
            runs.append((n, col, len(tokens)))
        shape.append((length, file_row))
    numbers = np.array(term, np.int64)
    run = np.array(runs, np.int64).reshape(-1, 3)
    tokens_in = run[:, 2]
    column = np.repeat(run[:, 1], tokens_in)
    # a token's offset in its column (its position there: the column's base + the offset)
    offset = np.arange(len(numbers), dtype=np.int64) - np.repeat(np.cumsum(tokens_in) - tokens_in, tokens_in)
    # By row and term; a stable sort keeps each posting's tokens in the order of their
    # positions (tokens are listed row by row, column by column).
    key = np.repeat(run[:, 0], tokens_in) * max(len(number), 1) + numbers
    order = np.argsort(key, kind="stable")
    key, column, offset = key[order], column[order], offset[order]
    new = np.ones(len(key), np.bool_)
    new[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(new)
    weight = np.asarray((*_INT_WEIGHTS, 0), np.int32)[column]
    placed = column != kind
    out_rows, out_terms = np.divmod(key[starts], max(len(number), 1))
    wtf = np.add.reduceat(weight, starts) if len(starts) else weight[:0]
    npos = np.add.reduceat(placed.astype(np.int32), starts) if len(starts) else weight[:0]
    pos = (column[placed] << OFFSET_BITS) | offset[placed]
    terms = _decoded(number)
    if slow:
        stats = analyse([rows[n] for n in slow])
        extra = postings(stats)
        for n, st in zip(slow, stats):
            shape[n] = (st.length, st.file_row)
        out_rows = np.concatenate([out_rows, np.asarray(slow, np.int32)[np.frombuffer(extra.row, np.int32)]])
        out_terms = np.concatenate([out_terms, np.asarray(
            [numbered(t.encode("utf-8", "surrogatepass")) for t in extra.terms], np.int32)[np.frombuffer(extra.term, np.int32)]])
        terms = _decoded(number)
        wtf = np.concatenate([wtf, np.frombuffer(extra.wtf, np.int32)])
        npos = np.concatenate([npos, np.frombuffer(extra.npos, np.int32)])
        pos = np.concatenate([pos, np.frombuffer(extra.pos, np.int32)])
    as_array = lambda values: array("i", np.ascontiguousarray(values, np.int32).tobytes())  # noqa: E731
    return shape, Postings(terms, as_array(out_rows), as_array(out_terms), as_array(wtf), as_array(npos),
                           as_array(pos))


def _decoded(terms: Collection[bytes]) -> list[str]:
    """UTF-8 terms as text, in one decode (no token holds a newline)."""
    return b"\n".join(terms).decode("utf-8", "surrogatepass").split("\n") if terms else []


def _fts5_tokens(words: Sequence[str]) -> list[tuple[str, ...]]:
    """Each word's tokens, as FTS5's unicode61 makes them (long ones clipped as
    ``analyse`` clips them)."""
    found: list[list[tuple[int, str]]] = [[] for _ in words]
    for token, doc, _col, offset in _tokenizer.read([(w, "", "", "") for w in words], "SELECT term, doc, col, offset FROM v"):
        found[doc - 1].append((offset, clip_term(token) if len(token) > MAX_TERM_BYTES // 4 else token))
    return [tuple(t for _, t in sorted(f)) for f in found]


# ``_ASCII_TOKEN``'s tokens of ASCII text, by ``bytes.split`` after this table: letters
# folded to lower case, every other ASCII character but digits a space (a third of the
# time of ``findall``, in C); bytes past ASCII are kept, so a UTF-8 word holding one
# stays whole.
_ASCII_FOLD = bytes(c | 0x20 if chr(c).isalpha() else c if chr(c).isdigit() else 0x20 for c in range(128)) + bytes(
    range(128, 256))
# The column weights as whole numbers, for a weighted frequency summed in numpy.
_INT_WEIGHTS = tuple(int(w) for w in WEIGHTS[:-1])


@dataclass
class Prepared:
    """One file's rows as a store that is not SQLite writes them: the stored form
    (``text.pack_file``), each item's (length, stands for its file), and its
    ``Postings``. Plain values: they come back from a parse worker pickled, where a dict
    per item cost as much as tokenizing."""

    packed: tuple
    items: list[tuple[int, bool]]
    postings: Postings


def prepare_rows(rows: Sequence[tuple]) -> Prepared:
    """``Prepared`` for one file's item rows (``(item, fqname, sig_tokens, content_hash[,
    fts_body, fts_name])``). Pure and picklable, so the indexer runs it in its parse
    workers."""
    fts_rows = []
    for row in rows:
        item = row[0]
        body, name = fts_values(row)
        fts_rows.append((name, item.path, body, fts_kind(item.kind, item.start_line)))
    shape, found = file_postings(fts_rows)
    return Prepared(pack_file([row[0] for row in rows]), shape, found)


def query_tokens(texts: Sequence[str]) -> list[tuple[str, ...]]:
    """Each text's tokens, as FTS5 reads a quoted phrase of it."""
    out: dict[str, tuple[str, ...]] = {}
    with _query_lock:
        for text in texts:
            hit = _query_cache.get(text)
            if hit is not None:
                out[text] = hit
    todo = [t for t in dict.fromkeys(texts) if t not in out]
    if todo:
        found: dict[str, list[tuple[int, str]]] = {t: [] for t in todo}
        for term, doc, _col, offset in _tokenizer.read([(t, "", "", "") for t in todo], "SELECT term, doc, col, offset FROM v"):
            found[todo[doc - 1]].append((offset, term))
        for text, toks in found.items():
            out[text] = tuple(clip_term(t) for _, t in sorted(toks))
        with _query_lock:
            for text in todo:
                _query_cache[text] = out[text]
            while len(_query_cache) > _QUERY_CACHE:
                _query_cache.popitem(last=False)
    return [out[t] for t in texts]


@dataclass
class Query:
    """A keyword query as phrases of tokens, each with the number of times it counts:
    a term asked twice (or with weight 2) counts twice, as FTS5 scores each OR-ed
    phrase on its own."""

    singles: dict[str, float]
    phrases: dict[tuple[str, ...], float]

    def __bool__(self) -> bool:
        return bool(self.singles or self.phrases)


def plan(terms: Sequence[KeywordTerm]) -> Query:
    asked = [(text, max(1, weight)) for text, weight in terms if text]
    singles: dict[str, float] = {}
    phrases: dict[tuple[str, ...], float] = {}
    for (_text, weight), tokens in zip(asked, query_tokens([t for t, _ in asked])):
        if len(tokens) == 1:
            singles[tokens[0]] = singles.get(tokens[0], 0.0) + weight
        elif tokens:  # a phrase of no token matches nothing
            phrases[tokens] = phrases.get(tokens, 0.0) + weight
    return Query(singles, phrases)
