"""`eval/mutation/mutate.py` on bases written the ways libraries write them: a computed
`nondiff_argnums` makes no operator apply (it raised an uncaught ValueError and stopped the whole
generation), a name an edit writes (`functools.partial`, `np.asarray`) is imported when the base
binds it nowhere (ten mutants were labelled hazards for a NameError), and `primal_var_keywords`
does not pass a keyword the caller already passes (a mutant that does not parse)."""

from __future__ import annotations

import ast
import sys
from typing import Optional

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "eval" / "mutation"))
import mutate  # noqa: E402  (ast only)

pytestmark = pytest.mark.unit

HEAD = '''"""A base."""
{imports}
EVAL = {{'id': 'bases/b', 'family': 'mutation', 'expect': 'ok', 'library': 'x', 'source': 'x/y:z.py:1', 'argnums': (0,)}}

{creator}
def f(x, n):
    return jnp.sin(x) * n


def f_fwd(x, n):
    return f(x, n), jnp.cos(x)


def f_bwd(n, res, g):
    return (g * res * n,)


f.defvjp(f_fwd, f_bwd)


def eval_fn(x):
    return f(x, 2.0{kw})


def eval_inputs():
    return (jnp.ones(3),)
'''


def base(imports: str = "import jax\nimport jax.numpy as jnp", creator: str = "@partial(jax.custom_vjp, nondiff_argnums=(1,))",
         kw: str = "") -> str:
    return HEAD.format(imports=imports, creator=creator, kw=kw)


def apply(source: str, name: str) -> Optional[str]:
    out = mutate.apply(source, mutate.MUTATIONS[name][1])
    return None if out is None else out[0]


def test_a_computed_nondiff_argnums_is_unreadable_and_no_operator_sees_it_as_positions() -> None:
    source = base(imports="import jax\nimport jax.numpy as jnp\nfrom functools import partial\nN = (1,)",
                  creator="@partial(jax.custom_vjp, nondiff_argnums=N)")
    d = mutate.find(ast.parse(source))
    with pytest.raises(mutate.UnreadableNondiff, match="^N$"):
        d.nondiff
    assert mutate.spell(source, "keyword_nondiff") is None


def test_a_single_int_nondiff_argnums_reads_as_one_position() -> None:
    source = base(imports="import jax\nimport jax.numpy as jnp\nfrom functools import partial",
                  creator="@partial(jax.custom_vjp, nondiff_argnums=1)")
    assert mutate.find(ast.parse(source)).nondiff == (1,)


def test_functools_is_imported_when_an_edit_writes_it_and_the_base_imports_only_partial() -> None:
    source = base(imports="import jax\nimport jax.numpy as jnp\nfrom functools import partial")
    text = mutate.spell(source, "partial_creator") or apply(source, "nondiff_move")
    assert text is not None and "functools." in text
    tree = ast.parse(text)
    assert any(isinstance(n, ast.Import) and [a.name for a in n.names] == ["functools"] for n in tree.body)
    compile(text, "<mutant>", "exec")


def test_a_base_that_binds_the_module_is_left_as_it_is() -> None:
    source = base(imports="import functools\nimport jax\nimport jax.numpy as jnp\nfrom functools import partial")
    tree = ast.parse(source)
    mutate._bind_modules(tree, {"functools": "import functools", "np": "import numpy as np"})
    assert ast.unparse(tree) == ast.unparse(ast.parse(source))


def test_np_is_imported_as_numpy_when_the_base_imports_numpy_under_its_own_name() -> None:
    tree = ast.parse("import numpy\nimport jax\ny = np.asarray(1)\n")
    mutate._bind_modules(tree, {"np": "import numpy as np"})
    assert ast.unparse(tree).splitlines()[:3] == ["import numpy", "import jax", "import numpy as np"]


def test_primal_var_keywords_does_not_pass_a_keyword_the_caller_passes_already() -> None:
    source = base(imports="import jax\nimport jax.numpy as jnp\nfrom functools import partial",
                  creator="@jax.custom_vjp", kw="")
    source = source.replace("def f(x, n):", "def f(x, n, verbose=True):", 1).replace("f(x, 2.0)", "f(x, 2.0, verbose=True)")
    assert apply(source, "primal_var_keywords") is None


def test_primal_var_keywords_still_applies_to_a_plain_caller() -> None:
    source = base(imports="import jax\nimport jax.numpy as jnp", creator="@jax.custom_vjp")
    text = apply(source, "primal_var_keywords")
    assert text is not None and "**options" in text and "verbose=False" in text


def test_keyword_nondiff_spells_positions_as_names_and_back() -> None:
    source = base(imports="import jax\nimport jax.numpy as jnp\nfrom functools import partial")
    names = mutate.spell(source, "keyword_nondiff")
    assert names is not None and "nondiff_argnames=('n',)" in names
    back = mutate.spell(names, "keyword_nondiff")
    assert back is not None and "nondiff_argnums=(1,)" in back


def test_keyword_nondiff_applies_to_every_base_with_literal_nondiff_positions() -> None:
    paths = mutate.base_files() + mutate.held_out_files()
    literal = [p for p in paths if "nondiff_arg" in p.read_text(encoding="utf-8") and _reads(p.read_text(encoding="utf-8"))]
    spelled = [p for p in literal if mutate.spell(p.read_text(encoding="utf-8"), "keyword_nondiff") is not None]
    assert len(literal) > 50 and len(spelled) >= 0.9 * len(literal)


def _reads(source: str) -> bool:
    """A base with literal nondiff positions (one written with `match` does not parse before 3.10)."""
    try:
        d = mutate.find(ast.parse(source))
        return bool(d.nondiff) and isinstance(d.primal, ast.FunctionDef)
    except (SyntaxError, ValueError):
        return False
