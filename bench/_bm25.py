"""The baseline: Okapi BM25 over whole files, and whole files pasted into the budget.

What a "search the repository, open the best files" agent does. Documents are a file's
path plus its content; identifiers count whole and split into their camelCase and
snake_case parts, so ``getUserName`` matches a question about the "user name". The
question is tokenised the same way.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from _swebench import count_tokens, is_test_path

K1 = 1.2
B = 0.75
MAX_FILE_BYTES = 1_500_000
SOURCE_EXTS = {
    ".py", ".pyi", ".pyx", ".pxd", ".js", ".jsx", ".mjs", ".ts", ".tsx", ".java", ".go",
    ".rs", ".c", ".h", ".cc", ".cpp", ".hpp",
}
SKIP_DIRS = {"node_modules", "__pycache__", "build", "dist", "venv", "site-packages"}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_identifier(word: str) -> list[str]:
    parts: list[str] = []
    for chunk in word.split("_"):
        if chunk:
            parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return parts


def tokenize(text: str) -> list[str]:
    """Identifiers, lowercased, each followed by its parts when it has more than one."""
    out: list[str] = []
    for ident in _IDENT.findall(text):
        out.append(ident.lower())
        parts = split_identifier(ident)
        if len(parts) > 1:
            out.extend(parts)
    return out


def list_source_files(root: Path) -> list[str]:
    """Non-test source files under ``root`` (hidden folders, such as indexes, skipped)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        for name in filenames:
            if Path(name).suffix.lower() not in SOURCE_EXTS:
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if not is_test_path(rel):
                out.append(rel)
    return sorted(out)


@dataclass
class Posting:
    docs: np.ndarray  # int32 document ids
    tf: np.ndarray  # float32 term frequencies


class BM25Index:
    def __init__(self, root: Path):
        self.root = root
        self.paths: list[str] = []
        self.texts: list[str] = []
        lengths: list[int] = []
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for rel in list_source_files(root):
            full = root / rel
            try:
                if full.stat().st_size > MAX_FILE_BYTES:
                    continue
                text = full.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            doc = len(self.paths)
            self.paths.append(rel)
            self.texts.append(text)
            counts = Counter(tokenize(rel.replace("/", " ").replace(".", " ")))
            counts.update(tokenize(text))
            lengths.append(sum(counts.values()))
            for term, n in counts.items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(doc)
                tfs.append(n)
        self.n_docs = len(self.paths)
        dl = np.asarray(lengths, dtype=np.float32)
        avgdl = float(dl.mean()) if self.n_docs else 1.0
        # The length part of BM25's denominator, once per document.
        self.norm = (K1 * (1 - B + B * dl / avgdl)).astype(np.float32)
        self.postings = {
            t: Posting(np.asarray(ids, dtype=np.int32), np.asarray(tfs, dtype=np.float32))
            for t, (ids, tfs) in postings.items()
        }

    def idf(self, df: int) -> float:
        return math.log(1 + (self.n_docs - df + 0.5) / (df + 0.5))

    def rank(self, question: str, limit: int = 50) -> list[tuple[str, float]]:
        scores = np.zeros(self.n_docs, dtype=np.float32)
        for term in set(tokenize(question)):
            p = self.postings.get(term)
            if p is None:
                continue
            w = self.idf(len(p.docs))
            scores[p.docs] += w * p.tf * (K1 + 1) / (p.tf + self.norm[p.docs])
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(self.paths[i], float(scores[i])) for i in order if scores[i] > 0]

    def context(self, ranked: list[str], max_tokens: int) -> tuple[str, list[str]]:
        """Ranked files pasted whole, in order; the last one cut at a line to fit.

        Returns the text and the files of which at least one content line is in it.
        """
        text_of = dict(zip(self.paths, self.texts))
        sections: list[str] = []
        shown: list[str] = []
        used = 0
        for path in ranked:
            head, tail = f"### {path}\n```python\n", "\n```\n"
            body = text_of[path].rstrip("\n")
            section = head + body + tail
            cost = count_tokens(section)
            if used + cost <= max_tokens:
                sections.append(section)
                shown.append(path)
                used += cost
                continue
            lines = body.split("\n")
            fixed = count_tokens(head + tail)
            lo, hi = 0, len(lines)  # most lines whose section still fits
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if used + fixed + count_tokens("\n".join(lines[:mid])) <= max_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            if lo:
                sections.append(head + "\n".join(lines[:lo]) + tail)
                shown.append(path)
            break
        text = "\n".join(sections)
        # Token merges across section joins can add a token or two: trim lines until it fits.
        while count_tokens(text) > max_tokens:
            text = text[: text.rstrip("\n").rfind("\n")]
        return text, shown


