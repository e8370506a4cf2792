"""vjplint.syntax.region_parse: parsing only the regions gives, node for node and position for
position, the module `focus(parse(text))` gives; a split it cannot trust parses the whole file."""

from __future__ import annotations

import ast
import sys
from typing import Iterator, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from vjplint.syntax import regions
from vjplint.settings.config import Config
from vjplint.lint.engine import lint_source, prefilter_names
from vjplint.syntax.positions import source_lines
from vjplint.syntax.region_parse import parse_focused
from vjplint.syntax.regions import focus
from vjplint.syntax.source import SourceError, parse

NAMES = [n.decode() for n in prefilter_names(Config())]


@pytest.fixture(autouse=True)
def _regions_everywhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Regions chosen even in the smallest files, as the whole-module comparisons do."""
    monkeypatch.setattr(regions, "MIN_STATEMENTS", 1)
    yield


def _dump(module: ast.AST) -> str:
    return ast.dump(module, include_attributes=True)


def _both(text: str) -> tuple:
    lines = source_lines(text)
    region = parse_focused(text, lines, NAMES)
    try:
        whole: Optional[ast.Module] = focus(parse(text), text, lines, NAMES)
    except SourceError:
        whole = None
    return region, whole


def _same(text: str) -> ast.Module:
    region, whole = _both(text)
    assert region is not None, "the split was not trusted"
    assert whole is not None
    assert _dump(region) == _dump(whole)
    return region


@pytest.mark.paths_equal
@pytest.mark.parametrize("tree,least", [("fixtures", 300), ("eval/cases", 200), ("tests/data", 10)])
def test_every_fixture_and_case_gives_the_whole_modules_regions(tree: str, least: int) -> None:
    checked = 0
    for path in sorted((ROOT / tree).rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        region, whole = _both(text)
        if region is not None and whole is not None:
            assert _dump(region) == _dump(whole), path
            checked += 1
    assert checked > least


VJP = """\
import jax


def helper(x):
    return x * 2


def unrelated(y):
    return y + 1


@jax.custom_vjp
def f(x):
    return helper(x)


def f_fwd(x):
    return f(x), x


def f_bwd(x, g):
    return (g,)


