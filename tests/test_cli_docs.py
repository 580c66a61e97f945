"""docs/cli.md is generated from the command tree (cog); these tests keep it from drifting."""

from pathlib import Path

import pytest
from cogapp import Cog

from smartcontext.cli.docs import command_paths, reference
from smartcontext.config import ContextDefaults
from smartcontext.errors import InvalidArgument

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def cog_check(path: Path) -> int:
    return Cog().main(["cog", "--check", "--diff", str(path)])


def test_docs_cli_md_is_up_to_date_with_the_commands():
    assert cog_check(DOC) == 0, "docs/cli.md is stale: run `cog -r docs/cli.md`"


def test_a_stale_reference_fails_the_check(tmp_path):
    stale = tmp_path / "cli.md"
    text = DOC.read_text()
    declared = "Token budget of the context (exact count of what a model reads)."
    assert f"{declared} Default: from config, 8000" in text
    stale.write_text(text.replace(declared, "Token budget."))
    assert cog_check(stale) != 0


def test_every_command_has_a_generated_block():
    text = DOC.read_text()
    paths = command_paths()
    assert {"index", "context", "search", "similar", "status", "tool", "serve mcp", "sc search"} <= set(paths)
    for path in paths:
        assert f"cog.out(reference({path!r}))" in text, f"docs/cli.md has no reference block for {path!r}"


def test_reference_lists_arguments_options_and_config_defaults():
    md = reference("context")
    assert md.startswith("```text\nsmartcontext context [OPTIONS] QUESTION [PATH]\n```")
    assert "naming functions, classes or files helps. - reads it from stdin. Required |" in md
    assert f"Default: from config, {ContextDefaults().max_tokens}" in md
    assert "| `--exclude-tests / --include-tests` |" in md
    assert "`--transport stdio\\|http`" in reference("serve mcp")  # a pipe cannot end a table cell
    assert "[--NAME VALUE]..." in reference("tool")


def test_unknown_command_is_a_clear_error():
    with pytest.raises(InvalidArgument, match="no command 'nope'; commands: index, status"):
        reference("nope")


def _help_texts():
    from smartcontext.cli.docs import commands

    for path, cmd, _ in commands():
        yield path, cmd.help or ""
        for param in cmd.params:
            yield f"{path} {param.name}", getattr(param, "help", None) or ""


def test_every_help_text_prints_as_written_in_the_terminal():
    # `--help` renders help through rich's markup, where "[llm]" reads as a style and vanishes:
    # "--api-base ... (default: [llm] api_base)" printed "(default: api_base)".
    from rich.markup import render

    changed = [where for where, text in _help_texts() if render(text).plain != text]
    assert not changed, f"help that rich markup would change: {changed}"


@pytest.mark.parametrize("group", ["", "config", "serve", "chat", "store", "sc"])
def test_the_command_list_gives_each_summary_on_one_row(group):
    # typer's rich command list kept a docstring's source line breaks: `smartcontext --help`
    # listed status as "... answering as it" and, on the next row, "should (an unfinished ...".
    import inspect

    from typer.testing import CliRunner

    from smartcontext.cli import load_app

    app = load_app()
    result = CliRunner().invoke(app, [*group.split(), "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    rows = [" ".join(line.strip("│ ").split()) for line in result.output.splitlines()]
    typer_app = app if not group else next(g.typer_instance for g in app.registered_groups if g.name == group)
    assert typer_app.registered_commands
    for info in typer_app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        first = " ".join(inspect.cleandoc(info.callback.__doc__ or info.help or "").split("\n\n")[0].split())
        assert any(row == f"{name} {first}" for row in rows), (name, first)
