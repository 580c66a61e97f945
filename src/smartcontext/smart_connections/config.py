"""Where Smart Connections keeps its data in a vault, and which model it says it used.

The plugin has stored its embedding model key in several places over its versions:

- ``.smart-env/smart_env.json``: ``smart_sources.embed_model.adapter`` names the active
  adapter and ``smart_sources.embed_model.<adapter>.model_key`` its model; keys of other
  adapters may sit beside it (a user who tried Ollama keeps ``ollama.model_key``);
  very old versions kept ``embed_model`` as a plain string or with a flat ``model_key``.
- ``.smart-env/embedding_models/embedding_models.ajson`` (newer versions): one entry per
  configured model with its ``model_key``, ``dims`` and ``max_tokens``;
  ``smart_env.json`` then says which one is current in ``embedding_models.default_model_key``.
- ``.obsidian/plugins/smart-connections/data.json``: the settings of versions that
  predate ``smart_env.json``.

Configuration can disagree with the data (a model switch half done, a settings file
copied from another vault), so the reader trusts the key the vectors are stored under;
these keys only order the candidates and are reported in ``status()``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, EmbeddingError, SmartContextError

SMART_ENV = ".smart-env"
SETTINGS = "smart_env.json"
MULTI = "multi"
EMBEDDING_MODELS = Path("embedding_models") / "embedding_models.ajson"
LEGACY_SETTINGS = Path(".obsidian") / "plugins" / "smart-connections" / "data.json"

# The three messages are the seed's wording; users of the original tool know them.
NOT_CONFIGURED = (
    "Smart Connections plugin not configured. Please install Smart Connections and enable embeddings."
)
DIFFERENT_MODEL = (
    "Smart Connections is using a different embedding model ({model}). "
    "Please configure it to use {supported} for compatibility with Witness."
)
NO_EMBEDDINGS = "No embeddings found. Please run Smart Connections indexing first."

# The plugin's default model, recommended in DIFFERENT_MODEL when nothing else can embed.
PLUGIN_DEFAULT_MODEL = "TaylorAI/bge-micro-v2"


class SmartConnectionsNotConfigured(ConfigError):
    """The vault has no ``.smart-env`` folder (or no ``smart_env.json`` in it)."""

    def __init__(self) -> None:
        super().__init__(NOT_CONFIGURED)


class SmartConnectionsModelMismatch(EmbeddingError):
    """No query model for the vault's vectors, and the caller asked for no fallback."""

    def __init__(self, model: str, supported: str = PLUGIN_DEFAULT_MODEL) -> None:
        self.model = model
        super().__init__(DIFFERENT_MODEL.format(model=model, supported=supported))


class SmartConnectionsNoEmbeddings(SmartContextError):
    """``.smart-env/multi/`` is missing, empty, or holds no vector at all."""

    def __init__(self) -> None:
        super().__init__(NO_EMBEDDINGS)


@dataclass
class ModelInfo:
    """One model the configuration names: its key and what else the plugin recorded."""

    model_key: str
    source: str
    dims: int | None = None
    max_tokens: int | None = None