f.defvjp(f_fwd, f_bwd)
"""


def test_functions_no_region_reads_are_never_parsed() -> None:
    """A syntax error in `unrelated` is not seen: only the regions are parsed."""
    broken = VJP.replace("return y + 1", "return y +")
    region, whole = _both(broken)
    assert whole is None
    assert region is not None
    assert [getattr(s, "name", None) for s in region.body] == [None, "helper", "f", "f_fwd", "f_bwd", None]


def test_a_syntax_error_in_a_region_is_still_vjp900() -> None:
    broken = VJP.replace("return helper(x)", "return helper(x")
    (d,) = lint_source("x.py", broken, Config()).diagnostics
    unclosed = broken.splitlines().index("    return helper(x") + 1
    assert d.code == "VJP900"
    # the parser's own position: 3.10+ points at the unclosed `(`, 3.9 further on
    assert d.location.row == unclosed if sys.version_info >= (3, 10) else d.location.row > unclosed


def test_findings_of_a_file_with_an_error_outside_the_regions() -> None:
    """Where the whole file was VJP900 and nothing else, the regions are analysed."""
    text = VJP.replace("return y + 1", "return y +").replace("    return (g,)\n", "    return (g, None)\n")
    assert [d.code for d in lint_source("x.py", text, Config()).diagnostics] == ["VJP306"]


@pytest.mark.parametrize("text", [
    # column-0 lines inside triple-quoted strings: text, not statements
    VJP + 'def make():\n    return """\nf = jax.custom_vjp(g)\ndef h():\n    pass\n"""\n',
    VJP + "def make():\n    return '''\nx = 1\n'''\n",
    '"""Module doc.\n\nimport jax\n"""\n' + VJP,
    VJP + 's = r"""a\\"""\nb = custom_vjp\n"""\n',  # an escaped quote closes nothing
    VJP + "# a comment with \"\"\" in it\ndef g():\n    return 1\n",
    VJP + "t = '\"\"\"'\ndef g():\n    return '\"\"\"'\n",
    VJP + 'u = """one"""; v = """two"""\n',
    # clauses, decorators, semicolons, brackets
    VJP + "if x:\n    pass\nelif y:\n    pass\nelse:\n    pass\ntry:\n    import a\nexcept ImportError:\n    a = None\n"
          "finally:\n    pass\n",
    VJP + "@decorator\n@other(1)\ndef decorated(x):\n    return x\n",
    VJP + "a = 1; b = 2\n",
    VJP + "c = dict(\n    k=1,\n)\n",
    VJP + "async def co(x):\n    return x\n",
    VJP + "def g():\n    global G\n    G = 1\n",
    # a big class holding a derivative: split into its members
    VJP + "class T(Base):\n    '''Doc.'''\n    field = 1\n\n" + "".join(
        f"    def test_{i}(self):\n        return {i}\n\n" for i in range(10))
    + "    def test_vjp(self):\n        g = jax.custom_vjp(lambda x: x)\n        return g\n\n"
    + "    @staticmethod\n    def helper():\n        return f_fwd\n",
    VJP + "class M:\n    x: int = 1\n    def __init__(self):\n        self.f = jax.custom_vjp(helper)\n"
          "    def unrelated(self):\n        return 2\n    class Inner:\n        pass\n",
    VJP + "class Wide(\n    Base,\n):\n    def a(self):\n        return f\n",  # a header on two lines
    VJP + "class Tabs:\n\tdef a(self):\n\t\treturn f(1)\n\tdef b(self):\n\t\treturn 2\n",
    # type parameters (PEP 695): before Python 3.12 their statements are left out, as the whole
    # file's parse leaves them out
    VJP + "class Box[T]:\n    def get(self) -> T:\n        return helper(1)\n\ndef ident[T](x: T) -> T:\n"
          "    return x\n\ntype Pair = tuple[int, int]\n",
    VJP + "def uses[T](x: T) -> T:\n    return f(x)\n",
])
def test_tricky_splits_give_the_whole_modules_regions(text: str) -> None:
    _same(text)


def test_a_big_class_is_split_and_only_its_kept_members_parsed() -> None:
    text = VJP + "class T(Base):\n" + "".join(f"    def test_{i}(self):\n        return {i}\n\n" for i in range(10)) + \
        "    def test_vjp(self):\n        g = jax.custom_vjp(helper)\n        return g(1.0)\n"
    (cls,) = [s for s in _same(text).body if isinstance(s, ast.ClassDef)]
    assert [m.name for m in cls.body] == ["test_vjp"]  # type: ignore[attr-defined]
    broken = text.replace("return 3\n", "return 3 +\n")  # in a member no region needs
    region, whole = _both(broken)
    assert whole is None and region is not None


@pytest.mark.parametrize("text", [
    VJP.replace("\n", "\r\n"),  # other line breaks: the whole file
    VJP + 'x = "unterminated\n',
    VJP + 's = """never closed\n',
    VJP + "x = f(\n1,\ny=2)\n",  # a statement continued at column 0 inside brackets
])
def test_splits_it_cannot_trust_parse_the_whole_file(text: str) -> None:
    assert parse_focused(text, source_lines(text), NAMES) is None


def test_bracket_continuation_at_column_zero_is_never_misread() -> None:
    """`x = f(` / `a,` / `y = 2)`: blanking the middle line would read `f(y=2)`; the statements
    straddle the split, so the whole file is parsed."""
    text = VJP + "x = dict(\nhelper,\ny = 2)\n"
    assert parse_focused(text, source_lines(text), NAMES) is None
    last = parse(text).body[-1]
    assert isinstance(last, ast.Assign) and [k.arg for k in last.value.keywords] == ["y"]  # type: ignore[attr-defined]


