"""Which language a path is in, and the dotted module name a path stands for."""

from __future__ import annotations

import posixpath

# Extension -> language label reported on items. ``.tsx`` is parsed with the TSX grammar
# but reported as TypeScript; ``.h`` starts as C and is re-read as C++ when it looks like it.
EXTENSION_LANGUAGES: dict[str, str] = {
    "py": "python", "pyi": "python",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "typescript",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "c++": "cpp", "hpp": "cpp", "hh": "cpp", "hxx": "cpp",
    "cs": "csharp",
    "rb": "ruby",
    "php": "php",
    "kt": "kotlin", "kts": "kotlin",
    "swift": "swift",
    "scala": "scala", "sc": "scala",
}

_PYTHON_ROOTS = ("src", "lib")


def _extension(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return base[dot + 1 :].lower() if dot > 0 else ""


def language_for_path(path: str) -> str | None:
    """The language label of a file by its extension, or None when no grammar reads it."""
    return EXTENSION_LANGUAGES.get(_extension(path))


def strip_extension(path: str) -> str:
    slash = path.rfind("/")
    dot = path.rfind(".")
    return path[:dot] if dot > slash + 1 else path


def module_name_for_path(path: str) -> str:
    """The dotted module name of a relative path.

    Python: ``src/pkg/sub/__init__.py`` -> ``pkg.sub``, ``lib/a/b.py`` -> ``a.b``.
    Other languages: the path without its extension, ``/`` -> ``.``
    (``web/app/main.ts`` -> ``web.app.main``).
    """
    path = path.replace("\\", "/").lstrip("/")
    path = path.removeprefix("./")
    ext = _extension(path)
    stem = strip_extension(path)
    parts = [p for p in stem.split("/") if p]
    if ext in ("py", "pyi"):
        if len(parts) > 1 and parts[-1] == "__init__":
            parts.pop()
        if len(parts) > 1 and parts[0] in _PYTHON_ROOTS:
            parts.pop(0)
    return ".".join(parts)


def is_python_package_init(path: str) -> bool:
    base = path.rsplit("/", 1)[-1]
    return base in ("__init__.py", "__init__.pyi")


def resolve_relative_path(importer: str, target: str) -> str | None:
    """``./x`` or ``../y/z`` from the file ``importer`` -> a workspace-relative path.

    None when the target climbs above the workspace root.
    """
    folder = posixpath.dirname(importer)
    joined = posixpath.normpath(posixpath.join(folder, target))
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith("../"):
        return None
    return joined
