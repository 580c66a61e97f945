"""Turn signals into one ranking.

Each signal is normalised to 0..1 (best = 1) and combined with the configured weights.
Graph neighbours add to direct matches but never push them out: an item found only
through the graph is capped below every strong direct match.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from ..model import ItemKind, kind_traits
from ..query.fusion import weighted_sum
from ..query.profiles import CODE_CONTEXT
from . import reports
from .catalogue import Catalogue
from .english import COMMON_WORDS
from .entities import ExtractedEntity, is_long_text
from .keyword import STOPWORDS
from .graph import Neighbour

# Match strengths for names (the seed's figures).
EXACT, SUFFIX, CASE_INSENSITIVE = 1.0, 0.5, 0.3
OWNER = 0.8  # ``A.b`` names A when no A.b is indexed (b inherited or added by the fix)
STRONG_SHARE = 0.5  # direct matches within this share of the best are "strong"


class FusionWeights(Protocol):
    """The weights fusion reads; ``context.ExtractionConfig`` is one."""

    entity_weight: float
    keyword_weight: float
    vector_weight: float
    proximity_weight: float


@dataclass
class ScoredItem:
    """A candidate with its fused score and the contribution of each signal (0..1)."""

    rowid: int
    item_id: str
    score: float = 0.0
    entity_score: float = 0.0
    keyword_score: float = 0.0
    vector_score: float = 0.0
    proximity_score: float = 0.0
    direct: bool = False  # found by a name, keyword or vector match (not only the graph)

    def signals(self) -> dict[str, float]:
        return {
            k: round(v, 4)
            for k, v in (
                ("entity", self.entity_score),
                ("keyword", self.keyword_score),
                ("vector", self.vector_score),
                ("proximity", self.proximity_score),
            )
            if v
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Placed = list[tuple[ExtractedEntity, list[str], float]]


# A plain word that names a member of a class the question also names is that member's
# name, as sure as an identifier the index knows (entities: CONFIDENCE + KNOWN_BONUS).
MEMBER_OF_NAMED = 0.9


def entity_scores(cat: Catalogue, entities: list[ExtractedEntity], placed: Placed | None = None) -> dict[int, float]:
    """Noisy-or of every entity's match with each item, damped for ambiguous names.
    ``placed``: ``placed_frames(cat, entities)``, when the caller has it already."""
    miss: dict[int, float] = defaultdict(lambda: 1.0)

    def hit(rowid: int, strength: float) -> None:
        miss[rowid] *= 1.0 - min(0.99, strength)

    frames = [e for e in entities if e.kind in ("frame", "callee")]
    # Names the question gives, last part only: a plain word is a member's name when the
    # question also names its class ("How does AuthService handle login?").
    named = {e.text.lower().rpartition(".")[2] for e in entities if e.kind not in ("frame", "callee", "path")}
    _frame_hits(cat, frames, placed_frames(cat, frames) if placed is None else placed, hit)
    for ent in entities:
        text = ent.text
        low = text.lower()
        if ent.kind in ("frame", "callee"):
            continue
        if ent.kind == "path":
            paths = cat.paths_matching(text)
            if 0 < len(paths) <= 5:
                for p in paths:
                    mod = cat.module_of_path.get(p)
                    if mod is not None:
                        hit(mod, ent.confidence)
                    for r in cat.by_path[p]:
                        if r != mod:
                            hit(r, 0.15 * ent.confidence)
            elif not paths and "/" not in text:
                # No such file: "ascii.rst" in format="ascii.rst" is the dotted name of
                # astropy.io.ascii.rst, so an item whose full name ends with it matches.
                for r in _dotted_suffix_matches(cat, low):
                    hit(r, ent.confidence * 0.95)
            continue
        matches: dict[int, float] = {}
        fq = cat.by_fqname.get(low, [])
        for r in fq:
            matches[r] = EXACT
        last = low.rsplit(".", 1)[-1]
        for r in cat.by_name.get(last, []):
            e = cat.entries[r]
            if "." in low:
                if e.fqname.lower().endswith("." + low) or e.qualname.lower() == low:
                    matches[r] = max(matches.get(r, 0), 0.95)
                else:
                    matches[r] = max(matches.get(r, 0), SUFFIX * 0.6)
            elif e.name == text:
                matches[r] = max(matches.get(r, 0), EXACT)
            else:
                matches[r] = max(matches.get(r, 0), CASE_INSENSITIVE)
        # A module named like the entity (``sessions`` -> requests/sessions.py).
        for p in cat.by_stem.get(last, []):
            mod = cat.module_of_path.get(p)
            if mod is not None:
                matches[mod] = max(matches.get(mod, 0), 0.6)
        if PACKAGE_EXPORTS and "." in low and not any(m >= 0.95 for m in matches.values()):
            exported = _exported(cat, low)
            if exported:
                matches = {r: EXPORTED for r in exported}
        if "." in low and not any(m >= 0.95 for m in matches.values()):
            # ``RST.__init__`` when RST inherits __init__: the owner is what is meant.
            # The other items named b say little then, and would only dilute it.
            owner = low.rsplit(".", 1)[0]
            # Only a class or other symbol: ``pytest.skip`` is a function the package
            # re-exports, not the package module itself.
            owners = [
                r for r in cat.by_name.get(owner.rsplit(".", 1)[-1], [])
                if not kind_traits(cat.entries[r].kind).whole_file and _names(cat.entries[r], owner)
            ]
            if owners:
                matches = {r: OWNER for r in owners}
        if not matches:
            continue
        ambiguity = 1.0 / (1.0 + math.log(len(matches)))
        for r, m in matches.items():
            confidence = ent.confidence
            if ent.kind == "known" and MEMBER_OF_NAMED and _owner_named(cat.entries[r], named):
                confidence = max(confidence, MEMBER_OF_NAMED)
            hit(r, confidence * m * ambiguity)
    return {r: 1.0 - v for r, v in miss.items() if v < 1.0}


# A class the question calls (``Interval(oo, oo)``, ``Range(3, j, 2)``) runs its
# constructor: its ``__new__`` and ``__init__`` match at this share of the class's own
# match. 0: off.
CONSTRUCTOR_SHARE = 0.9
_CONSTRUCTORS = ("__new__", "__init__")


def add_constructors(cat: Catalogue, ent: dict[int, float], text: str) -> None:
    """Give the constructors of each matched class written as a call in ``text`` a share
    of the class's match (see CONSTRUCTOR_SHARE)."""
    if not CONSTRUCTOR_SHARE:
        return
    called = set(re.findall(r"\b([A-Za-z_]\w*)\(", reports.without_session_output(text)))
    if not called:
        return
    for r, score in list(ent.items()):
        e = cat.entries.get(r)
        if e is None or e.kind != ItemKind.CLASS or e.name not in called:
            continue
        for c in cat.children.get(e.id, ()):
            m = cat.entries[c]
            if m.name in _CONSTRUCTORS:
                ent[c] = max(ent.get(c, 0.0), CONSTRUCTOR_SHARE * score)


