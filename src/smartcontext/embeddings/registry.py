"""Turn a model spec from configuration into an Embedder.

Specs:
    None, "default", "local:static"   a static model distilled from the bundled MiniLM
                                      (built once on first use, then cached; embeddings/static.py)
    "local:minilm"                    the bundled all-MiniLM-L6-v2 (int8 ONNX) itself
    "onnx:/path/to/folder"            a local folder with model.onnx + tokenizer.json
    "litellm:<model>"                 any LiteLLM embedding model
    "<provider>/<model>"              shorthand for litellm:<provider>/<model>,
                                      e.g. "openai/text-embedding-3-small"

The built-ins register through the ``register_embedders`` plugin hook
(``embeddings.builtin``), like an installed plugin's models; the registry asks the plugin
manager once, on first use. Code adds models with :func:`register_embedder` (an exact
spec) or :func:`register_scheme` (a ``scheme:argument`` family); either replaces an
earlier registration of the same name.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from ..errors import EmbeddingError, did_you_mean
from ..plugins import HookOnce
from .base import Embedder

NamedFactory = Callable[..., Embedder]
SchemeFactory = Callable[..., Embedder]

_named: dict[str, NamedFactory] = {}
_schemes: dict[str, SchemeFactory] = {}
_lock = threading.RLock()
_hook = HookOnce("register_embedders", _lock)

# The default, chosen by the measured tables in docs/benchmarks.md ("Embeddings"):
# 175x the items per CPU second of MiniLM, LoCoMo retrieval at its level.
DEFAULT_SPEC = "local:static"


def _add(spec_or_scheme: str, factory: Callable[..., Embedder], scheme: bool = False) -> None:
    """What the ``register_embedders`` hook receives as ``register``."""
    if scheme:
        if not spec_or_scheme or ":" in spec_or_scheme or "/" in spec_or_scheme:
            raise EmbeddingError(f"an embedder scheme is a plain word, got {spec_or_scheme!r}")
        with _lock:
            _schemes[spec_or_scheme] = factory
    else:
        with _lock:
            _named[spec_or_scheme] = factory


def _load_plugins() -> None:
    _hook(_add)


def register_embedder(spec: str, factory: NamedFactory) -> None:
    """Make ``get_embedder(spec, **options)`` call ``factory(**options)``."""
    _load_plugins()  # first, so a built-in registered later cannot replace this one
    _add(spec, factory)


def register_scheme(scheme: str, factory: SchemeFactory) -> None:
    """Make ``get_embedder("<scheme>:<arg>", **options)`` call ``factory(arg, **options)``."""
    _load_plugins()
    _add(scheme, factory, scheme=True)


def known_specs() -> list[str]:
    """Exact specs and ``scheme:`` prefixes that :func:`get_embedder` accepts."""
    _load_plugins()
    return sorted(_named) + sorted(f"{s}:..." for s in _schemes) + ["<provider>/<model>"]


def get_embedder(spec: str | None = None, **options: Any) -> Embedder:
    """The embedder named by ``spec``; ``options`` go to its factory (api_base, api_key, batch_size, ...).

    Options whose value is None are left to the factory's defaults, so configuration
    can pass every known key.
    """
    _load_plugins()
    options = {k: v for k, v in options.items() if v is not None}
    spec = (spec or "").strip() or "default"
    factory = _named.get(spec)
    if factory is not None:
        return _call(factory, spec, (), options)
    scheme, sep, arg = spec.partition(":")
    if sep and scheme in _schemes:
        if not arg.strip():
            raise EmbeddingError(f"embedding model spec {spec!r} names no model after '{scheme}:'")
        return _call(_schemes[scheme], spec, (arg.strip(),), options)
    if "/" in spec and not spec.startswith(("/", ".", "~")) and "litellm" in _schemes:
        return _call(_schemes["litellm"], spec, (spec,), options)
    raise EmbeddingError(_unknown(spec))


def spec_problem(spec: str | None) -> str | None:
    """Why ``spec`` names no embedder (an unknown name, a scheme with no model), or None
    when :func:`get_embedder` would know it; loads no model (``status`` asks this)."""
    _load_plugins()
    spec = (spec or "").strip() or "default"
    if spec in _named:
        return None
    scheme, sep, arg = spec.partition(":")
    if sep and scheme in _schemes:
        return None if arg.strip() else f"embedding model spec {spec!r} names no model after '{scheme}:'"
    if "/" in spec and not spec.startswith(("/", ".", "~")) and "litellm" in _schemes:
        return None
    return _unknown(spec)


def _unknown(spec: str) -> str:
    return f"unknown embedding model {spec!r}{did_you_mean(spec, _named)} (known: {', '.join(known_specs())})"


def _call(factory: Callable[..., Embedder], spec: str, args: tuple, options: dict[str, Any]) -> Embedder:
    # Unknown options are a configuration mistake; say which ones instead of a TypeError.
    try:
        inspect.signature(factory).bind(*args, **options)
    except TypeError:
        accepted = [
            p.name for p in inspect.signature(factory).parameters.values()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        ][len(args):]
        raise EmbeddingError(
            f"embedding model {spec!r} does not take options {sorted(options)}; "
            f"it accepts: {', '.join(accepted) or 'none'}"
        ) from None
    return factory(*args, **options)
