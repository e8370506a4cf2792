"""`vjplint verify` end to end: the real CLI in a subprocess, real JAX (CPU) in the harness.

One CLI run per scenario, one harness process per file: each module-scoped fixture below runs
the CLI once and the tests read its JSON report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from tests.conftest import JAX_ENV, ROOT, device_label, device_summary, expected_device, pythonpath, run_cli
from vjplint.install_hint import install_hint

DATA = ROOT / "tests" / "data" / "verify"
CPU = JAX_ENV  # the CPU unless JAX_PLATFORMS names a lent accelerator
CHECKS = ["eager", "jit", "vmap", "grad", "jit(grad)", "vmap(grad)"]
NONDIFF_TRACER = ("UnexpectedTracerError: Found a JAX Tracer object passed as an argument to a custom_vjp function "
                  "in a position indicated by nondiff_argnums as non-differentiable.")


def by_function(reports: List[dict]) -> Dict[str, dict]:
    return {f"{Path(r['filename']).name}:{r['function']}": r for r in reports}


def statuses(report: dict) -> Dict[str, str]:
    return {c["name"]: c["status"] for c in report["checks"]}


# -- a correct rewrite and three planted bad ones ---------------------------------------------------------
@pytest.fixture(scope="module")
def ops_run():
    """ops.py against its correct rewrite and against the planted bad rewrites, in one CLI run;
    the linting process itself must import neither JAX nor the user's module."""
    code = ("import sys; from vjplint.cli import main; rc = main(sys.argv[1:]); "
            "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'ops', 'numpy')); "
            "print('LEAKED', leaked, file=sys.stderr); sys.exit(rc)")
    env = {**CPU, "PYTHONPATH": pythonpath(ROOT)}
    import os

    proc = subprocess.run(
        [sys.executable, "-c", code, "verify", "tests/data/verify/ops.py", "tests/data/verify/ops.py",
         "--rewritten", "tests/data/verify/ops_fixed.py", "--rewritten", "tests/data/verify/ops_planted.py",
         "--output-format", "json", "--jobs", "2"],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    reports = json.loads(proc.stdout)
    return proc, reports[:3], reports[3:]


def test_correct_rewrite_is_verified_under_every_transformation(ops_run):
    import jax

    proc, fixed, _ = ops_run
    assert [r["function"] for r in fixed] == ["clip_gradient", "scaled_identity", "masked_apply"]
    for r in fixed:
        assert r["status"] == "verified", r
        assert r["reason"] == ""
        assert [c["name"] for c in r["checks"]] == CHECKS
        assert set(statuses(r).values()) == {"passed"}
        assert all(c["max_error"] is not None and c["max_error"] <= 1e-6 for c in r["checks"])
        assert expected_device(r["device"]) and r["jax_version"] == jax.__version__
        assert r["hazard"]["status"] == "confirmed"
        assert r["hazard"]["exception"].startswith(NONDIFF_TRACER)
    assert fixed[0]["moved"] == ["lo", "hi"]
    assert fixed[0]["hazard"]["detail"] == "the original raises UnexpectedTracerError under jit with `lo`, `hi` traced"


def test_inputs_come_from_call_sites_annotations_and_probing(ops_run):
    _, fixed, _ = ops_run
    clip, scaled, masked = fixed
    assert clip["inputs"] == [
        {"name": "lo", "role": "moved", "value": "-0.5", "source": "call site, line 70"},
        {"name": "hi", "role": "moved", "value": "0.5", "source": "call site, line 70"},
        {"name": "x", "role": "diff", "value": "float32[3]",
         "source": "assumed: a differentiable argument; shape probed"},
    ]
    # jaxtyping: the named dimension `n` gets one size for both arguments.
    assert [(i["name"], i["value"], i["source"]) for i in scaled["inputs"]] == [
        ("w", "float32[3]", "annotation `Float[Array, 'n']`"),
        ("x", "float32[3]", "annotation `Float[Array, 'n']`"),
    ]
    # The callable stays a nondiff (static) argument, made from its annotation.
    assert masked["inputs"][0] == {"name": "fn", "role": "static", "value": "callable sin",
                                   "source": "annotation `Callable[[jax.Array], jax.Array]`"}


def test_planted_wrong_none_position_fails(ops_run):
    _, _, planted = ops_run
    clip = planted[0]
    assert clip["function"] == "clip_gradient" and clip["status"] == "failed"
    assert statuses(clip) == {"eager": "passed", "jit": "passed", "vmap": "passed", "grad": "failed",
                              "jit(grad)": "failed", "vmap(grad)": "failed"}
    assert clip["reason"].startswith(
        "grad: ValueError: Custom VJP bwd rule must produce an output with the same type as the args tuple")
    assert clip["reason"].endswith("(also under jit(grad), vmap(grad))")


def test_planted_swapped_none_fails_on_gradient_values(ops_run):
    _, _, planted = ops_run
    scaled = planted[1]
    assert scaled["status"] == "failed"
    grad = next(c for c in scaled["checks"] if c["name"] == "grad")
    assert grad["status"] == "failed"
    assert grad["detail"].startswith("the gradient for `x`[")
    assert "tolerance 1e-06" in grad["detail"]
    assert grad["max_error"] > 0.5


def test_planted_dropped_residual_fails(ops_run):
    _, _, planted = ops_run
    masked = planted[2]
    assert masked["status"] == "failed"
    assert masked["reason"] == ("grad: ValueError: not enough values to unpack (expected 2, got 1) "
                                "(also under jit(grad), vmap(grad))")


def test_verify_exits_one_and_the_linting_process_imports_no_user_code(ops_run):
    proc, _, _ = ops_run
    assert proc.returncode == 1
    assert "LEAKED []" in proc.stderr


# -- what cannot be verified says so -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def unverifiable_run():
    proc = run_cli("verify", "tests/data/verify/unverifiable.py", "--rewritten",
                   "tests/data/verify/unverifiable_fixed.py", env=CPU, timeout=600)
    return proc


def test_unverifiable_functions_say_why(unverifiable_run):
    lines = unverifiable_run.stdout.splitlines()
    heads = [line for line in lines if not line.startswith(" ")]
    on_cpu = f"on {device_label()} (JAX {_jax_version()})"
    assert heads[0] == (
        "tests/data/verify/unverifiable.py:11: apply_op: unverified on {d} (JAX {v}): cannot synthesise inputs: "
        "`op`: no annotation, default or call site gives a value. Name example inputs in [tool.vjplint.verify] "
        "examples = {{\"unverifiable.apply_op\" = \"module:make_args\"}}".format(v=_jax_version(), d=device_label()))
    assert heads[1] == f"tests/data/verify/unverifiable.py:29: apply_op_example: verified {on_cpu}"
    assert heads[2].startswith(f"tests/data/verify/unverifiable.py:51: folded: unverified {on_cpu}: "
                               "no probed shape for `w`, `x` works with the original (96 tried; last error: TypeError: "
                               "cannot reshape array of shape")
    assert heads[3] == ("tests/data/verify/unverifiable.py:69: inner: unverified: `inner` is defined inside "
                        "`make_scaler`, which neither calls it nor is a factory whose result the module binds: the "
                        "harness can only reach module-level functions and class attributes")
    assert heads[4] == (f"Verified 4 rewritten functions on {device_summary()}, JAX {_jax_version()}: "
                        f"1 verified, 0 failed, 3 unverified.")
    assert unverifiable_run.returncode == 1


def test_example_inputs_from_the_config_are_used(unverifiable_run):
    lines = unverifiable_run.stdout.splitlines()
    head = f"tests/data/verify/unverifiable.py:29: apply_op_example: verified on {device_label()} (JAX {_jax_version()})"
    start = lines.index(head)
    assert lines[start + 2] == ("    inputs     op=callable tanh (example unverifiable:apply_op_example_args), "
                                "w=float32[3] (example unverifiable:apply_op_example_args), "
                                "x=float32[3] (example unverifiable:apply_op_example_args)")
    assert lines[start + 3] == "    checks     eager ok, jit ok, vmap ok, grad ok, jit(grad) ok, vmap(grad) ok"


# -- custom_vjps reached through the module's own code ----------------------------------------------------
@pytest.fixture(scope="module")
def nested_run():
    """nested.py against the fix's own rewrite (nested_fixed.py, written by `vjplint --fix
    --unsafe-fixes`) and against one with each `None` in the other slot (nested_planted.py)."""
    proc = run_cli("verify", "tests/data/verify/nested.py", "tests/data/verify/nested.py", "--rewritten",
                   "tests/data/verify/nested_fixed.py", "--rewritten", "tests/data/verify/nested_planted.py",
                   "--output-format", "json", env=CPU, timeout=600)
    return proc, json.loads(proc.stdout)


def test_a_custom_vjp_defined_and_called_in_a_function_is_verified_with_the_arguments_it_passes(nested_run):
    _, reports = nested_run
    fixed = reports[0]
    assert (fixed["function"], fixed["line"], fixed["status"], fixed["moved"]) == ("_mm", 10, "verified", ["w"])
    assert statuses(fixed) == dict.fromkeys(CHECKS, "passed")
    assert [(i["name"], i["role"], i["value"], i["source"]) for i in fixed["inputs"]] == [
        ("x", "diff", "float32[3, 3]", "passed by `scaled_matmul`"),
        ("w", "moved", "float32[3, 3]", "passed by `scaled_matmul`")]
    assert fixed["hazard"]["status"] == "confirmed"


def test_a_custom_vjp_a_factory_returns_is_verified_where_the_module_binds_it(nested_run):
    _, reports = nested_run
    fixed = reports[1]
    assert (fixed["function"], fixed["line"], fixed["status"], fixed["moved"]) == ("SCALER", 26, "verified", ["w"])
    assert statuses(fixed) == dict.fromkeys(CHECKS, "passed")


def test_a_wrong_rewrite_reached_through_the_module_fails(nested_run):
    proc, reports = nested_run
    planted = reports[2:]
    assert [(r["function"], r["status"]) for r in planted] == [("_mm", "failed"), ("SCALER", "failed")]
    for r in planted:
        assert statuses(r) == {"eager": "passed", "jit": "passed", "vmap": "passed", "grad": "failed",
                               "jit(grad)": "failed", "vmap(grad)": "failed"}
        assert r["reason"].startswith("grad: the gradient for `x`")
    assert proc.returncode == 1


def _jax_version() -> str:
    import jax

    return jax.__version__


# -- the user's module misbehaves ---------------------------------------------------------------------------
CLIP = textwrap.dedent('''\
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
''')
CLIP_FIXED = textwrap.dedent('''\
    from functools import partial
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def clip_gradient_fwd(lo, hi, x):
        return x, (lo, hi)

    def clip_gradient_bwd(res, g):
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
''')
HANG = textwrap.dedent('''\

    import time

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def spin(w, x):
        while True:  # never returns: only the time limit ends it (asleep: no core burnt meanwhile)
            time.sleep(0.1)

    spin.defvjp(lambda w, x: (x, None), lambda w, _, g: (g * w,))

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def after(w, x):
        return x * w

    after.defvjp(lambda w, x: (x * w, None), lambda w, _, g: (g * w,))
''')
HANG_FIXED = textwrap.dedent('''\

    import time

    @jax.custom_vjp
    def spin(w, x):
        while True:  # never returns: only the time limit ends it (asleep: no core burnt meanwhile)
            time.sleep(0.1)

    spin.defvjp(lambda w, x: (x, (w,)), lambda res, g: (None, g * res[0]))

    @jax.custom_vjp
    def after(w, x):
        return x * w

    after.defvjp(lambda w, x: (x * w, (w,)), lambda res, g: (None, g * res[0]))
''')
MISBEHAVING = {
    # name: (original, rewritten)
    "import_error": ("import not_a_module_anywhere\n" + CLIP, "import not_a_module_anywhere\n" + CLIP_FIXED),
    "exits": ("import sys\nprint('side effect on stdout')\nsys.exit(3)\n" + CLIP,
              "import sys\nprint('side effect on stdout')\nsys.exit(3)\n" + CLIP_FIXED),
    "crashes": ("import os\nos._exit(5)\n" + CLIP, "import os\nos._exit(5)\n" + CLIP_FIXED),
    "broken_rewrite": (CLIP, CLIP_FIXED + "undefined_name_in_rewrite\n"),
}
# The time limit under test: clip_gradient, before the hanging function, must be verified within it
# (JAX imported, one check) while the other run shares the machine: 25 s was a window a machine at
# load 5-15 on 2 cores could miss; the test lasts this long whatever the load (the spin ends only at
# the limit).
HANG_TIMEOUT = 60


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory):
    """Every misbehaving module in one CLI run, the hang in a second run started at the same time."""
    root = tmp_path_factory.mktemp("misbehaving")
    (root / "pyproject.toml").write_text("[tool.vjplint]\n")
    args: List[str] = []
    rewritten: List[str] = []
    for name, (original, fixed) in MISBEHAVING.items():
        (root / f"{name}.py").write_text(original)
        (root / f"{name}_fixed.py").write_text(fixed)
        args.append(f"{name}.py")
        rewritten += ["--rewritten", f"{name}_fixed.py"]
    (root / "hangs.py").write_text(CLIP + HANG)
    (root / "hangs_fixed.py").write_text(CLIP_FIXED + HANG_FIXED)
    import os

    env = {**os.environ, **CPU, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "vjplint", "verify", "--output-format", "json"]
    # The hang run tests the time limit, not the device: on the CPU, since on a lent TPU
    # clip_gradient was not verified within the limit (2 of 2 runs on a v5e host, sharing the chip).
    hang_env = {**env, "JAX_PLATFORMS": "cpu"}
    hang = subprocess.Popen(command + ["hangs.py", "--rewritten", "hangs_fixed.py", "--timeout", str(HANG_TIMEOUT)],
                            cwd=root, env=hang_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    others = subprocess.run(command + args + rewritten + ["--jobs", "2"], cwd=root, env=env, capture_output=True,
                            text=True, timeout=600)
    hang_out, hang_err = hang.communicate(timeout=600)
    return root, others, by_function(json.loads(others.stdout)), hang.returncode, json.loads(hang_out), hang_err


def test_import_error_is_reported_not_raised(misbehaving):
    _, proc, reports = misbehaving[:3]
    r = reports["import_error.py:clip_gradient"]
    assert r["status"] == "unverified"
    assert r["reason"] == ("the module cannot be imported at line 1: "
                           "ModuleNotFoundError: No module named 'not_a_module_anywhere'; install the package into "
                           "that interpreter (`pip install -e .` in its project), or run with `--python PATH` naming "
                           "an interpreter that has it (or set `python` in [tool.vjplint.verify])")
    assert "Traceback" not in proc.stderr


def test_sys_exit_and_prints_at_import_are_contained(misbehaving):
    _, _, reports = misbehaving[:3]
    r = reports["exits.py:clip_gradient"]
    assert r["status"] == "unverified"
    assert r["reason"] == "the module cannot be imported at line 3: SystemExit: 3"
    assert expected_device(r["device"])


def test_a_process_that_dies_is_reported(misbehaving):
    _, _, reports = misbehaving[:3]
    r = reports["crashes.py:clip_gradient"]
    assert r["status"] == "unverified"
    assert r["reason"] == "the verification process exited with code 5 before reaching it"


def test_a_rewrite_that_does_not_import_fails(misbehaving):
    _, proc, reports = misbehaving[:3]
    r = reports["broken_rewrite.py:clip_gradient"]
    assert r["status"] == "failed"
    assert r["reason"] == ("the rewritten module fails to import at line 17: "
                           "NameError: name 'undefined_name_in_rewrite' is not defined")
    assert proc.returncode == 1


def test_a_hang_meets_the_time_limit_and_keeps_earlier_results(misbehaving):
    *_, returncode, reports, stderr = misbehaving
    assert returncode == 1, stderr
    clip, spin, after = reports
    assert (clip["function"], clip["status"]) == ("clip_gradient", "verified")
    assert (spin["function"], spin["status"]) == ("spin", "unverified")
    assert spin["reason"] == f"the time limit ({HANG_TIMEOUT} s) ran out while verifying it"
    assert (after["function"], after["status"]) == ("after", "unverified")
    assert after["reason"] == f"not reached: the time limit ({HANG_TIMEOUT} s) ran out on an earlier function"


@pytest.mark.skipif(sys.platform != "linux", reason="fcntl locks")
def test_children_take_turns_on_a_tpu_and_say_when_they_wait(monkeypatch):
    """libtpu lets one process hold the chip: each child takes a file lock first, and tells the
    parent (its first events) when it started and stopped waiting."""
    import fcntl

    from vjplint.verify import process

    events: List[str] = []
    monkeypatch.setattr(process, "single_process_accelerator", lambda: True)
    held = process.hold_the_chip(lambda **e: events.append(e["event"]))
    try:
        assert events == ["waiting-for-chip", "chip"]
        with open(held.name, "a") as other:  # another child: must wait
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        held.close()
    monkeypatch.undo()
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")  # pinned to the CPU: no chip, no lock
    assert process.single_process_accelerator() is False


@pytest.mark.skipif(sys.platform != "linux", reason="fcntl locks")
def test_a_recorded_command_takes_its_turn_on_a_tpu_and_its_children_do_not_wait(tmp_path):
    """`check-grads --record -- CMD` checks in CMD's own process, which opens the chip: vjplint
    holds the children's lock while CMD runs (on a TPU, under pytest -n 4, a recorded run beside
    another test's check-grads child made one of them fail to open the chip), and marks CMD's
    environment so that vjplint children CMD starts do not wait for their own parent."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""
        import fcntl, os, tempfile
        from vjplint.verify import process
        process.single_process_accelerator = lambda: True
        with open(os.path.join(tempfile.gettempdir(), "vjplint-tpu.lock"), "a") as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                print("PROBE: lock free")
            except BlockingIOError:
                print("PROBE: lock held")
        print("PROBE: child waits" if process.hold_the_chip(lambda **e: None) else "PROBE: child goes on")
    """))
    code = ("import sys; import vjplint.verify.process as p; p.single_process_accelerator = lambda: True; "
            "from vjplint.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "check-grads", ".", "--record", "--", sys.executable,
                           str(probe)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": pythonpath(ROOT), **JAX_ENV})
    assert "PROBE: lock held" in proc.stderr, proc.stderr
    assert "PROBE: child goes on" in proc.stderr, proc.stderr
    assert "--record: nothing was recorded" in proc.stderr  # the probe calls no custom derivative


@pytest.mark.parametrize("script, timed_out", [
    # waits 2 s for the chip, then works 1 s: inside a 1.5 s limit, which starts once it has the chip
    ("w('waiting-for-chip'); time.sleep(2); w('chip'); time.sleep(1)", False),
    # no chip to wait for: 3 s of work overrun the limit
    ("w('start'); time.sleep(3)", True),
])
def test_the_time_limit_does_not_count_the_wait_for_the_chip(tmp_path, script, timed_out):
    from vjplint.verify.api import run_harness

    child = tmp_path / "child.py"
    child.write_text("import json, sys, time\n"
                     "out = open(sys.argv[2], 'w')\n"
                     "def w(kind):\n    out.write(json.dumps({'event': kind}) + '\\n'); out.flush()\n" + script + "\n")
    outcome = run_harness({}, 1.5, None, str(tmp_path), script=child)
    assert outcome.timed_out is timed_out
    assert [e["event"] for e in outcome.events][:1] == (["start"] if timed_out else ["waiting-for-chip"])


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its new parent) counts as gone
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and sends POSIX signals")
@pytest.mark.parametrize("command, how", [("verify", "SIGINT"), ("verify", "SIGKILL"), ("check-grads", "SIGINT"),
                                          ("check-grads", "SIGKILL")])
