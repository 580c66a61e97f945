"""What an answer left out and what its budget went to, for people: the spend
breakdown (``ContextResult.spend``) and the text ``context --explain`` prints."""

from __future__ import annotations

from typing import Any

from .budgeter import signature_text
from .models import ContextResult


def spend_of(result: ContextResult) -> dict[str, Any]:
    """What the budget went to. Bodies, signatures and headers are the index's estimates of
    what was shown; files (paths, imports lines, framing) is the rest of the exact count."""
    parts = {"bodies": [0, 0], "signatures": [0, 0], "headers": [0, 0]}
    for s in result.items:
        it = s.item
        # A definition brought whole beside a match (pipeline._fill_leftover) is a body.
        if s.mode == "head" or (s.context_only and s.mode != "full"):
            part = parts["headers"]
            part[1] += it.tokens if s.mode == "head" else (len(signature_text(it)) + 3) // 4
        elif s.mode == "full":
            part = parts["bodies"]
            part[1] += it.tokens
        else:
            part = parts["signatures"]
            part[1] += (len(signature_text(it)) + 3) // 4
        part[0] += 1
    total = result.token_count
    estimated = sum(t for _, t in parts.values())
    if estimated > total:  # estimates run high on dense code: shares stay, the sum is exact
        for part in parts.values():
            part[1] = part[1] * total // max(1, estimated)
        estimated = sum(t for _, t in parts.values())
    out: dict[str, Any] = {k: {"items": n, "tokens": t} for k, (n, t) in parts.items()}
    out["files"] = {"items": len({s.item.path for s in result.items}), "tokens": total - estimated}
    out["total"] = total
    out["free"] = max(0, result.max_tokens - total)
    return out


def explanation(result: ContextResult, limit: int = 10) -> str:
    """What was left out and what the budget went to, as plain text for people
    (``context --explain``)."""
    lines: list[str] = []
    total_left = sum(result.omitted_counts.values())
    if result.omitted:
        shown = result.omitted[:limit]
        lines.append(f"Left out: the best {len(shown)} of {total_left} candidate(s)")
        width = max(len(f"{o.path} {o.name}") for o in shown)
        for o in shown:
            where = f"{o.path} {o.name}".ljust(width)
            why = f"{o.reason}: {o.detail}" if o.detail else o.reason
            lines.append(f"  {o.score:5.3f}  {where}  {o.kind:<8} {o.tokens:>6} tok  {why}")
        lines.append("  by reason: " + ", ".join(f"{r} {n}" for r, n in result.omitted_counts.items()))
    else:
        lines.append("Left out: nothing (every candidate found is in the context)")
    sp = result.spend
    if sp:
        parts = ", ".join(f"{k} {sp[k]['tokens']} ({sp[k]['items']})"
                          for k in ("bodies", "signatures", "headers", "files"))
        lines.append(f"Budget: {sp['total']} of {result.max_tokens} tokens: {parts}; {sp['free']} free")
    return "\n".join(lines) + "\n"
