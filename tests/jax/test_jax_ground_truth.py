"""Ground truth from real JAX: every rule fixture that declares JAX_OUTCOME is run.

A fixture declares, at module level:
- `JAX_OUTCOME = "raises"` and `JAX_ERROR = "<substring of the exception text>"`, and
  `JAX_EXCEPTION = "<exception class name>"`: `trigger()` must raise that;
- `JAX_OUTCOME = "runs"`: `trigger()` must run cleanly (look-alikes);
- `JAX_OUTCOME = "wrong"`: `trigger()` returns `(got, reference)` that differ (silent-wrong).
Fixtures that cannot be run (syntax errors, unresolved imports) simply do not declare it.
"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import RULE_FIXTURES, load_fixture_module


def _declared(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "JAX_OUTCOME" for t in node.targets):
            return True
    return False


CASES = sorted(p for p in RULE_FIXTURES.rglob("*.py") if _declared(p)) if RULE_FIXTURES.exists() else []


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_behaves_on_jax_as_declared(path, jax_cpu):
    module = load_fixture_module(path)
    outcome = module.JAX_OUTCOME
    if outcome == "raises":
        with pytest.raises(Exception) as info:
            module.trigger()
        assert type(info.value).__name__ == module.JAX_EXCEPTION, repr(info.value)
        assert module.JAX_ERROR in str(info.value)
    elif outcome == "runs":
        module.trigger()
    elif outcome == "wrong":
        got, reference = module.trigger()
        import numpy as np  # here, not at the top: collecting this module needs no JAX stack (Python < 3.11)

        assert not np.allclose(np.asarray(got), np.asarray(reference), rtol=1e-5), (got, reference)
    else:
        pytest.fail(f"unknown JAX_OUTCOME {outcome!r}")
