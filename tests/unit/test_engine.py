"""The core API: positions, prefilter, robustness of one file against a broken rule."""

from __future__ import annotations

import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjplint.settings.config import Config
from vjplint.lint.engine import lint_source, may_contain_findings, prefilter_names
from vjplint.rules import registry

from tests.conftest import lint

CLIP = textwrap.dedent('''\
    from functools import partial
    import jax
    import jax.numpy as jnp

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def clip(lo, x):
        return x

    clip.defvjp(lambda lo, x: (x, None), lambda lo, _, g: (jnp.maximum(g, lo),))
''')


def test_core_api_returns_exact_diagnostics():
    (d,) = lint(CLIP)
    assert (d.code, d.location.row, d.location.column, d.end_location.column) == ("VJP101", 6, 10, 12)
    assert d.message.startswith("`lo` (position 0) is in nondiff_argnums but is used as an array: "
                                "`jnp.maximum(g, lo)`")


def test_columns_count_code_points_not_bytes():
    source = CLIP.replace("def clip(lo, x):", "def clip(lo, x):  # é").replace(
        "    return x\n", "    return x  # größe\n")
    source = source.replace("@partial", "ü = 1\n@partial")
    source = source.replace("def clip(lo, x):", "def clip(lo, x, *, ä=1):")
    (d,) = lint(source.replace("def clip(", "def clip("))
    assert d.location.column == 10
    unicode_first = source.replace("def clip(lo", "def clïp(lo").replace("clip.defvjp", "clïp.defvjp")
    (d,) = lint(unicode_first)
    assert (d.location.row, d.location.column) == (7, 10)


def test_prefilter_skips_files_without_recognised_names():
    result = lint_source("x.py", b"def f(:\n", Config())
    assert result.diagnostics == [] and not result.analysed


@pytest.mark.parametrize("text, candidate", [
    ("from jax._src.custom_derivatives import custom_vjp_call_p\ndef f(:\n", False),  # JAX internals
    ("def process_custom_jvp_call(self):\n    ad.defjvp2(p, rule)\n", False),
    ("opts = tf.saved_model.SaveOptions(experimental_custom_gradients=True)\n", False),
    ("@jax.custom_vjp\ndef f(x):\n    return x\n", True),
    ("g = eqx.filter_custom_jvp(f)\n", True),
    ("f.defjvps(lambda t, y, x: t, None)\n", True),
    ("jax.defvjp_all(f, rule)\n", True),
    ("@mylib.custom_vjp_op\ndef f(x):\n    return x\n", False),  # unless configured as an alias
])
def test_prefilter_names_end_whole_identifiers(text, candidate):
    assert may_contain_findings(text.encode(), prefilter_names(Config())) is candidate
    aliased = Config(custom_vjp_aliases=(("mylib.custom_vjp_op", "nondiff_argnums"),))
    assert may_contain_findings(b"@mylib.custom_vjp_op\ndef f(x):\n    return x\n", prefilter_names(aliased))


def test_bytes_with_a_bom_and_a_latin1_cookie():
    data = b"\xef\xbb\xbf" + CLIP.encode()
    (d,) = lint_source("x.py", data, Config()).diagnostics
    assert d.location.row == 6
    latin = ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + CLIP).encode("latin-1")
    (d,) = lint_source("x.py", latin, Config()).diagnostics
    assert d.location.row == 8


def test_a_broken_rule_loses_only_its_own_findings(monkeypatch):
    class Exploding(registry.Rule):
        CODE = "VJP199"
        NAME = "exploding"
        SEVERITY = registry.all_rules()["VJP101"].SEVERITY

        def check(self):
            raise RuntimeError("boom")

    original = registry.rules_for
    monkeypatch.setattr(registry, "rules_for", lambda codes: [Exploding, *original(codes)])
    result = lint_source("x.py", CLIP, Config())
    assert [d.code for d in result.diagnostics] == ["VJP101"]
    assert result.errors == ["x.py: internal error in VJP199: RuntimeError: boom"]


def test_syntax_error_position():
    result = lint_source("x.py", "import jax\n@jax.custom_vjp\ndef f(x:\n    return x\n", Config())
    (d,) = result.diagnostics
    # the parser's own position: 3.10+ points at the unclosed `(`, 3.9 at the next line
    assert (d.code, d.location.row) == ("VJP900", 3 if sys.version_info >= (3, 10) else 4)
    assert d.message.startswith("cannot parse this file: syntax error:")


