"""Configuration: ``smartcontext.toml`` at the workspace root, or the
``[plugins.smart_context]`` table of a vault's ``.vault.toml``. Every key is optional.

    [index]
    include = ["src/**"]          # gitignore-style globs; empty = everything
    exclude = ["docs/legacy/**"]
    max_file_bytes = 1000000
    text_files = true             # also index .rst/.txt/.adoc as plain text
    respect_gitignore = true

    [embeddings]
    model = "local:static"        # "local:minilm", "none", "onnx:/path/to/folder", "openai/text-embedding-3-small", ...
    enabled = true                # false: keyword + graph only (same as model = "none")
    api_base = ""                 # for remote models (LiteLLM)
    api_key_env = ""              # name of the environment variable holding the key
    batch_size = 32

    [context]
    max_tokens = 8000
    encoding = "cl100k_base"
    exclude_tests = false
    expand_depth = 1

    [store]                       # where the index lives (default: .smartcontext/index.db)
    url = ""                      # "postgresql://user@host/db": a shared PostgreSQL + pgvector
    workspace = ""                # its name in that database (default: the folder's name)

    [llm]                         # models by category, for LLM-backed features
    fast = ""                     # e.g. "openai/gpt-4o-mini"; empty = local methods

    # Chat context (the seed's [plugins.smart_context] keys), at the top level of the
    # table, as .vault.toml writes them, or in a [chat] section of smartcontext.toml:
    enabled = true
    similarity_threshold = 0.4    # topic filter: minimum cosine to a selected topic
    embedding_search = true       # false: the topic filter keeps the whole history
    extraction_category = "fast"  # the [llm] category that extracts topics
    # and, in [chat] only: history_tokens = 4000, context_tokens = 1500 (a chat's answers)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, did_you_mean

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
    """enabled = false (or model = "none") gives keyword + graph only: nothing is
    embedded, by ``index`` or in the background of a server."""

    model: str = "local:static"
    enabled: bool = True
    api_base: str = ""
    api_key_env: str = ""
    batch_size: int = 32

    @property
    def active(self) -> bool:
        """Whether vectors are computed and used: switched on and a model named."""
        return self.enabled and self.model.lower() not in ("", "none", "off", "false")


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
    embedding_model:     the model chat messages are compared with: all-MiniLM-L6-v2 by
                         default, because ``similarity_threshold`` is a cosine on its
                         scale (the static default of ``[embeddings]`` scores on another:
                         measured in docs/benchmarks.md); "" = the ``[embeddings]`` model.
    history_tokens:      a model's answer in a chat (the web page's chat view): without
                         selected topics, the earlier messages it is sent, chosen by the
                         automatic filter within this many tokens; 0 sends them all.
    context_tokens:      the folder's context sent with each question, in tokens; 0 sends none.
    """

    enabled: bool = True
    similarity_threshold: float = 0.4
    embedding_search: bool = True
    extraction_category: str = "fast"
    history_share: float = 0.25
    neighbours: int = 2
    embedding_model: str = "local:minilm"
    history_tokens: int = 4000
    context_tokens: int = 1500


# The seed's keys, written at the top level of [plugins.smart_context].
CHAT_TOP_LEVEL_KEYS = ("enabled", "similarity_threshold", "embedding_search", "extraction_category")


@dataclass
class StoreConfig:
    url: str = ""  # empty: the SQLite file in .smartcontext/; SMARTCONTEXT_STORE_URL overrides
    workspace: str = ""  # the workspace's name in a shared database (default: folder name)