# ``xarray.concat`` or ``sympy.fcode``: a package's name and a name it exports, defined at
# the top of one of its modules (xarray/core/concat.py's ``concat``), not a method.
PACKAGE_EXPORTS = True
# Among several, the one the package's ``__init__`` imports (Catalogue.package_imports).
PACKAGE_INIT_IMPORTS = True
EXPORTED = 0.95


def _exported(cat: Catalogue, dotted: str) -> list[int]:
    package, _, last = dotted.rpartition(".")
    if not package:
        return []
    prefix = package + "."
    found = [
        r for r in cat.by_name.get(last, [])
        if "." not in (e := cat.entries[r]).qualname and e.fqname.lower().startswith(prefix)
        and e.path not in cat.test_paths and not kind_traits(e.kind).whole_file
    ]
    if len(found) > 1 and PACKAGE_INIT_IMPORTS:
        # Two modules define ``where``: the one the package's __init__ imports is the
        # package's ``where`` (xarray.core.computation's, not duck_array_ops').
        imported = {n.lower() for n in cat.package_imports(package) if n.lower().endswith("." + last)}
        chosen = [r for r in found if cat.entries[r].fqname.lower() in imported]
        if chosen:
            return chosen
    return found


def _owner_named(entry, named: set[str]) -> bool:
    owner = entry.qualname.rpartition(".")[0]
    return bool(owner) and owner.rpartition(".")[2].lower() in named


