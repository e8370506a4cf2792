"""vjplint.lint.incremental: after any sequence of edits, the incremental result equals a fresh
`engine.lint_source` of the same text (codes, positions, messages and fixes)."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path
from typing import List

import pytest
from tests.conftest import ROOT, check_each

from vjplint.settings.config import Config
from vjplint.lint.engine import lint_source
from vjplint.lint.incremental import IncrementalLinter, Superseded

FIXTURES = sorted((ROOT / "fixtures" / "rules").glob("*/*.py"))

MODULE = '''\
from functools import partial
import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None


def clip_gradient_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@jax.custom_vjp
def safe_log(x):
    return jnp.log(x)


def safe_log_fwd(x):
    return jnp.log(x), x


def safe_log_bwd(x, g):
    return (g / x,)


def entropy(p):
    return -jnp.sum(p * safe_log(p))
'''


def facts(diagnostics) -> List[tuple]:
    return sorted((d.code, d.location, d.end_location, d.message, d.fix, d.noqa_row) for d in diagnostics)


def check(linter: IncrementalLinter, text: str) -> None:
    expected = lint_source(linter.filename, text, linter.config).diagnostics
    assert facts(linter.lint(text).diagnostics) == facts(expected)


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.paths_equal
def test_a_fresh_incremental_lint_equals_the_engine() -> None:
    """On every rule fixture (one test over the corpus; each fixture that differs is named)."""
    check_each(FIXTURES, lambda path: check(IncrementalLinter(path.name, Config()), path.read_text(encoding="utf-8")),
               _name, least=600)


def _edit(rng: random.Random, text: str, pool: List[str]) -> str:
    lines = text.splitlines(keepends=True)
    i = rng.randint(0, len(lines))
    choice = rng.random()
    if choice < 0.3:
        lines.insert(i, rng.choice(["# a comment\n", "\n", "x = 1\n", "import jax.numpy as jnp\n",
                                    "def helper(x):\n    return x\n", "    y = 2\n", "(\n"]))
    elif choice < 0.55 and lines:
        del lines[min(i, len(lines) - 1)]
    elif choice < 0.8 and lines:
        j = min(i, len(lines) - 1)
        lines[j] = lines[j].replace("_fwd", "_forward") if "_fwd" in lines[j] else lines[j].replace("x", "y")
    else:  # paste a line of another file
        lines.insert(i, rng.choice(pool))
    return "".join(lines)


@pytest.mark.parametrize("seed", range(8))
def test_random_edits_keep_the_incremental_result_exact(seed: int) -> None:
    rng = random.Random(seed)
    paths = rng.sample(FIXTURES, 6)
    pool = [line for p in paths for line in p.read_text(encoding="utf-8").splitlines(keepends=True)]
    for path in paths:
        text = path.read_text(encoding="utf-8")
        linter = IncrementalLinter(path.name, Config())
        check(linter, text)
        for _ in range(12):
            text = _edit(rng, text, pool)
            check(linter, text)


@pytest.mark.parametrize("before, after", [
    # registering the rules: safe_log's VJP301 goes away
    ("def entropy(p):", "safe_log.defvjp(safe_log_fwd, safe_log_bwd)\n\n\ndef entropy(p):"),
    # a rename: the fwd rule is no longer recognised by its name
    ("def safe_log_fwd(x):", "def forward(x):"),
    # jax imported under another name: nothing is recognised, then everything again
    ("import jax\n", "import jax as jx\n"),
    # a custom_vjp spelled through an alias the import introduces
    ("import jax\n", "import jax\nfrom jax import custom_vjp as cv\n"),
    # the decorator removed: clip_gradient is a plain function
    ("@partial(jax.custom_vjp, nondiff_argnums=(0, 1))\n", ""),
    # a noqa comment silences one finding
    ("def safe_log(x):", "def safe_log(x):  # noqa: VJP301"),
    # a syntax error, then its repair
    ("def entropy(p):", "def entropy(p:"),
    # an unterminated string swallowing the rest of the file
    ("def entropy(p):", 'NOTE = """\ndef entropy(p):'),
])
def test_edits_that_change_what_is_recognised(before: str, after: str) -> None:
    linter = IncrementalLinter("module.py", Config())
    check(linter, MODULE)
    edited = MODULE.replace(before, after, 1)
    assert edited != MODULE
    check(linter, edited)
    check(linter, MODULE)  # and back


