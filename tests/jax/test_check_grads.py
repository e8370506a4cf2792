"""`vjplint check-grads` through the real CLI on real JAX (CPU): every planted wrong rule in
fixtures/check_grads/ is reported with its code, place and measured error, the correct ones
(the JAX tutorial's examples in our words, and a selection of the project's silent lint
fixtures) pass, derivatives that cannot be checked say why without failing the run, and the
analysed tree is never written to. The lint layer never reports these runtime codes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, Tuple

import pytest

from tests.conftest import ROOT, device_has_float64, device_label, device_summary, lint, pythonpath, run_cli

FIXTURES = ROOT / "fixtures" / "check_grads"
RUNTIME = ("VJP501", "VJP502", "VJP503", "VJP504", "VJP509")
# The precision the checks run at: float64, except on a TPU, which has none (float32 tolerances).
PREC = "float64" if device_has_float64() else "float32"
TOL = {"float64": "1e-05", "float32": "0.03"}[PREC]
TOL10 = {"float64": "0.0001", "float32": "0.3"}[PREC]  # order 2
# (file, code, row, column): the definition's decorator, and the key part of the message.
EXPECTED: Dict[str, Tuple[str, int, int, str]] = {
    # A literal None cotangent is the rule saying "not differentiated here": a warning, the others compared.
    "warn_bwd_none_for_used_input.py": (
        "VJP501", 7, 2, "`scaled`: bwd cotangent for `w` may be wrong: the bwd rule returns None for it (a zero "
        "cotangent: it declares `w` not differentiated), right only if no caller differentiates `w`; it differs from "
        f"finite differences: max rel. error 1 at w={PREC}[3], x={PREC}[3] (order 1, {PREC}; tolerance {TOL}); the "
        "primal's own autodiff agrees with finite differences and differs from the rule by 1; the other arguments "
        "were compared"),
    # An array in nondiff_argnums, traced as a caller that jits or differentiates it would: warnings.
    "warn_nondiff_array_traced_vjp.py": (
        "VJP504", 10, 2, "`rescale`: may raise when a caller traces `scale` (an array in nondiff_argnums): under jit "
        "with `scale` as an argument it raises UnexpectedTracerError: Found a JAX Tracer object passed as an argument "
        "to a custom_vjp function in a position indicated by nondiff_argnums as non-differentiable."),
    "warn_nondiff_array_traced_jvp.py": (
        "VJP502", 10, 2, "`weighted`: gradient for `w` may be wrong: it is in nondiff_argnums but holds an array, and "
        "differentiated with respect to `w` (as a caller that traces it would) the gradient differs from finite "
        f"differences by max rel. error 1 at x={PREC}[3], w=float32[3]; keep `w` out of nondiff_argnums (its rule "
        "returning a zero or None cotangent for it) or make sure no caller traces it"),
    "fail_cotangent_off_by_factor.py": (
        "VJP501", 6, 2, "`square_norm`: bwd cotangent for `x` differs from finite differences: max rel. error 0.5 "
        f"at x={PREC}[3] (order 1, {PREC}; tolerance {TOL}); the primal's own autodiff agrees with finite "
        "differences and differs from the rule by 0.5"),
    "fail_second_order_stop_gradient.py": (
        "VJP501", 7, 2, "`wave`: second-order derivative for `x` (grad of grad, through the bwd rule) differs from "
        f"finite differences: max rel. error 1 at x={PREC}[3] (order 2, {PREC}; tolerance {TOL10}); the primal's own "
        "autodiff agrees with finite differences and differs from the rule by 1"),
    # A raise inside the rule is the rule's fault, even at assumed inputs, when the primal and its
    # own autodiff run there: the exception and the rule's line.
    "fail_bwd_returns_a_bare_value.py": (
        "VJP501", 7, 2, "`mul`: reverse mode raises with the bwd rule (the bwd rule `mul_bwd`, line 16): TypeError: "
        "Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args tuple of "
        "the primal function"),
    # No rule registered once the module is imported: JAX raises at every call.
    "fail_no_rule_registered.py": (
        "VJP502", 8, 2, "`softplus`: every call raises AttributeError: No JVP defined for custom_jvp function "
        "softplus using defjvp. (no rule is registered once the module has been imported)"),
    # A gradient transform that drops the gradient entirely: a warning.
    "warn_transform_drops_the_gradient.py": (
        "VJP501", 8, 2, "`clip_gradient`: bwd cotangent for `x` may be wrong: the primal is the identity (it returns "
        "`x` unchanged), so the bwd rule is a gradient transform, but it drops the gradient entirely (zero where "
        f"finite differences give max 1.4) at x={PREC}[3]"),
    # Finite differences alone, at assumed inputs: a warning that says "may", with how to give inputs.
    "warn_no_second_reference.py": (
        "VJP501", 8, 2, "`cube_root`: bwd cotangent for `x` may be wrong: it differs from finite differences by max "
        f"rel. error 0.333 at x={PREC}[3] (order 1, {PREC}; tolerance {TOL}), but the inputs were assumed (`x`) and "
        "there is no second reference (the primal's own autodiff raises ValueError: Reverse-mode differentiation "
        "does not work for lax.while_loop"),
    "fail_jvp_tangent_is_a_product.py": (
        "VJP502", 5, 2, "`product`: the jvp rule's tangent output is not linear in the input tangents: doubling "
        f"them scales it by 4, not 2, at x={PREC}[3], y={PREC}[3]"),
    "fail_fwd_primal_differs.py": (
        "VJP503", 7, 2, "`softplus`: fwd's primal output differs from the primal function's output: max rel. error"),
    "fail_jvp_rule_primal_differs.py": (
        "VJP503", 7, 2, "`softplus`: the jvp rule's primal output differs from the primal function's output: max "
        "rel. error"),
    "fail_wrong_under_vmap.py": (
        "VJP504", 12, 2, "`scale_by_sum`: the gradient for `x` under vmap(grad) differs from eager: max rel. error"),
    "unchecked_import_error.py": (
        "VJP509", 8, 2, "`double` not checked: the module cannot be imported at line 5: ModuleNotFoundError: No "
        "module named 'vjplint_fixture_missing_dependency'"),
    "unchecked_no_inputs.py": (
        "VJP509", 7, 2, "`apply` not checked: cannot synthesise inputs: `layer`: no annotation, default or call "
        "site gives a value"),
}
SEVERITY = {"VJP509": "info", **{name: "warning" for name in EXPECTED if name.startswith("warn_")}}
# Gradient transforms, not compared with the true gradient on purpose: info, never a failure.
TRANSFORMS = {
    ("transform_gradients.py", 11): "`clip_gradient`: not compared with the true gradient: the primal is the "
    "identity (it returns `x` unchanged), so the bwd rule is a gradient transform (clipping, scaling, reversal)",
    ("transform_gradients.py", 31): "`round_ste`: not compared with the true gradient: the primal's derivative for "
    "`x` is zero while its value changes with `x` (a piecewise-constant primal), so the bwd rule is a "
    "straight-through estimator",
    ("transform_gradients.py", 47): "`masked_ste`: not compared with the true gradient: the bwd rule agrees with "
    "the primal's derivative for `x` wherever that is not zero, and passes a gradient where it is zero (the primal "
    "masks, zeroes or rounds those elements), so it is a straight-through estimator",
    ("transform_gradients.py", 69): "`softmin`: not compared with the true gradient: the bwd rule returns None for "
    "`gamma`, a scalar beside array arguments (a hyperparameter it declares constant)",
}
# Silent lint fixtures whose rules are right: check-grads must pass them too.
SILENT = ["VJP305/silent_defaulted_extra.py", "VJP305/silent_nondiff_sorted.py", "VJP101/silent_epsilon.py",
          "VJP306/silent_list_of_right_length.py", "VJP106/silent_static_axis.py", "VJP312/silent_nondiff_first.py",
          "VJP302/silent_defjvp_decorator.py"]


@pytest.fixture(scope="module")
def fixtures_run(tmp_path_factory) -> dict:
    report = tmp_path_factory.mktemp("report") / "report.json"
    proc = run_cli("check-grads", "--output-format", "json", "--report", str(report), "fixtures/check_grads",
                   timeout=900)
    return {"proc": proc, "diagnostics": json.loads(proc.stdout), "report": json.loads(report.read_text())}


def _name(d: dict) -> str:
    return Path(d["filename"]).name


def test_every_planted_wrong_rule_is_reported_and_no_correct_one(fixtures_run):
    proc, diagnostics = fixtures_run["proc"], fixtures_run["diagnostics"]
    assert proc.returncode == 1, proc.stderr
    notes = [d for d in diagnostics if _name(d) == "transform_gradients.py"]
    assert {(_name(d), d["location"]["row"]): d["message"] for d in notes} == TRANSFORMS
    assert {(d["code"], d["severity"]) for d in notes} == {("VJP501", "info")}
    diagnostics = [d for d in diagnostics if d not in notes]
    found = {_name(d): (d["code"], d["location"]["row"], d["location"]["column"]) for d in diagnostics}
    assert len(found) == len(diagnostics), "one diagnostic per planted bug"
    assert found == {name: want[:3] for name, want in EXPECTED.items()}
    for d in diagnostics:
        code, _, _, message = EXPECTED[_name(d)]
        assert message in d["message"], (d["message"], message)
        assert d["severity"] == SEVERITY.get(_name(d), SEVERITY.get(code, "error"))
    planted = {p.name for p in FIXTURES.glob("*.py") if not p.name.startswith(("pass_", "transform_"))}
    assert planted == set(EXPECTED)
    assert f"check-grads: 33 custom derivatives in 25 modules on {device_summary()}, JAX " in proc.stderr
    # 14 pass: 2 at inputs the module gives (call sites, EXAMPLE_ARGS), 12 at assumed inputs only.
    assert ": 2 passed, 8 failed, 5 may be wrong, 4 gradient transforms (not compared), 12 at assumed inputs only " \
           "(not counted as passed), 2 not checked." in proc.stderr


def test_the_report_names_each_check(fixtures_run):
    by_file = {Path(r["filename"]).name: r for r in fixtures_run["report"]}
    # Passed, at recorded or given inputs, or at assumed inputs only (not counted as passed in the summary).
    passed = {(Path(r["filename"]).name, r["function"]): r for r in fixtures_run["report"]
              if r["status"] in ("passed", "assumed")}
    assert {name for name, _ in passed} == {p.name for p in FIXTURES.glob("pass_*.py")}
    assert {f for n, f in passed if n == "pass_domains.py"} == {"log_shift", "safe_arcsin", "sphere_angle",
                                                                "purity_gap", "log_add_exp", "cube_root"}
    for name, r in passed.items():
        checks = {c["name"]: c["status"] for c in r["checks"]}
        assert all(status in ("passed", "skipped") for status in checks.values()), (name, checks)
        assert checks["reverse order 1"] == checks["reverse order 2"] == "passed"
        for transform in ("jit", "vmap", "jit(grad)", "vmap(grad)", "primal output"):
            assert checks[transform] == "passed", (name, transform)
        if r["kind"] == "jvp":
            assert checks["forward order 1"] == checks["forward order 2"] == "passed"
        else:  # custom_vjp has no forward mode: skipped, never a failure
            forward = next(c for c in r["checks"] if c["name"] == "forward")
            assert forward["status"] == "skipped" and forward["detail"] == "a custom_vjp has no forward-mode rule"
    vmap_bug = {c["name"]: c["status"] for c in by_file["fail_wrong_under_vmap.py"]["checks"]}
    assert vmap_bug["reverse order 1"] == vmap_bug["jit(grad)"] == vmap_bug["vmap"] == "passed"
    assert vmap_bug["vmap(grad)"] == "failed"
    assert by_file["pass_example_args.py"]["inputs"][0]["source"] == "EXAMPLE_ARGS() in the module"
    # The report says where made-up values were moved to make the primal finite.
    # The module's only caller normalises `q`: made-up values on the unit sphere, checked through the normalisation.
    assert passed[("pass_caller_normalises.py", "scaled")]["inputs"][0]["source"] == (
        "assumed: a differentiable argument; of unit norm, as the module's caller passes it (line 31); shape probed")
    sources = {f: r["inputs"][0]["source"] for (n, f), r in passed.items() if n == "pass_domains.py"}
    assert sources == {"log_shift": "assumed: a differentiable argument; shape probed; values above 2",
                       "safe_arcsin": "assumed: a differentiable argument; shape probed; values in (0, 1)",
                       "sphere_angle": "assumed: a differentiable argument; shape probed; values of unit norm",
                       "purity_gap": "assumed: a differentiable argument; shape probed; values in (0, 1)",
                       "log_add_exp": "assumed: a differentiable argument; shape probed",
                       "cube_root": "assumed: a differentiable argument; shape probed"}


def test_correct_silent_lint_fixtures_pass(tmp_path):
    report = tmp_path / "report.json"
    proc = run_cli("check-grads", "--report", str(report), *[f"fixtures/rules/{p}" for p in SILENT], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    statuses = {(Path(r["filename"]).parent.name + "/" + Path(r["filename"]).name, r["function"]): r["status"]
                for r in json.loads(report.read_text())}
    assert {file for file, _ in statuses} == set(SILENT)
    assert set(statuses.values()) <= {"passed", "assumed"}, statuses  # "assumed": passed at assumed inputs only
    assert "All checks passed!" in proc.stdout


ONE = "fixtures/check_grads/fail_cotangent_off_by_factor.py"
FORMATS = ["text", "concise", "github", "sarif", "lsp"]
# `vjplint check-grads --output-format FMT ONE` for every format, through the CLI's entry point
# (`vjplint.cli.main`, argv as given) in one process: the first run checks ONE on JAX (its
# harness child, as always), the later ones take the same job's outcomes from it instead of
# checking the same derivative again, so each format's path from argv to output still runs.
# The command line's own path (`python -m vjplint check-grads`) runs in the other tests.
_FORMATS_DRIVER = """
import contextlib, io, json, sys
from vjplint.cli import check_grads, main
from vjplint.gradcheck.api import Outcome

