"""Which names create a custom derivative and which attribute names can register or transform one:
the collector's name tables (`Recognizer`: JAX's creators, the libraries', and the aliases the
settings and the run add)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, Optional, Tuple

from vjplint.model.jaxapi import API_REGISTRATION_METHODS, JAX_JVP, JAX_VJP, LIBRARY_CREATORS, REGISTRATION_METHODS, TRANSFORMS, canonical_creator

if TYPE_CHECKING:
    from vjplint.model.run_facts import RunFacts
    from vjplint.settings.config import Config


@dataclass
class Recognizer:
    """Which qualified names create custom derivatives; aliases map to their nondiff keyword."""

    vjp: Dict[str, str] = field(default_factory=lambda: {n: "nondiff_argnums" for n in (*JAX_VJP, *LIBRARY["vjp"])})
    jvp: Dict[str, str] = field(default_factory=lambda: {n: "nondiff_argnums" for n in (*JAX_JVP, *LIBRARY["jvp"])})
    aliases: frozenset = frozenset()

    @classmethod
    def with_aliases(cls, vjp_aliases: Dict[str, str], jvp_aliases: Dict[str, str]) -> "Recognizer":
        r = cls()
        r.vjp.update(vjp_aliases)
        r.jvp.update(jvp_aliases)
        # An inferred re-export of JAX's own creator (vjplint.project.index) is no wrapper.
        r.aliases = frozenset(n for n, kw in [*vjp_aliases.items(), *jvp_aliases.items()]
                              if not getattr(kw, "exact", False))
        return r

    @classmethod
    def for_run(cls, config: "Config", facts: "RunFacts") -> "Recognizer":
        """The creators `config` names, then those the run inferred (`facts`), then JAX's."""
        return cls.with_aliases(dict(config.custom_vjp_aliases + facts.vjp_aliases),
                                dict(config.custom_jvp_aliases + facts.jvp_aliases))

    def kind_of(self, qualname: Optional[str]) -> Optional[Tuple[str, str]]:
        qualname = canonical_creator(qualname)
        if qualname in self.vjp:
            return "vjp", self.vjp[qualname]
        if qualname in self.jvp:
            return "jvp", self.jvp[qualname]
        return None


LIBRARY = {kind: tuple(n for n, (k, _) in LIBRARY_CREATORS.items() if k == kind) for kind in ("vjp", "jvp")}
ALL_REGISTRATION_METHODS = frozenset({*REGISTRATION_METHODS, *(m for ms in API_REGISTRATION_METHODS.values()
                                                                  for m in ms)})


# The last names of the library creators and of the transformations: a call of an attribute
# (`x.y(...)`, whose qualified name, when it has one, ends in `.y`) can be one only if its
# attribute is one of these.
CREATOR_ATTRS = frozenset(q.rsplit(".", 1)[-1] for q in LIBRARY_CREATORS)  # relative spellings too (canonical_creator)
TRANSFORM_ATTRS = frozenset(q.rsplit(".", 1)[-1] for q in TRANSFORMS)
