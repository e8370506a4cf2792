"""vjplint.server.fixes: a quick fix computed on its family of statements alone makes the text
that the edits `attach_fix_edits` computes on the whole document make (edits may be cut
differently: a diff of a shorter document can split a hunk in two)."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import List

from tests.conftest import ROOT, check_each

from vjplint.settings.config import Config
from vjplint.diagnostics import Diagnostic
from vjplint.fixes.apply import attach_fix_edits
from vjplint.fixes.edits import apply_edits
from vjplint.lint.incremental import IncrementalLinter
from vjplint.syntax.positions import source_lines
from vjplint.server.fixes import attach_family_fixes

sys.path.insert(0, str(ROOT / "benchmarks"))
from lsp_latency import make_module  # noqa: E402

PLANNED = sorted(p for p in (ROOT / "fixtures" / "rules").glob("*/fire_*.py")
                 if b"custom_vjp" in p.read_bytes())


def planned(diagnostics: List[Diagnostic]) -> List[Diagnostic]:
    return [d for d in diagnostics if d.fix is not None and d.fix.plan is not None and not d.fix.resolved]


def compare(name: str, text: str) -> int:
    linter = IncrementalLinter(name, Config())
    diagnostics = planned(linter.lint(text).diagnostics)
    expected = [replace(d) for d in diagnostics]
    attach_fix_edits(expected, {name: source_lines(text)}, Config())
    for d, want in zip(diagnostics, expected):
        attach_family_fixes([d], text, name, Config(), linter)  # one at a time, as a quick fix asks
        assert want.fix is not None and d.fix is not None
        assert d.fix.resolved == want.fix.resolved
        assert apply_edits(text, list(d.fix.edits)) == apply_edits(text, list(want.fix.edits))
    return len(diagnostics)


def test_family_fixes_equal_whole_document_fixes_on_fixtures() -> None:
    """On every firing fixture of a custom_vjp (one test over the corpus; each fixture whose fixes
    differ is named)."""
    compared = check_each(PLANNED, lambda path: compare(path.name, path.read_text(encoding="utf-8")),
                          lambda path: f"{path.parent.name}/{path.name}", least=150)
    assert sum(compared) >= 20, f"only {sum(compared)} planned fixes compared"


def test_family_fixes_on_a_module_with_many_derivatives() -> None:
    text = "import os\n" + make_module(800, vjp_every=3)
    assert compare("module.py", text) >= 6


def test_an_import_other_statements_read_is_kept() -> None:
    # Only clip's family is rewritten; `partial` is still read by `other`, so the fix must not
    # drop the import (it would if the family document did not say that it is read elsewhere).
    text = ("from functools import partial\nimport jax\nimport jax.numpy as jnp\n\n\n"
            "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef clip(lo, x):\n    return x\n\n\n"
            "def clip_fwd(lo, x):\n    return x, None\n\n\ndef clip_bwd(lo, _, g):\n    return (jnp.clip(g, lo, 1.0),)\n\n\n"
            "clip.defvjp(clip_fwd, clip_bwd)\n\n\ndef other(f):\n    return partial(f, 1)\n")
    assert compare("module.py", text) == 1
