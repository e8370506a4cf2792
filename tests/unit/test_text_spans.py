"""vjplint.syntax.text_spans: a statement's words in code, not in its comments or docstrings.

`vjplint.syntax.regions` keeps the statements binding a word a kept statement holds; words read from
comments and docstrings kept helpers no rule reads (JAX's lax.py: 401 statements for one
`isinstance(x, ad.JVPTracer)`, 78 without them). Dropping them must never drop a word of code:
every identifier the parser sees is among the words, over the whole corpus.
"""

from __future__ import annotations

import ast
from typing import Iterator, Set

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from vjplint.settings.config import Config
from vjplint.lint.engine import prefilter_names
from vjplint.syntax.positions import source_lines
from vjplint.syntax.regions import focus
from vjplint.syntax.source import parse
from vjplint.syntax.names import EXTENDED_NAMES
from vjplint.syntax.text_spans import CodeWords, mentions_in_code, prefix_groups, string_spans

NAMES = [n.decode() for n in prefilter_names(Config())]
CORPUS = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "tests" / "realworld").glob("*.py")) \
    + sorted((ROOT / "eval" / "cases").rglob("*.py")) + sorted((ROOT / "vjplint").rglob("*.py"))


def _words(text: str) -> Set[str]:
    return CodeWords(text).between(0, len(text))


def _identifiers(module: ast.AST) -> Iterator[str]:
    """Every identifier the parser reads in code: names, attributes, imports, definitions,
    parameters, keywords, `global` names (and dotted imports' parts)."""
    for node in ast.walk(module):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield from node.name.split(".")
            if node.asname:
                yield node.asname
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from node.module.split(".")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            yield from node.names


def _lost_by_statement(text: str, module: ast.Module) -> dict:
    """For each top-level statement (as `regions.focus` reads a unit: from its first line, its
    decorators', to the end of its last), the identifiers of its code missing from its words."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    code, lost = CodeWords(text), {}
    for statement in module.body:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])
        last = statement.end_lineno or statement.lineno
        missing = set(_identifiers(statement)) - code.between(starts[first - 1], min(starts[last], len(text)))
        if missing:
            lost[first] = sorted(missing)
    return lost


def test_comments_and_docstrings_name_nothing() -> None:
    text = '''def f(x):
    """Calls helper and other_helper."""  # see also third
    y = g(x)  # uses fourth
    return y
'''
    assert _words(text) == {"def", "f", "x", "y", "g", "return"}


def test_strings_on_one_line_and_f_strings_keep_their_words() -> None:
    text = '''a = "b # c"  # d
e = f"""{g} # h"""
i = f"""
  {j}  # k
"""
m = fr\'\'\'{n}\'\'\'  # o
p = \'\'\'q\'\'\'  # r
s = t[u]  # ' v
'''
    assert _words(text) == {"a", "b", "c", "e", "f", "g", "h", "i", "j", "k", "m", "fr", "n", "p", "s", "t", "u"}


def test_a_text_whose_strings_cannot_be_followed_keeps_every_word() -> None:
    text = 'x = """never closed\ny = 1  # z\n'
    assert string_spans(text) is None
    assert _words(text) == {"x", "never", "closed", "y", "z"}


def test_words_between_offsets_are_those_of_that_slice() -> None:
    text = 'a = 1  # b\n"""c d"""\ne = f(g)  # h\ni = 2\n'
    code = CodeWords(text)
    start, end = text.index("e ="), text.index("i =")
    assert code.between(start, end) == {"e", "f", "g"}
    assert code.between(text.index("c d"), end) == {"e", "f", "g"}  # from inside the docstring
    assert code.between(0, text.index("d")) == {"a"}


def test_every_identifier_in_code_is_a_word() -> None:
    """Over every fixture, real-world module, eval case and vjplint's own source (one test, not
    one per file: a thousand items would cost the suite more than the check)."""
    assert len(CORPUS) > 800
    missing, parsed = {}, 0
    for path in CORPUS:
        text = path.read_text(encoding="utf-8")
        try:
            module = parse(text, str(path))
        except Exception:
            continue  # a fixture of a syntax error
        parsed += 1
        lost = _lost_by_statement(text, module)
        if lost:
            missing[str(path.relative_to(ROOT))] = lost
    assert parsed > 800
    assert missing == {}


_PIECES = st.sampled_from([
    "x = 1\n", "y = g(x)  # comment z\n", '"""doc w"""\n', "'''doc2 v'''\n", 's = "a # b"\n', "t = 'c # d'\n",
    'u = f"""{x} # q"""\n', "def h(p):\n    return p  # r\n", "k = [\n    x,  # m\n    y,\n]\n",
    '"""multi\nline # n\n"""\n', "# only a comment o\n", "w = x#tight\n",
])


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=12))
def test_any_mix_keeps_every_identifier(pieces: list) -> None:
    text = "".join(pieces)
    assert set(_identifiers(ast.parse(text))) <= _words(text)


HELPERS = '''import jax
from jax._src.interpreters import ad


