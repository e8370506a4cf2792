"""Patterns from public JAX code bases that once gave false positives (snippets written here,
not copied). With the default rules plus VJP106 every one of them must stay silent."""

from __future__ import annotations


import pytest

from tests.conftest import ROOT, run_cli

SNIPPETS = sorted((ROOT / "tests" / "realworld").glob("*.py"))


@pytest.mark.unit
def test_there_are_snippets():
    assert len(SNIPPETS) >= 4


@pytest.mark.parametrize("path", SNIPPETS, ids=lambda p: p.name)
def test_realworld_pattern_stays_silent(path):
    proc = run_cli("--no-cache", "--extend-select", "VJP106", "--output-format", "concise",
                   path.relative_to(ROOT).as_posix())
    assert proc.returncode == 0, proc.stdout
