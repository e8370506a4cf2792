"""Which big modules are linted a family of statements at a time (`LintSession.groups`): by
measure, those whose text names the rules' triggers often enough (`worth_grouping`); by size,
when the environment gives a limit. A notebook export whose images are comment lines of base64
(JAX's docs/notebooks/shard_map.py, 2.4 MB) names few triggers and is linted whole, with the same
diagnostics as the grouped lint."""

from __future__ import annotations

from vjplint.lint.engine import lint_source
from vjplint.lint.session import LintSession
from vjplint.settings.config import Config

HAZARD = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return f(x)


def f_bwd(res, g):
    return (g * jnp.cos(res),)


f.defvjp(f_fwd, f_bwd)
'''
# A markdown cell's image as jupytext writes it: one comment line of base64.
IMAGE = "# <img src=\"data:image/png;base64," + "iVBORw0KGgo" * 400 + "\">\n"


def _lint(text: str, limit):
    return [(d.code, d.location, d.end_location, d.message) for d in
            lint_source("m.py", text, Config(), session=LintSession(grouped_min_chars=limit)).diagnostics]


def test_a_big_comment_heavy_module_is_linted_whole_by_measure_and_grouped_by_a_size_limit() -> None:
    text = HAZARD + IMAGE * 60  # 265k characters, 0.3k of them code: over the floor, few trigger names
    assert len(text) > 200_000
    names = ["custom_vjp", "defvjp"]
    assert LintSession(grouped_min_chars=None).groups(text, names) is False
    assert LintSession(grouped_min_chars=200_000).groups(text, names) is True
    assert LintSession(grouped_min_chars=None).groups(HAZARD, names) is False  # under the floor: never grouped


def test_a_limit_of_zero_groups_every_text() -> None:
    assert LintSession(grouped_min_chars=0).groups(HAZARD + IMAGE, ["custom_vjp"]) is True
    assert LintSession(grouped_min_chars=0).groups("", []) is True


def test_the_whole_lint_of_a_comment_heavy_module_finds_what_the_grouped_one_does() -> None:
    text = IMAGE * 5 + HAZARD + IMAGE * 5
    whole, grouped = _lint(text, None), _lint(text, 0)
    assert [d[0] for d in whole] == ["VJP304"]
    assert whole == grouped
    row = text[:text.index("    return f(x)")].count("\n") + 1
    assert whole[0][1].row == row


def test_the_count_read_from_the_lints_searches_is_the_texts_own() -> None:
    """`worth_grouping` counts the names where the lint's TextIndex found them (the regions read
    them next) when it is given one; a name that can overlap itself (`aa`: three in `aaaa` as
    occurrences, two as `str.count`) is counted by the text, as without an index."""
    from vjplint.lint.session import _overlaps, worth_grouping
    from vjplint.syntax.text_spans import TextIndex

    assert [_overlaps(n) for n in ("custom_vjp", "defvjp", "aa", "abab", "aba", "ab")] == [
        False, False, True, True, True, False]
    names = ["custom_vjp", "defvjp"]
    dense = ("x = custom_vjp(f)\nf.defvjp(a, b)\n" * 260).ljust(100_000, "#")  # 520 names, the floor's needs 525
    for text in (dense, dense.replace("x = ", "x = custom_vjp; ", 5), HAZARD + IMAGE * 60):
        index = TextIndex(text)
        assert worth_grouping(text, names, index) is worth_grouping(text, names)
    assert worth_grouping(dense, names, TextIndex(dense)) is False
    denser = dense.replace("x = ", "x = custom_vjp; ", 5)
    assert worth_grouping(denser, names, TextIndex(denser)) is True
    overlapping = ("aaa " * 400).ljust(100_000)  # `aa`: 800 occurrences, 400 as str.count; the floor needs 525
    assert worth_grouping(overlapping, ["aa"], TextIndex(overlapping)) is False