def test_a_kept_function_is_parsed_and_an_unkept_one_is_not() -> None:
    module = _same(VJP)
    names = [getattr(s, "name", None) for s in module.body]
    assert "unrelated" not in names and "helper" in names
    helper = next(s for s in module.body if getattr(s, "name", None) == "helper")
    assert isinstance(helper.body[0], ast.Return)  # the real function, not its stand-in


# -- properties ------------------------------------------------------------------------------------
SEEDS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures").rglob("*.py"))[::7]]
PIECES = ['"""', "'''", "\n", "    ", "#", "(", ")", "else:\n", "@d\n", "def g():\n    pass\n", "class C:\n    x = 1\n",
          "global q\n", "x = custom_vjp\n", "\\\n", ";", "\n\n"]


@pytest.mark.fuzz
@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_any_text_gives_the_whole_modules_regions_or_is_parsed_whole(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(SEEDS))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(st.sampled_from(PIECES)) + text[at:]
    region, whole = _both(text)
    if region is not None and whole is not None:
        assert _dump(region) == _dump(whole)


# -- what the project index parses -----------------------------------------------------------------
def _fixture_texts() -> Iterator[str]:
    for path in sorted((ROOT / "fixtures").rglob("*.py"))[::3]:
        yield path.read_text(encoding="utf-8", errors="surrogateescape")


