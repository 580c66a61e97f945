"""BM25 candidates: one ranked FTS5 query over the question's most telling terms."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

import math
import re

from ..store.base import KeywordTerm, Store
from ..words import split_identifier
from . import english
from .english import ABBREVIATIONS, COMMON_WORDS, MIN_STEM, stem

_WORD_RE = re.compile(r"(?<!\w)[^\W\d]\w*+")

# Words that say nothing about which code is meant.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren as at be because
    been before being below between both but by can cannot could did didn do does doesn
    doing don down during each else few for from further get got had has have having he her
    here hers herself him himself his how i if in into is isn it its itself just let like
    me might more most must my myself no nor not now of off on once only or other ought our
    ours ourselves out over own same shall she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    upon us use used using very was wasn we were weren what when where which while who whom
    why will with won would you your yours yourself yourselves e g eg ie etc via vs one two
    way want wants need needs seems seem thing things work works working happen happens
    make makes made see seen look looks looking trying try tried expected actual instead
    however still even though well example code file files please thanks thank hi hello
    issue bug problem error errors fix fixed line lines version python true false none
    null self cls""".split()
)

# Measured on SWE-bench Lite issues (bench/code_context.py): 60 terms, a term repeated in
# the question counting up to 3 times, ranked files best.
MAX_TERMS = 60
REPEAT_FREQUENT = 3
# Word forms: a question word of at least this many letters is expanded to at most
# MAX_FORMS indexed words sharing its stem ("rewriting" -> rewrite, rewriter), in
# questions of at most FORM_MAX_TERMS terms. Measured on bench/code_context.py: expanding
# every word of a long bug report added noise (Acc@1 50.8 -> 49.2); a short question in
# plain English is where a missed word form costs the answer.
FORM_MIN_LEN = 5
MAX_FORMS = 3
FORM_MAX_TERMS = 20
# How code spells what a question says in words: a question word's usual abbreviations
# ("temporary directory" -> tmp, temp, dir; english.ABBREVIATIONS) join the query when the
# index holds them (in fewer than half the items), in questions of at most FORM_MAX_TERMS
# terms, at most MAX_SPELLINGS of them. Only the code-context pipeline asks for them
# (``report``): note and chat search are as before. Measured with bench/ablate.py:
# plain-English questions Acc@1 0.81 -> 0.86, definitions shown 0.784 -> 0.840; SWE-bench
# dev and dev2 unchanged (docs/benchmarks.md). Two adjacent words joined as well ("root
# directory" -> rootdir, "set up" -> setup) measured 0.825: a "set up" in a question about
# fixture scopes pulled in pytest's setup code.
CODE_SPELLINGS = True
MAX_SPELLINGS = 12
# A report's title (its first line, when a body follows) is the reporter's own summary:
# its terms are kept past MAX_TERMS and count as repeated (TITLE_WEIGHT times), its compound
# names' phrases too. Measured with bench/ablate.py (the code-context pipeline only asks
# for it): dev Acc@1/5 60.3/90.5 -> 63.5/88.9, hunks 76.5 -> 77.6%; dev2 one-file Acc@10
# 82.5 -> 85.0, multi-file hunks 19.9 -> 23.4%; plain-English questions unchanged (one line).
# Weight 3 gave dev Acc@1 65.1 but cost dev2 one-file Acc@5 80.0 -> 77.5.
TITLE_WEIGHT = 2
TITLE_MIN_BODY = 200
# A part of a split word (``kf28xm4`` -> kf, 28, xm) this long or longer is evidence of a
# match on its own; shorter parts match somewhere in any large index.
EVIDENCE_PART_LEN = 4


def question_terms(text: str) -> tuple[list[str], list[str]]:
    """(terms, phrases): lower-cased words and identifier parts; phrases for compound
    identifiers (``get_netrc_auth`` -> ``get netrc auth``) so adjacency earns extra score."""
    terms: dict[str, None] = {}
    phrases: dict[str, None] = {}
    for m in _WORD_RE.finditer(text[:200_000]):
        word = m.group(0)
        if len(word) > 100:
            continue
        parts = split_identifier(word)
        if len(parts) > 1:
            phrases[" ".join(parts)] = None
            if "_" not in word:
                # camelCase stays one token in symbol bodies: match it whole as well.
                terms[word.lower()] = None
        for p in parts or [word.lower()]:
            if len(p) > 1 and p not in STOPWORDS:
                terms[p] = None
    return list(terms), list(phrases)


