"""vjplint.fixes.residual_text, the one writer of the residual-plus-None rewrite, on every
fixture and eval case with a planned fix and on generated spellings (hypothesis): the rewrite
parses, keeps every comment of the code (an end-of-line comment stays with its item; the comment
of a removed nondiff keyword moves above the decorator), is what the edits `--fix` applies give,
and a second fix finds nothing more to do. Exact texts: the tests below and
tests/cli/test_fix_writer_cli.py (through the real CLI)."""

from __future__ import annotations

import ast
import os
from collections import Counter
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from tests.conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vjplint.settings.config import Config
from vjplint.diagnostics import FixPlan, ResidualPlusNone
from vjplint.lint.engine import lint_source
from vjplint.fixes import apply
from vjplint.fixes.edits import apply_edits
from vjplint.fixes.residual_layout import comments


def _plans(name: str, text: str) -> List[FixPlan]:
    return list(dict.fromkeys(d.fix.plan for d in lint_source(name, text).diagnostics
                              if d.fix is not None and isinstance(d.fix.plan, ResidualPlusNone)))


def _rewrite(text: str, plans: List[FixPlan]) -> Tuple[str, Optional[Tuple]]:
    """(new text, the edits --fix applies), through the plan's one way to its edits."""
    done = ResidualPlusNone.edits(text, plans, apply.FileContext(Config()))
    return done.text or text, done.edits


def _check(name: str, text: str) -> int:
    """The rewrite of all of the file's plans and of each alone: it parses, keeps the code's
    comments, and is what its edits give; a second rewrite of the result plans nothing. How many
    rewrites changed the text."""
    plans = _plans(name, text)
    made = 0
    for subset in ([plans] + [[p] for p in plans] if len(plans) > 1 else [plans] if plans else []):
        new, edits = _rewrite(text, subset)
        if new == text:
            continue
        made += 1
        ast.parse(new)
        assert edits and apply_edits(text, edits) == new, "the edits --fix applies make the same text"
        lost = Counter(comments(text)) - Counter(comments(new))
        stale = {c for fp in subset for c in getattr(fp.planned, "stale_comments", ())}  # false after the rewrite
        assert not [c for c in lost if c not in stale], (name, lost)
    if plans:
        fixed = apply.fix_text(name, text, Config(), True).text
        assert apply.fix_text(name, fixed, Config(), True).text == fixed, "a second fix changes nothing"
    return made


CASES = sorted(p for p in [*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "eval" / "cases").rglob("*.py")]
               if b"custom_vjp" in p.read_bytes())


@pytest.mark.paths_equal
def test_every_fixture_and_case_is_written() -> None:
    made = sum(_check(path.name, path.read_text(encoding="utf-8")) for path in CASES)
    assert made >= 60


