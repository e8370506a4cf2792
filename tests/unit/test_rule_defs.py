"""The rows that bring a rule defined in another module of the run to the module registering it
(vjplint.project.rule_defs): which registrations the bytes alone make candidates, the spellings
followed (a parenthesised import list, a module alias, a package's re-export), and what a row
carries (the def's line, its module's imports made absolute, the helpers it reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vjplint.project.rule_defs import rule_info, rule_rows

pytestmark = pytest.mark.unit

RULES = b'''import jax.numpy as jnp
from .consts import EPS

SCALE = 2.0


def _slope(x):
    return SCALE / (x + EPS)


def f_fwd(x):
    return jnp.log(x), x


def f_bwd(x, g):
    return (g * _slope(x),)
'''
OPS = b'''import jax
import jax.numpy as jnp
from pkg import (
    f_bwd,
    f_fwd,
)


@jax.custom_vjp
def f(x):
    return jnp.log(x)


f.defvjp(f_fwd, f_bwd)
'''


def test_candidates_are_imported_names_heading_a_registrations_arguments():
    assert rule_info(OPS) == {"g": ["f_bwd", "f_fwd"]}
    assert rule_info(b"from . import rules as R\nf.defvjp(R.fwd, partial(R.bwd, 2))\n") == {"g": ["R"]}
    # JAX's own `ad.defjvp` registers no custom derivative; a rule defined here, or a lambda, is no candidate
    assert rule_info(b"from jax._src.interpreters import ad\nfrom jax import lax\nad.defjvp(lax.sin_p, g)\n") == {}
    assert rule_info(b"import jax\ndef f_jvp(p, t): ...\nf.defjvp(f_jvp)\ng.defjvps(lambda g, ans, x: jnp.cos(x))\n") == {}


def test_a_rule_reexported_by_a_package_is_followed_to_its_def(tmp_path: Path):
    files = {"pkg/__init__.py": b"from .rules import f_bwd, f_fwd\n", "pkg/rules.py": RULES, "pkg/consts.py": b"EPS = 1e-6\n",
             "ops.py": OPS}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    listed = [("pkg", "pkg", "pkg/__init__.py"), ("pkg.rules", "pkg", "pkg/rules.py"),
              ("pkg.consts", "pkg", "pkg/consts.py"), ("ops", "", "ops.py")]
    infos = {"ops.py": rule_info(OPS)}
    rows = rule_rows(listed, infos, lambda display: (tmp_path / display).read_bytes())
    assert list(rows) == ["ops"]
    bwd, fwd = rows["ops"]
    assert fwd[:5] == ("ruledef", "f_fwd", "f_fwd", "pkg/rules.py", 11)
    assert fwd[5] == ("import jax.numpy as jnp", "from pkg.consts import EPS")
    assert [line for line, _ in fwd[6]] == [11]
    assert bwd[:5] == ("ruledef", "f_bwd", "f_bwd", "pkg/rules.py", 15)
    assert [line for line, _ in bwd[6]] == [4, 7, 15]  # SCALE and _slope, which it reads, come along


def test_of_two_packages_of_one_name_the_importers_own_is_read(tmp_path: Path):
    """`fixtures/fix_cross/{input,expected}/clipops` in one run: each `ops.py` reads its own
    `rules.py` (the one sharing the most directories with it), never the other copy's."""
    listed = []
    for copy in ("expected", "input"):
        for name, data in {"pkg/__init__.py": b"", "pkg/rules.py": RULES, "pkg/consts.py": b"EPS = 1e-6\n",
                           "pkg/ops.py": OPS.replace(b"from pkg import (", b"from .rules import (")}.items():
            (tmp_path / copy / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / copy / name).write_bytes(data)
        suffix = "" if copy == "expected" else "#2"  # as the project index names a taken module name
        listed += [(f"pkg{suffix}", "pkg", f"{copy}/pkg/__init__.py"), (f"pkg.rules{suffix}", "pkg", f"{copy}/pkg/rules.py"),
                   (f"pkg.ops{suffix}", "pkg", f"{copy}/pkg/ops.py")]
    infos = {d: rule_info((tmp_path / d).read_bytes()) for _, _, d in listed}
    rows = rule_rows(listed, infos, lambda display: (tmp_path / display).read_bytes())
    assert {module: sorted({row[3] for row in found}) for module, found in rows.items()} == {
        "pkg.ops": ["expected/pkg/rules.py"], "pkg.ops#2": ["input/pkg/rules.py"]}


