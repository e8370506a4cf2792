"""check-grads in the process where the code runs (issue #44): `--record -- pytest` keeps each
custom derivative the tests call, wherever it is made (a factory, a method), checks it in that
process at the distinct values the tests passed, and the finding lands on its `def`. Real pytest,
real JAX on CPU, through the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


def make_scaled_sin(scale):
    @jax.custom_vjp
    def scaled_sin(x):
        return scale * jnp.sin(x)

    def fwd(x):
        return scaled_sin(x), x

    def bwd(x, g):
        return (g * scale * jnp.cos(x) * 2.0,)  # WRONG: a factor 2

    scaled_sin.defvjp(fwd, bwd)
    return scaled_sin


class Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        @jax.custom_jvp
        def soft(x):
            return jnp.log1p(jnp.exp(x))

        @soft.defjvp
        def soft_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return soft(x), t * jax.nn.sigmoid(x)

        return soft(self.w * x)


@jax.custom_vjp
def log1mexp(x):
    return jnp.log(-jnp.expm1(x))


def log1mexp_fwd(x):
    return log1mexp(x), x


def log1mexp_bwd(x, g):
    d = -1.0 / jnp.expm1(-x)
    return (g * jnp.where(x > -0.1, -d, d),)  # WRONG only above -0.1


log1mexp.defvjp(log1mexp_fwd, log1mexp_bwd)


@jax.custom_jvp
def never_called(x):
    return jnp.sin(x)


never_called.defjvps(lambda t, ans, x: jnp.cos(x) * t)
'''
TESTS = '''\
import jax
import jax.numpy as jnp

from pkg.ops import Layer, log1mexp, make_scaled_sin


def test_factory():
    f = make_scaled_sin(3.0)
    assert jnp.isfinite(jax.grad(lambda x: f(x).sum())(jnp.array([0.1, 0.2]))).all()


def test_method():
    assert Layer(2.0)(jnp.array([0.5, 1.0])).shape == (2,)


def test_log1mexp():
    for _ in range(30):  # copies of one value are one sample
        log1mexp(jnp.float32(-80.5))
    for v in (-20.5, -8.0, -2.5, -0.5, -0.325, -0.01):
        assert jnp.isfinite(log1mexp(jnp.float32(v)))
'''


def _project(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "ops.py").write_text(OPS)
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text(TESTS)
    (root / "pyproject.toml").write_text("[tool.vjplint]\n")


@pytest.mark.jax
def test_record_checks_factories_methods_and_every_sampled_value_in_the_tests_process(tmp_path: Path) -> None:
    _project(tmp_path)
    env = {**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}
    proc = run_cli("check-grads", "--output-format", "concise", "--show-checks", "pkg", "--record", "--",
                   sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=tmp_path, env=env,
                   timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "3 passed" in proc.stderr  # the tests' own outcome, untouched
    assert "vjplint: recorded 3 custom derivatives while running" in proc.stderr
    out = proc.stdout
    # Made in a factory: reached through the object the test called, reported on its decorator.
    assert f"pkg/ops.py:6:6: VJP501 `scaled_sin`: bwd cotangent for `x` differs from finite differences: max rel. " \
           f"error 0.5 at x={PREC}[2]" in out, out
    # Wrong only above -0.1: the recording kept the distinct values (not 30 copies of -80.5) and the
    # spread sample checks -0.01 too.
    assert f"pkg/ops.py:37:2: VJP501 `log1mexp`: bwd cotangent for `x` differs from finite differences: max rel. " \
           f"error 2 at x={PREC}[]" in out, out
    # A custom_jvp made inside a method: checked at the call the test made, and it passes.
    assert "pkg/ops.py:25: soft (custom_jvp): passed at 1 recorded call" in out
    assert "VJP509" not in out
    assert "pkg/ops.py:54: never_called (custom_jvp): passed at assumed inputs only" in out
    assert ": 1 passed, 2 failed, 1 at assumed inputs only (not counted as passed), 0 not checked." in out
    assert "\ncoverage: 4 under the paths, 3 called by the run, 4 checked, 1 passed (1 recorded call checked), " \
           "2 failed, 0 not checked, 1 never called\nnever called by the run: pkg/ops.py:54 `never_called`\n" in out


@pytest.mark.jax
@pytest.mark.parametrize("code, said", [
    ("import sys; sys.exit(3)", "`{py} -c import sys; sys.exit(3)` exited with status 3 before calling any "
                                "custom_vjp/custom_jvp"),
    ("pass", "`{py} -c pass` exited with status 0 and called no custom_vjp/custom_jvp")])
def test_a_failed_or_empty_recording_is_an_error(tmp_path: Path, code: str, said: str) -> None:
    _project(tmp_path)
    proc = run_cli("check-grads", "pkg", "--record", "--", sys.executable, "-c", code, cwd=tmp_path,
                   env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"vjplint: error: --record: nothing was recorded: {said.format(py=sys.executable)}. Run the command " \
           "alone and make it pass (its output is above), point it at the tests that call your custom " \
           "derivatives, or drop --record to check with assumed inputs" in proc.stderr, proc.stderr
    assert proc.stdout == ""


SIN_TWICE = "import jax\nimport jax.numpy as jnp\n\n\n@jax.custom_jvp\ndef f(x):\n    return jnp.sin(x)\n\n\n" \
            "f.defjvps(lambda t, ans, x: 2 * jnp.cos(x) * t)  # WRONG: a factor 2\n"


@pytest.mark.jax
def test_one_child_checks_every_module_and_a_missing_metadata_says_what_to_do(tmp_path: Path) -> None:
    """On a device one process at a time may hold (a TPU), check_jobs runs every module in one child
    (check_together): the device is opened once per run. A module that cannot be imported does not
    stop the next one; its reason is given once, and a missing package metadata says what to do."""
    from vjplint.gradcheck import api
    from vjplint.project.workspace import Overrides, Workspace

    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text(
        'import importlib.metadata\n__version__ = importlib.metadata.version("mypkg_not_installed")\n')
    (tmp_path / "mypkg" / "ops.py").write_text(SIN_TWICE + "\n\n@jax.custom_jvp\ndef g(x):\n    return jnp.sin(x)\n")
    (tmp_path / "wrong.py").write_text(SIN_TWICE)
    workspace = Workspace(Overrides(), None)
    jobs = []
    for rel, name in (("mypkg/ops.py", "mypkg.ops"), ("wrong.py", "wrong")):
        path = tmp_path / rel
        job = api.ModuleJob(rel, path, path.read_text(), workspace.settings_for(str(path)))
        api.plan_module(job, name)
        jobs.append(job)
    copies = api.Copies()
    try:
        outcomes = api.check_together(jobs, copies, 300, None)
    finally:
        copies.remove()
    got = {(o.report.filename, o.target.qualname): (o.status, o.report.reason) for o in outcomes}
    assert got[("wrong.py", "f")][0] == "failed"
    assert got[("wrong.py", "f")][1].startswith("jvp tangent (along a random tangent) differs from finite differences: "
                                                "max rel. error 0.5")
    status, reason = got[("mypkg/ops.py", "f")]
    assert status == "unverified" and reason.startswith("the module cannot be imported")
    assert reason.endswith("PackageNotFoundError: No package metadata was found for mypkg_not_installed; install the "
                           "package into that interpreter (`pip install -e .` in its project), or run with `--python "
                           "PATH` naming an interpreter that has it (or set `python` in [tool.vjplint.verify])"), reason
    assert got[("mypkg/ops.py", "g")] == ("unverified", "the module cannot be imported (the reason is given for `f`, "
                                                        "line 5)")
    assert [o.target.line for o in outcomes if o.report.filename == "mypkg/ops.py"] == [5, 13]
    assert len({o.report.device for o in outcomes if o.report.device}) == 1


@pytest.mark.jax
def test_after_a_crash_a_fresh_child_checks_the_modules_after_it(tmp_path: Path) -> None:
    """One child for every module (a TPU): a module that kills the child (`os._exit(3)` in a bwd
    rule) ends only itself, with the child's exit status "while verifying it" (before: "code
    None"); the modules after it are checked by a fresh child, as one child per module would
    have (before: "exited with code 3 before reaching it")."""
    from vjplint.gradcheck import api
    from vjplint.project.workspace import Overrides, Workspace

    (tmp_path / "a_crashes.py").write_text(
        "import os\n\nimport jax\n\n\n@jax.custom_vjp\ndef f(x):\n    return 2 * x\n\n\n"
        "def f_bwd(_, g):\n    os._exit(3)\n\n\nf.defvjp(lambda x: (f(x), None), f_bwd)\n")
    (tmp_path / "b_wrong.py").write_text(SIN_TWICE)
    workspace = Workspace(Overrides(), None)
    jobs = []
    for name in ("a_crashes", "b_wrong"):
        path = tmp_path / f"{name}.py"
        job = api.ModuleJob(f"{name}.py", path, path.read_text(), workspace.settings_for(str(path)))
        api.plan_module(job, name)
        jobs.append(job)
    seen = []
    copies = api.Copies()
    try:
        outcomes = api.check_together(jobs, copies, 300, None, progress=lambda *a: seen.append(a[:2]))
    finally:
        copies.remove()
    got = {o.report.filename: (o.status, o.report.reason) for o in outcomes}
    assert got["a_crashes.py"] == ("unverified", "the verification process exited with code 3 while verifying it")
    assert got["b_wrong.py"][0] == "failed"
    assert got["b_wrong.py"][1].startswith("jvp tangent (along a random tangent) differs from finite differences")
    assert seen[-1] == (2, 2)