def test_syntax_error_where_no_region_reaches_leaves_the_regions_analysed(monkeypatch):
    """Only the regions that can matter are parsed (vjplint.syntax.region_parse): a statement Python
    cannot read outside them is not seen, and the derivatives are analysed as they would be
    without it (they were hidden behind a lone VJP900 before); one inside them is VJP900
    (docs/performance.md, "Syntax errors outside the regions")."""
    from vjplint.syntax import regions

    monkeypatch.setattr(regions, "MIN_STATEMENTS", 1)
    unrelated = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(10))
    clean = CLIP + "\n" + unrelated
    assert [d.code for d in lint_source("x.py", clean, Config()).diagnostics] == ["VJP101"]
    broken = clean + "def typo(x):\n    return x +\n"
    assert lint_source("x.py", broken, Config()).diagnostics == lint_source("x.py", clean, Config()).diagnostics
    in_region = CLIP.replace("return", "return (", 1) + "\n" + unrelated
    (d,) = lint_source("x.py", in_region, Config()).diagnostics
    assert d.code == "VJP900"


def test_deep_nesting_is_a_diagnostic_not_a_crash():
    source = "import jax\n@jax.custom_vjp\ndef f(x):\n    return " + "(" * 1000 + "x" + ")" * 1000 + "\n"
    result = lint_source("x.py", source, Config())
    assert [d.code for d in result.diagnostics] == ["VJP900"]


def _ends_an_identifier_somewhere(data: bytes, names) -> bool:
    """may_contain_findings, by brute force: every position, every name."""
    from vjplint.lint.engine import _EXTENSIONS

    def whole(word: bytes, at: int) -> bool:
        after = data[at + len(word):at + len(word) + 1]
        return data.startswith(word, at) and not (after.isalnum() or after == b"_")

    return any(whole(name, at) or any(whole(longer, at) for longer in _EXTENSIONS.get(name, ()))
               for at in range(len(data)) for name in names if name)


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"custom_vjp", b"custom_jvp", b"custom_", b"custom_gradients", b"defjvp",
                                 b"defjvps", b"defjvp2", b"defvjp_all", b"x", b"_", b" ", b".", b"\n", b"JVPTracer",
                                 b"odeint", b"odeints", b"my_vjp", b"custom_transforms", b"2"]), max_size=8),
       st.sampled_from([(), (b"my_vjp",), (b"custom_vjp_op",), (b"custom_v",)]))
def test_prefilter_answers_as_a_search_of_every_position(pieces, extra):
    """The names sharing `custom_` are searched for together: the answer is still whether one
    ends an identifier anywhere (or begins one of the extended names that do)."""
    names = prefilter_names(Config()) + extra
    data = b"".join(pieces)
    assert may_contain_findings(data, names) is _ends_an_identifier_somewhere(data, names)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_noqa_rows_read_from_the_text_are_the_rows_of_its_lines(ending: str) -> None:
    """The rows where `noqa` may stand, found in the text as it is (only `\\n` breaks) or in its
    lines joined again (any other break): the same rows, whatever the case of the word, and a
    finding of the file is silenced by its `# NOQA` and kept beside a comment that only says noqa."""
    from vjplint.lint.engine import _rows_mentioning_noqa
    from vjplint.syntax.positions import source_lines

    body = CLIP.replace("def clip(lo, x):", "def clip(lo, x):  # NOQA: VJP101")
    text = ("# noqa-free header\nx = 1  # NoQa\n\n" + body + "y = 2  # not a noqa: VJP1\n").replace("\n", ending)
    lines = source_lines(text)
    rows = _rows_mentioning_noqa(lines, text)
    assert rows == _rows_mentioning_noqa(lines) == [1, 2, 9, 13]
    assert _rows_mentioning_noqa(source_lines(text.rstrip()), text.rstrip()) == [1, 2, 9, 13]
    assert lint_source("m.py", text.encode()).diagnostics == []
    assert [(d.code, d.location.row) for d in lint_source("m.py", text.replace("NOQA", "NOTE").encode()).diagnostics] \
        == [("VJP101", 9)]


