"""The vault tools as a model sees them: name, description and the JSON schema of their
parameters, as plain data.

The tool registry (``smartcontext.tools``) checks every call against these schemas, the
one argument check there is; ``VaultTools`` uses the same check for direct calls.
"""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100, "description": "Maximum number of results."}


def _spec(
    name: str,
    description: str,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties or {},
            "required": required or [],
            "additionalProperties": False,
        },
    }


TOOL_SPECS: list[dict[str, Any]] = [
    _spec(
        "read_file",
        "Read a note or text file of the vault. Long files come in pages: the content then ends "
        "with '[... truncated at char N of TOTAL. Use offset=N to read more.]'. A name without "
        "extension means .md; a bare note name (no folder) is found anywhere in the vault.",
        {
            "path": {**_STR, "description": "Path relative to the vault root, e.g. 'Projects/Plan.md'."},
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Character to start from."},
            "length": {"type": "integer", "minimum": 1, "maximum": 100_000, "default": 4000,
                       "description": "Characters to return."},
        },
        ["path"],
    ),
    _spec(
        "create_file",
        "Create a note (or another text file). '.md' is added when the name has no text extension. "
        "Folders are created as needed. An existing file is only replaced with overwrite=true.",
        {
            "path": {**_STR, "description": "Path relative to the vault root."},
            "content": {**_STR, "description": "The full text of the file."},
            "overwrite": {"type": "boolean", "default": False, "description": "Replace an existing file."},
        },
        ["path", "content"],
    ),
    _spec(
        "move_file",
        "Move or rename one file. The destination may be a folder (ending with '/'); missing folders "
        "are created; an existing file is never replaced. Links in other notes are not rewritten.",
        {
            "source": {**_STR, "description": "Current path relative to the vault root."},
            "destination": {**_STR, "description": "New path, or a folder ending with '/'."},
        },
        ["source", "destination"],
    ),
    _spec(
        "batch_move_files",
        "Move several files in one call; each move succeeds or fails on its own and is reported.",
        {
            "moves": {
                "type": "array",
                "minItems": 1,
                "maxItems": 500,
                "description": "The moves, done in order.",
                "items": {
                    "type": "object",
                    "properties": {"source": _STR, "destination": _STR},
                    "required": ["source", "destination"],
                    "additionalProperties": False,
                },
            }
        },
        ["moves"],
    ),
    _spec(
        "append_to_file",
        "Add text to the end of an existing file (on a new line if the file does not end with one).",
        {
            "path": {**_STR, "description": "Path relative to the vault root."},
            "content": {**_STR, "description": "Text to add."},
        },
        ["path", "content"],
    ),
    _spec(
        "find_backlinks",
        "List the notes that link to a note ([[wikilinks]], embeds, markdown links, links in properties).",
        {"note_name": {**_STR, "description": "The note's name ('Plan') or path ('Projects/Plan.md')."}},
        ["note_name"],
    ),
    _spec(
        "find_outlinks",
        "List what a note links to: vault paths for links that resolve, the link text for those that do not "
        "(also listed in 'unresolved').",
        {"path": {**_STR, "description": "The note's path (or name)."}, "limit": _LIMIT},
        ["path"],
    ),
    _spec(
        "search_by_folder",
        "List the markdown notes in a folder ('' or '/' for the whole vault).",
        {
            "folder": {**_STR, "description": "Folder relative to the vault root."},
            "recursive": {"type": "boolean", "default": True, "description": "Include sub-folders."},
            "limit": _LIMIT,
        },
        ["folder"],
    ),
    _spec(
        "list_files_by_frontmatter",
        "List notes by a frontmatter property: every note that has it, or those whose value matches. "
        "List values (tags, aliases) match when one element matches; 'tags' ignores a leading '#'.",
        {
            "field": {**_STR, "description": "Property name, e.g. 'status' or 'tags'."},
            "value": {"type": ["string", "number", "boolean"],
                      "description": "Value to match; omit to list notes having the property."},
            "match_type": {"type": "string", "enum": ["contains", "exact"], "default": "contains",
                           "description": "'contains': case-insensitive substring; "
                                          "'exact': case-insensitive equality."},
            "limit": _LIMIT,
        },
        ["field"],
    ),
    _spec(
        "update_frontmatter",
        "Change a note's frontmatter properties; the rest of the note is left exactly as it is. "
        "A 'YYYY-MM-DD' string is written as a date.",
        {
            "path": {**_STR, "description": "The note's path."},
            "updates": {"type": "object", "description": "Properties to set: {name: value}."},
            "remove": {"type": "array", "items": _STR, "description": "Properties to delete."},
            "append": {"type": "object",
                       "description": "Values to add to list properties, e.g. {\"tags\": [\"project\"]}; "
                                      "duplicates are skipped."},
        },
        ["path"],
    ),
    _spec(
        "search_by_date_range",
        "List notes whose date falls in a range (inclusive), newest first. date_field 'modified' is the "
        "file's modification time; 'created' is the 'created' property when present, else the file's "
        "creation time (or modification time where the system does not record creation); any other name "
        "is a frontmatter property holding a date.",
        {
            "start_date": {**_STR, "description": "First day, YYYY-MM-DD (or 'today')."},
            "end_date": {**_STR, "description": "Last day, YYYY-MM-DD; default today."},
            "date_field": {**_STR, "default": "modified",
                           "description": "'modified', 'created' or a frontmatter property."},
            "limit": _LIMIT,
        },
        ["start_date"],
    ),
    _spec(
        "save_preference",
        "Remember a user preference for future conversations (one line).",
        {"preference": {**_STR, "description": "The preference, e.g. 'Answer in French'."}},
        ["preference"],
    ),
    _spec("list_preferences", "List the saved user preferences, numbered."),
    _spec(
        "remove_preference",
        "Forget a saved preference by its number in list_preferences.",
        {"line_number": {"type": "integer", "minimum": 1, "description": "The number shown by list_preferences."}},
        ["line_number"],
    ),
    _spec(
        "log_interaction",
        "Record what was done in this conversation in the vault's interaction log.",
        {
            "task_description": {**_STR, "description": "What the user asked for."},
            "query": {**_STR, "description": "The user's request as written."},
            "summary": {**_STR, "description": "What was done or answered."},
            "files": {"type": "array", "items": _STR, "description": "Vault files used or changed."},
            "full_response": {**_STR, "description": "The full answer, if worth keeping."},
        },
        ["task_description", "query", "summary"],
    ),
    _spec("get_current_date", "Today's date (YYYY-MM-DD), weekday and local time."),
    _spec(
        "search_vault",
        "Search the vault's notes by meaning and keywords; returns matching sections with their file "
        "('source'), heading and a snippet.",
        {
            "query": {**_STR, "description": "What to look for, in plain words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            "mode": {"type": "string", "enum": ["hybrid", "keyword", "semantic"], "default": "hybrid"},
            "folder": {**_STR, "description": "Only notes under this folder."},
            "tags": {"type": "array", "items": _STR, "description": "Only notes with one of these tags."},
        },
        ["query"],
    ),
    _spec(
        "keyword_search",
        "Find notes containing the query's words (full-text, ranked by BM25).",
        {
            "query": {**_STR, "description": "Words to find."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        },
        ["query"],
    ),
]

SPECS_BY_NAME: dict[str, dict[str, Any]] = {spec["name"]: spec for spec in TOOL_SPECS}
