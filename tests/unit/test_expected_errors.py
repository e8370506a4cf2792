"""A finding inside a test that asserts the error keeps its message and loses its fix: fixing the
deliberately broken rule would make the test fail (measured: a VJP307 fix turned three JAX tests
red). The same rule outside such a test keeps its fix."""

from __future__ import annotations

import textwrap

import pytest
from tests.conftest import lint, run_cli

from vjplint.model.expected_errors import NOTE

BWD_NOT_TUPLE = "lambda x, g: g * jnp.cos(x)"
SOURCE = textwrap.dedent('''\
    import unittest

    import jax
    import jax.numpy as jnp
    import pytest


    class BwdTest(unittest.TestCase):
        def test_unittest_form(self):
            @jax.custom_vjp
            def f(x):
                return jnp.sin(x)

            f.defvjp(lambda x: (f(x), x), lambda x, g: g * jnp.cos(x))
            with self.assertRaisesRegex(TypeError, "must produce"):
                jax.grad(f)(1.0)


    def test_pytest_form():
        @jax.custom_vjp
        def f(x):
            return jnp.sin(x)

        f.defvjp(lambda x: (f(x), x), lambda x, g: g * jnp.cos(x))
        with pytest.raises(TypeError):
            jax.grad(f)(1.0)


    @pytest.mark.xfail(raises=TypeError)
    def test_xfail_form():
        @jax.custom_vjp
        def f(x):
            return jnp.sin(x)

        f.defvjp(lambda x: (f(x), x), lambda x, g: g * jnp.cos(x))
        jax.grad(f)(1.0)


    def test_no_expectation():
        @jax.custom_vjp
        def f(x):
            return jnp.sin(x)

        f.defvjp(lambda x: (f(x), x), lambda x, g: g * jnp.cos(x))
        jax.grad(f)(1.0)
    ''')


def test_findings_in_tests_that_expect_the_error_have_no_fix():
    found = [(d.code, d.location.row, d.fix is not None, d.message.endswith(NOTE))
             for d in lint(SOURCE, select=["VJP307"])]
    assert found == [("VJP307", 14, False, True), ("VJP307", 24, False, True), ("VJP307", 35, False, True),
                     ("VJP307", 44, True, False)]


@pytest.mark.cli
def test_fix_rewrites_only_the_test_without_an_expectation(tmp_path):
    path = tmp_path / "test_rules.py"
    path.write_text(SOURCE)
    proc = run_cli("--fix", "--unsafe-fixes", "--no-cache", "--select", "VJP307", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr  # three findings remain
    after = path.read_text()
    assert after.count(BWD_NOT_TUPLE) == 3
    assert after.count("lambda x, g: (g * jnp.cos(x),)") == 1
    assert after.index("lambda x, g: (g * jnp.cos(x),)") > after.index("def test_no_expectation")


def test_every_expecting_name_opens_the_text_gate():
    """withhold_fixes skips a text holding none of `_EXPECTING_WORDS`: each name a test can expect
    an error with must hold one, or its fixes would no longer be withheld."""
    from vjplint.model.expected_errors import _EXPECTING_CALLS, _EXPECTING_DECORATORS, _EXPECTING_WORDS

    for name in (*_EXPECTING_CALLS, *_EXPECTING_DECORATORS):
        assert _EXPECTING_WORDS.search(name), name