PROSE_ONLY = textwrap.dedent('''\
    """Helpers that are not custom derivatives: unlike jax.custom_vjp, `f` has no rule."""
    import jax
    NOTE = "wrap it in jax.custom_jvp to define one"  # or defvjp, or JVPTracer


    def f(x):
        # a custom_vjp would go here
        return jax.numpy.sin(x)
    ''')


def _rules_run(monkeypatch) -> list:
    """The files whose rules (the collector and the rules' set-up) run, recorded."""
    from vjplint.lint import engine

    ran: list = []
    real = engine._run_rules
    monkeypatch.setattr(engine, "_run_rules", lambda filename, *a, **k: ran.append(filename) or real(filename, *a, **k))
    return ran


def _full(monkeypatch, filename: str, source) -> list:
    """What the lint gives with the prose-only stop turned off, as (code, row, column, message)."""
    from vjplint.lint import engine

    with monkeypatch.context() as m:
        m.setattr(engine, "_names_only_in_prose", lambda *a: False)
        return [(d.code, d.location.row, d.location.column, d.message) for d in lint_source(filename, source).diagnostics]


def test_a_file_naming_the_apis_only_in_prose_runs_no_rule(monkeypatch) -> None:
    """The names in comments and strings only: the file is parsed, then neither the collector nor
    a rule runs (no rule can fire: every rule's TRIGGERS name code the collector reads)."""
    ran = _rules_run(monkeypatch)
    result = lint_source("prose.py", PROSE_ONLY)
    assert (result.analysed, result.diagnostics, result.errors, ran) == (True, [], [], [])
    in_code = lint_source("code.py", PROSE_ONLY + "g = jax.custom_vjp(f)\n")
    assert in_code.analysed is True and ran == ["code.py"]


BROKEN = PROSE_ONLY + "x = (\n"


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("extra", ["", "\f", "\ufeff"])
def test_a_prose_only_file_that_does_not_parse_keeps_its_syntax_error(monkeypatch, ending: str, extra: str) -> None:
    """A syntax error is VJP900 where the full lint reports it, in every line ending, with a form
    feed before a statement and after a byte-order mark; a file that parses gives nothing."""
    head = extra if extra == "\ufeff" else ""
    text = head + BROKEN.replace("\n\n\ndef", "\n\n" + extra.strip("\ufeff") + "\ndef").replace("\n", ending)
    data = text.encode("utf-8")
    full = _full(monkeypatch, "bad.py", data)
    ran = _rules_run(monkeypatch)
    got = [(d.code, d.location.row, d.location.column, d.message) for d in lint_source("bad.py", data).diagnostics]
    assert got == full
    # the unclosed `(` on line 9: CPython 3.9 and 3.13 report a `\r\n` file's error at the end of
    # the text, a line later (the full lint reports the same row: `got == full` above)
    rows = (9, 10) if ending == "\r\n" and sys.version_info[:2] != (3, 11) else (9,)
    assert [code for code, _, _, _ in got] == ["VJP900"] and got[0][1] in rows and ran == []
    fine = (head + PROSE_ONLY.replace("\n", ending)).encode("utf-8")
    assert lint_source("fine.py", fine).diagnostics == [] and ran == []


def test_a_prose_only_file_with_many_statements_keeps_its_syntax_error(monkeypatch) -> None:
    """A file big enough for the region parse (vjplint.syntax.region_parse): an error in a
    statement it parses is VJP900, one in a function it leaves out is not (as in the full lint)."""
    body = "".join(f"def g{k}(x):\n    return x + {k}\n\n\n" for k in range(12))
    parsed = PROSE_ONLY + body + "y = [1,\n"
    left_out = PROSE_ONLY + body.replace("return x + 3", "return x +") + "y = 1\n"
    assert [(code, row) for code, row, _, _ in _full(monkeypatch, "p.py", parsed.encode())] == [("VJP900", 57)]
    assert _full(monkeypatch, "l.py", left_out.encode()) == []
    full = {name: _full(monkeypatch, name, text.encode()) for name, text in (("p.py", parsed), ("l.py", left_out))}
    ran = _rules_run(monkeypatch)
    for name, text in (("p.py", parsed), ("l.py", left_out)):
        got = [(d.code, d.location.row, d.location.column, d.message) for d in lint_source(name, text.encode()).diagnostics]
        assert got == full[name]
    assert ran == []


