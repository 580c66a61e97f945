"""``smartcontext agent``: the agent in a terminal, one question or a conversation.

One call into ``agent.AgentSessions`` per message; the tool calls and the tokens saved by
compaction are printed on stderr as they happen, the answer on stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..agent.loop import DEFAULT_MAX_ROUNDS
from .root import JsonOpt, PathArg, app, workspace_root
from .output import err_console, errors, print_json, print_text

EXIT_WORDS = {"exit", "quit", "/exit", "/quit", ":q"}
SHOWN_ARGS = 100


def _shown(arguments: str) -> str:
    text = " ".join(arguments.split())
    return text if len(text) <= SHOWN_ARGS else text[: SHOWN_ARGS - 1] + "…"


def _printer(as_json: bool, live: bool):
    """Print each event briefly on stderr (nothing in --json mode: stdout is the JSON);
    ``live``: the model's text is streamed to stdout as it is written."""

    def show(event: dict[str, Any]) -> None:
        if as_json:
            return
        kind = event["type"]
        if kind == "delta" and live:
            sys.stdout.write(event["text"])
            sys.stdout.flush()
        elif kind == "assistant" and live:
            print_text("")
        elif kind == "tool_result":
            status = "[green]ok[/]" if event["success"] else f"[red]error:[/] {escape(event.get('error', ''))}"
            err_console.print(f"[dim]tool[/] {escape(event['name'])} {escape(_shown(event['arguments']))} {status}",
                              highlight=False)
        elif kind == "compaction":
            err_console.print(f"[dim]compacted {event['messages']} tool result(s): "
                              f"{event['tokens_saved']:,} tokens saved[/]", highlight=False)
        elif kind == "history" and event.get("mode") not in (None, "all"):
            err_console.print(f"[dim]history: {escape(event.get('status_line', event['mode']))}[/]", highlight=False)
        elif kind == "error":
            err_console.print(f"[yellow]warning:[/] {escape(event['error'])}", highlight=False)

    return show


def _answer(sessions, session_id: str, text: str, as_json: bool) -> dict[str, Any]:
    result = sessions.send(session_id, text, on_event=_printer(as_json, sessions.stream))
    if as_json:
        print_json(result)
    else:
        if not sessions.stream:
            print_text(result["answer"])
        err_console.print(f"[dim]{result['rounds']} round(s), {len(result['tool_calls'])} tool call(s), "
                          f"{result['tokens_saved']:,} tokens saved by compaction[/]", highlight=False)
    return result


@app.command()
def agent(
    question: Optional[str] = typer.Argument(None, metavar="QUESTION", help="A question to answer and exit (else a conversation on stdin). "
                                   "A folder given first is the PATH."),
    path: Optional[Path] = PathArg,
    message: str = typer.Option(None, "--message", "-m", help="The question (instead of the positional one)."),
    session: str = typer.Option(None, "--session", "-s", help="Continue this session (an id printed earlier, agent-...)."),
    model: str = typer.Option(None, "--model", help="LiteLLM model name, e.g. openai/gpt-4o-mini, ollama/qwen2.5, "
                              "or local:qwen2.5-coder-0.5b. Default: llm.agent, else llm.fast (smartcontext.toml)."),
    api_base: str = typer.Option(None, "--api-base", help="URL of an OpenAI-compatible server (default: llm.api_base in smartcontext.toml)."),
    max_rounds: int = typer.Option(DEFAULT_MAX_ROUNDS, "--max-rounds", min=1, help="Model calls per message; the last one may not call tools."),
    list_sessions: bool = typer.Option(False, "--list", help="List the sessions and exit."),
    as_json: bool = JsonOpt,
) -> None:
    """Ask the agent: a language model with the workspace and vault tools. Sessions are
    kept in .memory/ (continue one with --session)."""
    from ..agent import AgentSessions

    # `agent PATH`, and `agent PATH QUESTION` as well as `agent QUESTION PATH`.
    if question is not None and Path(question).is_dir() and (path is None or not path.is_dir()):
        path, question = Path(question), (None if path is None else str(path))
    if message is not None and question is not None:
        raise typer.BadParameter("give the question either as an argument or with --message, not both")
    text = message if message is not None else question
    with errors():
        # On a terminal the answer appears as it is written; piped, it is printed whole.
        live = not as_json and sys.stdout.isatty()
        with AgentSessions(workspace_root(path), model=model, api_base=api_base, max_rounds=max_rounds,
                           stream=live) as sessions:
            if list_sessions:
                found = sessions.list()
                if as_json:
                    print_json({"sessions": found, "count": len(found)})
                    return
                for s in found:
                    print_text(f"{s['id']}  {s['updated']}  {s['turns']} turn(s), {s['tokens_saved']:,} tokens saved  "
                               f"{s['title']}")
                if not found:
                    err_console.print("No sessions yet.")
                return
            sessions.model()  # no model configured: say so before creating a session
            session_id = sessions.get(session)["id"] if session else sessions.create()["id"]
            if not as_json:
                err_console.print(f"[dim]session {session_id}[/]", highlight=False)
            if text is not None:
                _answer(sessions, session_id, text, as_json)
            else:
                _conversation(sessions, session_id, as_json)
            if not as_json:
                total = sessions.get(session_id)["tokens_saved"]
                err_console.print(f"[dim]session {session_id}: {total:,} tokens saved by compaction; "
                                  f"continue with --session {session_id}[/]", highlight=False)


def _conversation(sessions, session_id: str, as_json: bool) -> None:
    """One message per line from stdin until EOF or ``exit``; a failed model call is
    reported and the conversation goes on."""
    from ..errors import LLMError, SessionBusy

    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            err_console.print("[bold]you>[/] ", end="")
        line = sys.stdin.readline()
        if not line:
            return
        text = line.strip()
        if not text:
            continue
        if text.lower() in EXIT_WORDS:
            return
        try:
            _answer(sessions, session_id, text, as_json)
        except (LLMError, SessionBusy) as exc:
            if as_json:
                print_json({"session_id": session_id, "error": str(exc)})
            else:
                err_console.print(f"[red]Error:[/] {escape(str(exc))}", highlight=False)
        if interactive and not as_json:
            err_console.print()
