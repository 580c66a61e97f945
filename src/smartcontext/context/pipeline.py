"""The code context pipeline: question -> entities -> candidates -> fused ranking ->
budget -> export. Each stage lives in its own module; this one only wires them."""

from __future__ import annotations

import heapq
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ..model import ItemKind, kind_traits
from ..notes.match import PathFilter
from ..retrieval import graph, scoring
from ..retrieval.catalogue import Catalogue
from ..retrieval.entities import EntityExtractor
from ..retrieval.scoring import ScoredItem
from ..retrieval.keyword import KeywordSearcher
from ..retrieval.noise import semantic_evidence
from ..retrieval import reports
from ..store.base import Store, StoredItem
from ..tokens import count_tokens
from .budgeter import PER_FILE_OVERHEAD, PER_ITEM_OVERHEAD, asks, full_share_for, plan_budget, signature_text
from .explain import spend_of
from .export import EXPORTERS, render_counted
from .models import (
    FORMATS, MAX_BUDGET, OMIT_BUDGET, OMIT_EXCLUDE, OMIT_GONE, OMIT_KIND, OMIT_PATHS, OMIT_RANK,
    OMIT_SCORE_FLOOR, OMIT_TEST, OMIT_TOO_LARGE,
    ContextResult, ExtractionConfig, OmittedItem, SelectedItem, question_echo,
)

if TYPE_CHECKING:  # numpy: loaded only when the index has vectors
    from ..retrieval.vector import StoreVectorIndex, VectorIndex

MAX_QUESTION_CHARS = 200_000
CANDIDATES_PER_SIGNAL = 200
GRAPH_SEEDS = 12
TOP_FILE_SHARE = 0.4  # the best file is shown whole when it fits in this share of the budget
HEAD_FILES = 3  # files whose preamble (imports, constants) is shown
HEAD_MAX_LINES = 60
HEAD_MAX_TOKENS = 400
# A head's tokens are estimated from the file's (its share of the lines), and a file whose
# body is denser than its imports and constants gets an estimate over HEAD_MAX_TOKENS for a
# head under it: for a bug report (a fix often edits the imports or a constant), the heads of
# the first HEAD_EXACT files are counted from their lines before being left out. Measured
# with bench/ablate.py (0 -> 1): SWE-bench dev hunks shown 77.6 -> 79.6% (a report whose fix
# edits requests' models.py imports: 1 -> 3 of 3); 45 held-out dev2 reports 48.1 -> 48.8%;
# the design dev2 sample and the plain-English questions (not reports) unchanged. 2 or 3
# files, or for questions too: dev2 one-file hunks 65.8 -> 64.6 and a multi-file gold file out
# of context, plain-English questions whole bodies 0.640 -> 0.594-0.626. 0: estimates only.
HEAD_EXACT = 1
MIN_BUDGET_FOR_FILES = 2000  # below this, whole files and file headers crowd out matches
FILE_BEST_ITEM_WEIGHT = 0.5
# The file whose code holds a message the report's log prints ("WARNING: duplicate object
# description of ...", keyword.message_sources) counts as a traceback frame of this
# strength, a named path's: the program printed it there. At 1.0 the file that prints a
# caller's message outranked the one the fix edits (pytest-8987 1 -> 2).
MESSAGE_SOURCE = 0.5
MAX_IMPORTS_SHOWN = 12  # modules on a file's imports line
# The best file's leading symbols when it is too large to show whole: its few best matches,
# not its long tail (measured on bench/code_context.py: the tail, or a share of 0.5, crowded
# out other files' matches). 5 measured neutral on SWE-bench dev and dev2 and, beside the
# short-question share (budgeter.SHORT_QUESTION_FULL_SHARE), on the plain-English questions.
LEAD_ITEMS = 3
# The second file's best match (SECOND_LEAD_ITEMS of them, within SECOND_LEAD_SHARE of the
# budget, however it scores against the top file's) follows the top file's lead: a top file
# holding many matches otherwise spends the share for whole bodies on its own long tail,
# and the runner-up, as often the file to fix, shows signatures only. Measured with
# bench/ablate.py (0 -> 1): SWE-bench dev2 one-file hunks shown 59.5 -> 60.8%; plain-English
# questions whole bodies 0.631 -> 0.640 (definitions unchanged); SWE-bench dev unchanged.
# 2 cost dev2 a multi-file gold file in context. 0: off.
SECOND_LEAD_ITEMS = 1
SECOND_LEAD_SHARE = 0.2
LEAD_MIN_SHARE = 0.6  # of the best symbol's score anywhere: a close second, not the tail
OMITTED_SHOWN = 20  # the best candidates left out that an answer lists (all are counted)
POOL = 250  # the best-ranked candidates the budgeter considers
# A method that ranks among the first NAMESAKE_SCAN candidates brings the methods of the same
# name in other classes of its file (at most NAMESAKES, each of at most NAMESAKE_MAX_TOKENS),
# right after it and at its score: sibling classes that each override ``_latex`` or
# ``handle_signature`` share the fault a report shows in one of them, and a fix changes them
# alike. Measured with bench/ablate.py (0 -> 4; 2 and 8 measured the same): SWE-bench dev2
# one-file hunks shown 58.2 -> 59.5% (and one more strict hunk); plain-English questions
# definitions shown 0.852 -> 0.868; SWE-bench dev unchanged. 0: off.
NAMESAKES = 4
NAMESAKE_SCAN = 40
NAMESAKE_MAX_TOKENS = 400
# A function nested in a function (a closure) brings the function around it ahead of it, shown
# whole in its place when it costs at most OUTER_RATIO times the nested one: the outer lines
# hold what the closure closes over (the operands a comparison factory swaps), and otherwise
# the nested function's body made its container show as a signature only. Measured with
# bench/ablate.py (0 -> 2; 1.5 and 3 the same): SWE-bench dev2 one-file hunks shown
# 65.8 -> 67.1% (an astropy report whose fix is in `_make_compare`, around the `_compare` it
# matched); SWE-bench dev, the plain-English questions and 45 held-out dev2 reports unchanged
# (it changed 5 dev contexts, 1 question's, 7 held-out). 0: off.
OUTER_RATIO = 2.0
# What the exact count leaves free is spent on the code around what is shown whole
# (`_fill_leftover`); nothing shown is dropped for it. Measured with bench/ablate.py against
# main 27abeec (docs/benchmarks.md, "Packing for bug reports, round 9"), all four together:
# SWE-bench dev hunks shown 79.6 -> 82.7%; held-out dev2 one-file reports 48.8 -> 50.4% (45)
# and 44.1 -> 48.0% (48); dev2 design one-file 67.1 unchanged, multi-file 25.1 -> 26.9%;
# rankings and both plain-English question sets unchanged. A warm context costs about 1.4x
# (a second render and count, and for some reports a second plan). Each 0: off.
# - The module-level assignments a definition shown whole names (a pattern, a table, a
#   registry: lines no item holds), each of at most NAMED_STATEMENT_TOKENS, shown as
#   "module level" lines. Read from a report whose fix edits the regex `option_desc_re`
#   that the shown `Cmdoption.handle_signature` uses.
NAMED_STATEMENT_TOKENS = 150
# - The statements between a definition shown whole and the definitions beside it in its
#   module or class (comments heading a section, a registration after a function, class
#   attributes before a method), each run of at most GAP_MAX_TOKENS. Read from a report
#   whose fix goes under the `# -- Generating output --` comment above the function shown.
GAP_MAX_TOKENS = 300
# - The definitions just before and after the best NEIGHBOUR_ANCHORS shown whole, each of
#   at most NEIGHBOUR_MAX_TOKENS (siblings of a matched method are often changed with it).
NEIGHBOUR_MAX_TOKENS = 400
NEIGHBOUR_ANCHORS = 5
# For a bug report, when a definition shown whole names such a module-level assignment and
# what the fill wants (the assignments and gaps, up to FILL_REPLAN tokens) is more than the
# exact count left free, the plan is made again that much smaller (its weakest items make
# room) and kept when it fits. 0: the fill takes only what is left free.
FILL_REPLAN = 300
FILL_MIN_FREE = 20  # fewer free tokens hold no statement and its framing: not worth a recount
# For a question (not a report), the helpers the best code shown whole calls, listed by
# signature (a line each) when they are not shown: where the answer to "how does X work"
# goes on, named in the text already. At most this many, from the CALLEE_ANCHORS best
# functions shown whole, each scored CALLEE_SHARE of its best caller (capped below every
# strong match, as graph neighbours are) so weak matches make room for it. A report's fix
# needs bodies: there the leftover goes to the code around what is shown (_fill_leftover);
# listing callees for reports cost SWE-bench dev and the dev2 pool a hunk each. 0: none.
# Measured with bench/ablate.py (docs/benchmarks.md, "Helpers the shown code calls").
CALLEE_SIGNATURES = 6
CALLEE_ANCHORS = 5
CALLEE_SHARE = 0.8
# A second plan when the exact count leaves over this share of the budget free, the
# first having spent at least REFILL_SPENT of its estimate; its budget is scaled by the
# estimates' overrun, less REFILL_MARGIN (see _refill_budget). Measured with
# bench/ablate.py: SWE-bench dev hunks shown 75.5 -> 76.5%, dev2 gold file in context
# 80.0 -> 82.5% (one-file), plain-English questions symbols shown 0.555 -> 0.562;
# rankings unchanged.
REFILL = True
REFILL_SLACK = 0.04
REFILL_SPENT = 0.9
REFILL_MARGIN = 0.97


