"""Chat context: topics of a conversation, the topic filter, sticky instructions, the
automatic history filter, and the seed's ``smart_context.*`` commands and events.

Chat messages are items of the chat source (``sources.chat``) in the workspace index;
this package holds what is particular to chats. Open it from a workspace:

    chat = Workspace.open(".").chat("trip")
"""

from .events import EVENTS, FILTER_CHANGED, HIGHLIGHT_APPLIED, TOPICS_UPDATED, EventBus
from .files import MEMORY_DIR, STICKY_LABEL, ChatData, ChatFile, Message
from .filter import HistoryResult
from .importers import import_chats
from .session import COMMANDS, Chat, SmartContext
from .topics import TopicResult

__all__ = [
    "COMMANDS", "EVENTS", "FILTER_CHANGED", "HIGHLIGHT_APPLIED", "MEMORY_DIR", "STICKY_LABEL",
    "TOPICS_UPDATED", "Chat", "ChatData", "ChatFile", "EventBus", "HistoryResult", "Message",
    "SmartContext", "TopicResult", "import_chats",
]
