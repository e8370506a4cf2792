"""The fix machinery: `--fix`, `--diff`, `--unsafe-fixes`, `--show-fixes`, stdin, JSON edits,
atomic writes that keep encoding/BOM/line endings/mode, passes to a fixed point."""

from __future__ import annotations

import json
import random
import stat
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from vjplint.settings.config import Config
from vjplint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from vjplint.fixes import apply as fix_apply
from vjplint.cli.fix import unified_diff
from vjplint.fixes.edits import apply_edits, diff_edits

PAIRS = FIXTURES / "fix"
CANONICAL_IN = (PAIRS / "safe_canonical" / "input.py").read_text(encoding="utf-8")
CANONICAL_OUT = (PAIRS / "safe_canonical" / "expected.py").read_text(encoding="utf-8")
UNSAFE_IN = (PAIRS / "unsafe_maybe_array" / "input.py").read_text(encoding="utf-8")
UNSAFE_OUT = (PAIRS / "unsafe_maybe_array" / "expected.py").read_text(encoding="utf-8")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))  # line breaks as given (write_text's newline= needs Python 3.10)
    return path


def test_fix_rewrites_in_place_and_a_second_run_changes_nothing(tmp_path):
    path = _write(tmp_path, "clip.py", CANONICAL_IN)
    proc = run_cli("--fix", "--no-cache", "clip.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "Fixed 2 problems.\n", "")
    assert path.read_text(encoding="utf-8") == CANONICAL_OUT
    again = run_cli("--fix", "--no-cache", "clip.py", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "All checks passed!\n")
    assert path.read_text(encoding="utf-8") == CANONICAL_OUT
    assert [p.name for p in tmp_path.iterdir()] == ["clip.py"]  # no temp file left behind


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path):
    path = _write(tmp_path, "clip.py", CANONICAL_IN)
    proc = run_cli("--diff", "--no-cache", "clip.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == "Would fix 2 problems.\n"
    assert proc.stdout == unified_diff("clip.py", CANONICAL_IN, CANONICAL_OUT)
    assert proc.stdout.startswith("--- clip.py\n+++ clip.py\n@@ -1,18 +1,17 @@\n-from functools import partial\n")
    assert "-def clip_gradient_bwd(lo, hi, _, g):\n-    return (jnp.clip(g, lo, hi),)\n+def clip_gradient_bwd(res, g):\n" \
           "+    lo, hi = res\n+    return (None, None, jnp.clip(g, lo, hi))\n" in proc.stdout
    assert path.read_text(encoding="utf-8") == CANONICAL_IN
    clean = _write(tmp_path, "clean.py", CANONICAL_OUT)
    nothing = run_cli("--diff", "--no-cache", clean.name, cwd=tmp_path)
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "No fixes available.\n")