def test_top_level_statements_are_the_whole_modules_less_its_definitions() -> None:
    from vjplint.syntax.region_parse import parse_top_level

    checked = 0
    for text in _fixture_texts():
        top = parse_top_level(text)
        try:
            whole = parse(text)
        except SourceError:
            continue
        if top is None:
            continue
        kept = [s for s in whole.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        assert [_dump(s) for s in top.body] == [_dump(s) for s in kept]
        checked += 1
    assert checked > 100


def test_statements_mentioning_names_are_the_whole_modules_statements() -> None:
    """Each statement `parse_mentioning` gives is the whole module's at its row (a split class
    keeping some members); each definition whose text holds a name is among them."""
    from vjplint.syntax.region_parse import parse_mentioning

    checked = 0
    for text in list(_fixture_texts()) + [VJP + "class T(Base):\n" + "".join(
            f"    def test_{i}(self):\n        return {i}\n\n" for i in range(10)) + "    def test_f(self):\n"
            "        return f(1.0)\n"]:
        names = ["f_fwd", "custom_vjp"]
        found = parse_mentioning(text, source_lines(text), names)
        try:
            whole = parse(text)
        except SourceError:
            continue
        if found is None:
            continue
        by_row = {s.lineno: s for s in whole.body}
        for s in found.body:
            original = by_row[s.lineno]
            if isinstance(s, ast.ClassDef) and len(s.body) < len(original.body):  # type: ignore[attr-defined]
                members = {m.lineno: m for m in original.body}  # type: ignore[attr-defined]
                assert all(_dump(m) == _dump(members[m.lineno]) for m in s.body)
            else:
                assert _dump(s) == _dump(original)
        lines = text.splitlines()
        for s in whole.body:
            if isinstance(s, (ast.FunctionDef, ast.ClassDef)) and any(
                    n in "\n".join(lines[s.lineno - 1:s.end_lineno]) for n in names):
                assert s.lineno in {f.lineno for f in found.body}
        checked += 1
    assert checked > 50


# -- what the regions hold ------------------------------------------------------------------------
PRIMITIVES = """\
import jax
from jax._src.interpreters import ad


def helper(g, x):
    return g * x


def other(y):
    return y


@jax.custom_vjp
def f(x):
    return x


def f_fwd(x):
    return x, x


def f_bwd(r, g):
    return (g,)


f.defvjp(f_fwd, f_bwd)
ad.defjvp(sin_p, lambda g, x: helper(g, x))
ad.defjvp(cos_p, lambda g, x: f(x))
jax.defvjp(old, other)
"""


def _kept(text: str) -> list:
    module = focus(parse(text), text, source_lines(text), NAMES)
    return [getattr(s, "name", None) or ast.unparse(s).split("(")[0] for s in module.body]


def test_a_registration_on_an_import_is_kept_but_not_followed() -> None:
    """`ad.defjvp(sin_p, ...)` stays (VJP403 reads `jax.defvjp(...)`), but what it passes and
    reads (`helper`, `other`) is not kept for it; `ad.defjvp(cos_p, lambda ...: f(x))` names the
    derivative `f`, so it is followed as any statement naming `f` is."""
    kept = _kept(PRIMITIVES)
    assert kept == ["import jax", "from jax._src.interpreters import ad", "f", "f_fwd", "f_bwd", "f.defvjp",
                    "ad.defjvp", "ad.defjvp", "jax.defvjp"]


def test_a_registration_on_an_import_changes_no_finding() -> None:
    from vjplint.lint.session import LintSession

    config = Config(select=("ALL",))
    focused = lint_source("x.py", PRIMITIVES, config).diagnostics
    assert focused == lint_source("x.py", PRIMITIVES, config, session=LintSession(focus=False)).diagnostics
    assert [d.code for d in focused] == ["VJP403"]


def test_a_registration_on_a_local_name_is_followed() -> None:
    local = PRIMITIVES.replace("from jax._src.interpreters import ad\n", "from jax._src.interpreters import ad\n"
                               "ad = make_registry()\n")
    assert "helper" in _kept(local)


@pytest.mark.paths_equal
def test_a_fix_after_a_region_parse_rewrites_as_after_a_whole_parse() -> None:
    """The fix that follows a lint reads the whole module: parsed then, with the lint's regions
    remade of its own statements (`source.same_statements`), every fixture's residual rewrite
    is the one the whole-module lint leads to."""
    from vjplint.diagnostics import ResidualPlusNone
    from vjplint.fixes import apply
    from vjplint.lint.session import LintSession

    def rewrite(text: str, name: str, focus: bool) -> str:
        session = LintSession(focus=focus, keep_parses=True)
        plans = list(dict.fromkeys(d.fix.plan for d in lint_source(name, text, session=session).diagnostics
                                   if d.fix is not None and isinstance(d.fix.plan, ResidualPlusNone)))
        if not plans:
            return ""
        try:
            return apply._residual_rewrite(text, plans, Config(), session=session)[0]
        except Exception as exc:  # both ways alike
            return type(exc).__name__

    compared = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        focused = rewrite(text, path.name, True)
        if not focused:
            continue
        assert focused == rewrite(text, path.name, False), path
        compared += 1
    assert compared > 20


def test_the_regions_remade_of_the_whole_module_are_its_own_statements() -> None:
    from vjplint.syntax.source import same_statements

    text = VJP + "class T(Base):\n" + "".join(f"    def test_{i}(self):\n        return {i}\n\n" for i in range(10)) + \
        "    def test_vjp(self):\n        g = jax.custom_vjp(helper)\n        return g(1.0)\n"
    region = _same(text)
    whole = parse(text)
    remade = same_statements(whole, region)
    assert remade is not None and _dump(remade) == _dump(region)
    ids = {id(s) for s in whole.body} | {id(m) for s in whole.body if isinstance(s, ast.ClassDef) for m in s.body}
    assert all(id(s) in ids for s in remade.body if not isinstance(s, ast.ClassDef))
    (cls,) = [s for s in remade.body if isinstance(s, ast.ClassDef)]
    assert all(id(m) in ids for m in cls.body)


TRACE_CLASS = '''from typing import Literal
import jax


class Literal:
    """Shadows typing's: kept only if something kept uses it."""

    def __init__(self, value):
        self.value = value


class Trace:
    """A class whose text holds `custom_jvp` in a method's name only."""

    level = 0

    def __init__(self, main):
        self.main = Literal(main)

    def __repr__(self):
        return "Trace"

    def process_primitive(self, primitive, tracers, params):
        raise NotImplementedError

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers):
        raise NotImplementedError

    def process_map(self, primitive, fun, tracers, params):
        raise NotImplementedError

    def lift(self, val):
        raise NotImplementedError

    def sublift(self, val):
        raise NotImplementedError


@jax.custom_vjp
def f(x):
    return x


def f_fwd(x):
    return x, None


def f_bwd(r, g):
    return (g,)


f.defvjp(f_fwd, f_bwd)
'''


def test_a_class_no_kept_statement_needs_is_dropped_with_its_dunders() -> None:
    """`Trace` holds `custom_jvp` only inside a method's name: split into members, but neither
    it nor its dunders are kept; nor is `class Literal`, which only rebinds an imported name."""
    assert _kept(TRACE_CLASS) == ["from typing import Literal", "import jax", "f", "f_fwd", "f_bwd", "f.defvjp"]
    assert _same(TRACE_CLASS).body  # the region parse agrees


def test_a_kept_class_keeps_its_dunders_and_what_they_read() -> None:
    """Once `f` uses `Trace`, the class is kept with its fields and dunders, and `Literal`,
    which `Trace.__init__` reads, with it."""
    text = TRACE_CLASS.replace("    return x\n\n\ndef f_fwd", "    return Trace(x)\n\n\ndef f_fwd")
    module = focus(parse(text), text, source_lines(text), NAMES)
    trace = next(s for s in module.body if getattr(s, "name", None) == "Trace")
    assert [getattr(m, "name", None) or type(m).__name__ for m in trace.body] == \
        ["Expr", "Assign", "__init__", "__repr__"]
    assert _kept(text) == ["from typing import Literal", "import jax", "Literal", "Trace", "f", "f_fwd", "f_bwd",
                           "f.defvjp"]
    _same(text)


@pytest.mark.fuzz
@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab_1 .(\n", max_size=60), st.sampled_from(["a", "ab", "ab1", "a_b", "aba", "b1a", "_ab"]))
def test_a_name_is_found_where_its_pattern_matches(text: str, name: str) -> None:
    """`_Words.holding` finds names of three characters or more with str.find: the same places
    as the literal-first pattern."""
    expected = [m.start() for m in regions._standalone(name).finditer(text)]
    assert list(regions._standing(text, name)) == expected


_GENERIC_TEXTS = (
    "def f[T](x: T) -> T:\n    return x\n",
    "class Box[T]:\n    pass\n",
    "    async def g [T](x):\n        pass\n",
    "x = a[0]\ndef plain(x):\n    return x[0]\nundef h[T]\n",
    "def def f[T]():\n    pass\nclass A[T]: pass; def b[U](): pass\n",
    "s = 'def inner[T](): pass'\n# class C[T]\n\tdef tab\t[T](): pass\n",
    "def a[T](): pass\r\nclass B[T]: pass\n",
    "",
)


@pytest.mark.unit
@pytest.mark.parametrize("text", _GENERIC_TEXTS)
def test_generic_definitions_are_the_line_patterns_matches(text: str) -> None:
    """The literal-first search finds what the MULTILINE pattern finds, at the same places, with the
    same groups (on the JAX tree's 98 candidates too, when it was written)."""
    from vjplint.syntax.source import _GENERIC_DEF, generic_definitions

    def spans(matches):
        return [(m.start(), m.end(), m.groups()) for m in matches]

    assert spans(generic_definitions(text)) == spans(_GENERIC_DEF.finditer(text))


@pytest.mark.unit
def test_generic_definitions_on_the_fixtures_and_cases() -> None:
    from vjplint.syntax.source import _GENERIC_DEF, generic_definitions

    for path in sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "eval" / "cases").rglob("*.py")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        expected = [(m.start(), m.groups()) for m in _GENERIC_DEF.finditer(text)]
        assert [(m.start(), m.groups()) for m in generic_definitions(text)] == expected, path


# -- statements other than definitions that no region can need (`region_parse._screen`) ------------
@pytest.fixture
def screen_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """These modules are small: screen them as a module of `SCREEN_MIN_STATEMENTS` would be."""
    from vjplint.syntax import region_parse

    monkeypatch.setattr(region_parse, "SCREEN_MIN_STATEMENTS", 1)


def test_only_a_module_of_many_statements_is_screened() -> None:
    from vjplint.syntax import region_parse
    from vjplint.syntax.region_parse import first_pass

    few = VJP + NUMBERS
    many = VJP + "".join(f"v{i} = {i}\n" for i in range(region_parse.SCREEN_MIN_STATEMENTS))
    for text, left_out in ((few, False), (many, True)):
        first = first_pass(text, source_lines(text), NAMES, screen=True)
        assert first is not None and (_assigned(ast.Module(body=first.body, type_ignores=[])) == []) is left_out
        _same(text)


NUMBERS = "".join(f"v{i} = {i}\n" for i in range(40))


def _assigned(module: ast.Module) -> list:
    return [t.id for s in module.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)]


