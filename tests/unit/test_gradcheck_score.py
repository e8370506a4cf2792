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


def _frow(filename, checks, inputs=("pars", "sigma")):
    return {"filename": filename, "function": "_expect", "status": "failed", "reason": "", "checks": checks,
            "inputs": [{"name": n, "role": "diff", "value": "float64[3]"} for n in inputs]}


def _fcheck(name, code, detail, severity="error"):
    return {"name": name, "status": "failed", "code": code, "severity": severity, "detail": detail}


@pytest.mark.unit
def test_a_mutant_of_a_deliberate_base_is_found_by_a_finding_its_base_does_not_report(tmp_path: Path,
                                                                                       capsys) -> None:
    """netket_expect's rule is not the true gradient on purpose (its module gives `eval_grad_reference`):
    its base fails VJP501 for `pars` at order 1. A mutant repeating that finding (at other values, with
    another error size) is not found; one naming another argument, another transform, or raising where
    the base mismatched, is. The first figure (a code the base does not draw) finds none of them."""
    for folder in ("bases", "sample/caller_diff_more", "sample/forward_mode", "sample/bwd_params_swapped",
                   "sample/defvjp_swapped", "sample/fwd_list_pair"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "netket_expect.py").write_text("def eval_grad_reference(f):\n    return f\n")
    base = _fcheck("reverse order 1", "VJP501",
                   "bwd cotangent for `pars` differs from finite differences: max rel. error 1.38 at pars=float64[3]")
    (tmp_path / "bases.json").write_text(json.dumps([_frow("bases/netket_expect.py", [base])]))
    (tmp_path / "sample.json").write_text(json.dumps([
        # the base's own finding, at other values and another error size: not found
        _frow("sample/caller_diff_more/netket_expect.py", [_fcheck(
            "reverse order 1", "VJP501",
            "bwd cotangent for `pars` differs from finite differences: max rel. error 0.2 at pars=float64[5]")]),
        # the base's finding and one for another argument: found
        _frow("sample/forward_mode/netket_expect.py", [base, _fcheck(
            "reverse order 1", "VJP501", "bwd cotangent for `sigma` differs from finite differences: at sigma=1")]),
        # a raise where the base gave a value mismatch: found
        _frow("sample/bwd_params_swapped/netket_expect.py", [_fcheck(
            "reverse order 1", "VJP501",
            "reverse mode raises with the bwd rule (the bwd rule `_expect_bwd`, line 54): ValueError: not enough"
            " values to unpack at pars=float64[3]")]),
        # the base's finding under another transform: found
        _frow("sample/defvjp_swapped/netket_expect.py", [_fcheck(
            "jit(grad)", "VJP501",
            "bwd cotangent for `pars` differs from finite differences: max rel. error 1.38 at pars=float64[3]")]),
        # an `ok` mutant repeating the base: no new finding, and not counted as a false failure either
        _frow("sample/fwd_list_pair/netket_expect.py", [base]),
    ]))
    scorer = _scorer()
    assert scorer._kind(base) == "value"
    assert scorer._kind(_fcheck("call", "VJP502", "JAX raises at a call the project's run made")) == "raise"
    assert scorer._kind(_fcheck("reverse order 1", "VJP501", "bwd cotangent for `x` comes back as bfloat16")) == "dtype"
    assert scorer._kind(_fcheck("reverse order 1", "VJP501", "may be wrong", "warning")) == "may"
    found = scorer.findings(tmp_path / "sample.json")
    assert found[(tmp_path / "sample/forward_mode/netket_expect.py").resolve()] == {
        ("_expect", "VJP501", "reverse order 1", frozenset({"pars"}), "value"),
        ("_expect", "VJP501", "reverse order 1", frozenset({"sigma"}), "value")}
    result = scorer.score(tmp_path, False)
    assert (result["hazards"], result["hazards_reported"], result["hazards_reported_by_finding"]) == (4, 0, 3)
    assert (result["hazards_of_deliberate_bases"], result["hazards_of_deliberate_bases_reported_by_finding"],
            result["hazards_of_deliberate_bases_reported"]) == (4, 3, 0)
    assert result["ok_mutants_with_a_new_finding"] == 0
    out = capsys.readouterr().out
    assert "hazards reported by finding (a finding the base's report does not hold: another code, transform or " \
           "order, argument, or kind): 3/4 (0.75); of bases whose rule is not the true gradient on purpose: 3/4 " \
           "by finding, 0 by code; of the others: 0/0 by code\n" in out
    assert "   MISSED mutants/caller_diff_more/netket_expect failed \n" in out
    assert "   MISSED mutants/bwd_params_swapped/netket_expect failed (found by finding)\n" in out