@dataclass
class Config:
    index: IndexConfig = field(default_factory=IndexConfig)
    embeddings: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    context: ContextDefaults = field(default_factory=ContextDefaults)
    llm: dict[str, str] = field(default_factory=dict)
    chat: ChatConfig = field(default_factory=ChatConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    source: str | None = None  # the file it came from

    @classmethod
    def load(cls, root: Path) -> "Config":
        table, path, prefix = _config_table(root)
        cfg = cls()
        if table:
            try:
                cfg = cls.from_dict(table, prefix)
            except ConfigError as exc:
                # Which file: a vault may have both smartcontext.toml and .vault.toml.
                raise ConfigError(f"{path}: {exc}") from None
            cfg.source = str(path)
        for (section, key), var in ENV_OVERRIDES.items():
            value = os.environ.get(var)
            if value:
                setattr(getattr(cfg, section), key, value)
        return cfg

    @classmethod
    def from_dict(cls, table: dict[str, Any], prefix: str = "") -> "Config":
        """``prefix`` names where the tables sit in the file (``plugins.smart_context.``
        in .vault.toml), so errors name the section as the user wrote it. The chat keys
        (``CHAT_TOP_LEVEL_KEYS``) may also sit at the top level, as the seed writes them."""
        known = {"index", "embeddings", "context", "llm", "store", "chat"}
        for name in sorted(set(table) - known - set(CHAT_TOP_LEVEL_KEYS)):
            if not isinstance(table[name], dict):
                where = f"[{prefix[:-1]}]" if prefix else "the top level"
                raise ConfigError(
                    f"unknown key {name!r} in {where}{did_you_mean(name, CHAT_TOP_LEVEL_KEYS)}; "
                    f"known: {', '.join(CHAT_TOP_LEVEL_KEYS)} and the sections "
                    f"{', '.join(f'[{prefix}{k}]' for k in sorted(known))}"
                )
            raise ConfigError(
                f"unknown section [{prefix}{name}]{did_you_mean(name, known)}; "
                f"known: {', '.join(f'[{prefix}{k}]' for k in sorted(known))}"
            )
        chat_table = table.get("chat", {})
        if not isinstance(chat_table, dict):
            raise ConfigError(f"[{prefix}chat] must be a table")
        chat_table = {**{k: table[k] for k in CHAT_TOP_LEVEL_KEYS if k in table}, **chat_table}
        llm = table.get("llm", {})
        if not isinstance(llm, dict) or not all(isinstance(v, str) for v in llm.values()):
            raise ConfigError(f"[{prefix}llm] maps categories to model names, e.g. fast = \"openai/gpt-4o-mini\"")
        config = cls(
            index=_build(IndexConfig, table.get("index", {}), prefix + "index"),
            embeddings=_build(EmbeddingConfig, table.get("embeddings", {}), prefix + "embeddings"),
            context=_build(ContextDefaults, table.get("context", {}), prefix + "context"),
            llm=dict(llm),
            store=_build(StoreConfig, table.get("store", {}), prefix + "store"),
            chat=_build(ChatConfig, chat_table, prefix + "chat"),
        )
        for key in ("include", "exclude"):
            if getattr(config.index, key):
                from .sources.discover import gitignore_patterns

                try:  # before any walk: a pattern the walk would skip is the user's mistake
                    gitignore_patterns(getattr(config.index, key), strict=True)
                except ValueError as exc:
                    raise ConfigError(f"[{prefix}index] {key}: {exc}") from None
        for key in ("history_tokens", "context_tokens"):
            if getattr(config.chat, key) < 0:
                raise ConfigError(f"[{prefix}chat] {key} must be 0 (no limit or none) or a positive number of tokens")
        return config


# Settings an environment variable overrides (after the file): (section, key) -> variable.
ENV_OVERRIDES = {
    ("embeddings", "model"): "SMARTCONTEXT_EMBEDDING_MODEL",
    ("store", "url"): "SMARTCONTEXT_STORE_URL",
}


def _config_table(root: Path) -> tuple[dict[str, Any] | None, Path, str]:
    """(the settings table, the file it is in, where the table sits in that file):
    smartcontext.toml, else the [plugins.smart_context] table of .vault.toml."""
    path = root / CONFIG_FILE
    if path.is_file():
        return _read_toml(path), path, ""
    vault = root / VAULT_CONFIG_FILE
    if vault.is_file():
        return _read_toml(vault).get("plugins", {}).get("smart_context"), vault, "plugins.smart_context."
    return None, path, ""


@dataclass
class Setting:
    """One effective setting: ``key`` as written in the file (``context.max_tokens``),
    its value, and where it came from: default, smartcontext.toml, .vault.toml,
    environment (the variable named in ``detail``) or flag."""

    key: str
    value: Any
    source: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "source": self.source, "detail": self.detail}


def config_sources(root: Path, flags: dict[str, Any] | None = None) -> list[Setting]:
    """Every setting of the workspace at ``root`` with its effective value and source.

    flags: settings a command line gave, by key (``{"store.url": url}``): they win.
    A store URL's password is never shown.
    """
    cfg = Config.load(root)
    table, path, _prefix = _config_table(root)
    table = table or {}
    chat_section = table.get("chat")
    chat_table = {**{k: table[k] for k in CHAT_TOP_LEVEL_KEYS if k in table},
                  **(chat_section if isinstance(chat_section, dict) else {})}
    flags = flags or {}
    out: list[Setting] = []
    for section in ("index", "embeddings", "context", "chat", "store"):
        obj = getattr(cfg, section)
        written = chat_table if section == "chat" else table.get(section) or {}
        for key in obj.__dataclass_fields__:
            name = f"{section}.{key}"
            value = getattr(obj, key)
            source, detail = "default", ""
            if key in written:
                source = path.name
                if section == "chat" and key in table:
                    detail = "top level of the table"
            var = ENV_OVERRIDES.get((section, key))
            if var and os.environ.get(var):
                source, detail = "environment", var
            if flags.get(name) is not None:
                value, source, detail = flags[name], "flag", ""
            if section == "store" and key == "url":
                value = _hide_password(value)
            out.append(Setting(name, value, source, detail))
    for category in sorted(cfg.llm):
        out.append(Setting(f"llm.{category}", cfg.llm[category], path.name))
    return out


def _hide_password(url: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db``."""
    import re

    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only when a configuration file exists (not on most questions' path)

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def _build(kind: type[Any], values: Any, section: str):
    if not isinstance(values, dict):
        raise ConfigError(f"[{section}] must be a table")
    fields_ = kind.__dataclass_fields__
    for key in sorted(set(values) - set(fields_)):
        raise ConfigError(
            f"unknown key {key!r} in [{section}]{did_you_mean(key, fields_)}; "
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
