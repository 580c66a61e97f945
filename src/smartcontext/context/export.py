"""Render a selection for a model: MU sigils, Markdown with fenced code, or JSON.

Each format is an ``Exporter``: what the budget counts (``measure``) and, for JSON, the
document handed out (``render``), which adds result fields and keeps every item's code.

MU format, one line per symbol, grouped by module:

    ! requests/sessions.py :: module=requests.sessions
    @ requests.adapters, requests.auth
    $ Session < SessionRedirectMixin
      # Session.request(self, method, url, ...) :: relevance=0.91 L456-520
        <the code, when shown in full>

``!`` module, ``$`` class (``<`` bases), ``#`` function or method, ``@`` dependencies,
``::`` annotations; sections of notes use ``§`` and plain text ``~``.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..model import ItemKind
from .models import SelectedItem

FENCE_LANG = {"python": "python", "javascript": "javascript", "typescript": "typescript",
              "tsx": "tsx", "go": "go", "rust": "rust", "java": "java", "c": "c", "cpp": "cpp",
              "markdown": "markdown", "text": "text"}


# A line of only images, linked images or <img> tags (shields.io badges, logos) with no
# word outside them: it costs tokens and tells a model nothing.
_IMAGE_MARKUP = re.compile(r"\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)|!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>|</?a\b[^>]*>|</?p\b[^>]*>")


def _carries_words(line: str) -> bool:
    if "![" not in line and "<img" not in line:
        return True
    return bool(re.search(r"\w", _IMAGE_MARKUP.sub("", line)))


def body_lines(sel: SelectedItem, file_lines: dict[str, list[str]], from_line: int | None = None) -> list[str]:
    """The item's code as it stands in the file (dedented), or its stored text.

    from_line: for prose, the first line to show (split parts of a long section share a
    few lines with the part before; those are shown once). Prose drops image-only lines.
    """
    it = sel.item
    lines = file_lines.get(it.path)
    if sel.mode == "head" and lines is not None:
        return lines[it.start_line - 1 if it.start_line > 1 else 0 : it.end_line]
    if lines is not None and it.traits.body_from_file:
        chunk = lines[it.start_line - 1 : it.end_line]
        if chunk:
            import textwrap

            return textwrap.dedent("\n".join(chunk)).splitlines()
    text = it.text.splitlines()
    if not it.traits.prose:
        return text
    if from_line is not None and from_line > it.start_line:
        text = text[from_line - it.start_line:]
    return [ln for ln in text if _carries_words(ln)]


def shown_ranges(items: list[SelectedItem]) -> dict[str, tuple[int, int] | None]:
    """The lines each prose item shown in full adds to those before it in the same file
    (``items`` in source order): its own range, a shorter one when it overlaps the
    previous part, or None when every line of it is already shown."""
    shown: dict[str, tuple[int, int] | None] = {}
    until = 0
    for s in items:
        it = s.item
        if s.mode != "full" or not it.traits.prose or it.traits.body_from_file:
            continue
        if it.end_line <= until:
            shown[it.id] = None
        else:
            shown[it.id] = (max(it.start_line, until + 1), it.end_line)
        until = max(until, it.end_line)
    return shown


def _short_signature(sel: SelectedItem) -> str:
    """The declaration as written, without decorators and body opener."""
    it = sel.item
    lines = [ln for ln in it.signature.splitlines() if not ln.lstrip().startswith("@")]
    sig = " ".join(" ".join(lines).split())
    return sig or it.qualname


def mu_signature(sel: SelectedItem) -> str:
    """``login(self, name, password) -> str``: name and parameters, no keywords."""
    it = sel.item
    sig = _short_signature(sel)
    if it.traits.callable:
        pos = sig.find(it.name + "(")
        if pos < 0:
            pos = sig.find(it.name + "<")  # generics: foo<T>(...)
        if pos >= 0:
            sig = sig[pos:].rstrip(" {:;").rstrip()
            if it.meta.get("async"):
                sig = "async " + sig
            return sig
        return it.name
    return sig


def _group(selection: list[SelectedItem]) -> "OrderedDict[str, list[SelectedItem]]":
    """Files in order of their best item; inside a file, items in source order."""
    best: dict[str, float] = {}
    for s in selection:
        if not s.context_only or s.item.path not in best:
            best[s.item.path] = max(best.get(s.item.path, 0.0), s.score)
    groups: OrderedDict[str, list[SelectedItem]] = OrderedDict()
    for path in sorted(best, key=lambda p: -best[p]):
        groups[path] = sorted(
            (s for s in selection if s.item.path == path),
            key=lambda s: (s.item.start_line, -s.item.end_line),
        )
    return groups


def render_mu(
    selection: list[SelectedItem],
    file_lines: dict[str, list[str]],
    deps: dict[str, list[str]],
    modules: dict[str, str],
    include_scores: bool = False,
) -> str:
    out: list[str] = []
    for path, items in _group(selection).items():
        head = f"! {path}"
        if modules.get(path):
            head += f" :: module={modules[path]}"
        out.append(head)
        if deps.get(path):
            out.append("@ " + ", ".join(deps[path]))
        depth_of: dict[str, int] = {}
        ranges = shown_ranges(items)
        for s in items:
            it = s.item
            traits = it.traits
            if it.id in ranges and ranges[it.id] is None:
                continue  # every line already shown by the part before
            first, last = ranges.get(it.id) or (it.start_line, it.end_line)
            if traits.whole_file:
                if s.mode == "full":
                    out.extend("  " + ln for ln in it.text.splitlines())
                elif s.mode == "head":
                    out.append(f"  :: L1-{it.end_line} (file header)" if it.start_line <= 1
                               else f"  :: L{it.start_line}-{it.end_line} (module level)")
                    out.extend("  " + ln if ln else "" for ln in body_lines(s, file_lines))
                elif it.doc_summary:
                    out.append("  :: " + it.doc_summary)
                continue
            depth = depth_of.get(it.parent_id or "", -1) + 1
            depth_of[it.id] = depth
            pad = "  " * depth
            sigil = traits.sigil
            if it.kind == ItemKind.CLASS:
                line = f"{pad}{sigil} {it.name}"
                bases = it.meta.get("bases")
                if isinstance(bases, list) and bases:
                    line += " < " + ", ".join(map(str, bases))
            elif traits.prose:
                line = f"{pad}{sigil} {it.qualname}"
            else:
                line = f"{pad}{sigil} {mu_signature(s)}"
            notes: list[str] = []
            decorators = it.meta.get("decorators")
            if isinstance(decorators, list) and decorators:
                notes.extend("@" + str(d).lstrip("@") for d in decorators)
            if include_scores and not s.context_only:
                notes.append(f"relevance={s.score:.2f}")
            notes.append(f"L{first}-{last}")
            line += " :: " + " ".join(notes)
            out.append(line)
            if s.mode == "full":
                out.extend(pad + "    " + ln if ln else "" for ln in body_lines(s, file_lines, first))
            elif it.doc_summary:
                out.append(pad + "  :: " + it.doc_summary)
        out.append("")
    return "\n".join(out).rstrip() + "\n" if out else ""


def render_markdown(
    selection: list[SelectedItem],
    file_lines: dict[str, list[str]],
    deps: dict[str, list[str]],
    modules: dict[str, str],
    include_scores: bool = False,
) -> str:
    out: list[str] = []
    for path, items in _group(selection).items():
        out.append(f"### {path}")
        if deps.get(path):
            out.append("Imports: " + ", ".join(f"`{d}`" for d in deps[path]))
        out.append("")
        ranges = shown_ranges(items)
        for s in items:
            it = s.item
            if it.id in ranges and ranges[it.id] is None:
                continue  # every line already shown by the part before
            first, last = ranges.get(it.id) or (it.start_line, it.end_line)
            lang = FENCE_LANG.get(it.language, "")
            score = f" (relevance {s.score:.2f})" if include_scores and not s.context_only else ""
            if s.mode in ("full", "head"):
                body = "\n".join(body_lines(s, file_lines, first))
                fence = "````" if "```" in body else "```"
                label = it.qualname if not it.traits.whole_file else (
                    "whole file" if s.mode == "full" else "file header" if it.start_line <= 1 else "module level"
                )
                out.append(f"`{label}` lines {first}-{last}{score}:")
                out.append(f"{fence}{lang}\n{body}\n{fence}")
            else:
                sig = _short_signature(s)
                doc = it.doc_summary
                line = f"- `{sig}` lines {it.start_line}-{it.end_line}{score}"
                if doc:
                    line += f": {doc}"
                out.append(line)
            out.append("")
    return "\n".join(out).rstrip() + "\n" if out else ""


def json_document(
    selection: list[SelectedItem],
    file_lines: dict[str, list[str]],
    deps: dict[str, list[str]],
    modules: dict[str, str],
    include_scores: bool = False,
) -> dict[str, Any]:
    """The selection as data: files in rank order, each with its items in source order.

    Each item is ``SelectedItem.to_dict`` (its one shape everywhere) plus, when shown in
    full, its ``code``, else its ``doc`` line, exactly as MU and Markdown show them. Like
    them, an item carries its ``score`` only with ``include_scores``, and never for an
    item brought in as structure only (``context_only``).
    """
    files = []
    for path, items in _group(selection).items():
        entries = []
        ranges = shown_ranges(items)
        for s in items:
            if s.item.id in ranges and ranges[s.item.id] is None:
                continue  # every line already shown by the part before
            entry = s.to_dict(include_text=False)
            if not include_scores or s.context_only:
                del entry["score"]
            first = (ranges.get(s.item.id) or (None, None))[0]
            if s.mode in ("full", "head"):
                entry["code"] = "\n".join(body_lines(s, file_lines, first))
            elif s.item.doc_summary:
                entry["doc"] = s.item.doc_summary
            entries.append(entry)
        files.append({"path": path, "module": modules.get(path, ""),
                      "imports": deps.get(path, []), "items": entries})
    return {"files": files}


JSON_COUNTS = (
    "content a model reads: paths, imports, signatures, code and doc lines; not JSON syntax or "
    "metadata (json_tokens counts the whole JSON text)"
)


def json_content(document: dict[str, Any]) -> str:
    """The strings of ``document`` a model reads, one per line, unescaped.

    The budget of a JSON export counts this, not the JSON text: quoting, escaping and
    indentation cost a program nothing, and counting them left little room for code.
    """
    out: list[str] = []
    for f in document["files"]:
        out.append(f"{f['path']} {f['module']}".rstrip())
        if f["imports"]:
            out.append(", ".join(f["imports"]))
        for entry in f["items"]:
            if entry["signature"]:
                out.append(entry["signature"])
            for key in ("code", "doc"):
                if entry.get(key):
                    out.append(entry[key])
    return "\n".join(out) + "\n" if out else ""


def measure_json(*args: Any, **kwargs: Any) -> str:
    """What a JSON export's budget counts; takes ``json_document``'s arguments."""
    return json_content(json_document(*args, **kwargs))


def render_json(
    selection: list[SelectedItem],
    file_lines: dict[str, list[str]],
    deps: dict[str, list[str]],
    modules: dict[str, str],
    include_scores: bool = False,
    header: dict[str, Any] | None = None,
) -> str:
    """The JSON document, ``header`` fields (question, token_count, ...) first."""
    document = {**(header or {}), **json_document(selection, file_lines, deps, modules, include_scores)}
    return json.dumps(document, ensure_ascii=False, indent=1)


def render_counted(render: Callable[..., str], header: dict[str, Any], encoding: str, *args: Any) -> tuple[str, int]:
    """``render(*args, header=header)`` with ``header["json_tokens"]`` set to the exact
    token count of the very text returned, and that count. The count is part of the text,
    so it is found as a fixed point: a number's digits change its tokens only when its
    length changes, which settles in two or three renders."""
    from ..tokens import count_tokens

    claimed = 0
    for _ in range(6):
        header["json_tokens"] = claimed
        text = render(*args, header=header)
        actual = count_tokens(text, encoding)
        if actual == claimed:
            break
        claimed = actual
    return text, actual


@dataclass(frozen=True)
class Exporter:
    """One output format.

    measure: renders the text whose exact token count the budget holds to.
    render:  renders the text handed out, given a header of result fields; None when it
             is the measured text itself.
    counts:  what ``token_count`` counts, said in results.
    """

    measure: Callable[..., str]
    render: Callable[..., str] | None = None
    counts: str = "the rendered text"


EXPORTERS = {
    "mu": Exporter(render_mu),
    "markdown": Exporter(render_markdown),
    "json": Exporter(measure_json, render_json, JSON_COUNTS),
}
