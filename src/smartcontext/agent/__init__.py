"""The agent: a language model with the workspace and vault tools, in persisted sessions.

``compaction``  the tool-result stubs shared by every front end (the seed's module)
``models``      the model: LiteLLM tool calling, or the optional local GGUF
``loop``        one user turn: history filter, model call, tool calls, compaction
``sessions``    ``AgentSessions``: create, list, get, send, delete (CLI agent, HTTP sessions)
"""

from .compaction import build_tool_stub, compact_tool_messages
from .loop import AgentLoop, TurnResult
from .sessions import AgentSessions

__all__ = ["AgentLoop", "AgentSessions", "TurnResult", "build_tool_stub", "compact_tool_messages"]
