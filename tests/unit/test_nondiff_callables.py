"""Issue #45 item 5: callables passed in a nondiff position of a custom_vjp that close over a
traced value, in the spellings real code uses (`docs/facts/scripts/nondiff_callables/`, each
run on JAX 0.10.2 by its `run.py`: every one raises, `out.txt`). Each is found, with the code and
line below; `r_value_and_grad_step` (the closure's owner is a factory whose result is
differentiated by another function) is a "may" at warning level."""

from __future__ import annotations

from pathlib import Path

import pytest

from vjplint.lint.engine import lint_source
from vjplint.settings.config import Config

CASES = Path(__file__).resolve().parents[2] / "docs" / "facts" / "scripts" / "nondiff_callables"

EXPECTED = {
    "a_lambda_param": ("VJP105", 23), "b_local_def": ("VJP105", 25), "c_partial": ("VJP104", 27),
    "d_bound_method": ("VJP104", 35), "e_helper_returns": ("VJP104", 33), "f_fori_loop": ("VJP105", 24),
    "g_scan": ("VJP105", 24), "h_method_of_module": ("VJP105", 30), "i_lambda_in_jit_grad": ("VJP105", 24),
    "j_name_bound_lambda": ("VJP105", 24), "k_helper_called_by_traced": ("VJP105", 23),
    "l_dict_params": ("VJP105", 23), "n_derived_value": ("VJP105", 24), "o_dot_call": ("VJP105", 23),
    "p_tree_partial": ("VJP104", 27), "q_helper_local_in_untraced": ("VJP105", 25),
    "r_value_and_grad_step": ("VJP105", 24),
}


def test_every_case_of_the_folder_is_listed():
    assert sorted(p.stem for p in CASES.glob("[a-z]_*.py")) == sorted(EXPECTED)
    raised = [line.split()[0] for line in (CASES / "out.txt").read_text(encoding="utf-8").splitlines()]
    assert raised == sorted(EXPECTED)  # each raised on JAX (none printed "runs")
    assert "runs" not in (CASES / "out.txt").read_text(encoding="utf-8").split()


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_a_callable_closing_over_a_traced_value_is_found(stem):
    path = CASES / f"{stem}.py"
    found = [(d.code, d.location.row) for d in lint_source(path.name, path.read_text(encoding="utf-8"), Config()).diagnostics
             if d.code in ("VJP104", "VJP105")]
    assert found[:1] == [EXPECTED[stem]]
