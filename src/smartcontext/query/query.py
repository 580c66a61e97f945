"""``Query``: one question as every front end hands it to the engine.

The CLI, the MCP and HTTP tools and the Python API each build a Query with
``Query.build``, which checks every value against the profile's declared options
(``query.options``) and fills what the user left out from the folder's configuration,
then from the declared default. Below this point nothing checks or defaults an option
again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import InvalidArgument
from .profiles import Profile, profile

__all__ = ["Query", "Scope"]

# Where a question's scope lives in the Query rather than among its options.
SCOPE_FIELDS = ("paths", "exclude", "kinds", "tags", "chat_id")


@dataclass(frozen=True)
class Scope:
    """Which part of the index a question may draw from.

    paths:   folder, file or glob prefixes to keep (empty = everything).
    exclude: gitignore-style globs to leave out.
    kinds:   item kinds to keep (module, class, function, method, section, text...).
    tags:    note tags to keep (nested tags match their parent).
    chat_id: the one chat a chat-history question reads.
    """

    paths: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    chat_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"paths": list(self.paths), "exclude": list(self.exclude), "kinds": list(self.kinds),
                "tags": list(self.tags), "chat_id": self.chat_id}


@dataclass(frozen=True)
class Query:
    """A checked question: its text, budget, scope, format and options.

    profile:    the name of the profile that answers it (``query.profiles``).
    max_tokens: the budget (None for profiles that return ranked lists).
    options:    every other declared option of the profile, resolved (given, else the
                configuration, else the declared default).
    """

    text: str
    profile: str
    max_tokens: int | None = None
    format: str = "mu"
    scope: Scope = Scope()
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def build(cls, profile_name: str, text: str, defaults: Any = None, **given: Any) -> "Query":
        """Check ``given`` (None = not given) against the profile's options and resolve
        defaults: ``defaults`` is the configuration section (``config.ContextDefaults``)
        whose attributes the options' ``config_key`` name."""
        prof = profile(profile_name)
        text_option = next(o for o in prof.options if o.name in ("question", "query"))
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgument(f"the {text_option.name} is empty")
        text_option.check(text)
        declared = {o.name: o for o in prof.options if o.part_of_query and o is not text_option}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            from ..errors import did_you_mean

            first = unknown[0]
            raise InvalidArgument(
                f"unknown {prof.noun} option {first!r}{did_you_mean(first, declared)}; "
                f"valid: {', '.join(sorted(declared))}"
            )
        values: dict[str, Any] = {}
        for name, option in declared.items():
            value = option.check(given.get(name))
            if value is None and option.config_key and defaults is not None:
                value = option.check(getattr(defaults, option.config_key))
            if value is None:
                value = option.default
            values[name] = value
        scoped: dict[str, Any] = {
            k: (tuple(values.pop(k) or ()) if k != "chat_id" else values.pop(k))
            for k in SCOPE_FIELDS if k in values
        }
        scope = Scope(**scoped)
        return cls(
            text=text, profile=prof.name, max_tokens=values.pop("max_tokens", None),
            format=values.pop("format", "mu"), scope=scope, options=MappingProxyType(values),
        )

    @property
    def spec(self) -> Profile:
        return profile(self.profile)

    def option(self, name: str) -> Any:
        return self.options[name]

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "profile": self.profile, "max_tokens": self.max_tokens,
                "format": self.format, "scope": self.scope.to_dict(), "options": dict(self.options)}