def test_an_edit_relints_only_its_family() -> None:
    linter = IncrementalLinter("module.py", Config())
    text = MODULE  # two families (clip_gradient's, safe_log's) and the imports
    linter.lint(text)
    linted = linter.stats["linted"]
    check(linter, text.replace("return jnp.log(x), x", "return jnp.log(x), (x, x)"))
    assert linter.stats["linted"] == linted + 1  # safe_log's family only
    reused, linted = linter.stats["reused"], linter.stats["linted"]
    check(linter, "# a line above everything\n" + text.replace("return jnp.log(x), x", "return jnp.log(x), (x, x)"))
    # clip_gradient's findings move down a row; safe_log's message names a row ("is called
    # (line 35)"), so that family is linted again where it now is.
    assert (linter.stats["reused"], linter.stats["linted"]) == (reused + 1, linted + 1)


def test_a_superseded_lint_stops() -> None:
    linter = IncrementalLinter("module.py", Config())
    with pytest.raises(Superseded):
        linter.lint(MODULE, should_stop=lambda: True)
    check(linter, MODULE)


BLOCKS = "".join(f"@jax.custom_vjp\ndef f{i}(x, n):\n    return x\n\n\nf{i}.defvjp(None, None)\n\n\n"
                 for i in range(6))


def test_a_first_lint_whole_then_families_seeded_from_it_equal_the_engine() -> None:
    """`whole_first`: the first text is linted whole (the engine's own result); `prime` caches
    each family's findings from it, linting none, then an edit re-lints one family."""
    text = "import jax\n\n\n" + BLOCKS
    linter = IncrementalLinter("m.py", Config())
    first = linter.lint(text, whole_first=True)
    assert linter.unprimed and linter.stats["linted"] == 0 and linter.stats["full"] == 1
    assert first.diagnostics == lint_source("m.py", text, Config()).diagnostics
    linter.prime(text, lambda: True)  # nothing is linted, so nothing stops it
    assert not linter.unprimed and linter.stats["seeded"] == 6 and linter.stats["linted"] == 0
    edited = text.replace("def f3(x, n):", "def f3(x, m):")
    assert linter.lint(edited, whole_first=True).diagnostics == lint_source("m.py", edited, Config()).diagnostics
    assert (linter.stats["linted"], linter.stats["reused"], linter.stats["full"]) == (1, 5, 1)


def test_a_finding_in_an_import_primes_by_linting_the_families() -> None:
    """A finding in an import (every family's module holds the imports) cannot be given to one
    family: `prime` lints the families (what it did before it was stopped stays cached)."""
    text = "import jax\nfrom jax import custom_transforms\n\n\n" + BLOCKS
    linter = IncrementalLinter("m.py", Config())
    first = linter.lint(text, whole_first=True)
    assert any(d.code == "VJP403" and d.location.row == 2 for d in first.diagnostics)
    calls = []
    with pytest.raises(Superseded):  # stopped after two families: those stay cached
        linter.prime(text, lambda: calls.append(1) or len(calls) > 2)
    assert linter.unprimed and linter.stats["linted"] == 2 and "seeded" not in linter.stats
    edited = "# top\n" + text  # an edit before the priming is done: the families left are linted
    assert linter.lint(edited, whole_first=True).diagnostics == lint_source("m.py", edited, Config()).diagnostics
    assert not linter.unprimed and linter.stats["linted"] == 6 and linter.stats["full"] == 1
    linter.prime(edited)  # nothing left to do
    assert linter.stats["linted"] == 6
    again = edited.replace("def f3(x, n):", "def f3(x, m):")
    assert linter.lint(again, whole_first=True).diagnostics == lint_source("m.py", again, Config()).diagnostics
    assert linter.stats["linted"] == 7 and linter.stats["full"] == 1


def _cached(linter: IncrementalLinter) -> dict:
    """The family cache by content: each family's texts and rows, and its findings."""
    return {(tuple(c.text for c in chunks), offsets): (entry.starts, facts(entry.diagnostics), entry.rows_in_messages)
            for (chunks, offsets), entry in linter.cache.items()}


SEEDABLE = FIXTURES + sorted((ROOT / "tests" / "realworld").glob("*.py"))