@pytest.mark.usefixtures("screen_small")
def test_assignments_no_region_can_need_are_left_out_of_the_first_parse() -> None:
    from vjplint.syntax.region_parse import first_pass

    text = VJP + NUMBERS
    lines = source_lines(text)
    screened = first_pass(text, lines, NAMES, screen=True)
    assert screened is not None and _assigned(ast.Module(body=screened.body, type_ignores=[])) == []
    unscreened = first_pass(text, lines, NAMES)
    assert unscreened is not None and len(_assigned(ast.Module(body=unscreened.body, type_ignores=[]))) == 40
    _same(text)


@pytest.mark.parametrize("extra,kept", [
    ("SCALE = 3\n", ["SCALE"]),  # read by the bwd below: kept backwards
    ("g = f\n", ["g"]),  # binds from a kept statement: kept forwards
    ("f_fwd_alt = 1\n", ["f_fwd_alt"]),  # a name made from a kept one (`f_fwd` for `f`)
    ("jax = 2\n", ["jax"]),  # rebinds an import: the name is no longer imported only
    ("if True:\n    h = helper\n", ["h"]),  # a compound statement mentioning a kept name
    ("w = v3 + 1\nuse = f(w)\n", ["v3", "w", "use"]),  # a chain back through the left-out ones
])
@pytest.mark.usefixtures("screen_small")
def test_a_statement_a_region_can_need_is_parsed_among_many_that_cannot(extra: str, kept: list) -> None:
    text = VJP.replace("return (g,)", "return (g * SCALE,)") + NUMBERS.split("v20 = ")[0] + extra + "v20 = " + NUMBERS.split("v20 = ")[1]
    region = _same(text)
    assigned = _assigned(region)
    assert [n for n in assigned if n.startswith("v") and n not in kept] == []  # none it does not need
    assert [n for n in kept if n not in ("h", "jax") and n not in assigned] == []


