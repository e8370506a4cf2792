"""The module text a big module's families share (vjplint/model/file_model.py `LineTable`, `joined`,
vjplint/plans/residual_plan.py `lines_digest`): made once per line table, never stale, never
another document's (the memo is the table's own: no module state two threads could share)."""

from __future__ import annotations

import ast
import sys
import threading

import vjplint.model.file_model as file_model
from vjplint.model.file_model import FileModel, LineTable, joined
from vjplint.model.semantic import SemanticIndex
from vjplint.plans.residual_plan import lines_digest


def test_a_line_table_is_joined_once_and_another_table_is_joined_afresh() -> None:
    first = LineTable(("import jax", "x = 1"))
    assert joined(first) == "import jax\nx = 1"
    assert joined(first) is joined(first)  # the same string: made once
    second = LineTable(("import jax", "x = 2"))
    assert joined(second) == "import jax\nx = 2"
    assert joined(first) is joined(first)  # the first table's memo survives the second's
    assert lines_digest(first) != lines_digest(second)
    assert lines_digest(first) == lines_digest(tuple(first)) == lines_digest(list(first))
    assert lines_digest(first) is lines_digest(first)


def test_a_list_or_plain_tuple_is_never_memoised_so_an_edit_in_place_is_seen() -> None:
    lines = ["a = 1", "b = 2"]
    before = (joined(lines), lines_digest(lines))
    lines[1] = "b = 3"
    assert joined(lines) == "a = 1\nb = 3"
    assert lines_digest(lines) != before[1]
    assert joined(("a", "b")) == "a\nb"


def test_no_module_level_memo_is_left() -> None:
    assert not hasattr(file_model, "_JOINED") and not hasattr(file_model, "_DIGESTED")
    assert not hasattr(file_model, "forget_joined")


def test_holds_answers_for_the_whole_document_once_per_word() -> None:
    table = LineTable(("import jax", "from jax.experimental import checkify", "x = 1"))
    module = ast.parse("x = 1")
    model = FileModel(module=module, index=SemanticIndex(module), derivatives=[], traced={}, lines=table)  # type: ignore[arg-type]
    assert model.holds("checkify") and not model.holds("custom_vmap")
    assert table.__dict__["words"] == {"checkify": True, "custom_vmap": False}
    plain = FileModel(module=module, index=SemanticIndex(module), derivatives=[], traced={}, lines=["y = checkify"])
    assert plain.holds("checkify") and not plain.holds("custom_vmap")


def test_two_threads_joining_their_own_documents_each_read_only_their_own_text() -> None:
    """Before, the memo was one module-level pair read in two steps (is it this table? then its
    text): a thread switching between them would read the other's document. CPython 3.11 does not
    switch between those two reads, so this guards the property for interpreters that may (a
    free-threaded build) and for any shared memo with a call in that window; the test above
    checks that no module-level memo is left. The threads are switched as often as the
    interpreter allows, and each checks every answer it gets."""
    tables = [LineTable(tuple(f"v{k}_{i} = {i}" for i in range(50))) for k in range(2)]
    texts = ["\n".join(t) for t in tables]
    wrong = []
    start = threading.Barrier(2)

    def work(k: int) -> None:
        start.wait()
        for _ in range(3000):
            fresh = LineTable(tables[k])  # a new table each time: its memo is made, then read
            if joined(fresh) != texts[k] or lines_digest(fresh) != lines_digest(list(tables[k])):
                wrong.append(k)
            if not fresh.holds(f"v{k}_49") or fresh.holds(f"v{1 - k}_0"):
                wrong.append(k)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []
