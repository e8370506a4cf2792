"""How a child process words an exception for a report (vjplint/verify/process.py)."""

from __future__ import annotations

from vjplint.verify.process import describe_exc


class JaxRuntimeError(Exception):
    """Stands in for jax.errors.JaxRuntimeError: only its name and text are read."""


def test_an_error_carrying_a_callbacks_traceback_is_worded_by_the_exception_it_wraps() -> None:
    # The text JAX 0.10.2 gives on a TPU with JAX_PLATFORMS=tpu for a pure_callback (measured on
    # a TPU v5e); its first line alone said nothing.
    exc = JaxRuntimeError(
        "INTERNAL: Execute event error: CpuCallback error: Traceback (most recent call last):\n"
        '  File "/opt/jax/_src/callback.py", line 816, in _wrapped_callback\n'
        '  File "/opt/jax/_src/callback.py", line 85, in pure_callback_impl\n'
        "RuntimeError: jax.pure_callback failed to find a local CPU device to place the inputs on. "
        'Make sure "cpu" is listed in --jax_platforms or the JAX_PLATFORMS environment variable.\n')
    assert describe_exc(exc) == (
        "JaxRuntimeError: INTERNAL: Execute event error: CpuCallback error: RuntimeError: jax.pure_callback "
        "failed to find a local CPU device to place the inputs on. Make sure \"cpu\" is listed in "
        "--jax_platforms or the JAX_PLATFORMS environment variable.")


def test_an_ordinary_error_keeps_its_first_line_without_addresses() -> None:
    exc = TypeError("bad operand <function f at 0x7f00aa> for +\nsecond line")
    assert describe_exc(exc) == "TypeError: bad operand <function f> for +"
    assert describe_exc(ValueError()) == "ValueError"
