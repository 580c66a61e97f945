"""Which messages are instructions or preferences ("be concise", "answer in French",
"use Python 3"): the local classifier behind the sticky topic.

The seed asks the LLM to flag these because short instructions have no useful embedding
similarity to content topics. Without an LLM, a weighted-feature classifier does: short
user (or system) messages that open with an imperative or state a standing preference
score up, questions and long messages score down. Each feature is a pattern a person can
read; ``instruction_score`` says why a message scored as it did.
"""

from __future__ import annotations

import re

from .files import Message

# A message longer than this many words is content, not a standing instruction.
MAX_WORDS = 30
THRESHOLD = 1.3

_IMPERATIVE_START = re.compile(
    r"^(please\s+)?(always|never|don'?t|do\s+not|be|use|answer|respond|reply|write|keep|avoid|"
    r"stop|start|format|explain|speak|talk|call\s+me|refer\s+to\s+me|stick\s+to|make\s+sure|"
    r"remember|note\s+that|from\s+now\s+on|going\s+forward|no\s+more|only|prefer|give\s+me|show\s+me\s+only)\b",
    re.IGNORECASE,
)
# Openings that make an imperative a standing rule rather than a one-off request.
_STANDING_START = re.compile(
    r"^(please\s+)?(always|never|don'?t|do\s+not|from\s+now\s+on|going\s+forward|stop|no\s+more)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(i\s+prefer|i'?d\s+prefer|i\s+want\s+you\s+to|i'?d\s+like\s+you\s+to|i\s+would\s+like\s+you\s+to|"
    r"please\s+always|from\s+now\s+on|going\s+forward|in\s+future|for\s+the\s+rest\s+of|every\s+time|"
    r"my\s+preference|keep\s+(it|answers|responses|replies)|no\s+emojis?|without\s+emojis?)\b",
    re.IGNORECASE,
)
_STYLE = re.compile(
    r"\b(concise|brief|briefly|short(er)?\s+(answers?|replies|responses)|succinct|terse|verbose|detailed|"
    r"bullet(\s+points|ed)?|markdown|plain\s+text|formal|informal|casual|tone|step[-\s]by[-\s]step|"
    r"code\s+only|no\s+explanations?|type\s+hints|python\s*3|typescript|metric|celsius|fahrenheit|"
    r"british|american\s+english|in\s+(english|french|german|spanish|italian|portuguese|dutch|japanese|"
    r"chinese|korean|russian|arabic|hindi))\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(what|why|how|when|where|who|which|is|are|does|do\s+you|did|can\s+you\s+(tell|explain|show)|could|would|should)\b",
    re.IGNORECASE,
)


def instruction_score(message: Message) -> tuple[float, list[str]]:
    """(score, reasons); a message scoring ``THRESHOLD`` or more is an instruction."""
    text = " ".join(message.content.split())
    words = text.split()
    if not words or message.role not in ("user", "system"):
        return 0.0, ["not a user or system message" if words else "empty"]
    score, why = 0.0, []
    if _IMPERATIVE_START.search(text):
        score += 0.9
        why.append("starts with an imperative")
    if _STANDING_START.search(text):
        score += 0.4
        why.append("a standing rule (always, never, from now on...)")
    if _PREFERENCE.search(text):
        score += 1.0
        why.append("states a standing preference")
    if _STYLE.search(text):
        score += 0.6
        why.append("names a style, format or language")
    if len(words) <= 12:
        score += 0.3
        why.append("short")
    elif len(words) > MAX_WORDS:
        score -= 2.0
        why.append("long")
    if text.endswith("?") or _QUESTION_START.search(text):
        score -= 1.2
        why.append("a question")
    if message.role == "system":
        score += 0.5
        why.append("a system message")
    return score, why


def is_instruction(message: Message) -> bool:
    return instruction_score(message)[0] >= THRESHOLD


def sticky_message_ids(messages: list[Message]) -> list[str]:
    """Ids of the instruction messages, in chat order."""
    return [m.id for m in messages if is_instruction(m)]
