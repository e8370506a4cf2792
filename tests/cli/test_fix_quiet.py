"""A fix never makes vjplint complain (issue 37): over copies of every fixture and eval case,
`vjplint --fix --unsafe-fixes` and a re-lint with the default rules show, per file, no code more
often than the file had before; every rewritten file parses, and a second `--fix` changes nothing."""

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


def test_fixing_every_fixture_and_eval_case_adds_no_finding(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "fixtures", tree / "fixtures")
    shutil.copytree(ROOT / "eval" / "cases", tree / "cases")
    args = ("--no-cache", "--output-format", "concise", "fixtures", "cases")
    before = _codes(run_cli(*args, cwd=tree).stdout)
    pristine = _snapshot(tree)
    fixed = run_cli("--fix", "--unsafe-fixes", *args, cwd=tree)
    assert "error" not in fixed.stderr.lower(), fixed.stderr
    after = _codes(fixed.stdout)
    changed = {name for name, text in _snapshot(tree).items() if pristine[name] != text}
    assert len(changed) >= 60, sorted(changed)  # the fixtures' and cases' fixes were applied
    new = {path: dict(codes - before.get(path, Counter())) for path, codes in after.items()
           if codes - before.get(path, Counter())}
    assert new == {}, "a fix drew a finding the file did not have"
    for name in changed:
        if name.endswith(".py"):
            ast.parse(_snapshot(tree)[name], name)
    once = _snapshot(tree)
    run_cli("--fix", "--unsafe-fixes", "--no-cache", *sorted(n for n in changed if n.endswith(".py")), cwd=tree)
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
