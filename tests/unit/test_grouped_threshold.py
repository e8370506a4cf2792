"""Which big modules are linted a family of statements at a time (`LintSession.groups`): those
with `grouped_min_chars` or more outside their comment lines. A notebook export whose images are
comment lines of base64 (JAX's docs/notebooks/shard_map.py) is linted whole, with the same
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


def _lint(text: str, limit: int):
    return [(d.code, d.location, d.end_location, d.message) for d in
            lint_source("m.py", text, Config(), session=LintSession(grouped_min_chars=limit)).diagnostics]


def test_comment_lines_do_not_count_towards_the_limit() -> None:
    text = HAZARD + IMAGE * 10  # 44k characters, 0.3k of them code
    session = LintSession(grouped_min_chars=20_000)
    assert len(text) > 40_000
    assert session.groups(text) is False
    assert LintSession(grouped_min_chars=len(HAZARD) // 2).groups(text) is True  # the code alone is over this one
    code = HAZARD + "".join(f"value_{i} = {i}  # a trailing comment is code's line\n" for i in range(1000))
    assert session.groups(code) is True
    assert session.groups(HAZARD) is False  # under the limit: never grouped


def test_a_limit_of_zero_groups_every_text() -> None:
    assert LintSession(grouped_min_chars=0).groups(HAZARD + IMAGE) is True
    assert LintSession(grouped_min_chars=0).groups("") is True


def test_the_whole_lint_of_a_comment_heavy_module_finds_what_the_grouped_one_does() -> None:
    text = IMAGE * 5 + HAZARD + IMAGE * 5
    whole, grouped = _lint(text, 20_000), _lint(text, 0)
    assert [d[0] for d in whole] == ["VJP304"]
    assert whole == grouped
    row = text[:text.index("    return f(x)")].count("\n") + 1
    assert whole[0][1].row == row