real, kept = check_grads.check_jobs, []


def replayed(jobs, *args, **kwargs):
    if not kept:
        kept.extend(real(jobs, *args, **kwargs))
        return list(kept)
    targets = {(job.display, t.qualname): (job, t) for job in jobs for t in job.targets}
    assert sorted(targets) == sorted((o.job.display, o.target.qualname) for o in kept), "not the same run"
    return [Outcome(*targets[o.job.display, o.target.qualname], o.report) for o in kept]


check_grads.check_jobs = replayed
out = {}
for fmt in json.loads(sys.argv[1]):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            rc = main(["check-grads", "--output-format", fmt, sys.argv[2]])
        except SystemExit as exit:
            rc = exit.code if isinstance(exit.code, int) else 1
    out[fmt] = [rc, stdout.getvalue(), stderr.getvalue()]
sys.__stdout__.write(json.dumps(out))
"""


@pytest.fixture(scope="module")
def format_runs() -> Dict[str, subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    proc = subprocess.run([sys.executable, "-c", _FORMATS_DRIVER, json.dumps(FORMATS), ONE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {fmt: subprocess.CompletedProcess(fmt, *run) for fmt, run in json.loads(proc.stdout).items()}


@pytest.mark.parametrize("fmt,marks", [
    ("text", ["fixtures/check_grads/fail_cotangent_off_by_factor.py:6:2: VJP501 `square_norm`: bwd cotangent",
              "\nFound 1 "]),
    ("concise", ["fixtures/check_grads/fail_cotangent_off_by_factor.py:6:2: VJP501 `square_norm`: bwd cotangent for "
                 f"`x` differs from finite differences: max rel. error 0.5 at x={PREC}[3]"]),
    ("github", ["::error file=fixtures/check_grads/fail_cotangent_off_by_factor.py,line=6,col=2,",
                "title=VJP501 (bwd-cotangent-mismatch)::`square_norm`: bwd cotangent for `x`"]),
])
def test_text_formats(fmt, marks, format_runs):
    proc = format_runs[fmt]
    assert proc.returncode == 1, proc.stderr
    for mark in marks:
        assert mark in proc.stdout, proc.stdout
    summary = proc.stdout if fmt in ("text", "concise") else proc.stderr
    assert f"check-grads: 1 custom derivative in 1 module on {device_label()}" in summary


def test_sarif_and_lsp_carry_the_finding(format_runs):
    proc = format_runs["sarif"]
    assert proc.returncode == 1, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    (result,) = run["results"]
    assert result["ruleId"] == "VJP501" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (6, 2)
    assert "bwd cotangent for `x` differs from finite differences" in result["message"]["text"]
    assert "VJP501" in {r["id"] for r in run["tool"]["driver"]["rules"]}
    proc = format_runs["lsp"]
    published = json.loads(proc.stdout)
    text = json.dumps(published)
    assert '"VJP501"' in text and '"line": 5' in text and '"character": 1' in text


def test_a_rule_that_raises_on_purpose_is_noted_even_with_its_frames_hidden(tmp_path):
    """A jvp rule whose body is `raise RuntimeError(msg)` refuses differentiation by design
    (equinox's nondifferentiable): info, not a failure, also when the package hides its own
    frames from JAX's tracebacks, as equinox does."""
    pkg = tmp_path / "hidden"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""\
        import os

        from jax._src import traceback_util

        traceback_util.register_exclusion(os.path.dirname(__file__))
        """))
    (pkg / "nd.py").write_text(textwrap.dedent("""\
        from functools import partial

        import jax


        @partial(jax.custom_jvp, nondiff_argnums=(0,))
        def nondifferentiable(msg, x):
            return x


        @nondifferentiable.defjvp
        def nondifferentiable_jvp(msg, primals, tangents):
            raise RuntimeError(msg)


        def use(x):
            return nondifferentiable("do not differentiate", x)
        """))
    proc = run_cli("check-grads", "--output-format", "concise", "hidden", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "hidden/nd.py:6:2: VJP502 `nondifferentiable`: not compared: the rule raises on purpose (a `raise` in " \
           "the module's own code (the jvp rule `nondifferentiable_jvp`, line 13)), so it refuses to be " \
           "differentiated this way: forward mode raises" in proc.stdout, proc.stdout
    assert ": 0 passed, 0 failed, 1 gradient transform (not compared), 0 not checked." in proc.stdout


def test_hang_and_crash_are_reported_not_suffered(tmp_path):
    # The hang sleeps rather than spins: the time limit ends it all the same, without burning a
    # core for its 20 s (the suite shares the machine's cores with the other test worker).
    (tmp_path / "hangs.py").write_text(textwrap.dedent("""\
        import time

        import jax

        while True:
            time.sleep(0.1)


        @jax.custom_vjp
        def f(x):
            return x
        f.defvjp(lambda x: (x, None), lambda _, g: (g,))
        """))
    (tmp_path / "crashes.py").write_text(textwrap.dedent("""\
        import os

        import jax


        @jax.custom_vjp
        def f(x):
            return 2 * x


        def f_bwd(_, g):
            os._exit(3)


        f.defvjp(lambda x: (f(x), None), f_bwd)
        """))
    started = time.monotonic()
    proc = run_cli("check-grads", "--timeout", "20", "--output-format", "concise", str(tmp_path), timeout=300)
    assert time.monotonic() - started < 120
    assert proc.returncode == 0, proc.stdout + proc.stderr  # nothing failed: both are "not checked"
    lines = sorted(line for line in proc.stdout.splitlines() if "VJP5" in line)
    assert len(lines) == 2, proc.stdout
    assert lines[0].endswith("crashes.py:6:2: VJP509 `f` not checked: the verification process exited with code 3 "
                             "while verifying it") or "exited with code 3 while verifying it" in lines[0]
    assert "hangs.py:9:2: VJP509 `f` not checked: the time limit (20 s) ran out while importing the module " \
           "(does it hang?)" in lines[1]
    assert "0 passed, 0 failed, 2 not checked." in proc.stdout


def test_the_analysed_tree_is_not_written_and_noqa_is_honoured(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(textwrap.dedent("""\
        import os

        import jax

        with open(os.path.join(os.path.dirname(__file__), "written.txt"), "w") as handle:
            handle.write("the import ran here")


        @jax.custom_vjp  # noqa: VJP501 (the cotangent is clipped on purpose)
        def clipped_tanh(x):
            return jax.numpy.tanh(x)


        clipped_tanh.defvjp(lambda x: (clipped_tanh(x), None), lambda _, g: (jax.numpy.clip(g, -0.1, 0.1),))
        """))
    (package / "surrogates.py").write_text(textwrap.dedent("""        import jax


        @jax.custom_vjp
        def reverse_gradient(x):
            return x


        reverse_gradient.defvjp(lambda x: (x, None), lambda _, g: (-g,))
        """))
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nper-file-ignores = { "pkg/surrogates.py" = ["VJP501"] }\n')
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    proc = run_cli("check-grads", "--show-checks", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "VJP501" not in proc.stdout and "clipped_tanh (custom_vjp): failed" in proc.stdout
    # An identity primal is a gradient transform (an info finding, which per-file-ignores hides here).
    assert "reverse_gradient (custom_vjp): gradient transform (not compared)" in proc.stdout
    assert (": 0 passed, 1 failed (1 of them suppressed by noqa or ignores), 1 gradient transform (not compared), "
            "0 not checked.") in proc.stdout
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before  # no written.txt,
    # no __pycache__: the child imported a copy of `pkg`
    lint_proc = run_cli("--output-format", "concise", "--no-cache", str(tmp_path))
    assert "VJP901" not in lint_proc.stdout  # linting does not call a check-grads noqa unused


def test_selection_and_usage_errors():
    proc = run_cli("check-grads", "--ignore", "VJP509", "fixtures/check_grads/unchecked_no_inputs.py")
    assert proc.returncode == 0 and "VJP509" not in proc.stdout and "All checks passed!" in proc.stdout
    proc = run_cli("check-grads", "--select", "VJP3", "fixtures/check_grads")
    assert proc.returncode == 2 and "--select: 'VJP3' names no check-grads code" in proc.stderr


@pytest.mark.unit
def test_linting_never_reports_runtime_codes():
    from vjplint.rules.registry import all_rules

    assert [c for c, r in all_rules().items() if r.RUNTIME] == list(RUNTIME)
    for path in sorted(FIXTURES.glob("*.py")):
        codes = {d.code for d in lint(path.read_text(), filename=path.name, extend_select=RUNTIME)}
        assert not codes & set(RUNTIME), (path.name, codes)


@pytest.mark.unit
def test_every_runtime_rule_has_a_fixture_that_fires_it():
    fired = {code for code, *_ in EXPECTED.values()}
    assert fired == set(RUNTIME)




def test_the_module_callers_are_run_with_the_rule(tmp_path):
    """Issue #35: a rule right in isolation, used wrongly by its module's own callers (one sniffs
    for a JVPTracer to choose a stop_gradient path; one applies jacfwd to a custom_vjp), is reported
    on the rule with the caller named, as a "may" warning (the inputs were made up); a correct
    caller, also one that differentiates in reverse mode itself, stays quiet."""
    pkg = tmp_path / "callers"
    pkg.mkdir()
    (pkg / "sniff.py").write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp
        from jax.interpreters.ad import JVPTracer


        @jax.custom_jvp
        def softplus(x):
            return jnp.log1p(jnp.exp(x))


        @softplus.defjvp
        def softplus_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return softplus(x), t * jax.nn.sigmoid(x)


        def loss(x):
            if isinstance(x, JVPTracer):
                return softplus(x) * 2.0
            return jax.lax.stop_gradient(softplus(x) * 2.0)
        """))
    (pkg / "forward.py").write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp


        @jax.custom_vjp
        def cube(x):
            return x ** 3


        def cube_fwd(x):
            return cube(x), x


        def cube_bwd(x, g):
            return (3.0 * x ** 2 * g,)


        cube.defvjp(cube_fwd, cube_bwd)


        def model(x):
            return jnp.sin(cube(x))


        def jacobian(x):
            return jax.jacfwd(model)(x)
        """))
    (pkg / "good.py").write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp


        @jax.custom_vjp
        def cube(x):
            return x ** 3


        def cube_fwd(x):
            return cube(x), x


        def cube_bwd(x, g):
            return (3.0 * x ** 2 * g,)


        cube.defvjp(cube_fwd, cube_bwd)


        def model(x):
            return jnp.sin(cube(x / jnp.linalg.norm(x)))


        def jacobian(x):
            return jax.jacrev(model)(x)
        """))
    proc = run_cli("check-grads", "--output-format", "concise", "callers", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # warnings only
    lines = [line for line in proc.stdout.splitlines() if ": VJP5" in line]
    assert len(lines) == 2, proc.stdout
    assert lines[0].startswith("callers/forward.py:5:2: VJP501 `cube`: its caller `jacobian` (with the inputs made "
                               "for `cube`: x="), lines[0]
    assert "applies forward-mode autodiff (jax.jvp, jacfwd) to this custom_vjp, and JAX raises TypeError: can't " \
           "apply forward-mode autodiff (jvp) to a custom_vjp function." in lines[0]
    assert lines[1].startswith("callers/sniff.py:6:2: VJP502 `softplus`: the gradient of its caller `loss` (with the "
                               "inputs made for `softplus`: x="), lines[1]
    assert "differs from finite differences of the caller (max rel. error 1) where the derivative's own checks " \
           "agree: the caller may take another path under differentiation" in lines[1]
    assert ": 0 passed, 0 failed, 2 may be wrong, 1 at assumed inputs only (not counted as passed), 0 not checked." \
        in proc.stdout, proc.stdout


SCALED = '''from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scaled(x, scale):
    return x * scale


def scaled_fwd(x, scale):
    return scaled(x, scale), None


def scaled_bwd(scale, _, g):
    return (FACTOR * g * scale,)


scaled.defvjp(scaled_fwd, scaled_bwd)
'''


def test_a_nondiff_number_nothing_describes_is_a_float_as_verify_makes_it_an_array(tmp_path):
    """Issue 47: verify synthesised `scale` (moved, an array) where check-grads gave up (VJP509);
    kept nondiff it is static, so a Python float, which the rule's arithmetic takes as verify's array."""
    (tmp_path / "right.py").write_text(SCALED.replace("FACTOR * ", ""))
    (tmp_path / "wrong.py").write_text(SCALED.replace("FACTOR", "2"))
    proc = run_cli("check-grads", "--show-checks", "right.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "right.py:6: scaled (custom_vjp): passed at assumed inputs only\n" in proc.stdout, proc.stdout
    assert " (assumed: a nondiff argument used as a number (`x * scale`))\n" in proc.stdout, proc.stdout
    proc = run_cli("check-grads", "--output-format", "json", "wrong.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert [(d["code"], d["location"]["row"]) for d in json.loads(proc.stdout)] == [("VJP501", 6)], proc.stdout
    verify = run_cli("verify", "--unsafe-fixes", "right.py", cwd=tmp_path)
    assert "scale=float32[3] (assumed: a moved argument (an array, as the fix assumed)" in verify.stdout, verify.stdout