# Quoted messages ("WARNING: no number is assigned for table") are often the very string
# literal of the code that prints them: runs of PHRASE_WORDS consecutive words of a quoted
# span become phrase clauses (runs, because the literal holds %s where the report has a
# value), at most MAX_MESSAGE_PHRASES of them.
PHRASE_WORDS = 3
MAX_MESSAGE_PHRASES = 24
# A single quote inside a word is an apostrophe ("don't ... it's" quotes nothing).
_QUOTED_SPAN_RE = re.compile(r"`([^`\n]{1,300})`|\"([^\"\n]{1,300})\"|(?<!\w)'([^'\n]{1,300})'(?!\w)")


# A line of a program's log ("WARNING: duplicate object description of ..."): what follows
# the label is the message the program printed, as a quoted one is. Quoted spans are not
# searched for their source (message_sources): quoted code (`_print_Mul(Pow(...))`) is no
# message, and as sources they cost dev2 Acc@1 -3 and the held-out pool -1.
LOG_LINES = True
MESSAGE_MIN_PHRASES = 2
MESSAGE_MAX_FILES = 2
MESSAGE_SCAN = 10
_LOG_LINE_RE = re.compile(
    r"(?<![\w.])(?:WARNING|ERROR|CRITICAL|Warning|Error|warning|error)(?:\([^)\n]{0,40}\))?:"
    r"[ \t]*(?:\r?\n)?[ \t]*(?!Traceback|```|~~~)([^\r\n]{1,300})")


def _message_spans(text: str, logs_only: bool = False) -> Iterator[str]:
    if not logs_only:
        for m in _QUOTED_SPAN_RE.finditer(text):
            yield next(g for g in m.groups() if g is not None)
    if LOG_LINES:
        for m in _LOG_LINE_RE.finditer(text):
            yield m.group(1)


def message_phrases(text: str, logs_only: bool = False) -> list[str]:
    """Phrases of PHRASE_WORDS consecutive words from the quoted spans of ``text`` that
    hold at least that many plain words (quoted prose, not a quoted name), and from the
    messages of its log lines (LOG_LINES)."""
    out: dict[str, None] = {}
    for inner in _message_spans(text[:200_000], logs_only):
        if not any(c.isspace() for c in inner.strip()):
            continue  # one token: a quoted path or name, which entities read already
        words = [w.lower() for w in _WORD_RE.findall(inner) if len(w) <= 40]
        if len(words) < PHRASE_WORDS:
            continue
        for i in range(len(words) - PHRASE_WORDS + 1):
            window = words[i : i + PHRASE_WORDS]
            if all(w in STOPWORDS for w in window):
                continue
            out[" ".join(window)] = None
            if len(out) >= MAX_MESSAGE_PHRASES:
                return list(out)
    return list(out)


def report_title(text: str) -> str:
    """The first line of a report whose body (the rest) runs TITLE_MIN_BODY characters or
    more; "" for a question of one line or a short one."""
    head, _, body = text.strip().partition("\n")
    return head if len(body) >= TITLE_MIN_BODY else ""


# A word the reporter repeats in their own sentences is what the report is about; a word a
# pasted block repeats (a conf.py, a log, a program's output) is repeated by the machine
# that wrote it. With REPEAT_IN_BLOCKS_ONCE, the words of a report's code fences count once
# however often the fences hold them (added to their count in the prose). Measured with
# bench/ablate.py (docs/benchmarks.md, issue 20): dev2 one-file Acc@1/5 60.0/82.5 ->
# 65.0/85.0 and a held-out dev2 sample's gold files in context 88.9 -> 93.3, but SWE-bench
# dev Acc@1 63.5 -> 60.3 (near ties flipped both ways): off, a switch for the ablation.
REPEAT_IN_BLOCKS_ONCE = False
_FENCED = re.compile(r"^[ \t]*(```|~~~)[^\n]*$.*?(?:^[ \t]*\1|\Z)", re.DOTALL | re.MULTILINE)


