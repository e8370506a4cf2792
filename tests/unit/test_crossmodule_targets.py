"""vjplint.facts.crossmodule.forward_targets: which top-level names of a module other modules are
summarised for (forward mode, reverse mode twice), read from the text alone."""

from __future__ import annotations

import pytest

from vjplint.facts.crossmodule import forward_targets

pytestmark = pytest.mark.unit

MODULE = '''import jax


@jax.custom_vjp
def soft_sin(x):
    return jax.numpy.sin(x)


soft_cos = jax.custom_vjp(lambda x: x)
sine = soft_sin  # the public name
cosine = soft_cos
plain = other
early = later


@jax.custom_vjp
def later(x):
    return x
'''


def test_custom_vjps_and_their_aliases_defined_above_are_forward_targets():
    assert forward_targets(MODULE, []) == ["~soft_sin", "~soft_cos", "~sine", "~cosine", "~later"]


def test_names_already_exported_are_left_out_but_still_have_aliases():
    assert forward_targets(MODULE, ["soft_sin"]) == ["~soft_cos", "~sine", "~cosine", "~later"]


def test_an_alias_of_a_call_or_an_attribute_is_no_alias():
    text = MODULE + "twice = soft_sin(1.0)\nmember = soft_sin.fwd\n"
    assert forward_targets(text, []) == ["~soft_sin", "~soft_cos", "~sine", "~cosine", "~later"]


def test_a_result_of_an_exported_factory_is_a_forward_target():
    text = "made = make_f(2.0)\nother = helper(1.0)\n"
    assert forward_targets(text, ["make_f"]) == ["~made"]
