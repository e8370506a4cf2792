"""VJP610's typed evidence (`SlopeDisagrees`): what the VJP201 custom_jvp fix reads to decide its
`# noqa: VJP610` mark, never the message's words."""

from __future__ import annotations

import textwrap

from vjplint.diagnostics import SlopeDisagrees
from tests.conftest import lint

IGNORED = textwrap.dedent('''
    import jax
    import jax.numpy as jnp


    @jax.custom_jvp
    def clip(s, x):
        return s * jnp.tanh(x / s)


    @clip.defjvp
    def clip_jvp(primals, tangents):
        (s, x), (_, x_dot) = primals, tangents
        return clip(s, x), (1.0 - jnp.tanh(x / s) ** 2) * x_dot
''')


def test_an_ignored_tangent_is_evidence_of_no_derivative_for_that_input() -> None:
    (d,) = lint(IGNORED, select=["VJP610"])
    assert (d.code, d.location.row) == ("VJP610", 14)  # the return (the text opens with an empty line)
    assert d.evidence == SlopeDisagrees("clip", "s", True)


def test_a_wrong_factor_is_evidence_of_a_derivative_that_is_not_zero() -> None:
    source = IGNORED.replace("(_, x_dot) = primals", "(s_dot, x_dot) = primals").replace(
        "* x_dot\n", "* x_dot + 2.0 * jnp.tanh(x / s) * s_dot\n")
    (d,) = lint(source, select=["VJP610"])
    assert d.evidence == SlopeDisagrees("clip", "s", False)


def test_a_right_rule_gives_no_evidence() -> None:
    source = IGNORED.replace("(_, x_dot) = primals", "(s_dot, x_dot) = primals").replace(
        "* x_dot\n", "* x_dot + (jnp.tanh(x / s) - x / s * (1.0 - jnp.tanh(x / s) ** 2)) * s_dot\n")
    assert lint(source, select=["VJP610"]) == []
