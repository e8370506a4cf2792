"""The facts layer: derived facts are computed once per file, typed, and quote source exactly."""

from __future__ import annotations

import ast
import textwrap

from vjplint.collect import collect
from vjplint.engine import lint_source
from vjplint.positions import source_lines
from vjplint.source import parse

NON_ASCII_QUOTE = textwrap.dedent('''
    from functools import partial
    import jax
    import jax.numpy as jnp

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def scale(w, x):
        return w * x

    def scale_fwd(w, x):
        return w * x, None

    def scale_bwd(w, _, g):
        label = "größe"; out = jnp.dot(w, g)  # π
        return (out,)

    scale.defvjp(scale_fwd, scale_bwd)
''')


def test_message_quotes_are_exact_on_non_ascii_lines():
    # `ast` columns are UTF-8 bytes; "größe" is two bytes longer than it is characters.
    found = [(d.code, d.message) for d in lint_source("t.py", NON_ASCII_QUOTE).diagnostics]
    assert found == [(
        "VJP101",
        "`w` (position 0) is in nondiff_argnums but is used as an array: `jnp.dot(w, g)`; a traced value here "
        "raises UnexpectedTracerError under jit, vmap or grad. Pass it as a regular argument, save it in the "
        "residuals and return None for it from bwd",
    )]


def model_of(source: str):
    text = textwrap.dedent(source)
    return collect(parse(text), source_lines(text))


def test_quote_and_source_text_count_code_points():
    model = model_of('s = "é€"; y = f(s, "ü")\n')
    call = next(n for n in ast.walk(model.module) if isinstance(n, ast.Call))
    assert model.quote(call) == 'f(s, "ü")'
    assert model.source_text(call.args[0], call.args[1]) == 's, "ü"'
    assert model.text_between(call.args[0], call.args[1]) == ", "
