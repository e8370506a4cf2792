"""In-house wrappers (custom-vjp-aliases) and look-alike APIs that are not jax.custom_vjp."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import lint, run_cli

WRAPPED = textwrap.dedent('''\
    import jax.numpy as jnp
    from mylib.autodiff import vjp_with_statics

    @vjp_with_statics(static_argnums=(0,))
    def scale(w, x):
        return x

    def scale_fwd(w, x):
        return x, None

    def scale_bwd(w, _, g):
        return (jnp.dot(w, g),)

    scale.defvjp(scale_fwd, scale_bwd)
''')


@pytest.mark.cli
def test_alias_with_its_own_keyword_is_analysed(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.vjplint]\ncustom-vjp-aliases = { "mylib.autodiff.vjp_with_statics" = "static_argnums" }\n')
    (tmp_path / "m.py").write_text(WRAPPED)
    proc = run_cli("--no-cache", "--output-format", "concise", "m.py", cwd=tmp_path)
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0].replace(" [*]", "")
    assert first.startswith(
        "m.py:5:11: VJP101 `w` (position 0) is in nondiff_argnums but is used as an array: `jnp.dot(w, g)`")


@pytest.mark.cli
def test_prefilter_honours_alias_names(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.vjplint]\ncustom-vjp-aliases = ["mylib.autodiff.differentiable"]\n')
    (tmp_path / "m.py").write_text(WRAPPED.replace("vjp_with_statics(static_argnums=", "differentiable(nondiff_argnums=")
                                   .replace("import vjp_with_statics", "import differentiable"))
    assert b"custom_vjp" not in (tmp_path / "m.py").read_bytes()
    proc = run_cli("--no-cache", "--output-format", "concise", "m.py", cwd=tmp_path)
    assert proc.returncode == 1 and "m.py:5:11: VJP101" in proc.stdout


def test_without_the_alias_the_wrapper_is_not_jax():
    assert lint(WRAPPED) == []


def test_custom_gradient_is_not_custom_vjp():
    assert lint('''
import jax
import jax.numpy as jnp

@jax.custom_gradient
def log1pexp(x):
    e = jnp.exp(x)
    def grad(g):
        return g * (1 - 1 / (1 + e))
    return jnp.log1p(e), grad
''') == []


def test_equinox_filter_custom_vjp_is_not_misreported():
    assert lint('''
import equinox as eqx
import jax.numpy as jnp

@eqx.filter_custom_vjp
def fn(vjp_arg, w):
    return vjp_arg * w

@fn.def_fwd
def fn_fwd(perturbed, vjp_arg, w):
    return fn(vjp_arg, w), None

@fn.def_bwd
def fn_bwd(residuals, grad_obj, perturbed, vjp_arg, w):
    return jnp.dot(grad_obj, w)
''') == []


@pytest.mark.unit
def test_number_assignments_are_parsed_only_when_a_kept_piece_names_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """`NAME = 123` exports nothing: detect_text leaves it out unless a piece it keeps names NAME
    (then it binds NAME as in the whole module), and answers as `detect` on the whole parse."""
    from vjplint.model import wrappers
    from vjplint.syntax.source import parse

    text = textwrap.dedent("""\
        import jax
        jax = 1
        cvjp = jax.custom_vjp
        width = 3
        other = 4  # a comment
        alias = width


        def wrap(f, n):
            return jax.custom_vjp(f, nondiff_argnums=(other,))
        """) + "".join(f"v{i} = {i}\n" for i in range(200))
    parsed = []
    real = wrappers._parse_piece
    monkeypatch.setattr(wrappers, "_parse_piece", lambda chunk, line: parsed.append(chunk) or real(chunk, line))
    assert wrappers.detect_text(text) == wrappers.detect(parse(text))
    plain = parsed[-1]  # the imports and assignments, parsed together last
    assert "jax = 1\n" in plain and "width = 3\n" in plain and "other = 4  # a comment\n" in plain
    assert "v0 = 0" not in plain and "v199 = 199" not in plain


def test_inferred_keywords_differing_only_in_why_or_rules_are_not_equal() -> None:
    """Two files' run facts that differ only in an inferred wrapper's `why` (or its rules) are
    not the same facts: a run that dedupes `RunFacts` by value must not give one file the other's
    evidence. Against a plain string an inferred keyword is still its keyword."""
    from vjplint.model.run_facts import RunFacts
    from vjplint.model.wrappers import InferredKeyword

    a = InferredKeyword("nondiff_argnums", (1, 2), "`wrap` passes `fn` to `jax.custom_vjp` at line 4")
    b = InferredKeyword("nondiff_argnums", (1, 2), "`wrap` passes `fn` to `jax.custom_vjp` at line 9")
    c = InferredKeyword("nondiff_argnums", (2, 3), a.why)
    same = InferredKeyword("nondiff_argnums", (1, 2), a.why)
    assert a != b and a != c and not (a == b) and a == same and hash(a) == hash(same)
    assert a == "nondiff_argnums" and "nondiff_argnums" == b and a != "nondiff_argnames"
    first, second = RunFacts(vjp_aliases=(("pkg.wrap", a),)), RunFacts(vjp_aliases=(("pkg.wrap", b),))
    assert first != second and len({first, second}) == 2
    assert first == RunFacts(vjp_aliases=(("pkg.wrap", same),)) and len({first, RunFacts(vjp_aliases=(("pkg.wrap", same),))}) == 1
    assert first.fingerprint() != second.fingerprint()