@pytest.mark.usefixtures("screen_small")
def test_a_syntax_error_among_the_left_out_statements_is_still_vjp900() -> None:
    text = VJP + NUMBERS.replace("v17 = 17\n", "v17 = (17\n")
    (d,) = lint_source("x.py", text, Config()).diagnostics
    with pytest.raises(SyntaxError) as raised:  # where this Python reports it (3.9's parser: the next line)
        ast.parse(text)
    assert raised.value.lineno in (text.splitlines().index("v17 = (17") + 1, text.splitlines().index("v17 = (17") + 2)
    assert d.code == "VJP900" and d.location.row == raised.value.lineno


@pytest.mark.parametrize("searches", [0, 1, 32])
@pytest.mark.usefixtures("screen_small")
def test_statements_found_by_search_or_by_the_word_index_are_the_same(searches: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`_screen` searches the text for the first words and indexes the words past
    `_SEARCHES`: either way the regions are the whole module's."""
    from vjplint.syntax import region_parse

    monkeypatch.setattr(region_parse, "_SEARCHES", searches)
    text = VJP.replace("return (g,)", "return (g * SCALE,)") + NUMBERS.replace(
        "v20 = 20\n", "SCALE = 3\ng = f\nf_fwd_alt = 1\nw = v3 + 1\nuse = f(w)\n")
    region = _same(text)
    assert sorted(n for n in _assigned(region) if n != "v3") == ["SCALE", "f_fwd_alt", "g", "use", "w"]
    assert "v3" in _assigned(region) and "v4" not in _assigned(region)