def unrelated():
    return 1


def documented():
    return 2


def used():
    return 3


def sniff(x):
    """Unlike unrelated(), this checks the tracer."""
    # documented() would do it too
    if isinstance(x, ad.JVPTracer):
        return used()
    return x


a = 1
b = 2
c = 3
d = 4
'''


def _kept(text: str) -> list:
    module = focus(parse(text), text, source_lines(text), NAMES)
    return [getattr(s, "name", None) or ast.unparse(s).split("(")[0] for s in module.body]


def test_a_helper_named_only_in_a_docstring_or_comment_is_not_kept() -> None:
    """`sniff` (VJP402 reads it) calls `used`, which is kept; `unrelated` (its docstring) and
    `documented` (a comment) are not."""
    assert _kept(HELPERS) == ["import jax", "from jax._src.interpreters import ad", "used", "sniff"]


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="custom_vjpgradé ", max_size=50),
       st.lists(st.sampled_from(["custom_vjp", "custom_jvp", "custom_", "custom", "cust", "custom_gradé", "é", "",
                                 "custom_vjp"]), max_size=5))
def test_occurrences_are_every_place_each_name_starts(text: str, names: list) -> None:
    """`regions.occurrences` searches names sharing a prefix together (`prefix_groups`): still
    every place each starts, overlapping ones included."""
    from vjplint.syntax.regions import occurrences

    found = occurrences(text, names)
    assert found == {n: [i for i in range(len(text)) if n and text.startswith(n, i)] for n in names}


def test_names_sharing_a_prefix_are_searched_for_together() -> None:
    names = tuple(n.decode() for n in prefilter_names(Config()))
    assert prefix_groups(names)[0] == ("custom_", ("custom_vjp", "custom_jvp", "custom_gradient", "custom_transforms"))
    assert len(prefix_groups(names)) == 9  # with pure_callback and io_callback (VJP370)
    assert prefix_groups((b"defvjp", b"defvjp_all", b"")) == ((b"defvjp", (b"defvjp", b"defvjp_all")),)


EXTENDED = tuple(n.decode() for n in EXTENDED_NAMES)


@pytest.mark.parametrize("text, in_code", [
    ("import jax\n# jax.custom_vjp, one day\nx = 1\n", False),  # a comment
    ('def f(x):\n    """Unlike jax.custom_vjp, ..."""\n    return x\n', False),  # a docstring
    ("s = 'custom_vjp'\nt = \"a custom_jvp b\"  # custom_gradient\n", False),  # single-quoted strings
    ("s = 'x' + custom_vjp\n", True),  # code after a string on its line
    ('"""doc"""; y = jax.custom_vjp\n', True),  # code after a triple-quoted string on its line
    ('"""doc\nmore"""; y = jax.custom_vjp\n', True),
    ('s = f"{jax.custom_vjp}"\n', True),  # an f-string's text counts as code
    ('s = rf"""{jax.custom_jvp}"""\n', True),
    ("@jax.custom_vjp\ndef f(x):\n    return x\n", True),
    ("x = custom_vjp_call_p  # custom_vjp\n", False),  # a longer identifier is no mention
    ("f.defjvps(a, b)\n", True),  # but an extended name is
    ('s = "a \\\ncustom_vjp"\n', True),  # continued from the line before: taken as code
    ('"""never closed custom_vjp\n', True),  # strings that cannot be followed: taken as code
    ("x = 1\n", False),
])
def test_mentions_in_code_reads_comments_and_strings_as_prose(text: str, in_code: bool) -> None:
    for ending in ("\n", "\r\n", "\r"):  # every line ending Python reads, a form feed before a line
        assert mentions_in_code(text.replace("\n", ending), tuple(NAMES), EXTENDED) is in_code, ending
    assert mentions_in_code(text.replace("\n", "\n\f"), tuple(NAMES), EXTENDED) is in_code


def test_a_comment_ends_at_a_carriage_return() -> None:
    """A `\\r` ends a comment's line as `\\n` does (Python's reading): the code after it names one."""
    text = "# a comment\rf = jax.custom_vjp(g)\r"
    assert mentions_in_code(text, tuple(NAMES), EXTENDED) is True
    assert mentions_in_code(text.replace("\r", "\r\n"), tuple(NAMES), EXTENDED) is True
    assert mentions_in_code("# a comment\rx = 1  # custom_vjp\r", tuple(NAMES), EXTENDED) is False
    assert mentions_in_code('"""doc\r custom_vjp"""\ry = custom_jvp\r', tuple(NAMES), EXTENDED) is True


@pytest.mark.parametrize("text", [
    'def f(x):\n    return type(x).__name__ == "JVPTracer"\n',
    "jax.config.update('jax_use_direct_linearize', True)\n",
    'os.environ["JAX_USE_DIRECT_LINEARIZE"] = "1"\n',
    'N = """JVPTracer"""\n',
])
def test_names_read_in_strings_count_there_but_not_in_comments(text: str) -> None:
    strings_read = ("JVPTracer", "direct_linearize", "DIRECT_LINEARIZE")
    assert mentions_in_code(text, tuple(NAMES), EXTENDED) is False
    assert mentions_in_code(text, tuple(NAMES), EXTENDED, in_strings=strings_read) is True
    commented = "x = 1  # " + text.replace("\n", " ") + "\n"
    assert mentions_in_code(commented, tuple(NAMES), EXTENDED, in_strings=strings_read) is False


def _mentioned_by_the_parser(module: ast.Module) -> bool:
    """Whether an identifier the parser reads in code ends in a prefilter name as the byte
    prefilter counts it (vjplint.lint.engine.may_contain_findings)."""
    from vjplint.lint.engine import may_contain_findings

    names = prefilter_names(Config())
    return any(may_contain_findings(word.encode() + b" ", names) for word in _identifiers(module))


def test_no_identifier_in_code_is_read_as_prose() -> None:
    """`mentions_in_code` False (the engine stops before parsing) only where the parser sees no
    identifier that names one: over the corpus, and over each fixture with its code's mentions
    moved into a comment and a docstring."""
    wrong, checked, prose = [], 0, 0
    for path in CORPUS:
        text = path.read_text(encoding="utf-8")
        try:
            module = parse(text, str(path))
        except Exception:
            continue
        checked += 1
        said = mentions_in_code(text, tuple(NAMES), EXTENDED)
        if not said:
            prose += 1
        if not said and _mentioned_by_the_parser(module):
            wrong.append(str(path.relative_to(ROOT)))
    assert checked > 800 and prose > 100
    assert wrong == []