def test_json_shares_make_the_whole_rewrite_together() -> None:
    """JSON/SARIF/LSP give each derivative its own edits, computed apart; each share applied
    alone parses, and all together make the whole rewrite (no import is shared here)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scaling import module_text

    text = module_text(600, 12)
    plans = _plans("m.py", text)
    assert len(plans) >= 2
    shares = ResidualPlusNone.edits(text, plans, apply.FileContext(Config()), alone=True).alone
    assert set(shares) == set(plans)
    whole, _ = _rewrite(text, plans)
    for fp in plans:
        ast.parse(apply_edits(text, shares[fp]))
    assert apply_edits(text, [e for fp in plans for e in shares[fp]]) == whole


# -- generated spellings ----------------------------------------------------------------------------
SEPARATORS = (", ", ",", " , ")


@st.composite
def modules(draw) -> str:  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 4))
    names = ["x", "w", "b", "s"][:n]
    nondiff = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n - 1)))
    arrays = sorted(draw(st.sets(st.sampled_from(nondiff), min_size=1)))
    params = [f"{v}: jax.Array" if i in arrays else f"{v}: int" if i in nondiff else v for i, v in enumerate(names)]
    sep = draw(st.sampled_from(SEPARATORS))
    nums = draw(st.sampled_from(["tuple", "list", "trailing", "names"]))
    if nums == "names":
        inner = sep.join(f'"{names[i]}"' for i in nondiff)
        keyword = f"nondiff_argnames=({inner}{',' if len(nondiff) == 1 else ''})"
    else:
        inner = sep.join(str(i) for i in nondiff)
        trailing = "," if nums == "trailing" or (nums == "tuple" and len(nondiff) == 1) else ""
        keyword = f"nondiff_argnums={'[' if nums == 'list' else '('}{inner}{trailing}{']' if nums == 'list' else ')'}"
    keyword = keyword.replace("=", draw(st.sampled_from(["=", " = "])), 1)
    form = draw(st.sampled_from(["partial", "functools", "call", "multiline", "comment"]))
    imports = draw(st.sampled_from(["from functools import partial", "from functools import partial, wraps",
                                    "from functools import wraps, partial", "import functools, os"]))
    lines = [imports, *(["import functools"] if form == "functools" and "import functools" not in imports else []),
             "", "import jax", "import jax.numpy as jnp", "", ""]
    if draw(st.booleans()):
        lines += ["def helper(f):", "    return partial(f, 1)", "", ""]
    if form == "partial":
        lines.append(f"@partial(jax.custom_vjp, {keyword})")
    elif form == "functools":
        lines.append(f"@functools.partial(jax.custom_vjp,{sep[-1:]}{keyword})")
    elif form == "multiline":
        lines += ["@partial(", "    jax.custom_vjp,", f"    {keyword},", ")"]
    elif form == "comment":
        lines.append(f"@partial(jax.custom_vjp, {keyword})  # the static ones")
    diff = [v for i, v in enumerate(names) if i not in nondiff]
    lines += [f"def f({', '.join(params)}):", f"    return {' * '.join(names)}", ""]
    if form == "call":
        lines += [f"f = jax.custom_vjp(f, {keyword})", ""]
    # fwd
    lines.append(f"def f_fwd({', '.join(names)}):")
    if draw(st.booleans()):
        lines.append('    """Forward."""')
    if draw(st.booleans()):
        lines.append(f"    {names[arrays[0]]} = {names[arrays[0]]} * 1")
    residual = draw(st.sampled_from(["None", "(x,)", "x"]))
    shape = draw(st.sampled_from(["{a}, {b}", "({a}, {b})", "[{a}, {b}]", "{a},{b}", "({a}, {b},)",
                                  "name", "call", "(call)"]))  # the last three: indexed, bound, bound
    primal_out = "f(" + ", ".join(names) + ")"
    if shape == "name":
        lines += [f"    out = ({primal_out}, {residual})", "    return out", ""]
    elif shape in ("call", "(call)"):
        call = f"tuple([{primal_out}, {residual}])"
        lines += ["    # the pair", "    return " + (f"({call})" if shape == "(call)" else call), ""]
    else:
        if draw(st.booleans()):
            lines += ["    if x is None:", "        return " + shape.format(a=primal_out, b=residual)]
        lines += ["    return " + shape.format(a=primal_out, b=residual), ""]
    # bwd
    bwd_params = [names[i] for i in nondiff] + [draw(st.sampled_from(["res", "_", "r: tuple"])), "g"]
    layout = draw(st.sampled_from(["line", "line", "split", "commented", "posonly"]))
    if layout == "split":
        head = ["    # nondiff ones first"] if draw(st.booleans()) else []  # a comment line among them
        lines += ["def f_bwd(", *head, *(f"    {p},  # {p}" if k == 0 and draw(st.booleans()) else f"    {p},"
                                         for k, p in enumerate(bwd_params)), "):"]
    elif layout == "commented":
        lines += ["def f_bwd(" + ", ".join(bwd_params[:-1]) + ",  # residuals last", f"          {bwd_params[-1]}):"]
    elif layout == "posonly":
        lines.append(f"def f_bwd({', '.join(bwd_params)}, /):")
    else:
        lines.append(f"def f_bwd({draw(st.sampled_from(SEPARATORS)).join(bwd_params)}):")
    top = draw(st.sampled_from(["", "doc", "comment", "blank", "doc and comment"]))
    if top == "doc":
        lines.append('    """Backward."""')
    elif top == "comment":
        lines.append("    # cotangents")
    elif top == "blank":
        lines.append("")
    elif top == "doc and comment":
        lines += ['    """Backward:', "", '    the cotangents."""', "", "    # residuals first"]
    if bwd_params[len(nondiff)].startswith("r") and residual != "None" and draw(st.booleans()):
        lines.append(f"    print({bwd_params[len(nondiff)].split(':')[0]})")
    outs = [f"g * {v}" for v in diff]
    ret = draw(st.sampled_from(["tuple", "bare", "list", "trailing", "multiline", "name", "call"]))
    if ret == "name":
        lines += [f"    cts = ({sep.join(outs)},)", "    return cts"]
    elif ret == "call":
        lines += ["", "    # the cotangents", f"    return tuple([{sep.join(outs)}])"]
    elif ret == "tuple":
        lines.append(f"    return ({sep.join(outs)}{',' if len(outs) == 1 else ''})")
    elif ret == "bare":
        lines.append(f"    return {sep.join(outs)},")
    elif ret == "list":
        lines.append(f"    return [{sep.join(outs)}]")
    elif ret == "trailing":
        lines.append(f"    return ({sep.join(outs)},)")
    else:
        head = ["        # the cotangents"] if draw(st.booleans()) else []
        lines += ["    return (", *head, *(f"        {o},  # d/d{v}" for o, v in zip(outs, diff)), "    )"]
    lines += ["", "", "f.defvjp(f_fwd, f_bwd)", ""]
    wrap = draw(st.sampled_from(["module", "module", "function", "tabs"]))
    head = lines.index("import jax.numpy as jnp") + 1
    if wrap == "function":  # the whole derivative defined inside a function
        lines[head:] = ["", "", "def build():", *("    " + line if line else "" for line in lines[head:]),
                        "    return f", ""]
    elif wrap == "tabs":
        lines = [line.replace("    ", "\t") for line in lines]
    return "\n".join(lines)


@pytest.mark.fuzz
@settings(max_examples=int(os.environ.get("VJPLINT_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(modules())
def test_generated_spellings_are_written(text: str) -> None:
    _check("gen.py", text)


@st.composite
def lambda_modules(draw) -> str:  # type: ignore[no-untyped-def]
    """fwd and bwd as lambdas in `defvjp`: a bwd that reads moved values (as `res[i]` after the
    rewrite) beside attribute and keyword names spelled like them, which stay."""
    n = draw(st.integers(2, 3))
    names = ["x", "w", "b"][:n]
    nondiff = sorted(draw(st.sets(st.integers(1, n - 1), min_size=1, max_size=n - 1)))
    params = [f"{v}: jax.Array" if i in nondiff else v for i, v in enumerate(names)]
    sep = draw(st.sampled_from(SEPARATORS))
    keyword = f"nondiff_argnums=({sep.join(str(i) for i in nondiff)}{',' if len(nondiff) == 1 else ''})"
    held = [names[i] for i in nondiff]
    diff = [v for i, v in enumerate(names) if i not in nondiff]
    residual = draw(st.sampled_from(["None", "x", "(x,)"]))
    res = draw(st.sampled_from(["_", "res", "r"]))
    term = draw(st.sampled_from(["g * {v}", "jnp.multiply(g, {v})", "jnp.clip(g, -{v}, {v})",
                                 "g * {v}.T", "jnp.sum(g * {v}, axis=None, {v}=None)"]))
    uses = " + ".join(term.format(v=v) for v in held)
    if res != "_" and residual != "None" and draw(st.booleans()):
        uses += f" + 0 * {res}" + ("[0]" if residual.startswith("(") else "")
    outs = [uses for _ in diff]
    shape = draw(st.sampled_from(["({a}, {b})", "[{a}, {b}]", "({a}, {b},)"]))
    fwd = f"lambda {', '.join(names)}: " + shape.format(a=f"f({', '.join(names)})", b=residual)
    ret = draw(st.sampled_from(["tuple", "list", "spaced"]))
    body = sep.join(outs)
    bwd_out = f"[{body}]" if ret == "list" else f"({body}{',' if len(outs) == 1 else ''})"
    bwd = f"lambda {sep.join([*held, res, 'g'])}: {bwd_out}"
    lines = ["from functools import partial", "", "import jax", "import jax.numpy as jnp", "", "",
             f"@partial(jax.custom_vjp, {keyword})", f"def f({', '.join(params)}):", f"    return {' * '.join(names)}",
             "", ""]
    form = draw(st.sampled_from(["one line", "split", "keywords"]))
    if form == "one line":
        lines.append(f"f.defvjp({fwd}, {bwd})")
    elif form == "split":
        lines += ["f.defvjp(", f"    {fwd},", f"    {bwd},", ")"]
    else:
        lines += ["f.defvjp(", f"    fwd={fwd},", f"    bwd={bwd},", ")"]
    return "\n".join(lines) + "\n"


@pytest.mark.fuzz
@settings(max_examples=int(os.environ.get("VJPLINT_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lambda_modules())
def test_generated_lambda_rules_are_written(text: str) -> None:
    _check("lambdas.py", text)


def test_lambda_rules() -> None:
    """A bwd lambda reads the moved values from its residuals by index; attribute and keyword
    names spelled like them stay."""
    text = ("from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\n"
            "@partial(jax.custom_vjp, nondiff_argnums=(1, 2))\ndef f(x, w: jax.Array, b: jax.Array):\n"
            "    return x * w * b\n\n\n"
            "f.defvjp(lambda x, w, b: (f(x, w, b), x), lambda w, b, r, g: (jnp.sum(g * w.b, w=b) + 0 * r,))\n")
    assert _check("lambdas.py", text) == 1
    new, _ = _rewrite(text, _plans("lambdas.py", text))
    assert new.endswith("f.defvjp(lambda x, w, b: (f(x, w, b), (x, w, b)), "
                        "lambda res, g: (jnp.sum(g * res[1].b, w=res[2]) + 0 * res[0], None, None))  # noqa: VJP602\n")


def test_bound_and_indexed_returns() -> None:
    """fixtures/fix/unsafe_bound_returns: fwd returns a call (bound to `fwd_out`, then indexed),
    bwd a name and a call (indexed; bound to `cts` on a line of its own before the `return`)."""
    text = (ROOT / "fixtures" / "fix" / "unsafe_bound_returns" / "input.py").read_text(encoding="utf-8")
    new, _ = _rewrite(text, _plans("in.py", text))
    assert _check("in.py", text) == 1
    assert "    fwd_out = _forward(scale, x, y)\n    return fwd_out[0], (fwd_out[1], scale)\n" in new
    assert "        return (None, grads[0], grads[1])" in new
    assert "    cts = _grads(scale, x, y, g)\n    return (None, cts[0], cts[1])\n" in new


POSONLY_HEAD = "from functools import partial\n\nimport jax\n\n\n"


@pytest.mark.parametrize("nondiff, primal, bwd, expected", [
    ("(1,)", "x, w: jax.Array", "w, res, g, /", "def f_bwd(residuals, g, /):"),
    ("(1,)", "x, w: jax.Array", "w, /, res, g", "def f_bwd(residuals, g):"),  # none left: the `/` goes
    ("(1, 2)", "x, w: jax.Array, b: jax.Array", "w , b , / , res, g", "def f_bwd(residuals, g):"),
    ("(1, 2)", "x, w: jax.Array, b: jax.Array", "w, b, res, /, g", "def f_bwd(residuals, /, g):"),
    ("(1, 2)", "x, n: int, b: jax.Array", "n, b, /, res, g", "def f_bwd(n, /, residuals, g):"),  # `n` stays
])
def test_positional_only_bwd_parameters(nondiff: str, primal: str, bwd: str, expected: str) -> None:
    names = ", ".join(p.split(":")[0] for p in primal.split(", "))
    held = " * ".join(p.split(":")[0] for p in primal.split(", ")[1:])
    text = (POSONLY_HEAD + f"@partial(jax.custom_vjp, nondiff_argnums={nondiff})\ndef f({primal}):\n    return x\n\n\n"
            f"def f_fwd({names}):\n    return f({names}), x\n\n\ndef f_bwd({bwd}):\n    return (g * {held} * res,)\n\n\n"
            "f.defvjp(f_fwd, f_bwd)\n")
    assert _check("posonly.py", text) == 1
    new, _ = _rewrite(text, _plans("posonly.py", text))
    assert f"\n{expected}\n" in new


def test_the_plain_spelling() -> None:
    plain = ("from functools import partial\n\nimport jax\n\n\n@partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
             "def f(x, w: jax.Array):\n    return x * w\n\ndef f_fwd(x, w):\n    return f(x, w), None\n\n"
             "def f_bwd(w, res, g):\n    return (g * w,)\n\n\nf.defvjp(f_fwd, f_bwd)\n")
    assert _check("plain.py", plain) == 1
    fixed = apply.fix_text("t.py", plain, Config(), True).text
    assert "@jax.custom_vjp\n" in fixed and "from functools" not in fixed
    # `f`'s output depends on `w` and nothing shows it never differentiated: the fix is unsafe, and
    # the moved argument's `None` carries the mark VJP602 asks for
    assert "    return (g * w, None)  # noqa: VJP602\n" in fixed and fixed_text(plain) == plain


def fixed_text(text: str) -> str:
    return apply.fix_text("t.py", text, Config()).text


def test_a_comment_of_a_removed_keyword_moves_above_the_decorator() -> None:
    """fixtures/fix/unsafe_formatting: the comment after `nondiff_argnums=(1,),` goes above the
    collapsed decorator; those of the returned tuples stay with their items."""
    text = Path(ROOT / "fixtures" / "fix" / "unsafe_formatting" / "input.py").read_text(encoding="utf-8")
    new, _ = _rewrite(text, _plans("in.py", text))
    assert "\n\n\n# `gain` used to be treated as a constant\n@custom_vjp\ndef rescale(" in new
    assert "        ((x, norm), gain),  # residuals\n    )\n" in new
    assert "        gx,  # d/dx\n        None,  # noqa: VJP602\n        None,  # eps is a constant\n    )\n" in new


def test_the_linters_parse_is_kept_for_the_fix_only_when_asked() -> None:
    """A report with fix edits (and each --fix pass) reads the parse of the lint just before it,
    kept in one slot only when a caller asked: kept past a text report, the tree would only cost
    the cyclic collector's scans."""
    from vjplint.lint.engine import prefilter_names
    from vjplint.lint.session import LintSession

    text = (ROOT / "fixtures" / "fix" / "safe_canonical" / "input.py").read_text(encoding="utf-8")
    names = tuple(n.decode() for n in prefilter_names(Config()))
    report = LintSession()  # a text report's
    lint_source("a.py", text, session=report)
    assert report.recall_parse(text, names) is None
    session = LintSession(keep_parses=True)
    lint_source("a.py", "import os\n", session=session)  # nothing planned: nothing kept
    assert session.recall_parse("import os\n", names) is None
    lint_source("a.py", text, session=session)
    assert LintSession(keep_parses=True).recall_parse(text, names) is None  # another session's slot is its own
    module, focused = session.recall_parse(text, names)  # type: ignore[misc]
    assert module.body and focused is not None
    assert session.recall_parse(text, names) is None  # taken by the fix that read it
    lint_source("a.py", text, session=session)
    assert session.recall_parse(text + "\n", names) is None  # another text is parsed again
