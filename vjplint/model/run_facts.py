"""What a run derives about one file from the other modules of the run, kept apart from the
settings (`vjplint.settings.config.Config` holds only what pyproject.toml and the command line
say): the wrappers the project index inferred (vjplint.project.index), as aliases of the creators
they reach, and what other modules do with this module's names (vjplint.project.cross_values).

It travels beside the Config through the engine, the batch workers (it pickles), the result
cache's keys, the fixes and the Language Server. A run without other modules has `NO_FACTS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from vjplint.model.wrappers import InferredKeyword

# One cross-module row (vjplint.project.cross_values): its first item says what it is ("call",
# "register", "use", "loop", "forward_use"), the rest that kind's fields; read by
# vjplint.facts.crossmodule.ExternalFacts.from_rows.
Row = Tuple[object, ...]


@dataclass(frozen=True)
class RunFacts:
    """`vjp_aliases`, `jvp_aliases`: inferred wrappers, (qualified name, keyword with the
    wrapper's rules and why), added after the configured aliases; `rows`: the cross-module rows of
    this file's module."""

    vjp_aliases: Tuple[Tuple[str, InferredKeyword], ...] = ()
    jvp_aliases: Tuple[Tuple[str, InferredKeyword], ...] = ()
    rows: Tuple[Row, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.vjp_aliases or self.jvp_aliases or self.rows)

    def fingerprint(self) -> str:
        """A stable text for cache keys ("" when there is nothing): a change to a wrapper or to
        what another module passes here changes the file's key."""
        if not self:
            return ""
        return repr((self.vjp_aliases, self.jvp_aliases, self.rows))


NO_FACTS = RunFacts()