def test_a_registration_on_an_imported_primal_with_a_rule_of_its_own_is_a_candidate():
    """`from ops import f; f.defvjp(f_fwd, f_bwd)` with f_fwd defined here, and `@g.defjvp`: "p"
    names the receivers; JAX's `ad.defjvp(sin_p, ...)` and a registration of imported rules on an
    imported receiver are not."""
    text = (b"from .prims import f, g\nimport jax.numpy as jnp\n\n\ndef f_fwd(x):\n    return x, None\n\n\n"
            b"def f_bwd(_, c):\n    return (c,)\n\n\nf.defvjp(f_fwd, f_bwd)\n\n\n@g.defjvp\ndef g_jvp(p, t):\n"
            b"    return p[0], t[0]\n")
    assert rule_info(text) == {"p": ["f", "g"]}
    assert rule_info(b"from jax._src.interpreters import ad\nsin_p = 1\ndef g(x): ...\nad.defjvp(sin_p, g)\n") == {}
    assert rule_info(b"from ops import f\nfrom rules import a, b\nf.defvjp(a, b)\n") == {}


def test_a_fix_made_on_a_grafted_rule_is_moved_to_the_rules_own_file():
    """vjplint.facts.crossmodule.relocated_fix: rows and columns as in rules.py (the graft indents
    each line by four spaces and puts its wrapper line first), a line it inserts loses that
    indentation, an edit reaching into the added indentation or outside the blocks is not moved."""
    import ast
    from types import SimpleNamespace

    from vjplint.diagnostics import Applicability, Edit, Fix, Position
    from vjplint.facts.crossmodule import RuleDef, graft, relocated_fix

    here = ["import jax", "", "f.defvjp(f_fwd, f_bwd)"]
    block = "def f_bwd(res, g):\n    if res:\n        return g * res\n    return g"
    made = graft(ast.parse("\n".join(here) + "\n"), here, [RuleDef("f_bwd", "f_bwd", "pkg/rules.py", 7, (), ((7, block),))])
    assert made is not None
    model = SimpleNamespace(facts=SimpleNamespace(graft=made[2]))
    first = made[2].first_row + 1  # the grafted `def f_bwd` (the wrapper's line is first_row)
    assert made[1][first - 1] == "    def f_bwd(res, g):"

    def moved(*edits):
        return relocated_fix(model, Fix(Applicability.SAFE, "Wrap", tuple(edits)))

    got = moved(Edit("(g * res,)", Position(first + 2, 16), Position(first + 2, 23)))
    assert got is not None and got.path == "pkg/rules.py"
    assert got.fix.edits == (Edit("(g * res,)", Position(9, 16 - 4), Position(9, 23 - 4)),)
    assert moved(Edit("        x = 1\n        y = 2\n", Position(first + 1, 1), Position(first + 1, 1))).fix.edits == (
        Edit("    x = 1\n    y = 2\n", Position(8, 1), Position(8, 1)),)
    assert moved(Edit("", Position(first + 3, 1), Position(first + 4, 1))).fix.edits == (
        Edit("", Position(10, 1), Position(11, 1)),)  # the block's last line, deleted with its newline
    assert moved(Edit("x", Position(first, 3), Position(first, 4))) is None  # inside the added indentation
    assert moved(Edit("x", Position(2, 1), Position(2, 2))) is None  # this file's own text
    assert relocated_fix(model, Fix(Applicability.SAFE, "Wrap", ())) is None