# A traceback's deepest frame in the repository is where the error surfaced; each frame
# further out is a step further from it and weighs FRAME_STEP times less (at least
# FRAME_FLOOR): the fix is often a caller, so outer frames still count.
FRAME_STEP = 0.8
FRAME_FLOOR = 0.3
UNPLACED_FRAME = 0.5
FILE_FRAME_STEP = 0.5
# A failing test's own frame is where the failure was checked, not where it was made: the
# frames in source files count as deeper than any frame in a test file (the test file keeps
# its own frame's weight, and names_a_test still spares it the test demotion).
TEST_FRAMES_LAST = True


def placed_frames(cat: Catalogue, frames: list[ExtractedEntity]) -> Placed:
    """The frames (and callees) in files of this tree, deepest first, with their strength;
    other entities are passed over."""
    inside = []
    for ent in frames:
        if ent.kind == "frame":
            paths = cat.paths_matching(ent.text)
            if 0 < len(paths) <= 5:
                inside.append((ent, paths))
        elif ent.kind == "callee":
            # Placed only where the name is unambiguous: one or two files define it.
            paths = sorted({cat.entries[r].path for r in _callee_items(cat, ent.text.lower())})
            if 0 < len(paths) <= 2:
                inside.append((ent, paths))
    if TEST_FRAMES_LAST:
        inside.sort(key=lambda fp: (all(p in cat.test_paths for p in fp[1]), -fp[0].frame))
    else:
        inside.sort(key=lambda fp: -fp[0].frame)
    return [
        (ent, paths, ent.confidence * max(FRAME_FLOOR, FRAME_STEP**step))
        for step, (ent, paths) in enumerate(inside)
    ]


def frame_files(cat: Catalogue, entities: list[ExtractedEntity], placed: Placed | None = None) -> dict[str, float]:
    """Files of the question's traceback frames: the file of the deepest frame 1, the
    next file out FILE_FRAME_STEP, and so on (a file counts once, where it is deepest);
    and the files it names by a path (NAMED_PATH_FILE)."""
    out: dict[str, float] = {}
    for _, paths, _ in placed_frames(cat, entities) if placed is None else placed:
        fresh = [p for p in paths if p not in out]
        if fresh:
            strength = FILE_FRAME_STEP ** len({v for v in out.values()})
            for p in fresh:
                out[p] = strength
    if NAMED_PATH_FILE:
        for p in named_paths(cat, entities):
            out[p] = max(out.get(p, 0.0), NAMED_PATH_FILE)
    return out


# A report that writes a file's path with its folders ("In requests/sessions.py is a
# command", a link to a line on the code host) points at that file as a traceback does:
# it counts as a frame one step out (FILE_FRAME_STEP), when it is the only source file the
# path names. A bare file name ("pathlib.py", "test_foo.py") is often the reporter's own.
NAMED_PATH_FILE = 0.5


def named_paths(cat: Catalogue, entities: list[ExtractedEntity]) -> list[str]:
    """The source files (not tests) that path entities with a folder name, one each."""
    out = []
    for e in entities:
        if e.kind == "path" and "/" in e.text.strip("/"):
            paths = [p for p in cat.paths_matching(e.text) if p not in cat.test_paths]
            if len(paths) == 1:
                out.append(paths[0])
    return out


def _frame_hits(cat: Catalogue, frames: list[ExtractedEntity], placed: Placed, hit) -> None:
    """Hit each in-repository frame's module and the function it names in that file."""
    for ent, paths, strength in placed:
        # "Plot._plot" or "_preprocess_data.<locals>.inner": the last part is the name.
        func = ent.symbol.lower().rsplit(".", 1)[-1]
        for p in paths:
            mod = cat.module_of_path.get(p)
            if mod is not None:
                hit(mod, strength)
            if ent.line:  # placed by its line: the innermost definition holding it
                holding = _innermost_at(cat, p, ent.line, mod)
                if holding is not None:
                    hit(holding, strength)
                continue
            for r in cat.by_path[p]:
                if r != mod and cat.entries[r].name.lower() == func:
                    hit(r, strength)
    for ent in frames:
        if ent.kind == "frame" and ent.symbol and not cat.paths_matching(ent.text):
            # A file this tree does not have (renamed since, or another project): the
            # function's name may still be ours.
            named = cat.by_name.get(ent.symbol.lower().rsplit(".", 1)[-1], [])
            for r in named:
                hit(r, UNPLACED_FRAME * ent.confidence / (1.0 + math.log(len(named))))


