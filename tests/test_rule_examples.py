"""Each rule's own VALID/INVALID snippets (fixit's convention): INVALID fires the rule, VALID does not."""

from __future__ import annotations

import pytest

from vjplint.rules.registry import all_rules

from conftest import lint

CASES = [(code, kind, i, snippet) for code, rule in all_rules().items()
         for kind, snippets in (("INVALID", rule.INVALID), ("VALID", rule.VALID))
         for i, snippet in enumerate(snippets)]


def test_every_rule_has_examples():
    for code, rule in all_rules().items():
        assert rule.INVALID and rule.VALID, f"{code} needs VALID and INVALID examples"


@pytest.mark.parametrize("code,kind,index,snippet", CASES, ids=[f"{c}-{k}-{i}" for c, k, i, _ in CASES])
def test_example(code, kind, index, snippet):
    codes = [d.code for d in lint(snippet, select=[code])]
    if kind == "INVALID":
        assert code in codes
    else:
        assert code not in codes