def _term_frequencies(text: str, blocks_once: bool = False) -> dict[str, int]:
    """How often ``text`` says each word (identifier parts apart); ``blocks_once``: the
    words of code fences count once in all, beside their count outside them."""
    text = text[:200_000]
    in_blocks: set[str] = set()
    if blocks_once and ("```" in text or "~~~" in text):
        for m in _FENCED.finditer(text):
            in_blocks.update(_words(m.group(0)))
        text = _FENCED.sub("\n", text)
    freq: dict[str, int] = {}
    for p in _words(text):
        freq[p] = freq.get(p, 0) + 1
    for p in in_blocks:
        freq[p] = freq.get(p, 0) + 1
    return freq


def _words(text: str) -> Iterator[str]:
    for m in _WORD_RE.finditer(text):
        yield from split_identifier(m.group(0)) or [m.group(0).lower()]


class KeywordSearcher:
    def __init__(self, store: Store):
        self.store = store

    def doc_freqs(self, terms: list[str]) -> dict[str, int]:
        return self.store.doc_freqs(terms) if terms else {}

    def build_match(
        self, text: str, max_terms: int | None = None, report: bool = False
    ) -> tuple[list[KeywordTerm], list[str]]:
        """The weighted terms and phrases of the keyword query, and the single terms it uses.

        Terms the index does not hold are dropped; terms in half the items or more say
        little and are dropped too. Past ``max_terms``, the terms the question repeats
        most are kept (a long bug report's pasted logs add many one-off words). A ``report``
        has its title's terms weigh more (TITLE_WEIGHT).
        """
        max_terms = MAX_TERMS if max_terms is None else max_terms
        terms, phrases = question_terms(text)
        if not terms:
            return [], []
        # Asked in the same round trip as the question's own terms.
        spellings = code_spellings(text) if report and CODE_SPELLINGS and len(terms) <= FORM_MAX_TERMS else []
        df = self.doc_freqs(list(dict.fromkeys(terms + spellings)))
        n_docs = max(1, self.store.item_count())
        present = [t for t in terms if df.get(t, 0) > 0]
        chosen = [t for t in present if df[t] < 0.5 * n_docs] or present
        title_terms, title_phrases = question_terms(report_title(text)) if report and TITLE_WEIGHT else ([], [])
        titled = set(title_terms)
        if len(chosen) > max_terms:
            freq = _term_frequencies(text, report and REPEAT_IN_BLOCKS_ONCE)
            chosen = sorted(chosen, key=lambda t: (t not in titled, -freq.get(t, 0), df[t]))[:max_terms]
        freq = _term_frequencies(text, report and REPEAT_IN_BLOCKS_ONCE) if REPEAT_FREQUENT else {}

        def weight(t: str) -> int:
            # A term the question repeats, or its title holds, counts more.
            repeated = min(REPEAT_FREQUENT, max(1, freq.get(t, 1))) if REPEAT_FREQUENT else 1
            return max(repeated, int(TITLE_WEIGHT)) if t in titled else repeated

        clauses = [KeywordTerm(t, weight(t)) for t in chosen]
        chosen_set = set(chosen)
        if len(terms) <= FORM_MAX_TERMS:
            for form in self._word_forms(terms, chosen_set, n_docs):
                clauses.append(KeywordTerm(form))
            asked = chosen_set | {c.text for c in clauses}
            spelt = [w for w in spellings if w not in asked and 0 < df.get(w, 0) < 0.5 * n_docs]
            clauses.extend(KeywordTerm(w) for w in spelt[:MAX_SPELLINGS])
        for ph in list(dict.fromkeys(title_phrases + phrases[:20])):
            parts = ph.split()
            if all(p in chosen_set or df.get(p, 0) > 0 for p in parts):
                clauses.append(KeywordTerm(ph, int(TITLE_WEIGHT) if ph in title_phrases else 1))
        # A phrase holding a word the index lacks cannot match, yet FTS5 would still read
        # the position lists of its other words: leave it out.
        clauses.extend(
            KeywordTerm(ph) for ph in message_phrases(text)
            if all(df.get(w, 1) > 0 for w in ph.split())
        )
        return clauses, chosen

    def message_sources(self, text: str, is_source: Callable[[int], bool]) -> list[str]:
        """The files whose code prints a message of the log lines ``text`` pastes: a
        definition among the MESSAGE_SCAN best for the messages' phrases that holds
        MESSAGE_MIN_PHRASES of them (``is_source``: the rows that may), when at most
        MESSAGE_MAX_FILES files do; else none (a message every module prints says nothing)."""
        phrases = message_phrases(text, logs_only=True)
        if len(phrases) < MESSAGE_MIN_PHRASES:
            return []
        hits = self.store.keyword_search([KeywordTerm(ph) for ph in phrases], MESSAGE_SCAN)
        rows = [r for r, _ in hits if is_source(r)]
        files: dict[str, None] = {}
        for si in self.store.items_by_rowids(rows).values():
            words = " " + " ".join(w.lower() for w in _WORD_RE.findall(si.item.text)) + " "
            if sum(1 for ph in phrases if f" {ph} " in words) >= MESSAGE_MIN_PHRASES:
                files[si.item.path] = None
        return sorted(files) if len(files) <= MESSAGE_MAX_FILES else []

    def _word_forms(self, terms: list[str], chosen: set[str], n_docs: int) -> list[str]:
        """Indexed words sharing a stem with a question word and not asked already: the
        vocabulary is looked up at query time, so the index format stays as it is."""
        forms: dict[str, None] = {}
        roots = list(stem_roots(terms))
        # All at once: one round trip on a database server instead of one per word.
        found_by_root = self.store.terms_with_prefixes([root for _, root in roots])
        for term, root in roots:
            found = found_by_root[root]
            same = [t for t, df in found.items()
                    if t != term and t not in chosen and df < 0.5 * n_docs and stem(t) == root]
            for t in sorted(same, key=lambda t: -found[t])[:MAX_FORMS]:
                forms[t] = None
        return list(forms)

    def has_evidence(self, text: str) -> bool:
        """Whether the index holds a word of ``text`` that says something: a whole word of
        it, or a part of a split word at least EVIDENCE_PART_LEN long. The two-letter
        pieces of ``kf28xm4`` (kf, xm) or ``dr9nc3da0`` are in any large index and are
        not a match (retrieval/noise.py)."""
        terms, _ = question_terms(text)
        words = {m.group(0).lower() for m in _WORD_RE.finditer(text[:200_000])}
        telling = [t for t in terms if t in words or (len(t) >= EVIDENCE_PART_LEN and not t.isdigit())]
        return any(n > 0 for n in self.doc_freqs(telling).values())

    def search(
        self, text: str, limit: int = 200, files_only: bool = False, within: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """The best ``limit`` rows for ``text`` (only rows in ``within``, when given)."""
        match, _ = self.build_match(text)
        return self.store.keyword_search(match, limit, files_only=files_only, within=within)


def code_spellings(text: str) -> list[str]:
    """What code calls ``text``'s words, in question order: their usual abbreviations
    (english.ABBREVIATIONS), everyday words' names (EVERYDAY) and phrasal verbs' verbs."""
    out: dict[str, None] = {}
    everyday = english.EVERYDAY if english.SETTINGS_ARE_CONFIG else {}
    for m in _WORD_RE.finditer(text[:5000]):
        word = m.group(0).lower()
        for short in ABBREVIATIONS.get(word, ()) + everyday.get(word, ()):
            out[short] = None
        other = english.american(word)
        if other is not None:
            out[other] = None
    for w in english.phrasal_spellings(text):
        out[w] = None
    return list(out)


def stem_roots(terms: list[str]) -> Iterator[tuple[str, str]]:
    """(word, its stem) for the question words whose other forms are worth asking for:
    long enough, alphabetic, not common, with a stem that is not too short."""
    for term in terms:
        if len(term) < FORM_MIN_LEN or not term.isalpha() or term in COMMON_WORDS:
            continue
        root = stem(term)
        if len(root) > MIN_STEM:
            yield term, root


def idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))
