"""A fix never makes vjplint complain (issue 37): over every fixture and eval case (fixtures/,
eval/cases/, and the mutation evaluation's cases/, bases/, heldout/ and heldout2/), the safe fixes alone and
then the unsafe ones too, and a re-lint with the default rules, show per file no code more often
than the file had before; every rewritten file parses, and a second `--fix` changes nothing.
Once through the core API in process (every file on its own, fast), once through the CLI on
copies of fixtures/ and eval/cases/ (the run's facts across modules, as `vjplint --fix
fixtures/rules/` has them)."""

from __future__ import annotations

import ast
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Dict

from tests.conftest import ROOT, run_cli

LINE = re.compile(r"^(?P<path>[^\s:][^:]*):\d+:\d+: (?P<code>VJP\d+) ", re.MULTILINE)


def _codes(stdout: str) -> Dict[str, Counter]:
    found: Dict[str, Counter] = {}
    for match in LINE.finditer(stdout):
        found.setdefault(match["path"], Counter())[match["code"]] += 1
    return found


def _snapshot(tree: Path) -> Dict[str, str]:
    return {str(p.relative_to(tree)): p.read_text(encoding="utf-8", errors="surrogateescape")
            for p in sorted(tree.rglob("*")) if p.is_file() and p.suffix in (".py", ".ipynb")}


CORPUS = ("fixtures", "eval/cases", "eval/mutation/cases", "eval/mutation/bases", "eval/mutation/heldout",
          "eval/mutation/heldout2")


def test_fixing_every_fixture_and_eval_case_in_process_adds_no_finding():
    from vjplint.fixes.apply import fix_text, offered
    from vjplint.lint.engine import lint_source
    from vjplint.settings.config import Config

    config = Config()
    files = [p for d in CORPUS for p in sorted((ROOT / d).rglob("*.py"))]
    rewritten: Dict[bool, int] = {False: 0, True: 0}
    drew: Dict[str, Dict[str, int]] = {}
    for path in files:
        name = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        found = lint_source(name, text, config).diagnostics
        before = Counter(d.code for d in found)
        for unsafe in (False, True):
            if not any(offered(d, unsafe) for d in found):
                continue
            result = fix_text(name, text, config, unsafe)
            if result.text == text:
                continue
            rewritten[unsafe] += 1
            ast.parse(result.text, name)
            new = Counter(d.code for d in lint_source(name, result.text, config).diagnostics) - before
            if new:
                drew[f"{name} ({'unsafe' if unsafe else 'safe'})"] = dict(new)
            assert fix_text(name, result.text, config, unsafe).text == result.text, f"{name}: a second fix changed it"
    assert len(files) > 1500 and rewritten[False] >= 70 and rewritten[True] >= 170, (len(files), rewritten)
    assert drew == {}, "a fix drew a finding the file did not have"


def test_fixing_every_fixture_and_eval_case_adds_no_finding(tmp_path):
    """The CLI on copies of fixtures/ and eval/cases/ (the mutation evaluation's modules are one
    module each: the in-process test above covers them)."""
    tree = tmp_path / "tree"
    for part in CORPUS[:2]:
        shutil.copytree(ROOT / part, tree / part)
    args = ("--no-cache", "--output-format", "concise", *CORPUS[:2])
    before = _codes(run_cli(*args, cwd=tree, timeout=600).stdout)
    pristine = _snapshot(tree)
    changed: set = set()
    for unsafe in ((), ("--unsafe-fixes",)):  # `vjplint --fix DIR`, then with the unsafe fixes too
        fixed = run_cli("--fix", *unsafe, *args, cwd=tree, timeout=600)
        assert "error" not in fixed.stderr.lower(), fixed.stderr
        after = _codes(fixed.stdout)
        now = {name for name, text in _snapshot(tree).items() if pristine[name] != text}
        changed |= now
        assert len(changed) >= (50 if not unsafe else 60), sorted(changed)  # the fixes were applied
        new = {path: dict(codes - before.get(path, Counter())) for path, codes in after.items()
               if codes - before.get(path, Counter())}
        assert new == {}, f"a fix{' (unsafe)' if unsafe else ''} drew a finding the file did not have"
    for name in changed:
        if name.endswith(".py"):
            ast.parse(_snapshot(tree)[name], name)
    once = _snapshot(tree)
    run_cli("--fix", "--unsafe-fixes", "--no-cache", *sorted(n for n in changed if n.endswith(".py")), cwd=tree,
            timeout=600)
    assert _snapshot(tree) == once, "a second --fix changed something"

def test_a_residual_the_bwd_never_read_makes_the_moved_none_unsafe_and_marked(tmp_path):
    """`_mm_bwd(w, x, g)` never reads its residual `x`: the rewrite unpacks `x, w = res`, and
    VJP602 reads the `None` it returns for `w` beside an unread residual as a forgotten
    cotangent. The plan predicts it (unsafe, `# noqa: VJP602`), so the fix draws no finding;
    tests/jax/test_verify.py proves the same rewrite (nested_fixed.py) on JAX."""
    data = ROOT / "tests" / "data" / "verify"
    shutil.copy(data / "nested.py", tmp_path / "nested.py")
    safe = run_cli("--fix", "--no-cache", "nested.py", cwd=tmp_path)
    assert (tmp_path / "nested.py").read_text(encoding="utf-8") == (data / "nested.py").read_text(encoding="utf-8")
    assert safe.stdout.endswith("Found 2 problems. (2 hidden fixes can be enabled with --unsafe-fixes.)\n")
    fixed = run_cli("--fix", "--unsafe-fixes", "--no-cache", "nested.py", cwd=tmp_path)
    assert fixed.stdout == "Fixed 2 problems.\n", fixed.stdout + fixed.stderr
    assert (tmp_path / "nested.py").read_text(encoding="utf-8") == \
        (data / "nested_fixed.py").read_text(encoding="utf-8")
    again = run_cli("--no-cache", "nested.py", cwd=tmp_path)
    assert again.stdout == "All checks passed!\n" and again.returncode == 0
