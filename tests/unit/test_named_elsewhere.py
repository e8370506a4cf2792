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


SOFT_OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def soft(x):
    return jnp.tanh(x)


def soft_fwd(x):
    return jnp.tanh(x), x


def soft_bwd(x, g):
    return g * (1.0 - jnp.tanh(x) ** 2)


soft.defvjp(soft_fwd, soft_bwd)
'''
SOFT_TEST = '''\
import jax.numpy as jnp

from softops.ops import soft_bwd


def test_bwd():
    x = jnp.array([0.0, 1.0])
    assert soft_bwd(x, jnp.ones(2)).shape == x.shape
'''


def write_softops(root: Path, test: str = SOFT_TEST) -> Path:
    """A package whose test calls the bwd that VJP307's edit fix wraps in a tuple."""
    (root / "softops").mkdir()
    (root / "softops" / "__init__.py").write_text("", encoding="utf-8")
    (root / "softops" / "ops.py").write_text(SOFT_OPS, encoding="utf-8")
    (root / "softops" / "test_ops.py").write_text(test, encoding="utf-8")
    return root / "softops" / "ops.py"


@pytest.mark.parametrize("test, reason", [
    (SOFT_TEST, "softops/test_ops.py calls `soft_bwd`, and the fix changes what bwd returns"),
    (SOFT_TEST.replace("soft_bwd", "soft_fwd"), None),  # VJP307's fix leaves fwd as it is
])
def test_an_edit_fix_of_a_rule_another_module_calls_is_unsafe_too(tmp_path: Path, test, reason):
    from vjplint.fixes.named_elsewhere import targets_in

    ops = write_softops(tmp_path, test)
    diagnostics = lint_source("softops/ops.py", SOFT_OPS, Config(), path=str(ops)).diagnostics
    assert [(d.code, d.fix.applicability) for d in diagnostics] == [("VJP307", Applicability.SAFE)]
    plans = residual_plans(diagnostics)
    assert plans == {("bwd", 15)}
    others = [(p, f"softops/{p.name}", p.read_bytes) for p in sorted((tmp_path / "softops").iterdir())]
    reasons = named_in_others(ops, SOFT_OPS, Config(), plans, others)
    assert reasons == ({} if reason is None else {"soft": reason})
    marked = mark_unsafe(diagnostics, reasons, targets_in(SOFT_OPS, Config()))
    if reason is None:
        assert marked == 0 and diagnostics[0].fix.applicability is Applicability.SAFE
        return
    assert marked == 1 and diagnostics[0].fix.unsafe_because == reason
    assert diagnostics[0].fix.applicability is Applicability.UNSAFE and diagnostics[0].fix.edits
    assert diagnostics[0].message.endswith(f" (unsafe fix: {reason})")


def test_the_run_shared_index_reads_each_file_once_and_gives_the_same_reasons(tmp_path: Path, monkeypatch) -> None:
    """`OtherFiles` (the command line's, shared by every file of the run) answers as a plain list
    does, reads each other file once, and a file no other module names is not modelled at all
    (a 10 MB file alone in a run was parsed and modelled whole for nothing: issue 48)."""
    from vjplint.fixes import named_elsewhere

    shutil.copytree(FIXTURES / "fix_named_elsewhere" / "clipops", tmp_path / "clipops")
    (tmp_path / "clipops" / "test_ops.py").write_text(CALLS, encoding="utf-8")
    ops = tmp_path / "clipops" / "ops.py"
    text = ops.read_text(encoding="utf-8")
    plans = residual_plans(lint_source("clipops/ops.py", text, Config(), path=str(ops)).diagnostics)
    reads = []

    def reader(p: Path):
        return lambda: reads.append(p.name) or p.read_bytes()

    paths = sorted((tmp_path / "clipops").iterdir())
    shared = named_elsewhere.OtherFiles([(p, f"clipops/{p.name}", reader(p)) for p in paths])
    for _ in range(3):  # as for three files of a run
        assert named_in_others(ops, text, Config(), plans, shared) == {"clip_gradient": BOTH}
    assert sorted(reads) == sorted(p.name for p in paths)  # each once
    assert shared.holding("clip_fwd")[0] == [paths.index(ops), paths.index(tmp_path / "clipops" / "test_ops.py")]

    modelled = []

    def stand_in(*args, **kwargs):
        modelled.append(args)
        raise ValueError("no model here")  # named_in_others then answers {}

    monkeypatch.setattr("vjplint.facts.collect.collect", stand_in)
    alone = [(ops, "clipops/ops.py", ops.read_bytes)]
    assert named_in_others(ops, text, Config(), plans, alone) == {} and modelled == []
    assert named_in_others(ops, text, Config(), plans, shared) == {} and len(modelled) == 1  # (the stand-in)
