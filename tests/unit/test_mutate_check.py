"""`eval/mutation/mutate.py --check` writes nothing (it once took `--check` for a regeneration,
which deleted every file under cases/, the 2,272 usage tests `usage_tests.py` had written beside
the mutants included), and a regeneration leaves those usage tests alone. Run on a copy of two
bases in tmp_path: the paths the script reads and writes are pointed there."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "eval" / "mutation"))
import mutate  # noqa: E402  (ast only)

BASES = ("brax_safe_arccos.py", "distrax_multiply_no_nan.py")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bases = tmp_path / "bases"
    bases.mkdir()
    for name in BASES:
        shutil.copy(ROOT / "eval" / "mutation" / "bases" / name, bases / name)
    monkeypatch.setattr(mutate, "HERE", tmp_path)
    monkeypatch.setattr(mutate, "BASES", bases)
    monkeypatch.setattr(mutate, "HELD_OUT_SETS", ())
    monkeypatch.setattr(mutate, "CASES", tmp_path / "cases")
    monkeypatch.setattr(mutate, "MANIFEST", tmp_path / "manifest.json")
    return tmp_path


def snapshot(root: Path) -> Dict[str, Tuple[int, bytes]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_check_writes_nothing_and_says_what_a_regeneration_would_change(tree: Path, capsys) -> None:
    manifest = mutate.generate()
    mutants = sorted(tree.glob("cases/*/*.py"))
    assert len(mutants) == len(manifest["mutants"]) > 10
    first, second, third = mutants[:3]
    usage = first.with_name(f"test_usage_{first.stem}.py")
    usage.write_text("def test_usage():\n    pass\n", encoding="utf-8")
    before = snapshot(tree)
    assert mutate.check() == [] and mutate.main(["--check"]) == 0
    assert snapshot(tree) == before

    first.write_text("# edited by hand\n", encoding="utf-8")
    second.unlink()
    extra = third.with_name("not_a_mutant.py")
    extra.write_text("x = 1\n", encoding="utf-8")
    (tree / "manifest.json").write_text("{}\n", encoding="utf-8")
    before = snapshot(tree)
    capsys.readouterr()
    assert mutate.main(["--check"]) == 1
    err = capsys.readouterr().err.splitlines()
    rel = lambda p: str(p.relative_to(tree))  # noqa: E731
    assert sorted(err[:-1]) == sorted([f"missing: {rel(second)}", f"stale: {rel(first)}", f"extra: {rel(extra)}",
                                       "stale: manifest.json"])
    assert err[-1] == "4 mutants or manifest out of date: python eval/mutation/mutate.py"
    assert snapshot(tree) == before  # nothing written, nothing deleted: the usage test is still there


def test_a_regeneration_keeps_the_usage_tests_and_removes_only_mutants_no_operator_makes(tree: Path) -> None:
    mutate.generate()
    mutants = sorted(tree.glob("cases/*/*.py"))
    usage = mutants[0].with_name(f"test_usage_{mutants[0].stem}.py")
    usage.write_text("def test_usage():\n    pass\n", encoding="utf-8")
    extra = mutants[0].with_name("gone_base.py")
    extra.write_text("x = 1\n", encoding="utf-8")
    mutants[1].write_text("# stale\n", encoding="utf-8")
    mutate.generate()
    assert usage.read_text(encoding="utf-8") == "def test_usage():\n    pass\n"
    assert not extra.exists() and mutants[1].read_text(encoding="utf-8") != "# stale\n"
    assert mutate.check() == []


def test_an_unknown_argument_is_an_error_and_writes_nothing(tree: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        mutate.main(["--chek"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --chek" in capsys.readouterr().err
    assert sorted(p.name for p in tree.iterdir()) == ["bases"]
