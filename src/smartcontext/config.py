"""Configuration: ``smartcontext.toml`` at the workspace root, or the
``[plugins.smart_context]`` table of a vault's ``.vault.toml``. Every key is optional.

    [index]
    include = ["src/**"]          # gitignore-style globs; empty = everything
    exclude = ["docs/legacy/**"]
    max_file_bytes = 1000000
    text_files = true             # also index .rst/.txt/.adoc as plain text
    respect_gitignore = true

    [embeddings]
    model = "local:minilm"        # "none", "onnx:/path/to/folder", "openai/text-embedding-3-small", ...
    api_base = ""                 # for remote models (LiteLLM)
    api_key_env = ""              # name of the environment variable holding the key
    batch_size = 32

    [context]
    max_tokens = 8000
    encoding = "cl100k_base"
    exclude_tests = false
    expand_depth = 1

    [llm]                         # models by category, for LLM-backed features
    fast = ""                     # e.g. "openai/gpt-4o-mini"; empty = local methods

    # Chat context (the seed's [plugins.smart_context] keys), at the top level of the
    # table, as .vault.toml writes them, or in a [chat] section of smartcontext.toml:
    enabled = true
    similarity_threshold = 0.4    # topic filter: minimum cosine to a selected topic
    embedding_search = true       # false: the topic filter keeps the whole history
    extraction_category = "fast"  # the [llm] category that extracts topics
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

CONFIG_FILE = "smartcontext.toml"
# Seconds an index may be stale before a server's retrieval tool re-checks the folder for
# changes (``serve mcp --refresh-interval``, ``tools.ToolContext``).
DEFAULT_REFRESH_INTERVAL = 5.0
VAULT_CONFIG_FILE = ".vault.toml"


@dataclass
class IndexConfig:
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    max_file_bytes: int = 1_000_000
    text_files: bool = True
    respect_gitignore: bool = True


@dataclass
class EmbeddingConfig:
    model: str = "local:minilm"
    api_base: str = ""
    api_key_env: str = ""
    batch_size: int = 32

    @property
    def enabled(self) -> bool:
        return self.model.lower() not in ("", "none", "off", "false")


@dataclass
class ContextDefaults:
    max_tokens: int = 8000
    encoding: str = "cl100k_base"
    exclude_tests: bool = False
    expand_depth: int = 1


@dataclass
class ChatConfig:
    """Chat context settings (``chat/``).

    enabled:             chat files are read and topics extracted.
    similarity_threshold: the topic filter keeps messages whose best cosine to a selected
                         topic label reaches this.
    embedding_search:    off: the topic filter keeps the whole history (sticky included).
    extraction_category: the ``[llm]`` category whose model extracts topics; with no model
                         configured there, the local method does.
    history_share:       the automatic filter's budget as a share of the history's tokens,
                         when no ``max_tokens`` is given.
    neighbours:          turns kept either side of each retrieved message (answers and
                         the question they answer travel together).
    """

    enabled: bool = True
    similarity_threshold: float = 0.4
    embedding_search: bool = True
    extraction_category: str = "fast"
    history_share: float = 0.25
    neighbours: int = 2


# The seed's keys, written at the top level of [plugins.smart_context].
CHAT_TOP_LEVEL_KEYS = ("enabled", "similarity_threshold", "embedding_search", "extraction_category")


@dataclass
class Config:
    index: IndexConfig = field(default_factory=IndexConfig)
    embeddings: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    context: ContextDefaults = field(default_factory=ContextDefaults)
    llm: dict[str, str] = field(default_factory=dict)
    chat: ChatConfig = field(default_factory=ChatConfig)
    source: str | None = None  # the file it came from

    @classmethod
    def load(cls, root: Path) -> "Config":
        path = root / CONFIG_FILE
        table: dict[str, Any] | None = None
        if path.is_file():
            table = _read_toml(path)
        else:
            vault = root / VAULT_CONFIG_FILE
            if vault.is_file():
                table = _read_toml(vault).get("plugins", {}).get("smart_context")
                path = vault
        cfg = cls()
        if table:
            cfg = cls.from_dict(table)
            cfg.source = str(path)
        env_model = os.environ.get("SMARTCONTEXT_EMBEDDING_MODEL")
        if env_model:
            cfg.embeddings.model = env_model
        return cfg

    @classmethod
    def from_dict(cls, table: dict[str, Any]) -> "Config":
        known = {"index", "embeddings", "context", "llm", "chat"}
        unknown = set(table) - known - set(CHAT_TOP_LEVEL_KEYS)
        if unknown:
            raise ConfigError(
                f"unknown section(s) {', '.join(sorted(unknown))} in configuration; "
                f"known: {', '.join(sorted(known | set(CHAT_TOP_LEVEL_KEYS)))}"
            )
        chat_table = table.get("chat", {})
        if not isinstance(chat_table, dict):
            raise ConfigError("[chat] must be a table")
        chat_table = {**{k: table[k] for k in CHAT_TOP_LEVEL_KEYS if k in table}, **chat_table}
        llm = table.get("llm", {})
        if not isinstance(llm, dict) or not all(isinstance(v, str) for v in llm.values()):
            raise ConfigError("[llm] maps categories to model names, e.g. fast = \"openai/gpt-4o-mini\"")
        return cls(
            index=_build(IndexConfig, table.get("index", {}), "index"),
            embeddings=_build(EmbeddingConfig, table.get("embeddings", {}), "embeddings"),
            context=_build(ContextDefaults, table.get("context", {}), "context"),
            llm=dict(llm),
            chat=_build(ChatConfig, chat_table, "chat"),
        )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def _build(kind: type, values: Any, section: str):
    if not isinstance(values, dict):
        raise ConfigError(f"[{section}] must be a table")
    fields_ = kind.__dataclass_fields__
    unknown = set(values) - set(fields_)
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(sorted(unknown))} in [{section}]; "
            f"known: {', '.join(sorted(fields_))}"
        )
    obj = kind()
    for key, value in values.items():
        default = getattr(obj, key)
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ConfigError(f"[{section}] {key} must be true or false")
        if isinstance(default, int) and not isinstance(default, bool) and (
            not isinstance(value, int) or isinstance(value, bool)
        ):
            raise ConfigError(f"[{section}] {key} must be an integer")
        if isinstance(default, float) and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            raise ConfigError(f"[{section}] {key} must be a number")
        if isinstance(default, str) and not isinstance(value, str):
            raise ConfigError(f"[{section}] {key} must be a string")
        if isinstance(default, list) and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise ConfigError(f"[{section}] {key} must be a list of strings")
        setattr(obj, key, value)
    return obj