def _innermost_at(cat: Catalogue, path: str, line: int, module: int | None) -> int | None:
    """The smallest definition of ``path`` whose lines hold ``line`` (not the module)."""
    best: tuple[int, int] | None = None
    for r in cat.by_path[path]:
        e = cat.entries[r]
        if r != module and not kind_traits(e.kind).whole_file and e.start_line <= line <= e.end_line:
            span = e.end_line - e.start_line
            if best is None or span < best[0]:
                best = (span, r)
    return best[1] if best is not None else None


def _names(e, dotted: str) -> bool:
    """True when entry ``e`` is called ``dotted`` (lower-cased): its qualified name, its
    full name, or the end of its full name."""
    fq = e.fqname.lower()
    return e.qualname.lower() == dotted or fq == dotted or fq.endswith("." + dotted)


def _callee_items(cat: Catalogue, dotted: str) -> list[int]:
    """Items a call in an exception message names: ``f`` or ``A.f`` itself, else (for
    ``A.__init__`` inherited) the class ``A``."""
    found = _dotted_suffix_matches(cat, dotted) if "." in dotted else cat.by_name.get(dotted, [])
    if not found and "." in dotted:
        owner = dotted.rsplit(".", 1)[0]
        found = _dotted_suffix_matches(cat, owner)
    return [r for r in found if not kind_traits(cat.entries[r].kind).whole_file]


def _dotted_suffix_matches(cat: Catalogue, dotted: str) -> list[int]:
    """Items whose full name is ``dotted`` or ends with ``.dotted`` (lower-cased)."""
    last = dotted.rsplit(".", 1)[-1]
    return [r for r in cat.by_name.get(last, []) if _names(cat.entries[r], dotted)]


