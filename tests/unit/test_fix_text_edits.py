"""vjplint.fixes.residual_text writes the residual-plus-None rewrite as text edits at `ast`
positions, without libcst, for the common spellings. Its text must be libcst's, byte for byte:
on every fixture and eval case with a planned fix (all plans of a file together, and each alone),
and on generated spellings (hypothesis). Where it is unsure it must hand over to libcst."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from tests.conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vjplint.settings.config import Config
from vjplint.diagnostics import FixPlan, ResidualPlusNone
from vjplint.lint.engine import lint_source
from vjplint.fixes import apply, residual_text
from vjplint.fixes.edits import apply_edits


def _plans(name: str, text: str) -> List[FixPlan]:
    return list(dict.fromkeys(d.fix.plan for d in lint_source(name, text).diagnostics
                              if d.fix is not None and isinstance(d.fix.plan, ResidualPlusNone)))


def _rewrite(text: str, plans: List[FixPlan], use_text: bool, monkeypatch: pytest.MonkeyPatch
             ) -> Tuple[str, Optional[bool], Optional[Tuple]]:
    """(new text or the exception's name, whether the text edits were used, the edits --fix applies),
    through the plan's one way to its edits, with the text writer on (`use_text`) or off."""
    used: List[bool] = []
    original = residual_text.spans_of

    def spy(*args):  # type: ignore[no-untyped-def]
        result = original(*args)
        used.append(result is not None)
        return result

    with monkeypatch.context() as patched:
        patched.setattr(residual_text, "spans_of", spy)
        try:
            done = ResidualPlusNone.edits(text, plans, apply.FileContext(Config(), text_edits=use_text))
        except Exception as exc:  # libcst's failures must be the text path's too
            return type(exc).__name__, None, None
    return done.text or "", (used[0] if used else None), done.edits


def _compare(name: str, text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Compare both ways on all of the file's plans and on each alone; how many used text edits."""
    plans = _plans(name, text)
    used = 0
    for subset in ([plans] + [[p] for p in plans] if len(plans) > 1 else [plans] if plans else []):
        mine, by_text, found = _rewrite(text, subset, True, monkeypatch)
        reference, _, _ = _rewrite(text, subset, False, monkeypatch)
        assert mine == reference, (name, subset)
        if by_text:
            used += 1
            assert found and apply_edits(text, found) == mine, "the edits --fix applies make the same text"
    return used


CASES = sorted(p for p in [*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "eval" / "cases").rglob("*.py")]
               if b"custom_vjp" in p.read_bytes())


@pytest.mark.paths_equal
def test_text_edits_are_libcsts_rewrite_on_every_fixture_and_case(monkeypatch: pytest.MonkeyPatch) -> None:
    used = sum(_compare(path.name, path.read_text(encoding="utf-8"), monkeypatch) for path in CASES)
    assert used >= 40  # most fixtures are written by the text edits, not handed to libcst


def test_json_shares_are_the_same_text_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON/SARIF/LSP give each derivative its own edits: computed apart by the text path, split
    from one libcst rewrite otherwise; each share makes the same text."""
    from vjplint.syntax.positions import source_lines

    path = ROOT / "benchmarks"
    import sys

    sys.path.insert(0, str(path))
    from scaling import module_text

    text = module_text(600, 12)
    plans = _plans("m.py", text)
    assert len(plans) >= 2
    mine = ResidualPlusNone.edits(text, plans, apply.FileContext(Config()), alone=True).alone
    reference = ResidualPlusNone.edits(text, plans, apply.FileContext(Config(), text_edits=False), alone=True).alone
    assert set(mine) == set(reference) == set(plans)
    for fp in plans:
        assert apply_edits(text, mine[fp]) == apply_edits(text, reference[fp])
    assert source_lines(text)


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
        lines += ["def f_bwd(", *(f"    {p}," for p in bwd_params), "):"]
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
        lines += ["    return (", *(f"        {o},  # d/d{v}" for o, v in zip(outs, diff)), "    )"]
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
def test_text_edits_are_libcsts_rewrite_on_generated_spellings(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    _compare("gen.py", text, monkeypatch)


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
def test_text_edits_are_libcsts_rewrite_on_generated_lambda_rules(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    _compare("lambdas.py", text, monkeypatch)


def test_lambda_rules_take_the_text_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bwd lambda reads the moved values from its residuals by index; attribute and keyword
    names spelled like them stay."""
    text = ("from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\n"
            "@partial(jax.custom_vjp, nondiff_argnums=(1, 2))\ndef f(x, w: jax.Array, b: jax.Array):\n"
            "    return x * w * b\n\n\n"
            "f.defvjp(lambda x, w, b: (f(x, w, b), x), lambda w, b, r, g: (jnp.sum(g * w.b, w=b) + 0 * r,))\n")
    assert _compare("lambdas.py", text, monkeypatch) == 1
    plans = _plans("lambdas.py", text)
    new, by_text, _ = _rewrite(text, plans, True, monkeypatch)
    assert by_text is True
    assert new.endswith("f.defvjp(lambda x, w, b: (f(x, w, b), (x, w, b)), "
                        "lambda res, g: (jnp.sum(g * res[1].b, w=res[2]) + 0 * res[0], None, None))  # noqa: VJP602\n")


def test_bound_and_indexed_returns_take_the_text_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """fixtures/fix/unsafe_bound_returns: fwd returns a call (bound to `fwd_out`, then indexed),
    bwd a name and a call (indexed; bound to `cts` on a line of its own before the `return`)."""
    text = (ROOT / "fixtures" / "fix" / "unsafe_bound_returns" / "input.py").read_text(encoding="utf-8")
    plans = _plans("in.py", text)
    new, by_text, _ = _rewrite(text, plans, True, monkeypatch)
    assert by_text is True and _compare("in.py", text, monkeypatch) == 1
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
def test_positional_only_bwd_parameters_take_the_text_path(monkeypatch: pytest.MonkeyPatch, nondiff: str, primal: str,
                                                           bwd: str, expected: str) -> None:
    names = ", ".join(p.split(":")[0] for p in primal.split(", "))
    held = " * ".join(p.split(":")[0] for p in primal.split(", ")[1:])
    text = (POSONLY_HEAD + f"@partial(jax.custom_vjp, nondiff_argnums={nondiff})\ndef f({primal}):\n    return x\n\n\n"
            f"def f_fwd({names}):\n    return f({names}), x\n\n\ndef f_bwd({bwd}):\n    return (g * {held} * res,)\n\n\n"
            "f.defvjp(f_fwd, f_bwd)\n")
    assert _compare("posonly.py", text, monkeypatch) == 1
    new, by_text, _ = _rewrite(text, _plans("posonly.py", text), True, monkeypatch)
    assert by_text is True and f"\n{expected}\n" in new


def test_the_plain_spelling_takes_the_text_path(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = ("from functools import partial\n\nimport jax\n\n\n@partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
             "def f(x, w: jax.Array):\n    return x * w\n\ndef f_fwd(x, w):\n    return f(x, w), None\n\n"
             "def f_bwd(w, res, g):\n    return (g * w,)\n\n\nf.defvjp(f_fwd, f_bwd)\n")
    assert _compare("plain.py", plain, monkeypatch) == 1
    fixed = apply.fix_text("t.py", plain, Config(), True).text
    assert "@jax.custom_vjp\n" in fixed and "from functools" not in fixed
    # `f`'s output depends on `w` and nothing shows it never differentiated: the fix is unsafe, and
    # the moved argument's `None` carries the mark VJP602 asks for
    assert "    return (g * w, None)  # noqa: VJP602\n" in fixed and fixed_text(plain) == plain


def fixed_text(text: str) -> str:
    return apply.fix_text("t.py", text, Config()).text


def test_a_case_with_comments_goes_to_libcst(monkeypatch: pytest.MonkeyPatch) -> None:
    text = Path(ROOT / "fixtures" / "fix" / "unsafe_formatting" / "input.py").read_text(encoding="utf-8")
    plans = _plans("in.py", text)
    assert plans and _rewrite(text, plans, True, monkeypatch)[1] is False


@pytest.mark.parametrize("elsewhere", [
    "",  # nothing else uses `partial`: the import goes
    "def helper(f):\n    return partial(f, 1)\n",  # a Name: the import stays
    "NOTE = 'partial application'\n",  # only the word, in a string
    "# partial is imported for the decorator\n",
    "def helper(obj):\n    return obj.partial(partial=1)\n",  # attribute and keyword, not uses
    "import functools\nhelper = functools.partial(print, 1)\n",
    "class C:\n    partial = None\n",  # a class attribute named like it: libcst counts the Name
    "def partial(x):\n    return x\n",  # a def of that name: libcst counts it
])
@pytest.mark.parametrize("imports", ["from functools import partial", "from functools import partial, wraps",
                                     "import os\nfrom functools import wraps, partial  # tools",
                                     '"""Doc."""\n\nfrom functools import partial'])
def test_other_mentions_of_a_dropped_import(monkeypatch: pytest.MonkeyPatch, elsewhere: str, imports: str) -> None:
    text = (imports + "\n\nimport jax\nimport jax.numpy as jnp\n\n\n" + elsewhere + "\n\n"
            "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(w, x):\n    return jnp.sin(x) * w\n\n\n"
            "def f_fwd(w, x):\n    return f(w, x), None\n\n\ndef f_bwd(w, res, g):\n    return (g * w,)\n\n\n"
            "f.defvjp(f_fwd, f_bwd)\n\n\ndef use(x):\n    return f(jnp.ones(3), x)\n")
    _compare("m.py", text, monkeypatch)


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
