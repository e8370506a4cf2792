"""The custom-derivative APIs beyond `jax.custom_vjp` (docs/facts/README.md): flax nnx and linen,
equinox, `jax.custom_gradient`, `jax.custom_vjp(self._f)` on bound methods.

`fixtures/apis/<api>/` holds firing cases (`fire_*.py`) and legal look-alikes (`silent_*.py`);
`expected.txt` lists every finding of all default rules there, one `path:row:col: CODE message`
line each (regenerate with VJPLINT_UPDATE_EXPECTED=1 and review the diff). Every fixture declares
what the real library does (`JAX_OUTCOME`, as in fixtures/rules/), and the `jax` layer runs it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

import pytest

from tests.conftest import FIXTURES, ROOT, lint, load_fixture_module

APIS = FIXTURES / "apis"
API_DIRS = sorted(p for p in APIS.iterdir() if p.is_dir())
CASES = sorted(APIS.rglob("*.py"))


def _findings(directory: Path) -> List[str]:
    lines = []
    for path in sorted(directory.glob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for d in lint(path.read_text(encoding="utf-8"), filename=relative):
            lines.append(f"{relative}:{d.location.row}:{d.location.column}: {d.code} {d.message}")
    return lines


@pytest.mark.parametrize("directory", API_DIRS, ids=lambda p: p.name)
def test_api_fixtures_report_exactly_what_is_expected(directory):
    found = _findings(directory)
    expected_file = directory / "expected.txt"
    if os.environ.get("VJPLINT_UPDATE_EXPECTED"):
        expected_file.write_text("".join(f"{line}\n" for line in found), encoding="utf-8")
    assert found == expected_file.read_text(encoding="utf-8").splitlines()
    reported = {line.split(":", 1)[0].rsplit("/", 1)[-1] for line in found}
    names = {p.name for p in directory.glob("*.py")}
    assert {n for n in names if n.startswith("fire_")} <= reported, "a firing fixture reports nothing"
    assert not {n for n in names if n.startswith("silent_")} & reported, "a look-alike is reported"


def test_messages_name_the_api():
    """No rule applies JAX's wording to an API that differs: findings on library APIs say which."""
    labels = {"nnx": "nnx.custom_vjp", "linen": "nn.custom_vjp", "equinox": "eqx.filter_custom_",
              "custom_gradient": "jax.custom_gradient"}
    for directory in API_DIRS:
        label = labels.get(directory.name)
        for line in _findings(directory):
            if label is not None and " VJP1" not in line and " VJP315 " not in line and " VJP302 " not in line:
                assert label in line, line


@pytest.mark.jax
@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_api_fixture_behaves_on_the_real_library_as_declared(path, jax_cpu):
    module = load_fixture_module(path)
    outcome = module.JAX_OUTCOME
    if outcome == "raises":
        with pytest.raises(Exception) as info:
            module.trigger()
        assert type(info.value).__name__ == module.JAX_EXCEPTION, repr(info.value)
        assert module.JAX_ERROR in str(info.value)
    else:
        assert outcome == "runs", outcome
        module.trigger()


def _derivatives(source: str):
    import ast

    from vjplint.facts.collect import collect

    return collect(ast.parse(source), source.splitlines()).derivatives


@pytest.mark.parametrize("source, expected", [
    ("from flax import nnx\n@nnx.custom_vjp\ndef f(x): return x\n", ("f", "vjp", "nnx", "default", ())),
    ("import flax.nnx as nn2\n@nn2.custom_vjp(nondiff_argnums=(0, nn2.DiffState(1, ...)), graph_updates=False)\n"
     "def f(a, m, x): return x\n", ("f", "vjp", "nnx", "simple", (0,))),
    ("from flax import nnx\ndef make(g):\n    @nnx.custom_vjp(graph=g)\n    def f(x): return x\n    return f\n",
     ("f", "vjp", "nnx", "either", ())),
    ("from flax import nnx\ndef _f(x, n): return x\nf = nnx.custom_vjp(nondiff_argnums=(1,))(_f)\n",
     ("f", "vjp", "nnx", "default", (1,))),
    ("import equinox as eqx\n@eqx.filter_custom_vjp\ndef f(x, n): return x\n", ("f", "vjp", "equinox", None, ())),
    ("from equinox import filter_custom_jvp\n@filter_custom_jvp\ndef f(x): return x\n",
     ("f", "jvp", "equinox", None, ())),
    ("from .._ad import filter_custom_vjp\n@filter_custom_vjp\ndef f(x): return x\n",
     ("f", "vjp", "equinox", None, ())),
    ("import jax\n@jax.custom_gradient\ndef f(x): return x, lambda g: (g,)\n",
     ("f", "vjp", "custom_gradient", None, ())),
    ("import flax.linen as nn\ndef f(mdl, x, s): return x\ny = nn.custom_vjp(f, f, f, nondiff_argnums=(2,))(1, 2, 3)\n",
     ("f", "vjp", "linen", None, (2,))),
])
def test_each_spelling_is_recognised_with_its_protocol(source, expected):
    (d,) = _derivatives(source)
    assert (d.name, d.kind, d.api, d.mode, d.nondiff) == expected


def test_bound_method_positions_exclude_self_and_unbound_ones_include_it():
    source = '''
import jax

class C:
    def __init__(self):
        self.f = jax.custom_vjp(self._f, nondiff_argnums=(0,))
        self.f.defvjp(self._fwd, self._bwd)

    def _f(self, n, x):
        return x

    def _fwd(self, n, x):
        return x, None

    def _bwd(self, n, res, g):
        return (g,)

g = jax.custom_vjp(C._f, nondiff_argnums=(0, 1))
'''
    bound, unbound = _derivatives(source)
    assert (bound.name, bound.bound_self, bound.signature.positional, bound.nondiff) == ("self.f", True, ["n", "x"], (0,))
    assert [r.method for r in bound.registrations] == ["defvjp"]
    assert (unbound.bound_self, unbound.signature.positional, unbound.nondiff) == (False, ["self", "n", "x"], (0, 1))


def test_equinox_registrations_are_def_fwd_and_def_bwd():
    source = '''
import equinox as eqx

@eqx.filter_custom_vjp
def f(x):
    return x

@f.def_fwd
def f_fwd(perturbed, x):
    return x, None

def f_bwd(res, g, perturbed, x):
    return g

f.def_bwd(f_bwd)
'''
    (d,) = _derivatives(source)
    assert [(r.method, r.as_decorator) for r in d.registrations] == [("def_fwd", True), ("def_bwd", False)]
    assert d.rule("fwd").name == "f_fwd" and d.rule("bwd").name == "f_bwd"


def test_an_alias_of_a_library_api_keeps_the_library_protocol():
    """The issue's workaround (`custom-vjp-aliases = ["flax.nnx.custom_vjp"]`) gave JAX's protocol and
    false VJP305s; the built-in protocol wins."""
    path = APIS / "nnx" / "silent_updates_g_simple_mode.py"
    assert lint(path.read_text(encoding="utf-8"), custom_vjp_aliases=(("flax.nnx.custom_vjp", "nondiff_argnums"),)) == []
