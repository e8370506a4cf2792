"""VJP601 follows a tangent into a `lax.while_loop` helper of another module of the run
(vjplint.project.loops, vjplint.facts.loops): the package tests/data/crossmodule_loops/solve hands
tangents to an imported iterative solver (relatively imported, and through a module attribute
inside a local helper); its look-alikes (solve/calm.py) give the helpers only primals or use a
static fori_loop; alone, a module knows no other module's loops; the per-file cache and the
Language Server's index follow an edit of the helper. The eval case
nonlinear-jvp/ho_jax18311_tangent_solver_xmod runs the same construct on JAX."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, ROOT, pythonpath, run_cli

DATA = ROOT / "tests" / "data" / "crossmodule_loops"
TAIL = ("`jax.jvp` and `jax.jacfwd` work, but reverse mode transposes the tangent computation and a while_loop has "
        "no transpose rule: `jax.grad` raises ValueError 'Reverse-mode differentiation does not work for "
        "lax.while_loop or lax.fori_loop with dynamic start/stop values' (jax-ml/jax#18311). Compute the tangent "
        "with `lax.scan` or a `fori_loop` with static bounds, or solve for it with `jax.lax.custom_linear_solve` "
        "(which transposes)")
LOOP = ("`fixed_point` (solve/iterative.py:7) then `_run` (solve/iterative.py:19), which feeds it into "
        "`jax.lax.while_loop(cond, body, init)` (solve/iterative.py:20). ")
FOUND = [
    ("solve/roots.py", 19, 10, "VJP601",
     "the jvp rule `root_jvp` of `root` returns a tangent that JAX cannot transpose: `fixed_point(lambda d: 0.5 * "
     "da * jnp.cos(y) - 0...` passes a tangent term to " + LOOP + TAIL),
    ("solve/roots.py", 36, 15, "VJP601",
     "the jvp rule `damped_jvp` of `damped` returns a tangent that JAX cannot transpose: `solve_tangent(0.25 * da "
     "* jnp.sin(y), 0.25 * a ...` passes a tangent term to `solve_tangent` (line 23) then " + LOOP + TAIL),
]


def _check(cwd: Path, *args: str):
    proc = run_cli("check", "--output-format", "json", "--exit-zero", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [(d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"])
            for d in json.loads(proc.stdout)]


def test_a_tangent_handed_to_another_modules_while_loop_helper_is_reported():
    assert _check(DATA, "--no-cache", "solve") == FOUND


def test_helpers_seeing_only_primals_or_a_static_fori_loop_stay_silent():
    assert _check(DATA, "--no-cache", "solve/iterative.py", "solve/calm.py") == []


def test_without_the_helpers_module_nothing_is_known_about_its_loops():
    assert _check(DATA, "--no-cache", "solve/roots.py", "solve/calm.py") == []


def _to_fori(root: Path) -> None:
    """The helper iterates a fixed number of times: a scan, which JAX transposes."""
    helper = root / "solve" / "iterative.py"
    helper.write_text(helper.read_text().replace(
        "    return jax.lax.while_loop(cond, body, init)\n",
        "    return jax.lax.fori_loop(0, 50, lambda _, s: body(s), init)\n"))


def test_the_cache_follows_an_edit_of_the_helper(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(DATA / "solve", root / "solve")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert _check(root, *cache, "solve") == FOUND
    assert _check(root, *cache, "solve") == FOUND  # warm: read from the caches
    _to_fori(root)
    assert _check(root, *cache, "solve") == []


@pytest.mark.unit
def test_the_servers_index_equals_the_runs_and_follows_an_edit_of_the_helper(tmp_path):
    from vjplint.settings.config import Config
    from vjplint.project.index import build_index
    from vjplint.server.indexing import _python_files
    from vjplint.server.project_index import FolderFacts

    root = tmp_path / "proj"
    shutil.copytree(DATA / "solve", root / "solve")
    files = sorted((root / "solve").glob("*.py"))

    def rerun():
        return build_index(files, Config(), use_cache=False, base=str(root), cross_module=True).external

    run = rerun()
    # `from .iterative import fixed_point` and `from . import iterative` spell it alike: `.iterative.fixed_point`
    assert [row[:4] for row in run["solve.roots"]] == [
        ("loop", ".iterative.fixed_point", "fixed_point", "solve/iterative.py")]
    served = build_index(files, Config(), use_cache=False, base=str(root))
    facts = FolderFacts(_python_files(served, files, str(root)))
    facts.build()
    assert facts.external == run
    helper = str(root / "solve" / "iterative.py")
    assert facts.update(helper, Path(helper).read_text() + "\n# nothing another module sees\n") == set()
    _to_fori(root)
    assert facts.update(helper, Path(helper).read_text()) == {"solve.calm", "solve.roots"}
    assert facts.external == rerun()
    assert [row[2] for rows in facts.external.values() for row in rows if row[0] == "loop"] == ["settle_then_scale"]


CONFIRM = '''
import jax, jax.numpy as jnp
from solve import calm, roots

def outcome(f, a):
    try:
        jax.grad(lambda v: jnp.sum(f(v)))(a)
        return "runs"
    except Exception as exc:
        return type(exc).__name__

a = jnp.array([0.5, 1.0])
for f in (roots.root, roots.damped, calm.settled, calm.root, calm.series_root):
    print(outcome(f, a))
for f in (calm.settled, calm.root, calm.series_root):  # and where grad runs, it is right
    fd = (f(a + 1e-3) - f(a - 1e-3)) / 2e-3
    print(bool(jnp.allclose(jax.grad(lambda v: jnp.sum(f(v)))(a), fd, rtol=1e-2, atol=1e-3)))
'''


@pytest.mark.jax
def test_the_package_behaves_on_jax_as_the_diagnostics_say():
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", CONFIRM], cwd=DATA, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": pythonpath(DATA), **JAX_ENV})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["ValueError", "ValueError", "runs", "runs", "runs", "True", "True", "True"]


@pytest.mark.unit
def test_only_the_helpers_an_importer_may_call_are_parsed():
    """The summaries cost a parse: a module is read only when an importer's import lines name it
    and it calls one of its functions whose text may reach a while_loop (directly or through a
    function of its module it calls by name)."""
    from vjplint.project.loops import file_info, loop_rows

    sources = {
        "pkg/solver.py": b"import jax\n\n\ndef solve(step, x):\n    return _loop(step, x)\n\n\n"
                         b"def _loop(step, x):\n    return jax.lax.while_loop(lambda s: True, step, x)\n",
        "pkg/spin.py": b"import jax\n\n\ndef spin(step, x):\n    return jax.lax.while_loop(lambda s: True, step, x)\n",
        "pkg/rule.py": b"import jax\nfrom pkg.solver import solve\nfrom pkg import spin\n\n\n"
                       b"@jax.custom_jvp\ndef f(x):\n    return solve(lambda v: v, x)\n",
    }
    infos = {d: file_info(data) for d, data in sources.items()}
    assert infos["pkg/solver.py"]["w"] == ["_loop", "solve"] and "c" in infos["pkg/rule.py"]
    read = []
    rows = loop_rows([("pkg.solver", "pkg", "pkg/solver.py"), ("pkg.spin", "pkg", "pkg/spin.py"),
                      ("pkg.rule", "pkg", "pkg/rule.py")], infos, lambda d: read.append(d) or sources[d])
    assert read == ["pkg/solver.py", "pkg/rule.py"]  # `spin` is imported but never called
    assert [row[:3] for row in rows["pkg.rule"]] == [("loop", "pkg.solver.solve", "solve")]
