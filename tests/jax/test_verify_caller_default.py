"""Issue 37, verification on real packages: a call site that passes the caller's own parameter.
maxtext's `pre(x, weights, permutations, *, config=common.MhcKernelConfig())` calls
`_pre_op(config, x, permutations, weights)`; the parameter is not evaluated in the module, and
`config`'s annotation names a class of another module, which synthesis cannot build ("unverified:
cannot synthesise inputs: `config`: cannot make a value of type `common.MhcKernelConfig`"). The
caller's default is used instead. The package here is written for this test, in that layout."""

from __future__ import annotations

import textwrap

from tests.conftest import JAX_ENV, device_label, run_cli

CPU = JAX_ENV  # the CPU unless JAX_PLATFORMS names a lent accelerator
COMMON = textwrap.dedent('''\
    import dataclasses


    @dataclasses.dataclass(frozen=True)
    class KernelConfig:
        scale: float = 2.0
        clip: float = 0.5
    ''')
OPS = textwrap.dedent('''\
    from functools import partial

    import jax
    import jax.numpy as jnp

    from kpkg import common


    @partial(jax.custom_vjp, nondiff_argnums=(0, 2))
    def _op(config: common.KernelConfig, x: jax.Array, w: jax.Array) -> jax.Array:
        return config.scale * jnp.sin(x) * w


    def _op_fwd(config, x, w):
        return _op(config, x, w), x


    def _op_bwd(config, w, x, g):
        return (jnp.clip(config.scale * jnp.cos(x) * w * g, -config.clip, config.clip),)


    _op.defvjp(_op_fwd, _op_bwd)


    def apply(x: jax.Array, w: jax.Array, *, config: common.KernelConfig = common.KernelConfig(scale=3.0)):
        return _op(config, x, w)
    ''')


def test_a_callers_parameter_default_gives_the_input(tmp_path):
    package = tmp_path / "kpkg"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    (package / "__init__.py").write_text("from kpkg.ops import apply  # noqa: F401\n")
    (package / "common.py").write_text(COMMON)
    (package / "ops.py").write_text(OPS)
    proc = run_cli("verify", "--unsafe-fixes", "kpkg", cwd=tmp_path, env=CPU, timeout=300)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"kpkg/ops.py:9: _op: verified on {device_label()} (JAX "), proc.stdout + proc.stderr
    assert "config=KernelConfig(scale=3.0, clip=0.5) (call site, line 26: the default of `apply`'s parameter " \
        "`config`)" in lines[2], proc.stdout
    assert "hazard     confirmed: the original raises UnexpectedTracerError under jit with `w` traced" in proc.stdout
    assert proc.returncode == 0
    assert (package / "ops.py").read_text() == OPS  # verify writes nothing