@dataclass
class SmartEnvConfig:
    """What the plugin's settings say, read without touching ``multi/``."""

    vault: Path
    env_dir: Path
    multi_dir: Path
    settings_found: bool
    models: list[ModelInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def configured_keys(self) -> list[str]:
        """Model keys in order of authority (current adapter first), without repeats."""
        seen: list[str] = []
        for m in self.models:
            if m.model_key not in seen:
                seen.append(m.model_key)
        return seen

    def info(self, model_key: str) -> ModelInfo | None:
        return next((m for m in self.models if m.model_key == model_key), None)


def locate(vault: Path) -> Path:
    return Path(vault) / SMART_ENV


def read_config(vault: str | Path) -> SmartEnvConfig:
    """The plugin's settings for ``vault``; raises SmartConnectionsNotConfigured.

    The vault counts as configured when ``.smart-env/smart_env.json`` exists, or (for
    plugin versions that kept settings elsewhere) when ``.smart-env/multi/`` does.
    """
    vault = Path(vault)
    env_dir = locate(vault)
    multi_dir = env_dir / MULTI
    settings_path = env_dir / SETTINGS
    if not env_dir.is_dir() or not (settings_path.is_file() or multi_dir.is_dir()):
        raise SmartConnectionsNotConfigured()
    cfg = SmartEnvConfig(vault, env_dir, multi_dir, settings_path.is_file())
    settings = _read_json(settings_path, cfg) if cfg.settings_found else {}
    registry = _read_model_registry(env_dir / EMBEDDING_MODELS, cfg)

    default_id = _dig(settings, "embedding_models", "default_model_key")
    if isinstance(default_id, str) and default_id in registry:
        cfg.models.append(registry[default_id])
    _models_from_settings(settings, f"{SETTINGS}", cfg)
    cfg.models.extend(m for k, m in registry.items() if k != default_id)
    legacy = vault / LEGACY_SETTINGS
    if legacy.is_file():
        _models_from_settings(_read_json(legacy, cfg), str(LEGACY_SETTINGS), cfg)
    # Fill dims/max_tokens of settings-named models from the registry where it knows them.
    by_key = {m.model_key: m for m in registry.values()}
    for m in cfg.models:
        known = by_key.get(m.model_key)
        if known is not None:
            m.dims = m.dims or known.dims
            m.max_tokens = m.max_tokens or known.max_tokens
    return cfg


def _models_from_settings(settings: dict, where: str, cfg: SmartEnvConfig) -> None:
    for collection in ("smart_sources", "smart_blocks"):
        embed = _dig(settings, collection, "embed_model")
        if isinstance(embed, str) and embed:
            cfg.models.append(ModelInfo(embed, f"{where}: {collection}.embed_model"))
            continue
        if not isinstance(embed, dict):
            continue
        adapter = embed.get("adapter")
        if isinstance(adapter, str) and isinstance(embed.get(adapter), dict):
            key = embed[adapter].get("model_key")
            if isinstance(key, str) and key:
                cfg.models.append(ModelInfo(key, f"{where}: {collection}.embed_model.{adapter}.model_key"))
        if isinstance(embed.get("model_key"), str) and embed["model_key"]:
            cfg.models.append(ModelInfo(embed["model_key"], f"{where}: {collection}.embed_model.model_key"))
        for name, sub in embed.items():
            if name != adapter and isinstance(sub, dict) and isinstance(sub.get("model_key"), str) and sub["model_key"]:
                cfg.models.append(ModelInfo(sub["model_key"], f"{where}: {collection}.embed_model.{name}.model_key"))
    flat = settings.get("smart_sources_embed_model") or settings.get("embed_model_key")
    if isinstance(flat, str) and flat:
        cfg.models.append(ModelInfo(flat, f"{where}: embed model setting"))


def _read_model_registry(path: Path, cfg: SmartEnvConfig) -> dict[str, ModelInfo]:
    """``embedding_models.ajson`` entries by their id (``transformers#1780948660701``)."""
    if not path.is_file():
        return {}
    from .ajson import _fastjson  # the same decoder the vectors use

    try:
        text = path.read_text(encoding="utf-8").strip().rstrip(", \t\r\n")
        data = (_fastjson.loads if _fastjson else json.loads)("{" + text + "}") if text else {}
    except (OSError, ValueError) as exc:
        cfg.warnings.append(f"cannot read {path.name}: {exc}")
        return {}
    out: dict[str, ModelInfo] = {}
    for full_key, value in data.items():
        collection, _, item = full_key.partition(":")
        if collection != "embedding_models":
            continue
        if not isinstance(value, dict):
            out.pop(item, None)
            continue
        key = value.get("model_key")
        if isinstance(key, str) and key:
            dims = value.get("dims")
            max_tokens = value.get("max_tokens")
            out[item] = ModelInfo(
                key,
                f"{EMBEDDING_MODELS.as_posix()}: {item}",
                dims if isinstance(dims, int) else None,
                max_tokens if isinstance(max_tokens, int) else None,
            )
    return out


def _read_json(path: Path, cfg: SmartEnvConfig) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        cfg.warnings.append(f"cannot read {path}: {exc}")
        return {}
    return data if isinstance(data, dict) else {}


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
