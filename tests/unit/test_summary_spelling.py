"""vjplint.project.summary._spelled: a caller module whose text spells none of the run's targets
as a dotted name has no hit and is neither parsed nor summarised; every spelling Python accepts
for the chain (spaces, line breaks, backslash continuations, comments inside brackets, a
parenthesised head) counts, so no hit is lost."""

from __future__ import annotations

import pytest

from vjplint.project.summary import _spelled, summarize
from vjplint.project.text import parse_lazily

pytestmark = pytest.mark.unit

NEEDS = [("jax", [("nn", "relu")]), ("lib", [("soft_cos",)])]


@pytest.mark.parametrize("text, spelled", [
    ("y = jax.nn.relu(x)\n", True),
    ("y = jax . nn . relu(x)\n", True),
    ("y = (jax  # the library\n     .nn\n     .relu)(x)\n", True),
    ("y = (jax).nn.relu(x)\n", True),
    ("y = jax.nn \\\n    .relu(x)\n", True),
    ("f = lib.soft_cos\n", True),
    ("print(lib.soft_cos)\n", True),  # in a string it may be: a superset is enough
    # the words apart: no chain
    ("import jax\nfrom jax import nn\nrelu = nn.relu\nsoft_cos = lib\n", False),
    ("y = jax.nn.relu6(x)\n", False),  # another name
    ("y = myjax.nn.relu(x)\n", False),  # another head
    ("y = lib.soft_cos_p\n", False),
    ("y = jäx.nn.relu(x)\n", True),  # non-ASCII text: never ruled out
])
def test_a_chain_is_found_in_every_spelling(text, spelled):
    assert _spelled(text, NEEDS) is spelled


def test_a_name_imported_as_the_target_is_spelled_by_itself():
    assert _spelled("from m import f\ny = f(1)\n", [("f", [()])]) is True
    assert _spelled("y = ff(1) + f_(2) + m.ff\n", [("f", [()])]) is False


def _summary(text: str):
    tree, lines, body, lazy = parse_lazily(text.encode())
    return summarize(tree, lines, "", "use.py", {"pkg.lib.soft_cos": ("pkg.lib", "soft_cos")}, text=body, lazy=lazy)


def test_a_module_whose_words_are_apart_has_no_rows_and_one_that_spells_the_chain_has():
    apart = "from pkg import lib\n\n\ndef f(soft_cos):\n    return soft_cos(lib)\n"
    assert _summary(apart) == []
    spaced = "from pkg import lib\n\n\ndef f(x):\n    return (lib  # here\n            ).soft_cos(x)\n"
    assert [(owner, row[0], row[1], row[2]) for owner, row in _summary(spaced)] == [
        ("pkg.lib", "call", "soft_cos", "use.py:5")]