def _seeded_equal_linted(path: Path) -> bool:
    """Whether the file has families (then compared); False for a file linted whole for good."""
    text = path.read_text(encoding="utf-8")
    seeded = IncrementalLinter(path.name, Config())
    seeded.lint(text, whole_first=True)
    if not seeded.unprimed:
        return False  # linted whole for good (nothing recognised, a syntax error): no families
    seeded.prime(text)
    linted = IncrementalLinter(path.name, Config())
    linted.lint(text)
    if "seeded" not in seeded.stats:
        # `_seed` declines where a finding lies in a chunk every family's module holds (VJP372 on a
        # registration inside a `try` around an optional import): the families are then linted,
        # as by a linter that had no whole lint, and must equal those.
        assert seeded.stats["linted"] == len(linted.cache) and _cached(seeded) == _cached(linted)
        return True
    assert seeded.stats.get("seeded") == len(linted.cache) and seeded.stats["linted"] == 0
    assert _cached(seeded) == _cached(linted)
    return True


@pytest.mark.paths_equal
def test_families_seeded_from_the_whole_lint_equal_the_families_linted_alone() -> None:
    """On every rule fixture and real-world module (one test over the corpus; each file whose
    families differ is named)."""
    compared = check_each(SEEDABLE, _seeded_equal_linted, _name, least=600)
    assert sum(compared) >= 600, f"only {sum(compared)} files had families to compare"


# Found by the random-edit test above at one fixture sample: a `def` at column 0 inside a factory makes
# the factory's indented `act.defvjp(...)` the body of the new function. The whole lint finds
# `act.defvjp` by name and is silent; the factory's family must hold that chunk (chunks._nested_members),
# or it reports VJP301.
MOVED_REGISTRATION = """import jax
import jax.numpy as jnp


def make_activation(surrogate):
    @jax.custom_vjp
    def act(u):
        return jnp.heaviside(u, 0.0)

    def act_fwd(u):
        return act(u), u

    def act_bwd(u, g):
        return (g * surrogate(u),)
def helper(x):
    return x


    act.defvjp(act_fwd, act_bwd)
    return jax.jit(act)
"""


FACTORY = """import jax
import jax.numpy as jnp
from jax import custom_vjp as cv


def make_activation(surrogate):
    @jax.custom_vjp
    def act(u):
        return jnp.heaviside(u, 0.0)

    def act_fwd(u):
        return act(u), u

    def act_bwd(u, g):
        return (g * surrogate(u),)

    act.defvjp(act_fwd, act_bwd)
    return act
"""
REGISTRATION = "    act.defvjp(act_fwd, act_bwd)\n"


def _whole_and_incremental(text: str) -> List[str]:
    """The whole lint's codes, after checking the incremental lint equals it."""
    linter = IncrementalLinter("m.py", Config())
    check(linter, text)
    return sorted(d.code for d in lint_source("m.py", text, Config()).diagnostics)


def test_a_registration_an_edit_moved_into_another_function_is_linked_as_the_whole_lint_links_it() -> None:
    linter = IncrementalLinter("m.py", Config())
    check(linter, MOVED_REGISTRATION)
    assert linter.stats["full"] == 0 and len(linter.modules) == 1  # one family: the factory and `helper`


@pytest.mark.parametrize("moved", [
    # into a method of a class below the factory
    FACTORY.replace(REGISTRATION, "") + "\n\nclass Layer:\n    def setup(self):\n    " + REGISTRATION,
    # into the module's `if __name__ == "__main__":` block
    FACTORY.replace(REGISTRATION, "") + '\n\nif __name__ == "__main__":\n' + REGISTRATION,
    # the custom_vjp made by a call of an imported alias, registered in another function
    FACTORY.replace(REGISTRATION, "").replace("    @jax.custom_vjp\n    def act(u):", "    def _act(u):")
    .replace("    def act_fwd", "    act = cv(_act)\n\n    def act_fwd") + "\n\ndef helper(x):\n" + REGISTRATION,
])
def test_a_registration_moved_out_of_its_factory_is_linked_to_it(moved: str) -> None:
    """The whole lint reads `act.defvjp` wherever it is as the factory's `act`'s: no VJP301; each
    family-by-family lint (the editor's after an edit) must hold the registration with the factory."""
    assert "act.defvjp" in moved and "def make_activation" in moved
    assert "VJP301" not in _whole_and_incremental(moved)
    linter = IncrementalLinter("m.py", Config())
    linter.lint(FACTORY)
    check(linter, moved)  # as an edit of the factory's module, the chunks parsed again
    assert len(linter.modules) == 1