class SmartContextExtractor:
    """Answers ``extract(question)`` from one store.

    catalogue:  a callable returning the current Catalogue (cached by the workspace).
    vectors:    a callable returning (VectorIndex, query_embedder) or None when the index
                has no embeddings yet: the pipeline then runs on names, keywords and graph.
    """

    def __init__(
        self,
        store: Store,
        catalogue: Callable[[], Catalogue],
        vectors: Callable[[], tuple[VectorIndex | StoreVectorIndex, Any] | None] | None = None,
        config: ExtractionConfig | None = None,
        skipped: Callable[[], dict[str, list[tuple[str, str]]]] | None = None,
    ):
        """skipped: files left out of the index by name (lower-cased file name and stem ->
        [(path, reason)]), so a question naming one can be told why it is missing."""
        self.store = store
        self._skipped = skipped
        self._catalogue = catalogue
        self._vectors = vectors
        self.config = config or ExtractionConfig()
        self.keyword = KeywordSearcher(store)

    def extract(self, question: str, format: str = "mu") -> ContextResult:
        cfg = self.config
        if format not in FORMATS:
            from ..errors import InvalidArgument

            raise InvalidArgument(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
        timings: dict[str, float] = {}
        t = time.perf_counter()
        question = question[:MAX_QUESTION_CHARS]
        cat = self._catalogue()
        timings["catalogue"] = time.perf_counter() - t

        t = time.perf_counter()
        # Names and keywords come from what the question says, not the package versions
        # it pastes; the question itself is kept whole for the result.
        asked = reports.without_template_comments(question) if reports.STRIP_COMMENTS else question
        if reports.DROP_ENV_BLOCKS:
            asked = reports.without_environment_blocks(asked)
        asked = reports.without_version_lines(asked)
        entities = scoring.without_project_names(cat, EntityExtractor(is_known=cat.is_known).extract(asked))
        placed = scoring.placed_frames(cat, entities)
        ent = scoring.entity_scores(cat, entities, placed)
        scoring.add_constructors(cat, ent, asked)
        timings["entities"] = time.perf_counter() - t

        t = time.perf_counter()
        match, _terms = self.keyword.build_match(asked, report=True)
        kw_hits, file_hits = self.store.keyword_search_with_files(match, CANDIDATES_PER_SIGNAL, cat.is_file_row)
        kw = scoring.keyword_scores(kw_hits)
        timings["keyword"] = time.perf_counter() - t

        t = time.perf_counter()
        vec: dict[int, float] = {}
        signals_used = ["names", "keywords"]
        vectors = self._vectors() if self._vectors else None
        if vectors is not None:
            index, embedder = vectors
            if len(index):
                from ..embeddings.base import query_vector

                qv = query_vector(embedder, question)
                # Vectors rank prose (note sections, messages, text) only: for code symbols
                # they measured worse than names + keywords + graph alone
                # (bench/code_context.py with the static model: hunks shown 66.3% -> 60.2%,
                # Acc@10 90.5 -> 88.9; plain-English questions, bench/code_questions.py:
                # symbols shown 0.55 -> 0.59 but Acc@1 0.72 -> 0.69, and no better when only
                # questions naming nothing use them). Dropped before rescaling, so prose
                # keeps its range.
                hits = [h for h in index.search(qv, CANDIDATES_PER_SIGNAL) if _is_prose(cat, h[0])]
                if not ent and not (kw and self.keyword.has_evidence(asked)) and not semantic_evidence(
                    hits, index, embedder
                ):
                    # Nothing the question names or says is in the index, and the nearest
                    # prose is no nearer than nonsense gets (retrieval/noise.py): no match.
                    hits, kw, file_hits = [], {}, []
                vec = scoring.vector_scores(hits)
                signals_used.append("vectors")
        timings["vector"] = time.perf_counter() - t

        t = time.perf_counter()
        why_not = self._exclusion(cat)

        def allowed(rowid: int) -> bool:
            return why_not(rowid) is None

        filtered: dict[int, str] = {}
        raw_signals = (ent, kw, vec)
        if cfg.explain:  # each candidate judged once, and the reason kept
            for signal in raw_signals:
                for r in signal:
                    if r not in filtered:
                        why = why_not(r)
                        if why is not None:
                            filtered[r] = why
            ent, kw, vec = ({r: s for r, s in sig.items() if r not in filtered} for sig in raw_signals)
        else:
            ent, kw, vec = ({r: s for r, s in sig.items() if allowed(r)} for sig in raw_signals)
        scored = scoring.fuse(cat, cfg, ent, kw, vec)
        frames = {p: v for p, v in scoring.frame_files(cat, entities, placed).items()
                  if p in cat.module_of_path and allowed(cat.module_of_path[p])}
        printing: list[str] = []
        if MESSAGE_SOURCE:
            printing = [p for p in self.keyword.message_sources(asked, partial(_is_source_code, cat))
                        if p in cat.module_of_path and allowed(cat.module_of_path[p])]
        for p in printing:
            frames[p] = max(frames.get(p, 0.0), MESSAGE_SOURCE)
        named = scoring.names_a_test(cat, entities, placed, asked)
        # The test files a long report names, demoted with the others (--verbose says so).
        report_named_tests = sorted(scoring.tests_a_report_names(cat, entities, placed, asked))
        demoted = (cat.test_paths - {cat.entries[r].path for r in named if r in cat.entries}
                   if scoring.TEST_PRIOR < 1.0 else set())
        titled = scoring.title_files(
            cat, asked,
            lambda p: p in cat.module_of_path and allowed(cat.module_of_path[p]))
        file_rank = scoring.file_scores(cat, file_hits, kw, ent, vec, allowed, frames, demoted, titled)
        wordy = scoring.doc_heavy_candidates(scored, cat)
        docs_demoted = 0
        read: dict[int, StoredItem] = {}  # items read already: the budget stage reuses them
        if wordy:
            read = self.store.items_by_rowids(wordy)
            docs_demoted = scoring.demote_doc_heavy(
                scored, {r: (len(si.item.docstring), len(si.item.text)) for r, si in read.items()})
        scoring.add_file_prior(scored, cat, file_rank)
        translated = cat.translated_copies() if scoring.TRANSLATION_PRIOR < 1.0 else set()
        translations_demoted = len({p for p in (cat.entries[r].path for r in scored if r in cat.entries)
                                    if p in translated})
        seeds = [s.rowid for s in sorted(scored.values(), key=lambda s: -s.score)[:GRAPH_SEEDS]]
        neighbours = graph.expand(self.store, cat, seeds, depth=cfg.expand_depth)
        neighbours = {r: n for r, n in neighbours.items() if allowed(r)}
        if neighbours:
            signals_used.append("graph")
        scoring.add_graph(scored, neighbours, cat, cfg)
        tests_demoted = scoring.demote_tests(scored, cat, named)
        top_raw = max((s.score for s in scored.values()), default=0.0)
        scoring.normalise_final(scored)
        ranked_all = sorted(scored.values(), key=lambda s: (-s.score, s.item_id))
        ranked = [s for s in ranked_all if s.score >= cfg.min_relevance]
        timings["fuse"] = time.perf_counter() - t

        files = _rank_files(ranked_all, cat, file_rank)

        filtered_out: list[tuple[int, float, str]] = []
        if cfg.explain:
            t = time.perf_counter()
            # Items cut by a filter never reach fusion: their own signals score them, on
            # the shown items' scale (before graph and file boosts, which they never got).
            pre = scoring.fuse(cat, cfg, *({r: v for r, v in sig.items() if r in filtered} for sig in raw_signals))
            scale = top_raw if top_raw > 0 else 1.0
            filtered_out = [(r, min(1.0, s.score / scale), filtered[r]) for r, s in pre.items()]
            filtered_out += [(s.rowid, s.score, OMIT_SCORE_FLOOR) for s in ranked_all if s.score < cfg.min_relevance]
            timings["explain"] = time.perf_counter() - t

        t = time.perf_counter()
        result = self._budget_and_render(question, format, ranked, cat, files, entities, filtered_out, read)
        timings["budget_export"] = time.perf_counter() - t
        if "explain" in result.stats:  # measured inside the budget stage: moved to its own line
            spent = result.stats.pop("explain")
            timings["explain"] += spent
            timings["budget_export"] -= spent
        if (cfg.paths or cfg.exclude) and not result.items:
            where = PathFilter(cfg.paths, cfg.exclude)
            if not any(where.allows(p) for p in cat.paths):
                result.warnings.insert(0, "no indexed file is left by --paths/--exclude; "
                                          "`smartcontext files` lists the indexed files")
        result.stats.update(
            {
                "entities": len(entities),
                "candidates": {
                    "entity": len(ent),
                    "keyword": len(kw),
                    "vector": len(vec),
                    "graph": len(neighbours),
                    "fused": len(scored),
                    "above_min_relevance": len(ranked),
                },
                "signals": signals_used,
                "tests_demoted": tests_demoted,
                "report_named_tests": report_named_tests,
                "docstring_demoted": docs_demoted,
                "translations_demoted": translations_demoted,
                "title_files": sorted(p for p in titled if p in file_rank),
                "message_sources": printing,
                "selected": len(result.items),
                "tokens_used": result.token_count,
                "max_tokens": cfg.max_tokens,
                "seconds": {k: round(v, 4) for k, v in timings.items()},
            }
        )
        if not vec and vectors is None:
            result.stats["note"] = "no embeddings in the index yet: ranked by names, keywords and graph"
        return result

    def _exclusion(self, cat: Catalogue) -> Callable[[int], str | None]:
        """Row id -> why the options leave it out (an OMIT_* reason), or None."""
        cfg = self.config
        kinds = set(cfg.kinds) if cfg.kinds else None
        skip_plain_text = cat.has_code
        where = PathFilter(cfg.paths, cfg.exclude)
        where_reason = {"paths": OMIT_PATHS, "exclude": OMIT_EXCLUDE}

        def why_not(rowid: int) -> str | None:
            e = cat.entries.get(rowid)
            if e is None:
                return OMIT_GONE
            if cfg.exclude_tests and e.path in cat.test_paths:
                return OMIT_TEST
            if kinds is not None and e.kind not in kinds:
                return OMIT_KIND
            if kinds is None and skip_plain_text and e.kind == ItemKind.TEXT:
                # reST/.txt windows crowd out code in a repository; ask with kinds=["text"]
                return OMIT_KIND
            if where:
                why = where.reason(e.path)
                if why is not None:
                    return where_reason[why]
            return None

        return why_not

    def _explain(
        self,
        result: ContextResult,
        cat: Catalogue,
        dropped: list[tuple],
        unreached: tuple[list[ScoredItem], int],
        filtered: list[tuple[int, float, str]],
        entities,
        beyond_pool: int,
    ) -> None:
        """Fill ``omitted``, ``omitted_counts`` and ``spend`` from what the stages left out.
        Every candidate is counted; only the best OMITTED_SHOWN are described.

        dropped:     what the budgeter and the trimming left out (``budgeter._drop``).
        unreached:   the candidates the budgeter considered, with the tokens free when it
                     stopped: those neither shown nor dropped were never reached.
        beyond_pool: candidates above the score floor ranked below the POOL considered."""
        cfg = self.config
        # row id -> (score, reason, tokens or None (its cheapest showing), detail or tokens
        # free); the first reason recorded for a row wins, and shown rows are never listed.
        shown = {cat.by_id.get(s.item.id) for s in result.items}
        left: dict[int, tuple[float, str, int | None, str | int]] = {}
        for rowid, score, reason, tokens, detail in dropped:
            if rowid not in shown:
                left.setdefault(rowid, (score, reason, tokens, detail))
        pool, free = unreached
        for cand in pool:
            if cand.rowid not in shown:
                left.setdefault(cand.rowid, (cand.score, OMIT_BUDGET, None, free))
        for rowid, score, reason in filtered:
            left.setdefault(rowid, (score, reason, None, ""))
        items = list(left.items())
        counts: dict[str, int] = {}
        for _, (_, reason, _, _) in items:
            counts[reason] = counts.get(reason, 0) + 1
        details = {OMIT_TEST: "--exclude-tests", OMIT_PATHS: f"--paths {' '.join(cfg.paths or [])}",
                   OMIT_EXCLUDE: f"--exclude {' '.join(cfg.exclude or [])}",
                   OMIT_SCORE_FLOOR: f"min_relevance {cfg.min_relevance}",
                   OMIT_KIND: f"kinds {', '.join(cfg.kinds)}" if cfg.kinds else "plain text in a code repository"}
        described = []
        for rowid, (score, reason, tokens, detail) in heapq.nlargest(
                OMITTED_SHOWN, items, key=lambda kv: kv[1][0]):
            e = cat.entries.get(rowid)
            if e is None:
                continue
            if tokens is None:
                tokens = (e.sig_tokens if reason == OMIT_BUDGET and e.sig_tokens > 0 else e.tokens) + PER_ITEM_OVERHEAD
            if isinstance(detail, int):
                detail = f"needs {tokens} tokens, {detail} free"
            described.append(OmittedItem(e.path, e.qualname or e.name, e.kind, score, tokens, reason,
                                         detail or details.get(reason, "")))
        result.omitted = self._named_but_skipped(entities) + described
        for o in result.omitted:
            if o.reason == OMIT_TOO_LARGE:
                counts[o.reason] = counts.get(o.reason, 0) + 1
        if beyond_pool > 0:
            counts[OMIT_RANK] = beyond_pool
        result.omitted_counts = dict(sorted(counts.items(), key=lambda kv: -kv[1]))
        result.spend = spend_of(result)

    def _named_but_skipped(self, entities) -> list[OmittedItem]:
        """Files the question names that the index left out (too large, binary, ...)."""
        # A file left out of the index is not known to it: only unknown names are looked up.
        unknown = [e for e in entities if not e.known]
        skipped = self._skipped() if self._skipped is not None and unknown else None
        if not skipped:
            return []
        out: list[OmittedItem] = []
        seen: set[str] = set()
        for ent in unknown:
            name = ent.text.replace("\\", "/").rsplit("/", 1)[-1].lower()
            for path, why in skipped.get(name, ()):
                if path in seen:
                    continue
                seen.add(path)
                reason = OMIT_TOO_LARGE if why == "too large" else f"not indexed: {why}"
                out.append(OmittedItem(path, path.rsplit("/", 1)[-1], "file", 1.0, 0, reason,
                                       "see `smartcontext files --skipped`"))
        return out

    def _budget_and_render(
        self,
        question: str,
        format: str,
        ranked: list[ScoredItem],
        cat: Catalogue,
        files: list[str],
        entities,
        filtered_out: list[tuple[int, float, str]],
        read: dict[int, StoredItem] | None = None,
    ) -> ContextResult:
        """Budget, trim, explain (what the budget and ``filtered_out`` left out) and render;
        ``read``: items read already, by row."""
        cfg = self.config
        share = full_share_for(question, cfg.full_code_share) if cat.has_code else cfg.full_code_share
        if share != cfg.full_code_share:
            cfg = replace(cfg, full_code_share=share)
        pool = ranked[:POOL]
        pinned = self._pin_top_file(pool, cat, files)
        _add_namesakes(pool, cat)
        _outer_functions(pool, cat)
        read = read or {}
        stored = {s.rowid: read[s.rowid] for s in pool if s.rowid in read}
        stored.update(self.store.items_by_rowids([s.rowid for s in pool if s.rowid not in read]))
        parent_ids = {si.item.parent_id for si in stored.values() if si.item.parent_id}
        parents = self.store.items_by_ids(list(parent_ids)) if parent_ids else {}
        heads = self._file_heads(files, cat, pinned, exact=HEAD_EXACT if cat.has_code and not asks(question) else 0)
        reserve = sum(tokens for _, _, tokens in heads)
        # A file's imports line is part of what showing anything from it costs.
        deps = self._imports({cat.entries[s.rowid].path for s in pool}, cat)
        file_costs = {p: PER_FILE_OVERHEAD + _imports_tokens(d) for p, d in deps.items()}
        exporter = EXPORTERS[format]
        measure = exporter.measure
        callees = CALLEE_SIGNATURES and cat.has_code and asks(question)

        def pack(budget: int | None):
            # A refill plans as if the budget were larger: the estimates, not the text, fit it.
            planned = cfg if budget is None else replace(cfg, max_tokens=min(MAX_BUDGET, budget + reserve))
            plan = plan_budget(pool, stored, parents, planned, reserve=reserve, pinned_full=pinned,
                               file_costs=file_costs)
            self._add_heads(plan.selected, heads, pool)
            # File lines and module names for every file the plan touches; trimming only
            # removes items, so this superset stays valid.
            file_lines, modules = self._file_context(plan.selected, cat)
            text = measure(plan.selected, file_lines, deps, modules, cfg.include_scores)
            return plan, file_lines, modules, text, count_tokens(text, cfg.encoding)

        plan, file_lines, modules, text, tokens = pack(None)
        planned_for = cfg.max_tokens - reserve
        refill = _refill_budget(plan.used, reserve, tokens, cfg.max_tokens)
        if refill is not None:
            # A larger plan is kept only when it fits as it is (trimming it would cut
            # matches the first plan showed, to make room for weaker ones); one that runs
            # over is tried again halfway.
            for budget in (refill, (refill + cfg.max_tokens - reserve) // 2):
                second = pack(budget)
                if second[4] <= cfg.max_tokens:
                    if second[4] > tokens:
                        plan, file_lines, modules, text, tokens = second
                        planned_for = budget
                    break
        if FILL_REPLAN and cat.has_code and not asks(question) and plan.selected:
            # See FILL_REPLAN: a dry run of the fill says what it wants.
            parts: dict[str, int] = {}
            want = self._fill_leftover(plan.selected, cat, file_lines, FILL_REPLAN,
                                       lambda: text, text, tokens, dry=True, parts=parts)[2]
            deficit = want - (cfg.max_tokens - tokens)
            if deficit > 0 and tokens > reserve and parts.get("named"):
                budget = int(planned_for - deficit * plan.used / max(1, tokens - reserve))
                second = pack(budget)
                if second[4] <= cfg.max_tokens:
                    plan, file_lines, modules, text, tokens = second
        selection = plan.selected
        dropped = plan.dropped if plan.dropped is not None else []
        if callees and selection and self._add_callees(selection, cat):
            if any(s.item.path not in modules for s in selection):
                file_lines, modules = self._file_context(selection, cat)
            text = measure(selection, file_lines, deps, modules, cfg.include_scores)
            tokens = count_tokens(text, cfg.encoding)
        # The plan's costs are estimates of framing; trim the weakest items until the
        # exact count fits, several at a time when far over.
        while tokens > cfg.max_tokens and selection:
            excess = tokens - cfg.max_tokens
            saved = 0
            while saved < excess and selection:
                matches = [s for s in selection if not s.context_only]
                if saved and len(matches) <= 1:
                    break  # the estimates run low: measure again before touching the last match
                victim = min(matches, key=lambda s: s.score, default=None) or selection[-1]
                # A module's signature is its summary line: shown so, it still names the file.
                signature = signature_text(victim.item)
                shown_as_signature = len(signature) // 3 + PER_ITEM_OVERHEAD
                if victim.mode == "full" and signature and not victim.item.traits.prose:
                    victim.mode = "signature"
                    saved += max(1, victim.item.tokens - shown_as_signature)
                else:
                    selection.remove(victim)
                    cost = victim.item.tokens + PER_ITEM_OVERHEAD if victim.mode == "full" else shown_as_signature
                    saved += cost
                    rowid = cat.by_id.get(victim.item.id) if plan.dropped is not None and not victim.context_only else None
                    if rowid is not None:
                        dropped.append((rowid, victim.score, OMIT_BUDGET, cost,
                                        f"needs {cost} tokens, 0 free (trimmed when the exact count was "
                                        f"{tokens} of {cfg.max_tokens})"))
                    if not any(s.item.path == victim.item.path for s in selection):
                        saved += file_costs.get(victim.item.path, PER_FILE_OVERHEAD)
                    self._drop_orphan_parents(selection)
            text = measure(selection, file_lines, deps, modules, cfg.include_scores)
            tokens = count_tokens(text, cfg.encoding)
        if cfg.max_tokens - tokens >= FILL_MIN_FREE and selection and cat.has_code:
            text, tokens, _ = self._fill_leftover(selection, cat, file_lines, cfg.max_tokens - tokens,
                                               lambda: measure(selection, file_lines, deps, modules, cfg.include_scores),
                                               text, tokens)
        warnings: list[str] = []
        nearest: list[dict[str, Any]] = []
        if not ranked:
            warnings.append(
                "nothing in the index matched the question; try the names of functions, "
                "classes or files, or a broader question"
            )
        elif not selection:
            warnings.append(
                f"the budget of {cfg.max_tokens} tokens is too small for even one signature; "
                "raise --max-tokens"
            )
        elif plan.truncated:
            warnings.append(
                f"the budget was constraining: {plan.skipped_for_budget} relevant item(s) did not fit "
                f"in {cfg.max_tokens} tokens"
            )
        if not selection and ranked:
            for s in ranked[:5]:
                e = cat.entries[s.rowid]
                nearest.append({"id": e.id, "path": e.path, "kind": e.kind, "score": round(s.score, 3)})
        elif not ranked:
            nearest = _nearest_names(question, cat)
        relevance = {s.item.id: round(s.score, 4) for s in selection if not s.context_only}
        result = ContextResult(
            question=question,
            text=text,
            format=format,
            items=selection,
            token_count=tokens,
            max_tokens=cfg.max_tokens,
            relevance_scores=relevance,
            files=files,
            entities=entities,
            stats={},
            warnings=warnings,
            nearest=nearest,
            counts=exporter.counts,
        )
        if cfg.explain:
            t = time.perf_counter()
            # What the plan never reached was left out for the budget: it was spent first.
            unreached = (pool, max(0, cfg.max_tokens - reserve - plan.used))
            self._explain(result, cat, dropped, unreached, filtered_out, entities, len(ranked) - len(pool))
            result.stats["explain"] = time.perf_counter() - t
        if exporter.render is not None:
            header = {
                **question_echo(question), "format": format, "max_tokens": cfg.max_tokens,
                "token_count": tokens, "json_tokens": 0, "counts": exporter.counts, "encoding": cfg.encoding,
                "warnings": warnings,
            }
            if cfg.explain:
                header["omitted"] = [o.to_dict() for o in result.omitted]
                header["spend"] = result.spend
            result.text, result.json_tokens = render_counted(
                exporter.render, header, cfg.encoding, selection, file_lines, deps, modules, cfg.include_scores
            )
        return result

    def _fill_leftover(self, selection: list[SelectedItem], cat: Catalogue, file_lines: dict[str, list[str]],
                       free: int, remeasure: Callable[[], str], text: str, tokens: int,
                       dry: bool = False, parts: dict[str, int] | None = None) -> tuple[str, int, int]:
        """Spend ``free`` tokens on the code around what is shown whole: the module-level
        assignments it names, the statements between it and the definitions beside it,
        then those definitions (see NAMED_STATEMENT_TOKENS). Returns the text, its tokens
        and the tokens the additions were estimated at; additions that make the text
        overrun the budget are taken back, last first. ``dry``: take everything back and
        only say what the assignments and gaps would cost (``parts["named"]``: the
        assignments alone)."""
        cfg = self.config
        anchors = sorted((s for s in selection if s.mode == "full" and not s.context_only
                          and s.item.traits.body_from_file and s.item.path in file_lines
                          and s.item.kind in (ItemKind.FUNCTION, ItemKind.METHOD, ItemKind.CLASS)),
                         key=lambda s: -s.score)
        if free <= 0 or not anchors:
            return text, tokens, 0
        shown: dict[str, list[tuple[int, int]]] = {}
        for s in selection:
            if s.mode in ("full", "head"):
                shown.setdefault(s.item.path, []).append((s.item.start_line, s.item.end_line))

        def covered(path: str, a: int, b: int) -> bool:
            return any(x <= a and b <= y for x, y in shown.get(path, ()))

        undo: list[Callable[[], None]] = []
        spent = 0
        if NAMED_STATEMENT_TOKENS:
            statements: dict[str, list[tuple[str, int, int]]] = {}
            modules: dict[int, StoredItem] = {}
            for s in anchors:
                path = s.item.path
                lines = file_lines[path]
                if path not in statements:
                    statements[path] = _module_statements(cat, path, lines) if path.endswith(".py") else []
                if not statements[path]:
                    continue
                named = set(_IDENT.findall("\n".join(lines[s.item.start_line - 1:s.item.end_line])))
                for name, a, b in statements[path]:
                    if name not in named or covered(path, a, b):
                        continue
                    cost = count_tokens("\n".join(lines[a - 1:b]), cfg.encoding) + PER_ITEM_OVERHEAD
                    if cost > NAMED_STATEMENT_TOKENS or spent + cost > free:
                        continue
                    row = cat.module_of_path[path]
                    if row not in modules:
                        modules.update(self.store.items_by_rowids([row]))
                    if row not in modules:
                        continue
                    # The module row cut to these lines: exporters show a "head" from its start line.
                    cut = replace(modules[row].item, start_line=a, end_line=b, text="", tokens=cost)
                    excerpt = SelectedItem(cut, s.score, "head", {}, context_only=True)
                    selection.append(excerpt)
                    undo.append(partial(selection.remove, excerpt))
                    shown.setdefault(path, []).append((a, b))
                    spent += cost
        if parts is not None:
            parts["named"] = spent
            if not spent:
                return text, tokens, 0  # the second plan is only for a named assignment
        if GAP_MAX_TOKENS:
            for s in anchors:
                lines = file_lines[s.item.path]
                for a, b in _gaps(cat, s.item, lines):
                    if covered(s.item.path, a, b):
                        continue
                    gap = "\n".join(lines[a - 1:b])
                    if len(gap) > _CHARS_PER_TOKEN_MAX * min(GAP_MAX_TOKENS, free - spent):
                        continue  # surely too many tokens: not worth counting
                    cost = count_tokens(gap, cfg.encoding) + 1
                    if cost > GAP_MAX_TOKENS or spent + cost > free:
                        continue
                    before = s.item
                    lo, hi = min(a, before.start_line), max(b, before.end_line)
                    s.item = replace(before, start_line=lo, end_line=hi, text="\n".join(lines[lo - 1:hi]))
                    undo.append(partial(setattr, s, "item", before))
                    shown[s.item.path].append((a, b))
                    spent += cost
        if dry:
            while undo:
                undo.pop()()
            return text, tokens, spent
        if NEIGHBOUR_MAX_TOKENS:
            ids = {s.item.id for s in selection}
            wanted: list[tuple[int, float]] = []
            for s in anchors[:NEIGHBOUR_ANCHORS]:
                for r in _neighbours(cat, s.item.id):
                    e = cat.entries[r]
                    cost = e.tokens + PER_ITEM_OVERHEAD
                    if (e.id in ids or e.tokens > NEIGHBOUR_MAX_TOKENS or spent + cost > free
                            or covered(e.path, e.start_line, e.end_line)):
                        continue
                    wanted.append((r, s.score))
                    ids.add(e.id)
                    spent += cost
            rows = self.store.items_by_rowids([r for r, _ in wanted]) if wanted else {}
            for r, score in wanted:
                if r in rows:
                    neighbour = SelectedItem(rows[r].item, score, "full", {}, context_only=True)
                    selection.append(neighbour)
                    undo.append(partial(selection.remove, neighbour))
        if not undo:
            return text, tokens, 0
        text = remeasure()
        tokens = count_tokens(text, cfg.encoding)
        while tokens > cfg.max_tokens and undo:
            undo.pop()()
            text = remeasure()
            tokens = count_tokens(text, cfg.encoding)
        return text, tokens, spent

    def _add_callees(self, selection: list[SelectedItem], cat: Catalogue) -> bool:
        """Add, by signature, the functions the best functions shown whole call and the
        selection does not show (see CALLEE_SIGNATURES). A call whose name is ambiguous
        (defined in several other files) is not followed. Whether anything was added."""
        code = (ItemKind.FUNCTION, ItemKind.METHOD)
        anchors = sorted((s for s in selection if s.mode == "full" and not s.context_only
                          and s.item.kind in code), key=lambda s: -s.score)[:CALLEE_ANCHORS]
        if not anchors:
            return False
        score_of = {s.item.id: s.score for s in anchors}
        shown = {s.item.id for s in selection}
        spans = [(s.item.path, s.item.start_line, s.item.end_line) for s in selection if s.mode == "full"]
        callers: dict[int, list[float]] = {}
        for src, kind, dst, dst_name in self.store.edges_from(list(score_of)):
            src_row = cat.by_id.get(src)
            if kind != "calls" or src_row is None:
                continue
            from_path = cat.entries[src_row].path
            targets = [cat.by_id[dst]] if dst and dst in cat.by_id else (
                cat.resolve_name(dst_name, from_path) if dst_name else [])
            same = [t for t in targets if cat.entries[t].path == from_path]
            if len(same if same else targets) != 1:
                continue
            target = (same or targets)[0]
            e = cat.entries[target]
            if (e.kind not in code or e.id in shown or e.path in cat.test_paths
                    or any(p == e.path and a <= e.start_line and e.end_line <= b for p, a, b in spans)):
                continue
            callers.setdefault(target, []).append(score_of.get(src, 0.0))
        # Ties by place, not by the order a store returns edges in: both stores list the same.
        best = sorted(callers, key=lambda r: (-len(callers[r]), -max(callers[r]), cat.entries[r].path,
                                              cat.entries[r].start_line))[:CALLEE_SIGNATURES]
        # As for every graph neighbour (scoring.add_graph): below each strong direct match,
        # so the trimming that makes room for them takes only weak ones.
        matches = [s.score for s in selection if not s.context_only]
        top = max(matches, default=0.0)
        cap = 0.99 * min((m for m in matches if m >= scoring.STRONG_SHARE * top), default=top)
        rows = self.store.items_by_rowids(best) if best else {}
        parent_ids = {pid for r in best if r in rows and (pid := rows[r].item.parent_id)} - shown
        parents = self.store.items_by_ids(list(parent_ids)) if parent_ids else {}
        added = False
        for r in best:
            if r not in rows:
                continue
            item = rows[r].item
            parent = parents.get(item.parent_id) if item.parent_id else None
            if parent is not None and parent.item.id not in shown and item.traits.brings_parent_header:
                selection.append(SelectedItem(parent.item, min(cap, CALLEE_SHARE * max(callers[r])), "signature",
                                              {}, context_only=True))
                shown.add(parent.item.id)
            selection.append(SelectedItem(item, min(cap, CALLEE_SHARE * max(callers[r])), "signature", {}))
            shown.add(item.id)
            added = True
        return added

    def _pin_top_file(self, pool: list[ScoredItem], cat: Catalogue, files: list[str]) -> set[int]:
        """Show all of the best file when it is small enough: the likeliest place of an
        answer (or a fix) then comes with everything around it. Its top-level symbols are
        pinned (not the module row), so results still name the precise items."""
        cfg = self.config
        if not files or not pool or cfg.max_tokens < MIN_BUDGET_FOR_FILES:
            return set()
        top = files[0]
        mod = cat.module_of_path.get(top)
        entry = cat.entries.get(mod) if mod is not None else None
        if entry is None or not kind_traits(entry.kind).whole_file:
            return set()
        if not any(s.rowid in cat.entries and cat.entries[s.rowid].path == top for s in pool[:GRAPH_SEEDS]):
            return set()  # the file ranks first only by aggregate: not sure enough
        if entry.tokens > TOP_FILE_SHARE * cfg.max_tokens:
            front = _lead_with_file(pool, cat, top, entry.id, TOP_FILE_SHARE * cfg.max_tokens)
            self._lead_second(pool, cat, files, front)
            return set()
        children = sorted(cat.children.get(entry.id, []), key=lambda r: cat.entries[r].start_line)
        if not children:
            return set()
        in_pool = {s.rowid: s for s in pool}
        floor = min(s.score for s in pool[: GRAPH_SEEDS])
        pinned = []
        for r in children:
            s = in_pool.get(r) or ScoredItem(r, cat.entries[r].id, score=floor, direct=False)
            pinned.append(s)
        pinned_ids = {s.rowid for s in pinned}
        rest = [s for s in pool if s.rowid not in pinned_ids]
        # The file's own best matches first, then the rest of the file, then other files.
        pinned.sort(key=lambda s: -s.score)
        pool[:] = rest[:1] + pinned + rest[1:]
        self._lead_second(pool, cat, files, 1 + len(pinned))
        return pinned_ids

    def _lead_second(self, pool: list[ScoredItem], cat: Catalogue, files: list[str], front: int) -> None:
        """The second file's best SECOND_LEAD_ITEMS matches follow the top file's lead."""
        if not SECOND_LEAD_ITEMS or len(files) < 2:
            return
        mod = cat.module_of_path.get(files[1])
        entry = cat.entries.get(mod) if mod is not None else None
        if entry is None or not kind_traits(entry.kind).whole_file:
            return
        limit = kind_traits(entry.kind).max_full_tokens
        if limit is None or entry.tokens <= limit:
            return  # small enough to come whole: one function of it would say less
        head, tail = pool[:front], pool[front:]
        _lead_with_file(tail, cat, files[1], entry.id, SECOND_LEAD_SHARE * self.config.max_tokens,
                        items=SECOND_LEAD_ITEMS, keep_first=False, own_best=True)
        pool[:] = head + tail

    def _file_heads(
        self, files: list[str], cat: Catalogue, pinned: set[int], exact: int = 0
    ) -> list[tuple[int, int, int]]:
        """(module rowid, last head line, estimated tokens) of the top files' preambles:
        imports and constants above the first definition, which a change often touches.
        exact: the first files whose head, estimated over HEAD_MAX_TOKENS, is counted."""
        out: list[tuple[int, int, int]] = []
        if self.config.max_tokens < MIN_BUDGET_FOR_FILES:
            return out
        for path in files[:HEAD_FILES]:
            mod = cat.module_of_path.get(path)
            entry = cat.entries.get(mod) if mod is not None else None
            if entry is None or not kind_traits(entry.kind).whole_file:
                continue
            starts = [cat.entries[r].start_line for r in cat.children.get(entry.id, [])]
            first_def = min(starts, default=entry.end_line + 1)
            last = min(first_def - 1, HEAD_MAX_LINES, entry.end_line)
            if last < 1:
                continue
            total_lines = max(1, entry.end_line)
            tokens = int(entry.tokens * last / total_lines) + 10
            if tokens > HEAD_MAX_TOKENS and path in files[:exact]:
                si = self.store.items_by_rowids([entry.rowid]).get(entry.rowid)
                if si is not None:
                    head = "\n".join(si.item.text.splitlines()[:last])
                    tokens = count_tokens(head, self.config.encoding) + 10
            if tokens > HEAD_MAX_TOKENS:
                continue
            out.append((entry.rowid, last, tokens))  # the row of ``mod``
        return out

    def _add_heads(self, selection: list[SelectedItem], heads, pool: list[ScoredItem]) -> None:
        if not heads:
            return
        present = {s.item.path for s in selection}
        rows = self.store.items_by_rowids([m for m, _, _ in heads])
        for mod, last, tokens in heads:
            si = rows.get(mod)
            if si is None or si.item.path not in present:
                continue
            item = si.item
            head = type(item)(**{**item.__dict__, "end_line": last, "text": "", "tokens": tokens})
            existing = next((s for s in selection if s.item.id == item.id), None)
            if existing is not None:
                if existing.mode == "signature":  # a bare module line says less than its header
                    existing.item, existing.mode = head, "head"
                continue
            score = max((s.score for s in selection if s.item.path == item.path), default=0.0)
            selection.append(SelectedItem(head, score, "head", {}, context_only=True))

    @staticmethod
    def _drop_orphan_parents(selection: list[SelectedItem]) -> None:
        needed = {s.item.parent_id for s in selection if not s.context_only}
        paths = {s.item.path for s in selection if not s.context_only}
        selection[:] = [
            s for s in selection
            if not s.context_only or s.item.id in needed or (s.mode == "head" and s.item.path in paths)
        ]

    def _file_context(
        self, selection: list[SelectedItem], cat: Catalogue
    ) -> tuple[dict[str, list[str]], dict[str, str]]:
        """The lines of the files whose items are cut from them, and module names."""
        paths = sorted({s.item.path for s in selection})
        file_lines: dict[str, list[str]] = {}
        modules: dict[str, str] = {}
        need_lines = {
            s.item.path for s in selection
            if (s.mode == "full" and s.item.traits.body_from_file)
            or s.mode == "head"
        }
        mod_rows = [cat.module_of_path[p] for p in paths if p in cat.module_of_path]
        mods = self.store.items_by_rowids(mod_rows) if mod_rows else {}
        for si in mods.values():
            p = si.item.path
            if si.item.traits.whole_file:
                modules[p] = si.item.qualname
            if p in need_lines:
                file_lines[p] = si.item.text.splitlines()
        return file_lines, modules

    def _imports(self, paths: Iterable[str], cat: Catalogue) -> dict[str, list[str]]:
        """The modules each of ``paths`` imports (the first MAX_IMPORTS_SHOWN), for its
        imports line."""
        deps: dict[str, list[str]] = {}
        if not self.config.include_imports:
            return deps
        ids = []
        for p in paths:
            mod = cat.module_of_path.get(p)
            if mod is not None and kind_traits(cat.entries[mod].kind).whole_file:
                ids.append(cat.entries[mod].id)
        for src, _kind, _dst, dst_name in self.store.edges_from(sorted(ids), kinds=("imports",)) if ids else ():
            if not dst_name:
                continue
            path = cat.entries[cat.by_id[src]].path if src in cat.by_id else None
            if path is None:
                continue
            lst = deps.setdefault(path, [])
            # The first ones are shown; names are only ever appended, so later ones cannot
            # change them.
            if len(lst) >= MAX_IMPORTS_SHOWN:
                continue
            # "a.b" and "a.b.C" both arrive for `from a.b import C`: keep the module.
            if not any(dst_name.startswith(d + ".") for d in lst) and dst_name not in lst:
                lst.append(dst_name)
        return deps


def _imports_tokens(names: list[str]) -> int:
    # "Imports: `a.b`, `c`": dotted names take about a token per 3 characters.
    return (10 + sum(len(n) + 4 for n in names)) // 3 if names else 0


def _refill_budget(estimated: int, reserve: int, exact: int, max_tokens: int) -> int | None:
    """The item budget for a second plan when the first one's estimates ran high.

    The plan prices items with per-item and per-file framing allowances that must not
    under-run in any format, so the exact count of its text often falls short of the
    budget. When the plan spent its budget but the text leaves more than ``REFILL_SLACK``
    of it free, the budget is scaled by how far the estimates ran over; the caller keeps
    the second plan only when its text fits. None: keep the first plan.
    """
    items_exact = exact - reserve
    budget = max_tokens - reserve
    if (not REFILL or items_exact <= 0 or estimated < budget * REFILL_SPENT
            or exact > max_tokens * (1 - REFILL_SLACK) or estimated <= items_exact):
        return None
    return int(budget * estimated / items_exact * REFILL_MARGIN)


def _nearest_names(question: str, cat: Catalogue, limit: int = 5) -> list[dict[str, Any]]:
    """Names in the index that look like the question's words (typos, other spellings)."""
    import difflib
    import re

    words = list(dict.fromkeys(w.lower() for w in re.findall(r"[^\W\d]\w{3,60}", question[:5000])))[:20]
    names = list(cat.by_name)
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for w in words:
        for name in difflib.get_close_matches(w, names, n=3, cutoff=0.75):
            for r in cat.by_name[name][:2]:
                if r in seen:
                    continue
                seen.add(r)
                e = cat.entries[r]
                ratio = difflib.SequenceMatcher(None, w, name).ratio()
                out.append({"id": e.id, "path": e.path, "kind": e.kind, "score": round(ratio, 3)})
    out.sort(key=lambda d: -d["score"])
    return out[:limit]


def _lead_with_file(pool: list[ScoredItem], cat: Catalogue, path: str, module_id: str, share: float,
                    items: int | None = None, keep_first: bool = True, own_best: bool = False) -> int:
    """The best file, too large to show whole, still comes first: its matching symbols
    move ahead of other files' items (best first, within ``share`` tokens), so they get
    their bodies before weaker matches elsewhere do. A symbol's score is noisy (one common
    word in another file's name can outrank the answer); the file's rank sums evidence."""
    lead: list[ScoredItem] = []
    spans: list[tuple[int, int]] = []
    used = 0
    # The file's module row stands for the whole file, not for one symbol in it.
    best = max((s.score for s in pool if s.item_id != module_id
                and (not own_best or (s.rowid in cat.entries and cat.entries[s.rowid].path == path))),
               default=0.0)
    for s in pool:
        e = cat.entries.get(s.rowid)
        if e is None or e.path != path or not s.direct or e.id == module_id:
            continue
        if len(lead) >= (items or LEAD_ITEMS) or s.score < LEAD_MIN_SHARE * best:
            break
        if any(a <= e.start_line and e.end_line <= b for a, b in spans):
            continue  # inside a symbol already leading: shown with it
        limit = kind_traits(e.kind).max_full_tokens
        if limit is not None and e.tokens > limit:
            continue  # shown as a header anyway: no reason to put it first
        if used + e.tokens > share:
            continue
        used += e.tokens
        lead.append(s)
        spans.append((e.start_line, e.end_line))
    if not lead:
        return 0
    ids = {s.rowid for s in lead}
    rest = [s for s in pool if s.rowid not in ids]
    # The best item overall stays first; a weaker one (say, a function nested in the lead)
    # must not jump ahead, or its container would show only its header.
    first = 1 if keep_first and rest and rest[0].score > lead[0].score else 0
    pool[:] = rest[:first] + lead + rest[first:]
    return first + len(lead)


def _outer_functions(pool: list[ScoredItem], cat: Catalogue) -> None:
    """Put before each function nested in a function its enclosing function, at the
    better of their scores, when it costs at most OUTER_RATIO times as much (see there)."""
    if not OUTER_RATIO:
        return
    by_row = {s.rowid: s for s in pool}
    placed: set[int] = set()
    out: list[ScoredItem] = []
    for s in pool:
        if s.rowid in placed:
            continue  # moved ahead already, as an enclosing function
        out_row = _enclosing_function(cat, s.rowid)
        if out_row is not None and out_row not in placed:
            outer = by_row.get(out_row)
            out.append(replace(outer, score=max(outer.score, s.score)) if outer is not None
                       else ScoredItem(out_row, cat.entries[out_row].id, score=s.score, direct=False))
            placed.add(out_row)
        out.append(s)
        placed.add(s.rowid)
    pool[:] = out


def _enclosing_function(cat: Catalogue, rowid: int) -> int | None:
    """The row of the function around the function ``rowid``, when it costs at most
    OUTER_RATIO times as much; else None."""
    e = cat.entries.get(rowid)
    if e is None or not e.parent_id or e.kind not in ("function", "method"):
        return None
    r = cat.by_id.get(e.parent_id)
    o = cat.entries.get(r) if r is not None else None
    if r is None or o is None or o.kind not in ("function", "method"):
        return None
    return r if o.tokens <= OUTER_RATIO * max(1, e.tokens) else None


_IDENT = re.compile(r"[A-Za-z_]\w*")
# More characters per cl100k token than code ever averages: a text longer than this many
# times a token limit is over it without counting.
_CHARS_PER_TOKEN_MAX = 10
_BINDING = re.compile(r"([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


def _module_statements(cat: Catalogue, path: str, lines: list[str]) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each module-level assignment outside every
    definition of ``path``: the constants, tables and registries that no item holds."""
    mod = cat.module_of_path.get(path)
    entry = cat.entries.get(mod) if mod is not None else None
    if entry is None:
        return []
    spans = sorted((cat.entries[r].start_line, cat.entries[r].end_line) for r in cat.children.get(entry.id, ()))
    out = []
    start = 1
    for a, b in spans + [(len(lines) + 1, len(lines) + 1)]:
        i = start
        while i < a:  # the lines between two definitions
            m = _BINDING.match(lines[i - 1])
            if m is None:
                i += 1
                continue
            j = i
            # The statement runs on over indented or closing lines (a dict or a call over several lines).
            while j + 1 < a and lines[j] and lines[j][0] in " \t)]}":
                j += 1
            out.append((m.group(1), i, j))
            i = j + 1
        start = max(start, b + 1)
    return out


def _gaps(cat: Catalogue, item, lines: list[str]) -> list[tuple[int, int]]:
    """The lines between ``item`` and the definitions beside it in its module or class
    (before it, then after it), each trimmed of blank lines: none when it is not directly
    in a module or a class."""
    r = cat.by_id.get(item.id)
    e = cat.entries.get(r) if r is not None else None
    pr = cat.by_id.get(e.parent_id) if e is not None and e.parent_id else None
    p = cat.entries.get(pr) if pr is not None else None
    if e is None or p is None or p.kind not in (ItemKind.MODULE, ItemKind.CLASS):
        return []
    sibs = sorted((cat.entries[x] for x in cat.children.get(p.id, ())), key=lambda x: x.start_line)
    prev_end = max((x.end_line for x in sibs if x.end_line < e.start_line), default=None)
    next_start = min((x.start_line for x in sibs if x.start_line > e.end_line), default=None)
    if prev_end is None:
        prev_end = p.start_line if p.kind == ItemKind.CLASS else None
    if next_start is None:
        next_start = p.end_line + 1 if p.kind == ItemKind.MODULE else None
    out = []
    for a, b in ((prev_end + 1 if prev_end is not None else None, e.start_line - 1),
                 (e.end_line + 1, next_start - 1 if next_start is not None else None)):
        if a is None or b is None:
            continue
        b = min(b, len(lines))
        while a <= b and not lines[a - 1].strip():
            a += 1
        while b >= a and not lines[b - 1].strip():
            b -= 1
        if a <= b:
            out.append((a, b))
    return out


def _neighbours(cat: Catalogue, item_id: str) -> list[int]:
    """The definitions just before and after ``item_id`` in its module or class."""
    r = cat.by_id.get(item_id)
    e = cat.entries.get(r) if r is not None else None
    pr = cat.by_id.get(e.parent_id) if e is not None and e.parent_id else None
    if r is None or pr is None:
        return []
    p = cat.entries.get(pr)
    if p is None or p.kind not in (ItemKind.MODULE, ItemKind.CLASS):
        return []
    sibs = sorted(cat.children.get(p.id, ()), key=lambda x: cat.entries[x].start_line)
    i = sibs.index(r)
    return [sibs[j] for j in (i - 1, i + 1) if 0 <= j < len(sibs)]


def _add_namesakes(pool: list[ScoredItem], cat: Catalogue) -> None:
    """Put after each of the first NAMESAKE_SCAN candidates that is a method the small
    methods of the same name in other classes of its file (see NAMESAKES)."""
    if not NAMESAKES:
        return
    present = {s.rowid for s in pool}
    out: list[ScoredItem] = []
    for pos, s in enumerate(pool):
        out.append(s)
        e = cat.entries.get(s.rowid)
        if pos >= NAMESAKE_SCAN or e is None or e.kind != "method" or not s.direct:
            continue
        if e.name.startswith("__") and e.name.endswith("__"):
            continue  # every class has its __init__: no shared fault in that
        added = 0
        for r in cat.by_name.get(e.name.lower(), ()):
            o = cat.entries[r]
            if (r in present or o.path != e.path or o.kind != "method" or o.name != e.name
                    or o.tokens > NAMESAKE_MAX_TOKENS):
                continue
            out.append(ScoredItem(r, o.id, score=s.score, direct=False))
            present.add(r)
            added += 1
            if added >= NAMESAKES:
                break
    pool[:] = out


def _item_scores_by_file(ranked: list[ScoredItem], cat: Catalogue) -> tuple[dict[str, float], dict[str, float]]:
    """Per file, the score of its best item in ``ranked`` (best first) and the sum of the
    others' (bench/fit_file_ranking.py records both)."""
    best: dict[str, float] = {}
    extra: dict[str, float] = {}
    for s in ranked:
        e = cat.entries.get(s.rowid)
        if e is None:
            continue
        if e.path not in best:
            best[e.path] = s.score
        else:
            extra[e.path] = extra.get(e.path, 0.0) + s.score
    return best, extra


def _rank_files(ranked: list[ScoredItem], cat: Catalogue, file_rank: dict[str, float]) -> list[str]:
    """Files by their file-level score plus their best symbol after fusion (names, graph,
    vectors); files reached only through symbols follow, by their symbols."""
    best, extra = _item_scores_by_file(ranked, cat)
    top = max(file_rank.values(), default=0.0) or 1.0
    combined = {p: v / top + FILE_BEST_ITEM_WEIGHT * best.get(p, 0.0) for p, v in file_rank.items()}
    first = sorted(combined, key=lambda p: -combined[p])
    rest = sorted(
        (p for p in best if p not in combined),
        key=lambda p: -(best[p] + 0.1 * min(extra.get(p, 0.0), 2.0)),
    )
    return first + rest


__all__ = ["SmartContextExtractor"]


def _is_source_code(cat: Catalogue, rowid: int) -> bool:
    """A definition in a source file: not a test, a module row or prose."""
    e = cat.entries.get(rowid)
    if e is None or e.path in cat.test_paths:
        return False
    traits = kind_traits(e.kind)
    return not (traits.whole_file or traits.prose)


def _is_prose(cat: Catalogue, rowid: int) -> bool:
    e = cat.entries.get(rowid)
    return e is not None and kind_traits(e.kind).prose
