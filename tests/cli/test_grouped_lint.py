"""The real CLI on a module linted a family of statements at a time (vjplint.lint.engine.
_lint_grouped: by default a module dense in custom derivatives, `LintSession.groups`; with
`VJPLINT_GROUPED_MIN_CHARS`, every module of that many characters or more): the same output,
byte for byte, as the whole lint, with fixes and diffs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import run_cli

from vjplint.lint.session import LintSession
from vjplint.syntax.names import PREFILTER_NAMES

JSON = ("--output-format", "json", "--exit-zero")
DIFF = ("--diff", "--unsafe-fixes", "--exit-zero")
FORCED = {"VJPLINT_GROUPED_MIN_CHARS": "0"}
WHOLE = {"VJPLINT_GROUPED_MIN_CHARS": str(10**12)}  # every file linted whole: the reference
# generous: the outputs are compared, never the time (a loaded machine is slow, not wrong)
TIMEOUT = 3600

# One block of a generated module: two custom_vjps with findings (VJP arity, nondiff), a
# column-0 triple-quoted string and brackets that a piece's cut may fall in.
BLOCK = '''\
TEMPLATE_{i} = """
def not_code_{i}(x):
    return x
"""
SIZES_{i} = [
{i},
{i} + 1,
]


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def clip_{i}(lo, x):
    return x


def clip_{i}_fwd(lo, x):
    return x, None


def clip_{i}_bwd(lo, _, g):
    return (jnp.clip(g, lo, 1.0), g)


clip_{i}.defvjp(clip_{i}_fwd, clip_{i}_bwd)


@jax.custom_vjp
def scale_{i}(x):
    return x * {i}


def scale_{i}_fwd(x):
    return x * {i}, None


def scale_{i}_bwd(_, g):
    return g * {i}  # noqa: VJP999


scale_{i}.defvjp(scale_{i}_fwd, scale_{i}_bwd)
if SIZES_{i}:
    use_{i} = clip_{i}(0.0, 1.0) + scale_{i}(2.0)
else:
    use_{i} = None


'''
HEADER = "from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\n"


@pytest.mark.parametrize("args", [JSON, DIFF], ids=["json", "diff"])
@pytest.mark.parametrize("tree", ["fixtures", "eval/cases"])
def test_the_grouped_lint_forced_on_gives_the_whole_lints_output_byte_for_byte(tree: str, args: tuple) -> None:
    whole = run_cli("check", "--no-cache", *args, tree, env=WHOLE, timeout=TIMEOUT)
    grouped = run_cli("check", "--no-cache", *args, tree, env=FORCED, timeout=TIMEOUT)
    assert whole.returncode == grouped.returncode == 0, (whole.stderr, grouped.stderr)
    assert len(whole.stdout) > (100_000 if args == JSON else 10_000)  # hundreds of findings, dozens of fixes
    assert grouped.stdout == whole.stdout


def test_a_generated_module_over_the_threshold_gives_the_whole_lints_json(tmp_path: Path) -> None:
    """25,000 lines: split in more than one piece (PIECE_LINES, 20,000), over a threshold of 1,000
    characters, and by the default measure (2,176 occurrences of the names in 0.34 MB: grouped);
    the whole lint is the reference."""
    text = HEADER + "".join(BLOCK.format(i=i) for i in range(int(25_000 / BLOCK.count("\n")) + 1))
    assert text.count("\n") > 25_000
    assert LintSession(grouped_min_chars=None).groups(text, [n.decode() for n in PREFILTER_NAMES])
    (tmp_path / "big.py").write_text(text, encoding="utf-8")
    whole = run_cli("check", "--no-cache", *JSON, "big.py", cwd=tmp_path, env=WHOLE, timeout=TIMEOUT)
    grouped = run_cli("check", "--no-cache", *JSON, "big.py", cwd=tmp_path,
                      env={"VJPLINT_GROUPED_MIN_CHARS": "1000"}, timeout=TIMEOUT)
    by_measure = run_cli("check", "--no-cache", *JSON, "big.py", cwd=tmp_path, env={"VJPLINT_GROUPED_MIN_CHARS": ""},
                         timeout=TIMEOUT)
    assert whole.returncode == grouped.returncode == by_measure.returncode == 0, (whole.stderr, grouped.stderr)
    assert grouped.stdout == whole.stdout == by_measure.stdout
    found = json.loads(grouped.stdout)
    blocks = text.count("def clip_") // 3
    for code in ("VJP306", "VJP307", "VJP901"):  # arity, a bare cotangent, the unknown code in noqa
        assert len([d for d in found if d["code"] == code]) == blocks, code
    assert len(found) == 3 * blocks
    assert found[-1]["location"]["row"] > 25_000 - BLOCK.count("\n")
