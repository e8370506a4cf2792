"""eval/mutation/gradcheck_score.py's scoring on small hand-made reports (labels from labels.json):
an error where the base only warns with that code counts as reported; a raise where the base's
finding of that code is a mismatch counts in the second figure only."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _scorer():
    spec = importlib.util.spec_from_file_location("gradcheck_score", ROOT / "eval" / "mutation" / "gradcheck_score.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(filename, status, checks):
    return {"filename": filename, "status": status, "reason": "", "checks": checks}


def _check(code, severity, detail):
    return {"name": "reverse order 1", "status": "failed", "code": code, "severity": severity, "detail": detail}


@pytest.mark.unit
def test_an_error_over_a_base_warning_counts_and_a_new_raise_counts_in_the_second_figure(tmp_path: Path,
                                                                                           capsys) -> None:
    (tmp_path / "bases.json").write_text(json.dumps([
        _row("bases/mjx_cylinder_sdf.py", "warned", [_check("VJP502", "warning", "gradient for `size` may be wrong")]),
        _row("bases/netket_expect.py", "failed", [_check("VJP501", "error", "bwd cotangent for `pars` differs")]),
    ]))
    (tmp_path / "sample.json").write_text(json.dumps([
        _row("sample/jvp_not_pair/mjx_cylinder_sdf.py", "failed", [_check("VJP502", "error", "forward mode raises")]),
        _row("sample/bwd_params_swapped/netket_expect.py", "failed",
             [_check("VJP501", "error", "reverse mode raises with the bwd rule (line 54): ValueError")]),
        _row("sample/caller_diff_more/netket_expect.py", "failed",
             [_check("VJP501", "error", "bwd cotangent for `pars` differs")]),
    ]))
    result = _scorer().score(tmp_path, False)
    assert (result["hazards"], result["hazards_reported"], result["hazards_reported_as_errors"]) == (3, 1, 1)
    assert result["hazards_reported_or_a_new_raise"] == 2
    assert result["missed"] == ["mutants/bwd_params_swapped/netket_expect (failed)",
                                "mutants/caller_diff_more/netket_expect (failed)"]
    assert "hazards reported, counting also a raise where the base's finding of that code is not one: 2/3\n" in \
        capsys.readouterr().out


@pytest.mark.unit
def test_heldout4_and_only_some_operators_are_copied_with_their_usage_tests(tmp_path: Path) -> None:
    bases, mutants = _scorer().prepare(tmp_path, 0, None, "heldout4", None, ["creator_swapped"])
    assert len(bases) == 13 and "fdtdx_reversible_fdtd" in bases
    assert mutants and all(k.startswith("creator_swapped/") for k in mutants)
    assert "creator_swapped/maxtext_route" in mutants
    assert (tmp_path / "sample" / "creator_swapped" / "maxtext_route.py").is_file()
    assert (tmp_path / "sample" / "creator_swapped" / "test_usage_maxtext_route.py").is_file()
    assert (tmp_path / "bases" / "test_usage_fdtdx_reversible_fdtd.py").is_file()
    assert not (tmp_path / "sample" / "jit_over_creator").exists()