def _normalise(scores: dict[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    top = max(scores.values())
    if top <= 0:
        return {}
    return {r: s / top for r, s in scores.items()}


def keyword_scores(hits: list[tuple[int, float]]) -> dict[int, float]:
    return _normalise({r: s for r, s in hits if s > 0})


def vector_scores(hits: list[tuple[int, float]]) -> dict[int, float]:
    """Cosines rescaled so the best is 1 and the weakest kept hit is 0."""
    if not hits:
        return {}
    values = [s for _, s in hits]
    hi, lo = max(values), min(values)
    if hi <= 0:
        return {}
    span = max(hi - lo, 1e-6)
    return {r: max(0.0, (s - lo) / span) * hi for r, s in hits}


def fuse(
    cat: Catalogue,
    config: FusionWeights,
    entity: dict[int, float],
    keyword: dict[int, float],
    vector: dict[int, float],
) -> dict[int, ScoredItem]:
    """The direct matches, scored by the code-context profile's weighted sum of names,
    keywords and (when the index has them) vectors."""
    signals = {"names": entity, "keywords": keyword}
    if vector:
        signals["vectors"] = vector
    weights = {"names": config.entity_weight, "keywords": config.keyword_weight, "vectors": config.vector_weight}
    fused = weighted_sum(signals, weights)
    out: dict[int, ScoredItem] = {}
    # In the order of the union of the signals' keys, as before fusion moved: ties among
    # the graph's seeds are broken by this order.
    for r in set(entity) | set(keyword) | set(vector):
        score = fused[r]
        e = cat.entries.get(r)
        if e is None:
            continue
        out[r] = ScoredItem(r, e.id, score=score, entity_score=entity.get(r, 0.0),
                            keyword_score=keyword.get(r, 0.0), vector_score=vector.get(r, 0.0), direct=True)
    return out


def add_graph(
    scored: dict[int, ScoredItem],
    neighbours: dict[int, Neighbour],
    cat: Catalogue,
    config: FusionWeights,
) -> None:
    """Proximity = 1 / (1 + distance), scaled by the seed's score and the edge strength."""
    if not neighbours:
        return
    direct_scores = sorted((s.score for s in scored.values() if s.direct), reverse=True)
    best = direct_scores[0] if direct_scores else 0.0
    strong = [s for s in direct_scores if s >= STRONG_SHARE * best]
    cap = 0.99 * min(strong) if strong else best
    for r, nb in neighbours.items():
        seed = scored.get(nb.via)
        seed_score = seed.score if seed else 0.0
        proximity = nb.strength * seed_score / (1.0 + nb.distance)
        if proximity <= 0:
            continue
        if r in scored:
            s = scored[r]
            s.proximity_score = proximity
            s.score += config.proximity_weight * proximity
        else:
            e = cat.entries.get(r)
            if e is None:
                continue
            s = ScoredItem(r, e.id, proximity_score=proximity, direct=False)
            s.score = min(config.proximity_weight * proximity * 2.0, cap)
            scored[r] = s


# Test files for a question that does not name them: demoted, not removed (a test that
# reproduces a bug is still useful context), so the source the question is about comes
# first. The code-context profile's measured constant (query/profiles.py).
TEST_PRIOR = CODE_CONTEXT.constants["test_prior"]


# A bug report names a test to say what fails (a traceback through the test, a link to the
# test case to add or to change); the fix is in the source the test exercises, so a long
# report's named tests are demoted like the others (still shown when they score: they
# reproduce the fault). A short question that names a test asks about it: kept. Measured
# with bench/ablate.py (docs/benchmarks.md, "Tests a bug report names"). False: kept always.
DEMOTE_TESTS_A_REPORT_NAMES = True


def names_a_test(cat: Catalogue, entities: list[ExtractedEntity], placed: Placed | None = None,
                 question: str = "") -> set[int]:
    """The rows of the tests a question names: by path, by a traceback frame, or by a name
    that says test (``test_parse``, ``TestLoader``). A bug report's snippet (``ds.update``,
    ``xr.Dataset``) also matches names inside test modules: that is no reason to keep them.
    Nothing for a long report (``question`` past LONG_TEXT_WORDS distinct words): see
    DEMOTE_TESTS_A_REPORT_NAMES."""
    if DEMOTE_TESTS_A_REPORT_NAMES and is_long_text(question):
        return set()
    named = [e for e in entities if e.kind in ("path", "frame") or "test" in e.text.lower()]
    return set(entity_scores(cat, named, placed)) if named else set()


def tests_a_report_names(cat: Catalogue, entities: list[ExtractedEntity], placed: Placed | None,
                         question: str) -> set[str]:
    """The test files a long report names by path or traceback frame (demoted all the same:
    DEMOTE_TESTS_A_REPORT_NAMES). A name that says test (``sympy.test()``) reaches every
    ``tests/__init__.py``: no list for a reader."""
    if not DEMOTE_TESTS_A_REPORT_NAMES or TEST_PRIOR == 1.0 or not is_long_text(question):
        return set()
    named = [e for e in entities if e.kind in ("path", "frame")]
    rows = entity_scores(cat, named, placed) if named else {}
    return {cat.entries[r].path for r in rows if r in cat.entries and cat.entries[r].path in cat.test_paths}


def demote_tests(scored: dict[int, ScoredItem], cat: Catalogue, named: set[int]) -> int:
    """Scale the items of test files by TEST_PRIOR unless the question names them
    (``named``: rows from names_a_test); returns how many were demoted."""
    if TEST_PRIOR == 1.0 or not cat.test_paths:
        return 0
    demoted = 0
    for s in scored.values():
        e = cat.entries.get(s.rowid)
        if e is not None and e.path in cat.test_paths and s.rowid not in named:
            s.score *= TEST_PRIOR
            demoted += 1
    return demoted


# The project's own package named as a plain word ("How does pytest discover test files?" in
# pytest, "flask" in Flask) is the subject of any question about it, not a pointer to its
# __init__ module: it is not read as a name (it still counts as a keyword). A switch for
# bench/ablate.py's "before" variant; measured in docs/benchmarks.md.
PROJECT_NAME_IS_NO_NAME = True
_PACKAGE_ROOTS = ("", "src/", "lib/")


def is_project_package(cat: Catalogue, word: str) -> bool:
    """Whether ``word`` names a top-level package of the tree (``pytest/__init__.py``, or
    under ``src/`` or ``lib/``)."""
    low = word.lower()
    return any(f"{root}{low}/__init__.py" in cat.module_of_path for root in _PACKAGE_ROOTS)


def without_project_names(cat: Catalogue, entities: list[ExtractedEntity]) -> list[ExtractedEntity]:
    """``entities`` less the plain words that name the project's own package."""
    if not PROJECT_NAME_IS_NO_NAME:
        return entities
    return [e for e in entities if not (e.kind == "known" and is_project_package(cat, e.text))]


# A function that is mostly its docstring (a documented wrapper such as ``requests.post``, a
# decorator that only registers its argument) repeats the words of a plain-English question
# about the behaviour it hands on, while the code doing it lives elsewhere: past DOC_HEAVY_FROM
# of its text, it keeps down to 1 - DOC_HEAVY_PENALTY of its score (all docstring). Only the
# DOC_HEAVY_TOP best candidates are read for it, and a function the question names as an
# identifier (entity score DOC_HEAVY_NAMED or more; a plain word that happens to be its name,
# such as "request", scores at most entities.PLAIN_NAME_IN_SHORT_TEXT) keeps its score. Measured with bench/ablate.py: plain-English questions Acc@1 0.75 -> 0.81, definitions
# shown 0.775 -> 0.784; SWE-bench dev unchanged; dev2 multi-file gold files in context
# 38.9 -> 44.4, hunks 23.4 -> 24.6%.
DOC_HEAVY_FROM = 0.5
DOC_HEAVY_PENALTY = 0.5
DOC_HEAVY_TOP = 60
DOC_HEAVY_NAMED = 0.6
# Functions and methods only: a class documented at length (sympy's, with examples) is what a
# report about it changes (dev2 one-file hunks 58.2 -> 55.7% with classes included).
_CALLABLE_KINDS = frozenset(("function", "method"))


def doc_heavy_candidates(scored: dict[int, ScoredItem], cat: Catalogue) -> list[int]:
    """The rows worth reading for demote_doc_heavy: the best DOC_HEAVY_TOP candidates that
    are functions or methods the question does not name."""
    if not DOC_HEAVY_PENALTY or not cat.has_code:
        return []
    best = sorted(scored.values(), key=lambda s: (-s.score, s.rowid))[:DOC_HEAVY_TOP]
    out = []
    for s in best:
        e = cat.entries.get(s.rowid)
        if e is not None and e.kind in _CALLABLE_KINDS and s.entity_score < DOC_HEAVY_NAMED:
            out.append(s.rowid)
    return out


def demote_doc_heavy(scored: dict[int, ScoredItem], docs: dict[int, tuple[int, int]]) -> int:
    """Scale down the items of ``docs`` (row -> (docstring length, text length)) whose text is
    mostly docstring; returns how many were demoted."""
    demoted = 0
    for r, (doc_len, text_len) in docs.items():
        share = doc_len / max(1, text_len)
        if share > DOC_HEAVY_FROM and r in scored:
            scored[r].score *= 1.0 - DOC_HEAVY_PENALTY * (share - DOC_HEAVY_FROM) / (1.0 - DOC_HEAVY_FROM)
            demoted += 1
    return demoted


def normalise_final(scored: dict[int, ScoredItem]) -> None:
    if not scored:
        return
    top = max(s.score for s in scored.values())
    if top <= 0:
        return
    for s in scored.values():
        s.score = s.score / top


def file_scores(
    cat: Catalogue,
    file_hits: list[tuple[int, float]],
    keyword: dict[int, float],
    entity: dict[int, float],
    vector: dict[int, float],
    allowed,
    frames: dict[str, float] | None = None,
    demoted: Collection[str] = (),
    titled: dict[str, float] | None = None,
) -> dict[str, float]:
    """Rank files: BM25 of the whole file, plus its three best symbols (long files
    hold many functions, and whole-file BM25 penalises length), plus named entities.
    Files in ``demoted`` (tests the question does not name) are scaled by TEST_PRIOR and
    set no scale: the other files score as they would without them. ``titled``: files the
    report's title names by their stem (title_files).

    Weights measured on SWE-bench Lite (bench/code_context.py).
    """
    parts = file_components(cat, file_hits, keyword, entity, vector, allowed, frames, demoted, titled)
    return {p: combine_file(c) for p, c in parts.items()}


def file_components(
    cat: Catalogue,
    file_hits: list[tuple[int, float]],
    keyword: dict[int, float],
    entity: dict[int, float],
    vector: dict[int, float],
    allowed,
    frames: dict[str, float] | None = None,
    demoted: Collection[str] = (),
    titled: dict[str, float] | None = None,
) -> dict[str, dict[str, float]]:
    """Each ranked file's signals before they are weighted (file_scores' arguments):
    ``whole``, ``symbols``, ``names``, ``vectors``, ``frames``, ``title`` (0..1 each),
    ``prior`` (path_prior) and ``test`` (1 for a demoted test). combine_file weighs them;
    bench/fit_file_ranking.py reads them to fit the weights."""
    whole_raw = {r: s for r, s in file_hits if allowed(r) and s > 0}
    scale = max((s for r, s in whole_raw.items() if cat.entries[r].path not in demoted), default=0.0)
    whole = {r: s / scale for r, s in whole_raw.items()} if scale > 0 else _normalise(whole_raw)
    per_file: dict[str, list[float]] = defaultdict(list)
    for r, s in keyword.items():
        e = cat.entries.get(r)
        if e is not None and not kind_traits(e.kind).whole_file:
            per_file[e.path].append(s)
    symbols = {p: sum(sorted(v, reverse=True)[:3]) for p, v in per_file.items()}
    top_sym = (max((v for p, v in symbols.items() if p not in demoted), default=0.0)
               or max(symbols.values(), default=0.0) or 1.0)
    out: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(_SIGNALS, 0.0))
    for r, s in whole.items():
        out[cat.entries[r].path]["whole"] += s
    for p, s in symbols.items():
        out[p]["symbols"] = s / top_sym
    for signal, rows in (("names", entity), ("vectors", vector)):
        for r, s in rows.items():
            e = cat.entries.get(r)
            if e is not None:
                out[e.path][signal] = max(out[e.path][signal], s)
    # The file where a reported error surfaced: the names of a long report reach many
    # files about equally, a traceback's deepest frame reaches one.
    for p, s in (frames or {}).items():
        out[p]["frames"] = s
    for p, s in (titled or {}).items():
        if p in out:  # named by the title and matched by the report: not a name alone
            out[p]["title"] = s
    for p, c in out.items():
        c["prior"] = path_prior(cat, p)
        c["test"] = 1.0 if p in demoted else 0.0
    return dict(out)


_SIGNALS = ("whole", "symbols", "names", "vectors", "frames", "title")


def combine_file(c: dict[str, float]) -> float:
    """A file's score from its file_components."""
    s = (c["whole"] + FILE_SYMBOL_WEIGHT * c["symbols"] + FILE_ENTITY_WEIGHT * c["names"]
         + FILE_VECTOR_WEIGHT * c["vectors"] + FILE_FRAME_WEIGHT * c["frames"] + FILE_TITLE_WEIGHT * c["title"])
    return s * c["prior"] * (TEST_PRIOR if c["test"] else 1.0)


# Folders of documentation examples, benchmarks and vendored third-party code: their files
# repeat the words of a question about the library (a docs example calls the API it is
# about), yet the code a question is about lives in the library itself. So do gettext's
# message catalogues (``locale/<lang>/LC_MESSAGES/``: a project's every user-facing string,
# once per language; sphinx's `sphinx.js` tables took ranks 2-10 for reports about search
# and autodoc). Measured with bench/ablate.py: plain-English question set 2 definitions
# shown 0.592 -> 0.608; every other set unchanged (docs/benchmarks.md, session 10).
AUX_FOLDERS = frozenset(
    "doc docs example examples tutorial tutorials gallery galleries benchmark benchmarks "
    "asv_bench vendor vendored _vendor third_party thirdparty extern externals lc_messages".split()
)
AUX_PRIOR = 0.5
# An AUX_FOLDERS name first in a compound name counts too (AUX_COMPOUND): fastapi's
# ``docs_src`` holds the 1,300 example programs of its documentation.
AUX_COMPOUND = True
_NAME_PIECES = re.compile(r"[-_.]")


def _is_aux_folder(name: str) -> bool:
    return name in AUX_FOLDERS or (AUX_COMPOUND and _NAME_PIECES.split(name, 1)[0] in AUX_FOLDERS)


# A page that translates one whose English copy is indexed beside it (docs/pt/... next to
# docs/en/...; retrieval/translations.py) repeats that copy's code and names, so each
# language's copy matched as well as the English one: fastapi's 13 languages filled a
# context with one page seven times. Weighed down, not left out: a question asked in that
# language still finds its own copy by its own words.
TRANSLATION_PRIOR = 0.5


def path_prior(cat: Catalogue, path: str) -> float:
    """AUX_PRIOR for a code file under an auxiliary folder (see AUX_FOLDERS), else 1.
    Notes and text under docs/ are what a prose question is about: they keep 1, unless
    they translate a page indexed in English beside them (TRANSLATION_PRIOR)."""
    if TRANSLATION_PRIOR < 1.0 and path in cat.translated_copies():
        return TRANSLATION_PRIOR
    parts = path.lower().split("/")[:-1]
    # "packages" at the top is a monorepo's code; inside a package (requests/packages/)
    # it holds vendored copies of other projects.
    if not any(_is_aux_folder(p) or (p == "packages" and n > 0) for n, p in enumerate(parts)):
        return 1.0
    mod = cat.module_of_path.get(path)
    entry = cat.entries.get(mod) if mod is not None else None
    return AUX_PRIOR if entry is not None and kind_traits(entry.kind).whole_file else 1.0


FILE_SYMBOL_WEIGHT = 0.5
FILE_ENTITY_WEIGHT = 0.25
FILE_TITLE_WEIGHT = 0.25
FILE_VECTOR_WEIGHT = 0.25
FILE_FRAME_WEIGHT = 1.0
# How much a symbol gains from being in a top-ranked file.
FILE_PRIOR_WEIGHT = 0.5


def add_file_prior(scored: dict[int, ScoredItem], cat: Catalogue, files: dict[str, float]) -> None:
    """Symbols gain from a top-ranked file; those of auxiliary folders (path_prior) lose,
    or a docs example's own items would still fill the budget."""
    top = max(files.values(), default=0.0)
    priors: dict[str, float] = {}
    for s in scored.values():
        e = cat.entries.get(s.rowid)
        if e is None:
            continue
        if top > 0 and e.path in files:
            s.score += FILE_PRIOR_WEIGHT * files[e.path] / top * max(s.score, 0.05)
        prior = priors.get(e.path)
        if prior is None:
            prior = priors[e.path] = path_prior(cat, e.path)
        s.score *= prior


TITLE_STEM_MIN = 3
_TITLE_WORD_RE = re.compile(r"[^\W\d]\w+")


def title_files(cat: Catalogue, question: str, allowed_path) -> dict[str, float]:
    """Files whose name (stem) is a word of a report's title (its first line, when more
    follows), ``1/n`` each when ``n`` files share it: "codegen regression in
    octave/julia/jscode", "(diophantine bug)", "Linkcheck crashes". A title is the
    reporter's one-line summary, and a module named there by its file name is where they
    saw the fault; in the body the same word is prose among hundreds. Test files and files
    ``allowed_path`` refuses are not named."""
    title, _, body = question.strip().partition("\n")
    if not body.strip() or not FILE_TITLE_WEIGHT:
        return {}
    out: dict[str, float] = {}
    for word in {w.lower() for w in _TITLE_WORD_RE.findall(title)}:
        if len(word) < TITLE_STEM_MIN or word in COMMON_WORDS or word in STOPWORDS:
            continue
        paths = [p for p in cat.by_stem.get(word, ()) if p not in cat.test_paths and allowed_path(p)]
        for p in paths:
            out[p] = max(out.get(p, 0.0), 1.0 / len(paths))
    return out