def test_a_rule_an_edit_defines_in_another_function_is_linked_to_its_derivative() -> None:
    """`act_bwd` moved into another function: the factory's registration names it, the whole lint
    reads the other function's `act_bwd` by that name (VJP301 no longer fires for an unregistered
    rule it finds), and the families must agree; the edit and its reversal, incrementally."""
    moved = FACTORY.replace("    def act_bwd(u, g):\n        return (g * surrogate(u),)\n", "") \
        + "\n\ndef rules(surrogate):\n    def act_bwd(u, g):\n        return (g * surrogate(u),)\n    return act_bwd\n"
    linter = IncrementalLinter("m.py", Config())
    check(linter, FACTORY)
    check(linter, moved)
    assert len(linter.modules) == 1
    check(linter, FACTORY)
    assert len(linter.modules) == 1  # `make_activation` alone


def test_plain_local_names_link_no_families() -> None:
    """What links families below the module's scope is a member's name, not any local: two
    functions that both assign `y = jnp.sin(x)` and define a `helper` stay two families."""
    plain = "def a(x):\n    y = jnp.sin(x)\n    def helper():\n        return y\n    return helper\n\n\n"
    text = "import jax\nimport jax.numpy as jnp\n\n\n" + plain + plain.replace("def a(", "def b(") + BLOCKS
    linter = IncrementalLinter("m.py", Config())
    check(linter, text)
    assert len(linter.modules) == 2 + 6


def _moves(path: Path) -> List[tuple]:
    """(path, statement, where) for each top-level statement that is not an import and each place
    it can be moved to: 'main' (a new `if __name__ == "__main__":` block), 'method' (a new class's
    method), or the index of another top-level function (the end of its body)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    functions = [k for k, s in enumerate(body) if isinstance(s, ast.FunctionDef)]
    return [(path, k, where) for k, s in enumerate(body) if not isinstance(s, (ast.Import, ast.ImportFrom))
            for where in ("main", "method", *(f for f in functions if f != k))]


def _moved(move: tuple) -> str:
    path, k, where = move
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    body = ast.parse(text).body
    statement = body[k]
    first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))]) - 1
    block = lines[first:statement.end_lineno]
    rest = lines[:first] + lines[statement.end_lineno:]

    def indented(rows: List[str], depth: int) -> List[str]:
        return [" " * depth + row if row.strip() else row for row in rows]

    if where == "main":
        return "".join(rest) + '\n\nif __name__ == "__main__":\n' + "".join(indented(block, 4))
    if where == "method":
        return "".join(rest) + "\n\nclass Holder:\n    def method(self):\n" + "".join(indented(block, 8))
    end = body[where].end_lineno
    end -= len(block) if end > first else 0
    return "".join(rest[:end] + indented(block, 4) + rest[end:])


REGISTERING = [p for p in FIXTURES if re.search(r"\.def(vjp|jvp)\b", p.read_text(encoding="utf-8"))]


def test_statements_moved_across_functions_classes_and_the_module_level_keep_the_result_exact() -> None:
    """Each top-level statement of the fixtures that register rules, moved into another function,
    a method or a `__main__` block (a fixed sample of the 52,000 moves, and the two that differed
    when a family held only what module-level names link): the incremental lint equals the whole."""
    moves = [m for p in REGISTERING for m in _moves(p)]
    sample = random.Random(0).sample(moves, 60)
    known = [m for m in moves if m[0].parent.name in ("VJP306", "VJP313") and
             m[0].name in ("fire_missing_matrix_cotangent.py", "fire_jvp_tangent_half.py") and
             not isinstance(m[2], str) and m[2] == len(ast.parse(m[0].read_text(encoding="utf-8")).body) - 1]
    assert len(known) >= 2

    def one(move: tuple) -> None:
        text = _moved(move)
        try:
            ast.parse(text)
        except SyntaxError:
            return  # a move that leaves no module (a `return` at the top level): nothing to compare
        check(IncrementalLinter(move[0].name, Config()), text)

    check_each(sample + known, one, lambda m: f"{_name(m[0])} statement {m[1]} into {m[2]}", least=60)
