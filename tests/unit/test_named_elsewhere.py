"""vjplint.fixes.named_elsewhere on files on disk: which other modules make the residual fix
unsafe, and the reason each gives (the words the CLI and the editor show)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from vjplint.diagnostics import Applicability
from vjplint.fixes.named_elsewhere import mark_unsafe, named_in_others, residual_plans
from vjplint.lint.engine import lint_source
from vjplint.settings.config import Config

BOTH = ("clipops/test_ops.py calls `clip_fwd` and `clip_bwd`, and the rewrite changes fwd's return and "
        "bwd's parameters")
CALLS = "from clipops.ops import clip_bwd, clip_fwd\n\n\ndef test():\n    out, res = clip_fwd(0.0, 1.0, 2.0)\n"


@pytest.mark.parametrize("other, reason", [
    (None, BOTH),  # the fixture itself
    (CALLS, BOTH),
    ("from clipops.ops import clip_bwd\n\nRULES = [clip_bwd]\n",
     "clipops/test_ops.py imports `clip_bwd`, and the rewrite changes bwd's parameters"),
    ("from clipops import ops as o\n\n\ndef test():\n    return o.clip_fwd(0.0, 1.0, 2.0)\n",
     "clipops/test_ops.py calls `clip_fwd`, and the rewrite changes fwd's return"),
    ("import clipops.ops as o\n\nFWD = o.clip_fwd\n",
     "clipops/test_ops.py names `clip_fwd`, and the rewrite changes fwd's return"),
    ("from clipops import ops\n\n\ndef clip_fwd(x):\n    return x\n", None),  # its own clip_fwd
    ("from clipops.ops import clip_gradient\n", None),  # the primal: its signature is unchanged
])
def test_another_module_that_uses_the_rules_makes_the_fix_unsafe_with_its_reason(tmp_path: Path, other, reason):
    shutil.copytree(FIXTURES / "fix_named_elsewhere" / "clipops", tmp_path / "clipops")
    if other is not None:
        (tmp_path / "clipops" / "test_ops.py").write_text(other, encoding="utf-8")
    ops = tmp_path / "clipops" / "ops.py"
    text = ops.read_text(encoding="utf-8")
    diagnostics = lint_source("clipops/ops.py", text, Config(), path=str(ops)).diagnostics
    plans = residual_plans(diagnostics)
    assert [(d.code, d.fix.applicability) for d in diagnostics] == [("VJP101", Applicability.SAFE)] * 2
    others = [(p, f"clipops/{p.name}", p.read_bytes) for p in sorted((tmp_path / "clipops").iterdir())]
    reasons = named_in_others(ops, text, Config(), plans, others)
    assert reasons == ({} if reason is None else {"clip_gradient": reason})
    messages = [d.message for d in diagnostics]
    mark_unsafe(diagnostics, reasons)
    mark_unsafe(diagnostics, reasons)  # once only
    if reason is None:
        assert [d.message for d in diagnostics] == messages
        return
    assert [(d.fix.applicability, d.fix.plan) for d in diagnostics] == [(Applicability.UNSAFE, p) for p in plans] * 2
    assert [d.message for d in diagnostics] == [m + f" (unsafe fix: {reason})" for m in messages]
