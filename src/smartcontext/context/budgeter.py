"""Fit ranked items into a token budget, keeping structure: the ``code`` packer of the
packer family (``query.packers.greedy_fill`` walks the candidates; this module prices them).

Greedy by score: the top items get their full code while the full-code share of the
budget lasts, the rest get signatures; a method brings its class header; an item whose
ancestor is already shown in full is not repeated. Costs are the index's token estimates
plus framing; the exporter's final text is counted exactly and trimmed, so the result
never exceeds ``max_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import ItemKind
from ..query.packers import PASS, Outcome, greedy_fill
from ..retrieval.keyword import FORM_MAX_TERMS, question_terms
from ..retrieval.scoring import ScoredItem
from ..store.base import StoredItem
from .models import OMIT_BUDGET, OMIT_DUPLICATE, ExtractionConfig, SelectedItem

PER_ITEM_OVERHEAD = 8  # sigil or fence line, path or line numbers, blank line
PER_FILE_OVERHEAD = 12
MAX_CONSECUTIVE_MISSES = 40
# Warn about the budget only when a strong match was left out, not the long tail.
TRUNCATION_WARNING_SCORE = 0.5
# A short question in plain words ("how does pytest find its configuration file?") points at
# no one place to change: more of the definitions involved, as signatures, answer it better
# than a few more whole bodies, while a bug report asks for the code to fix, whole. A
# question (see ``asks``: a short report's title is not one) of at most
# keyword.FORM_MAX_TERMS terms (the bound word forms use) spends at most this share of the
# budget on whole bodies (0: the profile's full_code_share for every question). In a tree
# with code only: a vault's sections keep the profile's share. Measured with
# bench/ablate.py: plain-English questions definitions shown 0.840 -> 0.852, whole bodies
# 0.611 -> 0.631 (0.6: 0.877 but whole 0.589); SWE-bench dev and dev2 unchanged (before the
# question test, a short report's title cost dev one strict hunk).
SHORT_QUESTION_FULL_SHARE = 0.7
# A class past its kind's size limit (model.KIND_TRAITS: header plus best members) is still
# shown whole when it fits in this share of the budget, the share the best file gets to be
# shown whole (pipeline.TOP_FILE_SHARE): class attributes and the small methods the report
# names no word of come with the ones it does. Measured with bench/ablate.py (0 -> 0.4):
# SWE-bench dev2 one-file hunks shown 60.8 -> 65.8% (0.5 the same, 0.3 nothing); SWE-bench
# dev, the plain-English questions (4,000 tokens: 1,600, near the limit) and 45 held-out
# dev2 reports unchanged. 0: the kind's limit alone.
CLASS_FULL_SHARE = 0.4


def full_share_for(question: str, share: float) -> float:
    """The share of the budget for whole bodies when answering ``question`` (the
    profile's ``share``, or less for a short question: SHORT_QUESTION_FULL_SHARE)."""
    if not SHORT_QUESTION_FULL_SHARE or SHORT_QUESTION_FULL_SHARE >= share or not asks(question):
        return share
    terms, _ = question_terms(question)
    return SHORT_QUESTION_FULL_SHARE if len(terms) <= FORM_MAX_TERMS else share


_QUESTION_WORDS = frozenset(
    "how where what which when why who whose can could does do did is are was should would will".split()
)


def asks(text: str) -> bool:
    """Whether ``text`` reads as a question (it ends with "?" or starts with a question
    word), not as the title of a report ("Raise error when a name contains a dot")."""
    stripped = text.strip()
    first = stripped.split(None, 1)[0].lower() if stripped else ""
    return stripped.endswith("?") or first in _QUESTION_WORDS


@dataclass
class Plan:
    selected: list[SelectedItem] = field(default_factory=list)
    used: int = 0
    truncated: bool = False  # a relevant item did not fit at all
    skipped_for_budget: int = 0
    dropped: list[tuple] | None = None  # when explaining: see _drop


def signature_text(item) -> str:
    return f"{item.signature}\n{item.doc_summary}".strip()


def plan_budget(
    ranked: list[ScoredItem],
    stored: dict[int, StoredItem],
    parents: dict[str, StoredItem],
    config: ExtractionConfig,
    reserve: int = 0,
    pinned_full: set[int] | None = None,
    file_costs: dict[str, int] | None = None,
) -> Plan:
    """Choose what to show and how. ``reserve`` tokens are kept for headers and framing.

    pinned_full: row ids shown in full whatever their size (the top file, when small).
    file_costs: a file's heading and imports line by path (default PER_FILE_OVERHEAD).
    """
    file_costs = file_costs or {}
    pinned_full = pinned_full or set()
    budget = max(0, config.max_tokens - reserve)
    full_budget = int(budget * config.full_code_share)
    plan = Plan(dropped=[] if config.explain else None)
    chosen: dict[str, SelectedItem] = {}
    costs: dict[str, int] = {}
    full_ids: set[str] = set()
    files: set[str] = set()
    full_used = 0
    class_limit = int(CLASS_FULL_SHARE * config.max_tokens)

    def offer(cand: ScoredItem, room: int) -> Outcome:
        nonlocal full_used
        si = stored.get(cand.rowid)
        if si is None:
            return PASS
        item = si.item
        if item.id in chosen:
            prev = chosen[item.id]
            if prev.context_only:  # a header brought by a member turns out relevant itself
                prev.context_only = False
                prev.score = cand.score
                prev.signals = cand.signals()
            return PASS
        if _shown_in(si, stored, parents, full_ids, plan, cand):
            return PASS  # already visible inside an ancestor shown in full
        file_cost = 0 if item.path in files else file_costs.get(item.path, PER_FILE_OVERHEAD)
        parent_cost = 0
        parent_si = None
        traits = item.traits
        if config.include_parent and traits.brings_parent_header and item.parent_id:
            parent_si = parents.get(item.parent_id) or _find(stored, item.parent_id)
            if parent_si is not None and parent_si.item.id not in chosen:
                parent_cost = parent_si.sig_tokens + PER_ITEM_OVERHEAD
        # Past its kind's limit, a container's header plus its best members say more per token.
        limit = traits.max_full_tokens
        if limit is not None and item.kind == ItemKind.CLASS:
            limit = max(limit, class_limit)
        full_ok = item.tokens > 0 and (
            limit is None or item.tokens <= limit or cand.rowid in pinned_full
        )
        # A container whose members were already chosen shows only its header: the
        # members ranked higher, and repeating them inside the whole body wastes tokens.
        members_shown = full_ok and any(_is_inside(c.item, item) for c in chosen.values() if not c.context_only)
        if members_shown:
            full_ok = False
        full_cost = item.tokens + PER_ITEM_OVERHEAD + file_cost + parent_cost
        sig_cost = si.sig_tokens + PER_ITEM_OVERHEAD + file_cost + parent_cost
        # The share for whole bodies is of code: a file's imports line counts against the
        # budget, not against that share.
        imports_cost = max(0, file_cost - PER_FILE_OVERHEAD)
        mode, cost = _mode(full_ok, full_cost, sig_cost if si.sig_tokens > 0 else None, room,
                           full_budget - full_used + imports_cost)
        if mode is None and members_shown and si.sig_tokens <= 0 and full_cost <= room:
            # A module (no signature of its own) whose members are shown: it would fit, and
            # is left out as a repeat of them, not for the budget (no "constraining" warning).
            _drop(plan, cand, OMIT_DUPLICATE, full_cost, "its members are shown")
            return PASS
        if mode is None:
            if cand.score >= TRUNCATION_WARNING_SCORE:
                plan.truncated = True
                plan.skipped_for_budget += 1
            _drop(plan, cand, OMIT_BUDGET, sig_cost if si.sig_tokens > 0 else full_cost, room)
            return None
        spent = cost
        if parent_cost and parent_si is not None:
            chosen[parent_si.item.id] = SelectedItem(
                parent_si.item, cand.score, "signature", {}, context_only=True
            )
            costs[parent_si.item.id] = parent_cost
            cost -= parent_cost
        sel = SelectedItem(item, cand.score, mode, cand.signals())
        chosen[item.id] = sel
        costs[item.id] = cost
        files.add(item.path)
        if mode == "full":
            full_used += cost - imports_cost
            full_ids.add(item.id)
            # A parent header chosen earlier is now visible inside this item.
            for other_id in [k for k, c in chosen.items() if c.context_only and _is_inside(c.item, item)]:
                spent -= costs.pop(other_id, 0)
                del chosen[other_id]
        return spent

    used = greedy_fill(ranked, budget, offer, max_misses=MAX_CONSECUTIVE_MISSES)
    plan.selected = list(chosen.values())
    plan.used = used
    return plan


def _mode(full_ok: bool, full_cost: int, sig_cost: int | None, room: int, full_room: int) -> tuple[str | None, int]:
    """Whole when that fits the room left and the room left for whole bodies; else as a
    signature; else whole when it fits the room (an item without a signature, or whose
    body costs less than its signature)."""
    if full_ok and full_cost <= min(room, full_room):
        return "full", full_cost
    if sig_cost is not None and sig_cost <= room:
        return "signature", sig_cost
    if full_ok and full_cost <= room:
        return "full", full_cost
    return None, 0


def _shown_in(si: StoredItem, stored: dict[int, StoredItem], parents: dict[str, StoredItem],
              full_ids: set[str], plan: Plan, cand: ScoredItem) -> bool:
    """Whether an ancestor of ``si`` is shown in full (and so shows it); kept as a drop."""
    if not full_ids:
        return False
    shown_in = next((a for a in _ancestors(si, stored, parents) if a in full_ids), None)
    if shown_in is not None:
        _drop(plan, cand, OMIT_DUPLICATE, si.item.tokens, f"shown inside {shown_in}")
    return shown_in is not None


def _drop(plan: Plan, cand: ScoredItem, reason: str, tokens: int, detail: str | int) -> None:
    """Keep a candidate left out when the plan explains (``Plan.dropped`` is a list), as
    (row id, score, reason, tokens it would have cost, detail); an int ``detail`` is the
    tokens that were free."""
    if plan.dropped is not None:
        plan.dropped.append((cand.rowid, cand.score, reason, tokens, max(0, detail) if isinstance(detail, int) else detail))


def _ancestors(si: StoredItem, stored: dict[int, StoredItem], parents: dict[str, StoredItem]) -> list[str]:
    out, pid, seen = [], si.item.parent_id, set()
    while pid and pid not in seen:
        seen.add(pid)
        out.append(pid)
        p = parents.get(pid) or _find(stored, pid)
        pid = p.item.parent_id if p else None
    return out


def _find(stored: dict[int, StoredItem], item_id: str) -> StoredItem | None:
    for si in stored.values():
        if si.item.id == item_id:
            return si
    return None


def _is_inside(inner, outer) -> bool:
    return (
        inner.path == outer.path
        and inner.id != outer.id
        and outer.start_line <= inner.start_line
        and inner.end_line <= outer.end_line
        and outer.traits.shows_nested
    )
