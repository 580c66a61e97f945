"""The built-in language specs, registered through the same hook as a plugin's."""

from __future__ import annotations

from ...plugins import hookimpl


@hookimpl(tryfirst=True)
def register_languages(register) -> None:
    # Imported when languages are wanted: the plugin manager loads this module for any
    # registry (a question on an index with vectors asks the embedders'), and the specs
    # bring tree-sitter and its grammar pack.
    from .c import CHeaderSpec, CppHeaderSpec, CppSpec, CSpec
    from .go import GoSpec
    from .java import JavaSpec
    from .javascript import JavaScriptSpec, TsxSpec, TypeScriptSpec
    from .more import CSharpSpec, KotlinSpec, PhpSpec, RubySpec, ScalaSpec, SwiftSpec
    from .python import PythonSpec
    from .rust import RustSpec

    for spec in (
        PythonSpec(), JavaScriptSpec(), TypeScriptSpec(), GoSpec(), RustSpec(), JavaSpec(),
        CSpec(), CppSpec(), CSharpSpec(), RubySpec(), PhpSpec(), KotlinSpec(), SwiftSpec(),
        ScalaSpec(),
    ):
        register(spec)
    # Variants chosen by path (``spec_for``): the grammar TypeScript JSX files need, and
    # header specs that also keep function prototypes.
    register(TsxSpec(), key="tsx")
    register(CHeaderSpec(), key="c-header")
    register(CppHeaderSpec(), key="cpp-header")