def test_prose_only_files_keep_the_findings_that_read_prose(monkeypatch) -> None:
    """A `# noqa` naming a VJP code (VJP901) and, before Python 3.12, a generic definition whose
    text holds a name (VJP900): reported as the full lint reports them, with no rule run."""
    text = "def g[T](x: T) -> T:\n    # jax.custom_vjp\n    return x\n"
    full = _full(monkeypatch, "generic.py", text)
    ran = _rules_run(monkeypatch)
    noqa = lint_source("noqa.py", PROSE_ONLY + "y = 1  # noqa: VJP101\n")
    assert [(d.code, d.location.row, d.message) for d in noqa.diagnostics] == [
        ("VJP901", 9, "unused `# noqa` directive: no VJP101 diagnostic on this line; remove it")]
    assert lint_source("other.py", PROSE_ONLY + "y = 1  # noqa: E501\n").diagnostics == []
    generic = lint_source("generic.py", text)
    assert [(d.code, d.location.row, d.location.column, d.message) for d in generic.diagnostics] == full
    if sys.version_info < (3, 12):
        assert [(d.code, d.location.row) for d in generic.diagnostics] == [("VJP900", 1)]
    else:
        assert generic.diagnostics == []
    assert ran == []


def test_a_name_that_a_rule_reads_in_strings_is_not_prose_there() -> None:
    """VJP402 reads a class's name in a string (and VJP401 a setting's): such a file is analysed."""
    text = ('import jax\n\n\ndef is_differentiated(x):\n'
            '    return type(x).__name__ == "JVPTracer"  # jax.custom_vjp\n')
    result = lint_source("sniff.py", text)
    assert result.analysed is True
    assert [(d.code, d.location.row, d.location.column) for d in result.diagnostics] == [("VJP402", 5, 12)]


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_code_after_a_comment_line_is_code_in_every_line_ending(ending: str) -> None:
    """A comment ends at its line's end, whatever the ending: the derivative below it is linted."""
    text = CLIP.replace("import jax\n", "import jax  # custom_vjp, custom_jvp: see below\n").replace("\n", ending)
    assert [(d.code, d.location.row) for d in lint_source("m.py", text.encode()).diagnostics] == [("VJP101", 6)]


@pytest.mark.unit
def test_a_file_named_only_by_its_host_callbacks_judges_only_vjp370s_noqa() -> None:
    """A module that names no custom derivative but calls `jax.pure_callback` is linted for VJP370
    (grad through a host callback); before, it was never linted. Its other noqa comments may be
    for a rule it defines that another module registers (the finding lands there): they are not
    reported unused here; an unused `# noqa: VJP370` is."""
    text = textwrap.dedent("""\
        # fwd rules of ops.py, whose callers take jax.grad (a differentiation named: VJP370 runs)
        import jax
        import numpy as np


        def host_exp_fwd(x):
            y = jax.pure_callback(np.exp, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")
            if x.ndim == 0:  # noqa: VJP335
                return y, (y,)
            return y, (y,)  # noqa: VJP370
        """)
    got = [(d.code, d.location.row, d.message) for d in lint_source("rules.py", text, Config()).diagnostics]
    assert got == [("VJP901", 10, "unused `# noqa` directive: no VJP370 diagnostic on this line; remove it")]
    with_creator = "from jax import custom_vjp  # the module names a custom derivative\n" + text
    got = [(d.code, d.location.row) for d in lint_source("rules.py", with_creator, Config()).diagnostics]
    assert got == [("VJP901", 9), ("VJP901", 11)]  # then every noqa is judged, as before


@pytest.mark.unit
def test_host_callbacks_without_a_differentiation_are_not_analysed() -> None:
    """The callback names admit a file for VJP370 only; without a differentiation's name VJP370
    cannot fire and nothing else has a subject: the file is skipped as before VJP370 (13 files of
    the JAX tree were parsed and modelled for nothing)."""
    text = "import jax\n\ndef host(x):\n    return jax.pure_callback(f, x, x)\n"
    assert lint_source("h.py", text, Config()).analysed is False
    assert lint_source("h.py", text.encode(), Config()).analysed is False
    assert lint_source("h.py", text + "g = jax.grad(host)\n", Config()).analysed is True
    assert lint_source("h.py", "from jax import custom_vjp\n" + text, Config()).analysed is True