def test_an_interrupted_run_leaves_no_harness_running(tmp_path, command, how):
    """The harness runs in a session of its own (so the time limit can kill its whole group): a
    Ctrl-C at the terminal does not reach it, and a killed vjplint would leave it running, on a
    TPU holding the chip from every later run."""
    import os
    import signal
    import time

    pidfile = tmp_path / "harness.pid"
    blocks = f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    time.sleep(0.1)\n"
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    (tmp_path / "blocks.py").write_text(blocks + CLIP)
    (tmp_path / "blocks_fixed.py").write_text(blocks + CLIP_FIXED)
    env = {**os.environ, **CPU, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    args = ["blocks.py", "--rewritten", "blocks_fixed.py"] if command == "verify" else ["blocks.py"]
    cli = subprocess.Popen([sys.executable, "-m", "vjplint", command, *args, "--timeout", "300"], cwd=tmp_path,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not pidfile.exists() or not pidfile.read_text():
            assert cli.poll() is None and time.monotonic() < deadline, cli.communicate(timeout=10)
            time.sleep(0.2)
        harness = int(pidfile.read_text())
        cli.send_signal(getattr(signal, how))
        cli.communicate(timeout=60)
        deadline = time.monotonic() + 300  # a hang guard: the loop ends as soon as the harness is gone
        while _alive(harness) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(harness)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()


def test_missing_jax_names_the_verify_extra(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    (tmp_path / "clip.py").write_text(CLIP)
    (tmp_path / "clip_fixed.py").write_text(CLIP_FIXED)
    # The project root is on the harness's sys.path: a `jax` there that cannot be imported
    # stands in for an environment without JAX.
    (tmp_path / "jax").mkdir()
    (tmp_path / "jax" / "__init__.py").write_text("raise ImportError('No module named jax (simulated)')\n")
    proc = run_cli("verify", "clip.py", "--rewritten", "clip_fixed.py", cwd=tmp_path, env=CPU)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (f"vjplint: error: JAX cannot be imported by {sys.executable} (ImportError: No module "
                           f"named jax (simulated)); verification needs it: {install_hint('verify')}\n")


# -- usage -------------------------------------------------------------------------------------------------
def test_rewritten_count_must_match_paths():
    proc = run_cli("verify", "a.py", "b.py", "--rewritten", "a_fixed.py")
    assert proc.returncode == 2
    assert proc.stderr == ("vjplint: error: --rewritten was given 1 time(s) for 2 PATH(s): give one rewritten "
                           "file per original file\n")


def test_unknown_verify_setting_is_a_config_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint.verify]\nexampels = {}\n")
    (tmp_path / "a.py").write_text(CLIP)
    proc = run_cli("verify", "a.py", "--rewritten", "a.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.endswith("unknown key in [tool.vjplint.verify]: exampels (did you mean 'examples'?) "
                                "(known keys: examples, timeout, python)\n")


def test_nothing_to_verify_exits_zero(tmp_path):
    (tmp_path / "a.py").write_text(CLIP)
    proc = run_cli("verify", "a.py", "--rewritten", "a.py", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == "Nothing to verify: no fix rewrites anything here.\n"


def test_modules_on_the_environments_pythonpath_reach_the_harness(tmp_path):
    """The harness runs isolated (`python -I`), yet a module installed only on PYTHONPATH (as JAX is
    on some machines) must import there, after the project's own roots."""
    lib, project = tmp_path / "lib", tmp_path / "project"
    lib.mkdir()
    project.mkdir()
    (lib / "clip_settings.py").write_text("SCALE = 1.0\n")
    (project / "pyproject.toml").write_text("[tool.vjplint]\n")
    (project / "clip.py").write_text("import clip_settings\n" + CLIP)
    (project / "clip_fixed.py").write_text("import clip_settings\n" + CLIP_FIXED)
    proc = run_cli("verify", "clip.py", "--rewritten", "clip_fixed.py", cwd=project,
                   env={**CPU, "PYTHONPATH": pythonpath(ROOT, lib)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"clip_gradient: verified on {device_label()}" in proc.stdout


TPU_WARNING = ("/opt/site/jax/_src/cloud_tpu_init.py:86: UserWarning: Transparent hugepages are not enabled. "
               "TPU runtime startup and shutdown time should be significantly improved on TPU v5e and newer.\n"
               "  warnings.warn(\n")


@pytest.mark.unit
@pytest.mark.parametrize("stderr, summary", [
    ("", ""),
    (TPU_WARNING, ""),  # a start-up warning is not why a process died
    (TPU_WARNING + "Traceback (most recent call last):\n  File \"m.py\", line 3, in <module>\n    boom()\n"
     "RuntimeError: boom\n", 'File "m.py", line 3, in <module> boom() RuntimeError: boom'),
    ("Fatal Python error: Segmentation fault\n\n" + TPU_WARNING, "Fatal Python error: Segmentation fault"),
    ("x " * 200 + "end\n", "..." + (" x" * 148) + " end"),
])
def test_a_dead_process_is_summarised_by_its_last_lines_of_substance(stderr, summary):
    from vjplint.verify.api import stderr_summary

    assert stderr_summary(stderr) == summary
    assert len(stderr_summary(stderr)) <= 303


SPREAD = '''from functools import partial

import jax
import jax.numpy as jnp

from spreadpkg.core.grid import SCALE


def fold_rescale(x):
    return x * SCALE


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def spread(weights: jax.Array, x):
    return fold_rescale(x)


def spread_fwd(weights, x):
    return spread(weights, x), None


def spread_bwd(weights, _, g):
    return (SCALE * g * jnp.ones_like(weights),)


spread.defvjp(spread_fwd, spread_bwd)
'''


def test_a_package_whose_init_reexports_the_module_is_imported_first(tmp_path):
    """Issue 37 (nufftax, flax): `spreadpkg/__init__.py` re-exports from `spreadpkg.core.spread`,
    which imports `spreadpkg...` itself. Executed under its dotted name before the package's
    `__init__` had run, the module met its own half-executed self there ("cannot import name
    'fold_rescale' from 'spreadpkg.core.spread'") and every rewrite came back unverified."""
    package = tmp_path / "spreadpkg"
    (package / "core").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    (package / "__init__.py").write_text("from .core.spread import fold_rescale, spread  # noqa: F401\n")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "grid.py").write_text("SCALE = 2.0\n")
    (package / "core" / "spread.py").write_text(SPREAD)
    proc = run_cli("--fix", "--unsafe-fixes", "--verify", "--no-cache", "spreadpkg", cwd=tmp_path, env=CPU)
    assert (proc.returncode, proc.stdout) == (0, "Fixed 1 problem.\n"), proc.stdout + proc.stderr
    assert proc.stderr == f"vjplint: verify: spreadpkg/core/spread.py:13: spread: verified on {device_label()}\n"
    assert "def spread_bwd(weights, g):" in (package / "core" / "spread.py").read_text()
