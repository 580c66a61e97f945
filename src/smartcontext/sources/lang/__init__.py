"""Language specs for the code source, looked up by language label."""

from __future__ import annotations

from .base import LangSpec
from .c import CHeaderSpec, CppHeaderSpec, CppSpec, CSpec
from .go import GoSpec
from .java import JavaSpec
from .javascript import JavaScriptSpec, TsxSpec, TypeScriptSpec
from .more import CSharpSpec, KotlinSpec, PhpSpec, RubySpec, ScalaSpec, SwiftSpec
from .python import PythonSpec
from .rust import RustSpec

# Keyed by language label, plus variants chosen by path: "tsx" for the grammar TypeScript
# JSX files need, and header specs that also keep function prototypes.
_SPECS: dict[str, LangSpec] = {
    "python": PythonSpec(),
    "javascript": JavaScriptSpec(),
    "typescript": TypeScriptSpec(),
    "tsx": TsxSpec(),
    "go": GoSpec(),
    "rust": RustSpec(),
    "java": JavaSpec(),
    "c": CSpec(),
    "cpp": CppSpec(),
    "csharp": CSharpSpec(),
    "ruby": RubySpec(),
    "php": PhpSpec(),
    "kotlin": KotlinSpec(),
    "swift": SwiftSpec(),
    "scala": ScalaSpec(),
    "c-header": CHeaderSpec(),
    "cpp-header": CppHeaderSpec(),
}

# Markers that a ``.h`` file is C++ rather than C (checked on raw bytes, once per file).
_CPP_HEADER_MARKERS = (b"class ", b"namespace ", b"template<", b"template <", b"public:", b"std::")
_CPP_HEADER_EXTENSIONS = (".hpp", ".hh", ".hxx", ".h++")


def spec_for(label: str, path: str, source: bytes) -> LangSpec | None:
    """The spec that reads ``path``; None when no grammar is known for ``label``."""
    if label == "typescript" and path.lower().endswith(".tsx"):
        return _SPECS["tsx"]
    lower = path.lower()
    if label == "c" and lower.endswith(".h"):
        if any(m in source for m in _CPP_HEADER_MARKERS):
            return _SPECS["cpp-header"]
        return _SPECS["c-header"]
    if label == "cpp" and lower.endswith(_CPP_HEADER_EXTENSIONS):
        return _SPECS["cpp-header"]
    return _SPECS.get(label)


def known_languages() -> list[str]:
    """Labels of the languages that get structure (others are indexed as text)."""
    return sorted({spec.label for spec in _SPECS.values()})
