"""``smartcontext chat ...``: topics, the filter, the history for a pending message,
imports and events of the chats in ``.memory/``. Each command is one call into
``chat.SmartContext`` / ``chat.Chat``; ``--json`` prints the same answer as the MCP tool."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from .root import PathArg, app, open_workspace
from .output import err_console, errors, out_console, print_json, print_text

chat_app = typer.Typer(help="Chat context: topics, topic filter, sticky instructions, filtered history.",
                       no_args_is_help=True)
app.add_typer(chat_app, name="chat")

ChatIdArg = typer.Argument(..., help="The chat id: .memory/CHAT_ID.json in the workspace.")
JsonFlag = typer.Option(False, "--json", help="Print as JSON (the MCP tool's answer).")


def _chats(path: Optional[Path]):
    return open_workspace(path).chats()


def _print_events(events: list[dict]) -> None:
    for ev in events:
        err_console.print(f"[dim]event[/] {escape(ev['event'])}  {escape(describe_event(ev['event'], ev['data']))}",
                          highlight=False)


def _with_events(sc, run):
    seen: list[dict] = []
    unsubscribe = sc.subscribe("*", lambda e, p: seen.append({"event": e, "data": p}))
    try:
        return run(), seen
    finally:
        unsubscribe()


@chat_app.command("list")
def list_chats(path: Optional[Path] = PathArg, as_json: bool = JsonFlag) -> None:
    """The chats of the workspace (``.memory/*.json``)."""
    with errors():
        ids = _chats(path).chat_ids()
        if as_json:
            print_json({"chats": ids, "count": len(ids)})
            return
        for cid in ids:
            out_console.print(escape(cid), highlight=False)


@chat_app.command()
def topics(
    chat_id: str = ChatIdArg,
    path: Optional[Path] = PathArg,
    extract: bool = typer.Option(False, "--extract", help="Regenerate the topics first."),
    method: str = typer.Option("auto", "--method", help="With --extract: auto (the llm.fast model if set, else local), llm or local."),
    as_json: bool = JsonFlag,
) -> None:
    """The chat's topics (smart_context.get_topics); --extract regenerates them."""
    with errors():
        sc = _chats(path)
        extraction = None
        if extract:
            extraction = sc.chat(chat_id, must_exist=True).extract_topics(method)
        answer = sc.get_topics(chat_id)
        if as_json:
            print_json({**answer, **({"extraction": extraction.to_dict()} if extraction else {})})
            return
        if extraction is not None:
            err_console.print(f"[dim]topics by {escape(extraction.method)} in {extraction.seconds:.2f}s[/]")
            if extraction.error:
                err_console.print(f"[yellow]warning:[/] {escape(extraction.error)} (previous topics kept)")
        for t in answer["topics"]:
            if t.get("sticky"):
                out_console.print(f"[bold]locked[/] {escape(t['label'])} ({t['count']}): "
                                  f"{escape(', '.join(t['message_ids']))}", highlight=False)
            else:
                out_console.print(f"{t['count']:>4}  {escape(t['label'])}", highlight=False)
        err_console.print(f"[dim]{answer['total_messages']} messages[/]")


@chat_app.command("filter")
def set_filter(
    chat_id: str = ChatIdArg,
    topic: list[str] = typer.Option([], "--topic", "-t", help="A topic label to select (repeat); none clears the filter."),
    path: Optional[Path] = PathArg,
    as_json: bool = JsonFlag,
) -> None:
    """Select topics (smart_context.set_filter); without --topic, clear the filter."""
    with errors():
        sc = _chats(path)
        answer, events = _with_events(sc, lambda: sc.set_filter(topic, chat_id))
        if as_json:
            print_json({**answer, "events": events})
            return
        _print_events(events)
        out_console.print(("Active topics: " + ", ".join(answer["active_topics"])) if answer["active_topics"]
                          else "Filter cleared: all messages in context", highlight=False, markup=False)
        if answer.get("matched_nothing"):
            out_console.print(answer["status_line"], highlight=False, markup=False)


@chat_app.command("mode")
def similarity_mode(
    enabled: bool = typer.Argument(..., help="on/true to filter by embedding similarity, off/false for the whole history."),
    path: Optional[Path] = PathArg,
    as_json: bool = JsonFlag,
) -> None:
    """Turn the topic filter's embedding search on or off (smart_context.set_similarity_mode)."""
    with errors():
        sc = _chats(path)
        answer, events = _with_events(sc, lambda: sc.set_similarity_mode(enabled))
        if as_json:
            print_json({**answer, "events": events})
            return
        _print_events(events)
        out_console.print(f"Similarity filter {'on' if answer['embedding_search'] else 'off'}", highlight=False)


@chat_app.command()
def context(
    chat_id: str = ChatIdArg,
    message: str = typer.Option(None, "--message", "-m", help="The pending user message (the query of the auto mode)."),
    path: Optional[Path] = PathArg,
    mode: str = typer.Option(None, "--mode", help="auto, topics, threshold or all (default: topics when a filter is active, else auto with --message, else all)."),
    max_tokens: int = typer.Option(None, "--max-tokens", "-t", help="Token budget of the auto mode."),
    share: float = typer.Option(None, "--share", help="Auto mode budget as a share of the history's tokens (from config, 0.25)."),
    as_json: bool = JsonFlag,
) -> None:
    """The history to send with the next model call."""
    from ..chat.auto import render_message

    with errors():
        result = _chats(path).chat(chat_id, must_exist=True).history(message, mode=mode, max_tokens=max_tokens, share=share)
        if as_json:
            print_json(result.to_dict())
            return
        err_console.print(f"[dim]{escape(result.status_line())} ({result.mode})[/]")
        print_text("\n".join(render_message(m) for m in result.messages))


# A message may start with "-" ("- The last bus leaves at 23:10"): an argument that looks
# like an unknown option is taken as text, not refused as "No such option: -".
@chat_app.command(context_settings={"ignore_unknown_options": True})
def add(
    chat_id: str = ChatIdArg,
    role: str = typer.Argument(..., help="user, assistant, system or tool."),
    content: Optional[str] = typer.Argument(None, help="The message text (may start with '-'); '-' or nothing: read it from stdin."),
    path: Optional[Path] = PathArg,
    text: Optional[str] = typer.Option(None, "--text", help="The message text, as an option (instead of CONTENT)."),
    message_id: str = typer.Option(None, "--id", help="The message id (default: a new random id)."),
    extract: bool = typer.Option(None, "--extract/--no-extract", help="Extract topics after adding (default: after an assistant message)."),
    as_json: bool = JsonFlag,
) -> None:
    """Append a message to a chat (created on its first message) and bring the chat into the index."""
    with errors():
        if text is not None and content not in (None, "-") and path is None:
            path, content = Path(content), None  # `chat add ID ROLE --text T FOLDER`
        content = _message_text(content, text)
        sc = _chats(path)
        chat = sc.chat(chat_id)
        msg, events = _with_events(sc, lambda: chat.add_message(role, content, id=message_id, extract=False))
        # As over HTTP and MCP: the index holds the message before topics are extracted.
        if chat.workspace.has_index:
            chat.workspace.update_files([chat.last_written or chat.rel_path], embeddings=False)
        if chat.extracts_after(role, extract):
            _, more = _with_events(sc, chat.extract_topics)
            events += more
        extraction = chat.last_extraction.to_dict() if chat.last_extraction else None
        if as_json:
            print_json({"message": msg.to_dict(), "chat_id": chat_id, "events": events,
                        **({"extraction": extraction} if extraction else {})})
            return
        _print_events(events)
        out_console.print(f"Added {escape(msg.id)} to {escape(chat_id)}", highlight=False)


def _message_text(content: Optional[str], text: Optional[str]) -> str:
    """The text of ``chat add``: the argument, ``--text``, or stdin (``-`` or neither)."""
    import sys

    from ..errors import InvalidArgument

    if content is not None and text is not None and content != "-":
        raise InvalidArgument("give the message text once: as CONTENT or as --text, not both")
    if text is not None:
        return text
    if content is not None and content != "-":
        return content
    if sys.stdin is None or sys.stdin.isatty():
        raise InvalidArgument("no message text: pass it as CONTENT, with --text, or on stdin")
    text = sys.stdin.read()
    return text[:-1] if text.endswith("\n") else text  # the newline echo and editors end with


@chat_app.command("import")
def import_(
    source: Path = typer.Argument(..., help="An OpenAI- or Anthropic-style messages JSON, or a ChatGPT or Claude conversations.json export."),
    path: Optional[Path] = PathArg,
    chat_id: str = typer.Option(None, "--chat-id", help="The chat to write (default: the file name; a ChatGPT or Claude export uses each conversation's id)."),
    fmt: str = typer.Option("auto", "--format", help="auto, openai, chatgpt, claude or smartcontext."),
    as_json: bool = JsonFlag,
) -> None:
    """Import chats into .memory/ (re-importing adds new messages, updates edited ones, drops none)."""
    with errors():
        result = _chats(path).import_file(source, chat_id, fmt)
        if as_json:
            print_json(result.to_dict())
            return
        for c in result.chats:
            out_console.print(f"{escape(c['chat_id'])}: {c['added']} added, {c['updated']} updated, "
                              f"{c['skipped']} already there, "
                              f"{c['total']} messages", highlight=False)


@chat_app.command()
def events(
    path: Optional[Path] = PathArg,
    since: float = typer.Option(0.0, "--since", help="Only events after this time (an earlier event's 'time' in --json)."),
    limit: int = typer.Option(50, "--limit", "-n", help="Number of events."),
    as_json: bool = JsonFlag,
) -> None:
    """The recent chat events (topics_updated, filter_changed, highlight_applied)."""
    with errors():
        found = _chats(path).recent_events(since, limit)
        if as_json:
            print_json({"events": found, "count": len(found)})
            return
        for ev in found:
            out_console.print(event_line(ev), highlight=False, markup=False)


def event_line(ev: dict) -> str:
    """One readable line per event: local time, event, what it says."""
    import time

    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ev.get("time", 0))))
    return f"{when}  {ev.get('event', '?')}  {describe_event(ev.get('event', ''), ev.get('data') or {})}"


def describe_event(name: str, data: dict) -> str:
    chat = f"chat {data['chat_id']}: " if data.get("chat_id") else ""
    if name.endswith("filter_changed"):
        topics = data.get("active_topics") or []
        return chat + (f"filter on {', '.join(topics)}" if topics else "filter cleared")
    if name.endswith("topics_updated"):
        labels = [t.get("label", "?") for t in data.get("topics", []) if isinstance(t, dict)]
        return chat + f"{len(labels)} topics ({', '.join(labels)}), {data.get('total_messages', 0)} messages"
    if name.endswith("highlight_applied"):
        return chat + f"{len(data.get('message_ids', []))} messages highlighted"
    return chat + ", ".join(f"{k}={v}" for k, v in data.items() if k != "chat_id")