def test_unsafe_fixes_need_the_flag(tmp_path):
    path = _write(tmp_path, "shrink.py", UNSAFE_IN)
    proc = run_cli("--fix", "--no-cache", "--output-format", "concise", "shrink.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.endswith("Found 1 problem. (1 hidden fix can be enabled with --unsafe-fixes.)\n")
    assert path.read_text(encoding="utf-8") == UNSAFE_IN
    diff = run_cli("--diff", "--no-cache", "shrink.py", cwd=tmp_path)
    assert (diff.returncode, diff.stdout) == (0, "")
    assert diff.stderr == "No fixes available (1 additional fix available with --unsafe-fixes).\n"
    proc = run_cli("--fix", "--unsafe-fixes", "--no-cache", "shrink.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "Fixed 1 problem.\n")
    assert path.read_text(encoding="utf-8") == UNSAFE_OUT


def test_show_fixes_and_exit_non_zero_on_fix(tmp_path):
    _write(tmp_path, "clip.py", CANONICAL_IN)
    proc = run_cli("--fix", "--show-fixes", "--exit-non-zero-on-fix", "--no-cache", "clip.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == "Applied fixes:\n- clip.py:\n    2 × VJP101 (nondiff-array)\n\nFixed 2 problems.\n"


def test_remaining_diagnostics_are_reported_after_fixing(tmp_path):
    keep = (PAIRS / "unsafe_keep_partial" / "input.py").read_text(encoding="utf-8")
    path = _write(tmp_path, "gated.py", keep)
    refused = (PAIRS / "refuse_shared_rules" / "input.py").read_text(encoding="utf-8")
    _write(tmp_path, "shared.py", refused)
    proc = run_cli("--fix", "--unsafe-fixes", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines[:-2]] == [["shared.py:16:16:", "VJP101"],
                                                                ["shared.py:21:22:", "VJP101"]]
    assert lines[-2:] == ["Fixed 1 problem.", "Found 2 problems."]  # the VJP104 it explained is gone too
    assert path.read_text(encoding="utf-8") == (PAIRS / "unsafe_keep_partial" / "expected.py").read_text(
        encoding="utf-8")


def test_stdin_fix_writes_the_fixed_source_to_stdout():
    proc = run_cli("--fix", "-", stdin=CANONICAL_IN.encode())
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, CANONICAL_OUT, "Fixed 2 problems.\n")
    unsafe = run_cli("--fix", "--stdin-filename", "shrink.py", "--output-format", "concise", "-",
                     stdin=UNSAFE_IN.encode())
    assert unsafe.returncode == 1 and unsafe.stdout == UNSAFE_IN
    assert unsafe.stderr.startswith("shrink.py:8:12: VJP102 ")
    diff = run_cli("--diff", "--stdin-filename", "clip.py", "-", stdin=CANONICAL_IN.encode())
    assert diff.returncode == 1
    assert diff.stdout == unified_diff("clip.py", CANONICAL_IN, CANONICAL_OUT)


def test_json_fix_edits_reproduce_the_fixed_file(tmp_path):
    _write(tmp_path, "clip.py", CANONICAL_IN)
    _write(tmp_path, "shrink.py", UNSAFE_IN)
    proc = run_cli("--output-format", "json", "--no-cache", ".", cwd=tmp_path)
    data = json.loads(proc.stdout)
    by_file = {}
    for item in data:
        by_file.setdefault(item["filename"], []).append(item)
    for name, source, expected, applicability in (("clip.py", CANONICAL_IN, CANONICAL_OUT, "safe"),
                                                   ("shrink.py", UNSAFE_IN, UNSAFE_OUT, "unsafe")):
        fix = by_file[name][0]["fix"]
        assert fix["applicability"] == applicability and fix["message"].startswith("Move `")
        edits = [Edit(e["content"], Position(**e["location"]), Position(**e["end_location"])) for e in fix["edits"]]
        assert _apply(source, edits) == expected
    # One rewrite fixes both of clip.py's VJP101 (`lo` and `hi`): only the first carries it, so a
    # consumer that applies every fix of the report applies it once.
    clip = [d for d in by_file["clip.py"] if d["code"] == "VJP101"]
    assert len(clip) == 2 and clip[0]["fix"] is not None and clip[1]["fix"] is None


def _apply(text: str, edits) -> str:
    return apply_edits(text, edits)


def test_writes_keep_encoding_bom_crlf_and_mode(tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(b"\xef\xbb\xbf" + CANONICAL_IN.replace("\n", "\r\n").encode())
    crlf.chmod(0o754)
    latin = tmp_path / "latin.py"
    latin.write_bytes(("# -*- coding: latin-1 -*-\n# caf\xe9\n" + CANONICAL_IN).encode("latin-1"))
    target = tmp_path / "real.py"
    target.write_text(CANONICAL_IN, encoding="utf-8")
    link = tmp_path / "link.py"
    link.symlink_to(target.name)
    proc = run_cli("--fix", "--no-cache", "crlf.py", "latin.py", "link.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert crlf.read_bytes() == b"\xef\xbb\xbf" + CANONICAL_OUT.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o754
    assert latin.read_bytes() == ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + CANONICAL_OUT).encode("latin-1")
    assert link.is_symlink() and target.read_text(encoding="utf-8") == CANONICAL_OUT


# -- the core, in process ---------------------------------------------------------------------------------
def _diagnostic(row: int, col: int, end_col: int, content: str, code: str = "VJP401") -> Diagnostic:
    start, end = Position(row, col), Position(row, end_col)
    return Diagnostic(code, "x", "m", Severity.WARNING, "t.py", start, end,
                      Fix(Applicability.SAFE, "fix", (Edit(content, start, end),)))


def test_overlapping_edits_wait_for_the_next_pass():
    text = "a = 1\nb = 2\n"
    first = _diagnostic(1, 1, 6, "a = 10")
    second = _diagnostic(1, 5, 6, "11")
    third = _diagnostic(2, 5, 6, "20")
    new, fixed = fix_apply.apply_fixes_once(text, [first, second, third], unsafe=False)
    assert new == "a = 10\nb = 20\n" and fixed == [first, third]
    assert fix_apply.apply_fixes(text, [second], unsafe=False) == "a = 11\nb = 2\n"
    unsafe = _diagnostic(1, 1, 2, "z")
    unsafe.fix = Fix(Applicability.UNSAFE, "fix", unsafe.fix.edits)
    assert fix_apply.apply_fixes(text, [unsafe], unsafe=False) == text
    assert fix_apply.apply_fixes(text, [unsafe], unsafe=True) == "z = 1\nb = 2\n"


def test_a_fix_that_would_not_parse_is_not_applied():
    text = "a = 1\nb = 2\n"
    broken = _diagnostic(1, 1, 2, "(")
    good = _diagnostic(2, 5, 6, "3")
    errors: list = []
    new, fixed = fix_apply.apply_fixes_once(text, [broken, good], unsafe=False, errors=errors)
    assert (new, fixed) == ("a = 1\nb = 3\n", [good])
    assert errors == ["a VJP401 fix would produce code that does not parse; not applied"]


def test_fixes_that_never_converge_stop_with_a_message(monkeypatch):
    from vjplint.lint import engine

    def endless(filename, source, config=Config(), path=None, **_):  # facts=, session=: as lint_source takes them
        result = engine.LintResult()
        rows = source.count("\n")
        result.diagnostics = [_diagnostic(rows, 1, 1, "# again\n")]
        return result

    monkeypatch.setattr(engine, "lint_source", endless)
    result = fix_apply.fix_text("t.py", "x = 1\n", Config(), unsafe=False)
    assert not result.converged
    assert result.fixed_count == fix_apply.MAX_PASSES
    assert result.errors == [f"t.py: fixes did not converge after {fix_apply.MAX_PASSES} passes; the file is "
                             f"left in its last consistent state, please report this"]
    compile(result.text, "t.py", "exec")


def test_fix_source_is_the_language_server_entry_point():
    new, count, remaining = fix_apply.fix_source("clip.py", CANONICAL_IN, Config(), unsafe=False)
    assert (new, count, remaining) == (CANONICAL_OUT, 2, [])
    new, count, remaining = fix_apply.fix_source("shrink.py", UNSAFE_IN, Config(), unsafe=False)
    assert (new, count, [d.code for d in remaining]) == (UNSAFE_IN, 0, ["VJP102"])


def test_planned_fixes_survive_the_cache_and_resolve_to_edits():
    from vjplint.batch.cache import _allowed, decode, encode
    from vjplint.lint.engine import lint_source

    found = lint_source("clip.py", CANONICAL_IN, Config()).diagnostics
    assert all(d.fix is not None and d.fix.plan is not None and not d.fix.resolved for d in found)
    diagnostics = decode(json.loads(json.dumps(encode(found))), _allowed())  # what a JSON cache hands back
    assert diagnostics == found
    fix_apply.attach_fix_edits(diagnostics, {"clip.py": CANONICAL_IN.splitlines()}, Config())
    assert all(d.fix is not None and _apply(CANONICAL_IN, d.fix.edits) == CANONICAL_OUT for d in diagnostics)


@pytest.mark.parametrize("seed", range(20))
def test_diff_edits_turn_old_into_new(seed):
    rng = random.Random(seed)
    words = ["a", "b = 1", "", "  c", "é", "x\r", "yy"]
    old = "".join(rng.choice(words) + rng.choice(["\n", "\r\n", ""]) for _ in range(rng.randrange(12)))
    new = "".join(rng.choice(words) + rng.choice(["\n", "\r\n", ""]) for _ in range(rng.randrange(12)))
    assert _apply(old, diff_edits(old, new)) == new


@pytest.mark.parametrize("seed", range(5))
def test_diff_edits_on_long_repetitive_texts(seed):
    """Over 200 lines difflib treats frequent lines as junk (what keeps --fix linear on files with
    hundreds of similar custom_vjp families); the edits must still reproduce the new text."""
    rng = random.Random(seed)
    lines = ["", "    return x", "def f(x):", "    return (g,)", "@jax.custom_vjp", "x = 1"]
    old_lines = [rng.choice(lines) + "\n" for _ in range(600)]
    new_lines = list(old_lines)
    for _ in range(40):
        i = rng.randrange(len(new_lines))
        new_lines[i:i + rng.randrange(3)] = [rng.choice(lines) + "\n" for _ in range(rng.randrange(4))]
    old, new = "".join(old_lines), "".join(new_lines)
    assert _apply(old, diff_edits(old, new)) == new


def test_one_rewrite_per_file_splits_into_the_same_edits_as_one_rewrite_per_derivative():
    """JSON/SARIF/LSP compute every residual fix of a file in one libcst pass and split the edits
    by derivative; each share must do exactly what that derivative's own rewrite does."""
    from vjplint.lint.engine import lint_source

    families = "".join(CANONICAL_IN.split("\n\n\n", 1)[1].replace("clip_gradient", f"clip{i}") + "\n\n"
                       for i in range(3))
    text = CANONICAL_IN.split("\n\n\n", 1)[0] + "\n\n\n" + families
    diagnostics = lint_source("m.py", text, Config()).diagnostics
    plans = list(dict.fromkeys(d.fix.plan for d in diagnostics if d.fix and d.fix.plan))
    assert len(plans) == 3
    shares = fix_apply._edits_per_plan(text, plans, Config())
    assert set(shares) == set(plans)
    for fp in plans:
        done = fp.edits(text, [fp], fix_apply.FileContext(Config()))
        assert done.made == (fp,) and apply_edits(text, shares[fp]) == done.text
    # Together they do what one rewrite of all does, except removing the import that only all of
    # them together leave unused (no single fix may remove what the others still use).
    everything = plans[0].edits(text, plans, fix_apply.FileContext(Config())).text or ""
    assert "from functools import partial\n" not in everything
    together = apply_edits(text, [e for fp in plans for e in shares[fp]])
    assert together.replace("from functools import partial\n", "", 1).lstrip("\n") == everything.lstrip("\n")


NAMED_ELSEWHERE = FIXTURES / "fix_named_elsewhere"
UNSAFE_BECAUSE = ("(unsafe fix: clipops/test_ops.py calls `clip_fwd` and `clip_bwd`, and the rewrite changes "
                  "fwd's return and bwd's parameters)")
FIXED_OPS = (NAMED_ELSEWHERE / "clipops" / "ops.py").read_text(encoding="utf-8").replace(
    "from functools import partial\n\n", "").replace("@partial(jax.custom_vjp, nondiff_argnums=(0, 1))",
                                                      "@jax.custom_vjp").replace(
    "return x, None", "return x, (lo, hi)").replace(
    "def clip_bwd(lo, hi, _, g):\n    return (jnp.clip(g, lo, hi),)",
    "def clip_bwd(res, g):\n    lo, hi = res\n    return (None, None, jnp.clip(g, lo, hi))")


def test_a_fix_whose_rules_another_file_of_the_run_calls_is_unsafe_and_says_why(tmp_path):
    """Issue 37: `clipops/test_ops.py` imports and calls `clip_fwd`/`clip_bwd`; rewriting `ops.py`
    breaks it (tests/jax/test_fix_regressions_jax.py shows how), so the fix is unsafe and the
    finding says why: `check`, `--fix` and `--diff` leave the package as it is; `--unsafe-fixes`
    applies it on purpose (the test is then the user's to update), as the editor's quick fix does."""
    import shutil

    shutil.copytree(NAMED_ELSEWHERE / "clipops", tmp_path / "clipops")
    before = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "clipops").iterdir()}
    head = ("clipops/ops.py:8:{col}: VJP101 `{name}` (position {pos}) is in nondiff_argnums but is used as an "
            "array: `jnp.clip(g, lo, hi)`; a traced value here raises UnexpectedTracerError under jit, vmap or "
            "grad. Pass it as a regular argument, save it in the residuals and return None for it from bwd ")
    expected = "".join(head.format(col=c, name=n, pos=p) + UNSAFE_BECAUSE + "\n"
                       for c, n, p in ((19, "lo", 0), (23, "hi", 1)))
    expected += "Found 2 problems. (2 hidden fixes can be enabled with --unsafe-fixes.)\n"
    for command in (("check",), ("--fix",), ("--diff",)):
        proc = run_cli(*command, "--no-cache", "--output-format", "concise", "clipops", cwd=tmp_path)
        diff = "--diff" in command  # nothing a safe fix would change: no diff, exit 0
        assert (proc.returncode, proc.stdout) == ((0, "") if diff else (1, expected)), command
        if diff:
            assert proc.stderr == "No fixes available (2 additional fixes available with --unsafe-fixes).\n"
        assert {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "clipops").iterdir()} == before
    # JSON says so too: the fix is there, unsafe, with its edits.
    proc = run_cli("check", "--no-cache", "--output-format", "json", "clipops", cwd=tmp_path)
    fixes = [(d["message"].endswith(UNSAFE_BECAUSE), d["fix"] and d["fix"]["applicability"])
             for d in json.loads(proc.stdout)]
    assert fixes == [(True, "unsafe"), (True, None)]  # one rewrite, carried by the first finding
    proc = run_cli("--diff", "--unsafe-fixes", "--no-cache", "clipops", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.startswith("--- clipops/ops.py\n+++ clipops/ops.py\n")
    proc = run_cli("--fix", "--unsafe-fixes", "--no-cache", "--output-format", "concise", "clipops", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "Fixed 2 problems.\n")
    assert (tmp_path / "clipops" / "ops.py").read_text(encoding="utf-8") == FIXED_OPS
    assert (tmp_path / "clipops" / "test_ops.py").read_text(encoding="utf-8") == before["test_ops.py"]
    (tmp_path / "clipops" / "ops.py").write_text(before["ops.py"], encoding="utf-8")
    alone = run_cli("--fix", "--no-cache", "--output-format", "concise", "clipops/ops.py", cwd=tmp_path)
    assert alone.stdout == "Fixed 2 problems.\n"  # the file alone: nothing in the run names its rules
    assert (tmp_path / "clipops" / "ops.py").read_text(encoding="utf-8") == FIXED_OPS


def test_an_edit_fix_of_a_rule_another_file_of_the_run_calls_is_unsafe_and_says_why(tmp_path):
    """Issue 37, every fix: VJP307's safe fix wraps bwd's return in a tuple, which a test calling
    `soft_bwd` directly would receive (`.shape` of a tuple raises): unsafe in a run holding that test."""
    from tests.unit.test_named_elsewhere import SOFT_OPS, write_softops

    ops = write_softops(tmp_path)
    proc = run_cli("check", "--no-cache", "--output-format", "concise", "softops", cwd=tmp_path)
    assert proc.returncode == 1
    [line, summary] = proc.stdout.splitlines()
    assert line.startswith("softops/ops.py:15:12: VJP307 bwd `soft_bwd` returns ")
    assert line.endswith("return `(g * (1.0 - jnp.tanh(x) ** 2),)` (unsafe fix: softops/test_ops.py calls "
                         "`soft_bwd`, and the fix changes what bwd returns)")
    assert summary == "Found 1 problem. (1 hidden fix can be enabled with --unsafe-fixes.)"
    fixed = run_cli("--fix", "--no-cache", "--output-format", "concise", "softops", cwd=tmp_path)
    assert (fixed.returncode, fixed.stdout) == (1, proc.stdout)
    assert ops.read_text(encoding="utf-8") == SOFT_OPS
    fixed = run_cli("--fix", "--unsafe-fixes", "--no-cache", "--output-format", "concise", "softops", cwd=tmp_path)
    assert (fixed.returncode, fixed.stdout) == (0, "Fixed 1 problem.\n")
    assert ops.read_text(encoding="utf-8") == SOFT_OPS.replace("return g * (1.0 - jnp.tanh(x) ** 2)",
                                                               "return (g * (1.0 - jnp.tanh(x) ** 2),)")
