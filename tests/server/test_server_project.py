"""The server's project index through a real LSP client: findings whose evidence is in another
module of the workspace (a caller passing a traced value to a nondiff slot, a registration
elsewhere) appear, follow edits of the other module's buffer without touching the document
they are in, and equal `vjplint check` over the workspace; only the documents whose facts
changed are published again."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from tests.conftest import ROOT, run_cli
from tests.server import HANG_GUARD_S
from lsprotocol import types
from tests.server.test_server import apply_text_edits, change, edits_of, open_doc, rng, start, stop


A = '''\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def gather(x, idx):
    return x[idx]


def gather_fwd(x, idx):
    return x[idx], jnp.zeros_like(x)


def gather_bwd(idx, zeros, g):
    return (zeros.at[idx].add(g),)


gather.defvjp(gather_fwd, gather_bwd)


@jax.custom_vjp
def softsign(x):
    return x / (1.0 + jnp.abs(x))


def softsign_fwd(x):
    return softsign(x), x


def softsign_bwd(x, g):
    return (g / (1.0 + jnp.abs(x)) ** 2,)
'''
B = '''\
import jax
import jax.numpy as jnp

from a import gather


@jax.jit
def picked(x, i):
    return jnp.sum(gather(x, i) ** 2)
'''
C = '''\
from a import softsign, softsign_bwd, softsign_fwd

softsign.defvjp(softsign_fwd, softsign_bwd)


def act(x):
    return softsign(x)
'''
D = '''\
import jax.numpy as jnp


def plain(x):
    return jnp.tanh(x)
'''
VJP104 = ("`gather` receives a traced value in its nondiff position 1 (`idx`) from another module: at b.py:9 "
          "`picked` passes `i` (`i` is a parameter of `picked`, which is traced by `jax.jit`), so JAX raises "
          "UnexpectedTracerError there. Mark it static in that transformation, pass a Python constant, or move "
          "`idx` out of nondiff_argnums")


def write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


def found(diagnostics: List[types.Diagnostic]) -> List[tuple]:
    return sorted((d.range.start.line + 1, d.range.start.character + 1, d.code, d.message) for d in diagnostics)


def latest(client: Any, uri: str) -> Optional[List[types.Diagnostic]]:
    for params in reversed(client.published):
        if params.uri == uri:
            return list(params.diagnostics)
    return None


async def settled(client: Any, uri: str, wanted: Callable[[List[tuple]], bool],
                  timeout: float = HANG_GUARD_S) -> List[tuple]:
    """The latest diagnostics of `uri` once `wanted` holds for them (the index is built in the
    background: the first diagnostics may come without the other modules' facts)."""
    deadline = time.monotonic() + timeout
    seen: Optional[List[tuple]] = None
    while time.monotonic() < deadline:
        diagnostics = latest(client, uri)
        seen = found(diagnostics) if diagnostics is not None else None
        if seen is not None and wanted(seen):
            return seen
        await asyncio.sleep(0.02)
    raise AssertionError(f"{uri}: diagnostics never as wanted; last: {seen}")


def codes(*wanted: str) -> Callable[[List[tuple]], bool]:
    return lambda seen: sorted(code for _, _, code, _ in seen) == sorted(wanted)


def cli_check(root: Path) -> Dict[str, List[tuple]]:
    proc = run_cli("check", "--no-cache", "--output-format", "json", "--exit-zero", ".", cwd=root)
    assert proc.returncode == 0, proc.stderr
    out: Dict[str, List[tuple]] = {}
    for d in json.loads(proc.stdout):
        out.setdefault(d["filename"], []).append((d["location"]["row"], d["location"]["column"], d["code"],
                                                  d["message"]))
    return {name: sorted(rows) for name, rows in out.items()}


def cli_with(root: Path, **texts: str) -> Dict[str, List[tuple]]:
    """`vjplint check` of a copy of the workspace where the files named (a_py=...) hold `texts`:
    the ground truth for buffers that are not saved."""
    copy = root.parent / (root.name + "-cli")
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".vjplint_cache"))
    for name, text in texts.items():
        (copy / name.replace("_py", ".py")).write_text(text, encoding="utf-8")
    return cli_check(copy)


def publishes(client: Any, uri: str, after: int) -> List[Any]:
    return [p for p in client.published[after:] if p.uri == uri]


async def test_a_caller_in_another_module_reports_in_the_callee_and_follows_its_edits(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": A, "b.py": B, "c.py": C, "d.py": D})
    expected = cli_check(tmp_path)
    assert [code for _, _, code, _ in expected["a.py"]] == ["VJP104", "VJP101"]
    client = await start(tmp_path)
    try:
        a = open_doc(client, tmp_path / "a.py", A)
        b = open_doc(client, tmp_path / "b.py", B)
        d = open_doc(client, tmp_path / "d.py", D)
        assert await settled(client, a, lambda seen: seen == expected["a.py"]) == expected["a.py"]
        assert found(latest(client, a))[0][3] == VJP104  # quoted with the caller's file and line
        await settled(client, d, lambda seen: seen == [])
        await asyncio.sleep(0.5)  # everything published; nothing pending

        # b.py's buffer no longer calls gather (not saved): a.py is published again, untouched.
        count = len(client.published)
        change(client, b, 2, "    return jnp.sum(x[i] ** 2)", rng(8, 0, 8, len(B.splitlines()[8])))
        alone = cli_with(tmp_path, b_py=B.replace("gather(x, i)", "x[i]"))["a.py"]
        assert [code for _, _, code, _ in alone] == ["VJP102"]  # what a.py alone says of `idx`
        assert await settled(client, a, lambda seen: seen == alone) == alone
        again = publishes(client, a, count)
        assert again and {p.version for p in again} == {1}
        await asyncio.sleep(0.5)
        assert publishes(client, d, count) == []  # it depends on neither: not published again

        # An edit in b.py that changes nothing a.py sees publishes nothing for a.py.
        count = len(client.published)
        change(client, b, 3, "# a comment\n", rng(0, 0, 0, 0))
        await asyncio.sleep(0.8)
        assert publishes(client, a, count) == []

        # The call is back (on another line now): so are the findings, quoting the new line.
        change(client, b, 4, "    return jnp.sum(gather(x, i) ** 2)", rng(9, 0, 9, 29))
        moved = cli_with(tmp_path, b_py="# a comment\n" + B)["a.py"]
        assert "at b.py:10 `picked` passes `i`" in moved[0][3]
        assert await settled(client, a, lambda seen: seen == moved) == moved
    finally:
        await stop(client)


async def test_a_registration_in_another_module_silences_vjp301(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": A, "b.py": B, "c.py": C})
    client = await start(tmp_path)
    try:
        a = open_doc(client, tmp_path / "a.py", A)
        await settled(client, a, codes("VJP104", "VJP101"))  # no VJP301: c.py registers softsign
        c = open_doc(client, tmp_path / "c.py", C)
        change(client, c, 2, "", rng(2, 0, 3, 0))  # the registration is gone from the buffer
        expected = cli_with(tmp_path, c_py=C.replace("softsign.defvjp(softsign_fwd, softsign_bwd)\n", ""))["a.py"]
        assert [code for _, _, code, _ in expected] == ["VJP104", "VJP101", "VJP301"]
        assert await settled(client, a, lambda seen: seen == expected) == expected
        change(client, c, 3, "softsign.defvjp(softsign_fwd, softsign_bwd)\n", rng(2, 0, 2, 0))
        await settled(client, a, codes("VJP104", "VJP101"))
        # Closing c.py unsaved: the index reads it from disk again (it registers there too).
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=c)))
        await asyncio.sleep(0.5)
        assert sorted(code for _, _, code, _ in found(latest(client, a))) == ["VJP101", "VJP104"]
    finally:
        await stop(client)


async def test_the_open_documents_equal_vjplint_check_of_the_workspace(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "tests" / "data" / "crossmodule" / "shop", tmp_path / "shop")
    expected = cli_check(tmp_path)
    assert {name for name in expected} == {"shop/ops.py"}
    client = await start(tmp_path)
    try:
        uris = {}
        for path in sorted((tmp_path / "shop").glob("*.py")):
            uris[path.relative_to(tmp_path).as_posix()] = open_doc(client, path, path.read_text(encoding="utf-8"))
        for name, uri in uris.items():
            want = expected.get(name, [])
            assert await settled(client, uri, lambda seen, want=want: seen == want) == want
    finally:
        await stop(client)


async def test_created_and_deleted_files_reach_the_index_through_watched_file_events(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": A, "c.py": C})
    capabilities = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
        did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)))
    client = await start(tmp_path, capabilities)
    try:
        a = open_doc(client, tmp_path / "a.py", A)
        await settled(client, a, codes("VJP102"))
        globs = [w["globPattern"] for r in client.registrations for w in r.register_options["watchers"]]
        assert "**/*.py" in globs
        events = lambda *changes: client.workspace_did_change_watched_files(  # noqa: E731
            types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=u, type=t) for u, t in changes]))
        (tmp_path / "b.py").write_text(B, encoding="utf-8")  # created by another program
        events(((tmp_path / "b.py").as_uri(), types.FileChangeType.Created))
        assert await settled(client, a, codes("VJP104", "VJP101")) == cli_check(tmp_path)["a.py"]
        (tmp_path / "b.py").write_text(B.replace("gather(x, i)", "x[i]"), encoding="utf-8")  # changed on disk
        events(((tmp_path / "b.py").as_uri(), types.FileChangeType.Changed))
        await settled(client, a, codes("VJP102"))
        (tmp_path / "b.py").write_text(B, encoding="utf-8")
        events(((tmp_path / "b.py").as_uri(), types.FileChangeType.Changed))
        await settled(client, a, codes("VJP104", "VJP101"))
        (tmp_path / "b.py").unlink()
        (tmp_path / "c.py").rename(tmp_path / "e.py")  # renamed: deleted and created
        events(((tmp_path / "b.py").as_uri(), types.FileChangeType.Deleted),
               ((tmp_path / "c.py").as_uri(), types.FileChangeType.Deleted),
               ((tmp_path / "e.py").as_uri(), types.FileChangeType.Created))
        assert await settled(client, a, codes("VJP102")) == cli_check(tmp_path)["a.py"]
        (tmp_path / "e.py").unlink()  # the registration is gone, the caller is back
        (tmp_path / "b.py").write_text(B, encoding="utf-8")
        events(((tmp_path / "e.py").as_uri(), types.FileChangeType.Deleted),
               ((tmp_path / "b.py").as_uri(), types.FileChangeType.Created))
        assert await settled(client, a, codes("VJP104", "VJP101", "VJP301")) == cli_check(tmp_path)["a.py"]
    finally:
        await stop(client)


OPS = '''\
from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scale(x, k):
    return x * k


def scale_fwd(x, k):
    return x * k, None


def scale_bwd(k, _, g):
    return (g * k,)


scale.defvjp(scale_fwd, scale_bwd)
'''
CONSTS = '''\
import jax.numpy as jnp


def factor():
    return 2.0
'''
USER = '''\
import jax

from consts import factor
from ops import scale


@jax.jit
def apply(x):
    return scale(x, factor())
'''
PULL = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(diagnostic=types.DiagnosticClientCapabilities()),
    workspace=types.WorkspaceClientCapabilities(
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)))


async def pulled(client: Any, uri: str, wanted: Callable[[List[tuple]], bool],
                 timeout: float = HANG_GUARD_S) -> List[tuple]:
    """Pull `uri`'s diagnostics as an editor does: once, then again each time the server asks
    (workspace/diagnostic/refresh), until `wanted` holds for them."""
    deadline = time.monotonic() + timeout
    seen: List[tuple] = []
    while True:
        refreshes = client.diagnostic_refresh_count
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        seen = found(report.items)
        if wanted(seen):
            return seen
        while client.diagnostic_refresh_count == refreshes:  # nothing new until the server says so
            if time.monotonic() > deadline:
                raise AssertionError(f"{uri}: no refresh; last pulled: {seen}")
            await asyncio.sleep(0.02)


async def test_pulled_diagnostics_of_the_dependent_files_follow_an_edit_of_another_module(tmp_path: Path) -> None:
    """A client that pulls (textDocument/diagnostic) is told to pull again when another module's
    edit changes a document's facts, and then gets what `vjplint check` says of the workspace:
    here a function of consts.py starts returning a new jax array, which user.py (not open)
    passes into a nondiff slot of ops.py's custom_vjp inside jit."""
    write(tmp_path, {"ops.py": OPS, "consts.py": CONSTS, "user.py": USER})
    assert cli_check(tmp_path) == {}
    client = await start(tmp_path, PULL)
    try:
        ops = open_doc(client, tmp_path / "ops.py", OPS)
        consts = open_doc(client, tmp_path / "consts.py", CONSTS)
        assert await pulled(client, ops, lambda seen: seen == []) == []
        await pulled(client, consts, lambda seen: seen == [])
        await asyncio.sleep(1.0)  # the index is built (its facts change nothing here)
        change(client, consts, 2, "    return jnp.ones(3)", rng(4, 0, 4, len("    return 2.0")))
        expected = cli_with(tmp_path, consts_py=CONSTS.replace("return 2.0", "return jnp.ones(3)"))["ops.py"]
        assert [code for _, _, code, _ in expected] == ["VJP104", "VJP101"]
        assert "at user.py:9 `apply` passes `factor()`" in expected[0][3]
        assert await pulled(client, ops, lambda seen: seen == expected) == expected
        assert client.published == []  # pulled, never pushed
        change(client, consts, 3, "    return 2.0", rng(4, 0, 4, len("    return jnp.ones(3)")))
        assert await pulled(client, ops, lambda seen: seen == []) == []
    finally:
        await stop(client)


REASON = ("clipops/test_ops.py calls `clip_fwd` and `clip_bwd`, and the rewrite changes fwd's return and "
          "bwd's parameters")
MOVE = "VJP101: Move `lo`, `hi` out of nondiff_argnums into the residuals (bwd returns None for them)"


async def test_a_quick_fix_is_unsafe_when_another_module_of_the_workspace_calls_the_rules(tmp_path: Path) -> None:
    """As `vjplint --fix` over the package (issue 37): clipops/test_ops.py imports and calls
    clip_fwd/clip_bwd, which the residual fix changes, so the quick fix is still offered but as an
    unsafe fix whose title says why, never preferred and never in fix-all (not even with
    unsafeFixes on: fix-all often runs on save); the finding and its hover say why, in the CLI's
    words; the quick fix's edit is what `--fix --unsafe-fixes` writes."""
    shutil.copytree(ROOT / "fixtures" / "fix_named_elsewhere" / "clipops", tmp_path / "clipops")
    ops_path = tmp_path / "clipops" / "ops.py"
    ops_text = ops_path.read_text(encoding="utf-8")
    expected = cli_check(tmp_path)["clipops/ops.py"]
    assert [code for _, _, code, _ in expected] == ["VJP101", "VJP101"] and all(
        m.endswith(f" (unsafe fix: {REASON})") for _, _, _, m in expected)
    unsafe_copy = tmp_path.parent / (tmp_path.name + "-unsafe")
    shutil.copytree(tmp_path / "clipops", unsafe_copy / "clipops")
    proc = run_cli("--fix", "--unsafe-fixes", "--no-cache", "clipops", cwd=unsafe_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    unsafe_fixed = (unsafe_copy / "clipops" / "ops.py").read_text(encoding="utf-8")
    assert unsafe_fixed != ops_text
    client = await start(tmp_path, options={"unsafeFixes": True})
    try:
        uri = open_doc(client, ops_path, ops_text)
        seen = await settled(client, uri, lambda seen: seen == expected)
        assert seen == expected
        diagnostics = latest(client, uri)
        assert diagnostics is not None
        whole = rng(0, 0, len(ops_text.splitlines()), 0)
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=whole,
            context=types.CodeActionContext(diagnostics=diagnostics)))
        quick = [a for a in actions or [] if a.title.startswith("VJP101: Move")]
        assert [a.title for a in quick] == [f"{MOVE} (unsafe fix: {REASON})"] * 2
        assert [a.is_preferred for a in quick] == [False, False]
        assert [apply_text_edits(ops_text, edits_of(a.edit, uri)) for a in quick] == [unsafe_fixed] * 2
        assert not [a for a in actions or [] if a.kind == "source.fixAll.vjplint"]
        fix_all = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rng(0, 0, 0, 0),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll]))
        assert list(await client.text_document_code_action_async(fix_all) or []) == []
        first = diagnostics[0].range.start
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=first))
        assert hover is not None and hover.contents.value.startswith(f"**VJP101** {expected[0][3]}")

        # The test module stops importing the rules (its buffer, not saved): the fix is safe again.
        test_ops = (tmp_path / "clipops" / "test_ops.py").read_text(encoding="utf-8")
        t = open_doc(client, tmp_path / "clipops" / "test_ops.py", test_ops)
        change(client, t, 2, "import jax.numpy as jnp\n\n\ndef test_nothing():\n    assert jnp.ones(1)[0] == 1\n")
        deadline = time.monotonic() + HANG_GUARD_S
        while time.monotonic() < deadline:
            actions = await client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=whole,
                context=types.CodeActionContext(diagnostics=diagnostics, only=[types.CodeActionKind.QuickFix])))
            if [a.title for a in actions or [] if a.title.startswith("VJP101: Move")] == [MOVE] * 2:
                break
            await asyncio.sleep(0.1)
        quick = [a for a in actions or [] if a.title.startswith("VJP101: Move")]
        assert [(a.title, a.is_preferred) for a in quick] == [(MOVE, True)] * 2
        [action] = await client.text_document_code_action_async(fix_all)
        assert apply_text_edits(ops_text, edits_of(action.edit, uri)) == unsafe_fixed
        alone = await settled(client, uri, lambda seen: len(seen) == 2 and "unsafe fix" not in seen[0][3])
        assert [m for _, _, _, m in alone] == [m[:-len(f" (unsafe fix: {REASON})")] for _, _, _, m in expected]
    finally:
        await stop(client)


async def test_an_edit_fix_of_a_rule_another_module_calls_is_unsafe_in_the_editor(tmp_path: Path) -> None:
    """Every fix (issue 37): VJP307's fix wraps `soft_bwd`'s return in a tuple, and
    softops/test_ops.py calls `soft_bwd`: its quick fix is unsafe with the reason, not preferred,
    and fix-all (here with unsafeFixes on) leaves it, as `vjplint check` over the workspace says."""
    from tests.unit.test_named_elsewhere import SOFT_OPS, write_softops

    ops = write_softops(tmp_path)
    expected = cli_check(tmp_path)["softops/ops.py"]
    reason = "softops/test_ops.py calls `soft_bwd`, and the fix changes what bwd returns"
    assert [(code, m.endswith(f" (unsafe fix: {reason})")) for _, _, code, m in expected] == [("VJP307", True)]
    client = await start(tmp_path, options={"unsafeFixes": True})
    try:
        uri = open_doc(client, ops, SOFT_OPS)
        assert await settled(client, uri, lambda seen: seen == expected) == expected
        diagnostics = latest(client, uri)
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rng(0, 0, len(SOFT_OPS.splitlines()), 0),
            context=types.CodeActionContext(diagnostics=diagnostics)))
        quick = [a for a in actions or [] if a.title.startswith("VJP307: ")]
        assert [(a.title, a.is_preferred) for a in quick] == [
            (f"VJP307: Wrap as `(g * (1.0 - jnp.tanh(x) ** 2),)` (unsafe fix: {reason})", False)]
        assert "return (g * (1.0 - jnp.tanh(x) ** 2),)" in apply_text_edits(SOFT_OPS, edits_of(quick[0].edit, uri))
        assert not [a for a in actions or [] if a.kind == "source.fixAll.vjplint"]
    finally:
        await stop(client)


RULES = '''\
import jax.numpy as jnp


def softsign_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    d = 1.0 + jnp.abs(x)
    return (x / d,), (t / d**2,)
'''
REGISTERS = '''\
import jax
import jax.numpy as jnp

from rules import softsign_jvp


@jax.custom_jvp
def softsign(x):
    return x / (1.0 + jnp.abs(x))


softsign.defjvp(softsign_jvp)
'''


async def test_a_rule_defined_in_another_module_is_read_where_it_is_registered(tmp_path: Path) -> None:
    """ops.py registers a jvp rule that rules.py defines: the finding about its body (VJP338) is
    on the registration in ops.py, naming rules.py's line, as `vjplint check` says; an edit of
    rules.py's buffer that fixes the rule publishes ops.py again without it, untouched."""
    write(tmp_path, {"ops.py": REGISTERS, "rules.py": RULES})
    expected = cli_check(tmp_path)
    assert [(row, column, code) for row, column, code, _ in expected["ops.py"]] == [(12, 17, "VJP338")]
    assert expected["ops.py"][0][3].endswith("(in `softsign_jvp` at rules.py:7)")
    client = await start(tmp_path)
    try:
        ops = open_doc(client, tmp_path / "ops.py", REGISTERS)
        assert await settled(client, ops, lambda seen: seen == expected["ops.py"]) == expected["ops.py"]
        rules = open_doc(client, tmp_path / "rules.py", RULES)
        count = len(client.published)
        change(client, rules, 2, "    return x / d, t / d**2", rng(6, 0, 6, len(RULES.splitlines()[6])))
        assert cli_with(tmp_path, rules_py=RULES.replace("(x / d,), (t / d**2,)", "x / d, t / d**2")) == {}
        assert await settled(client, ops, lambda seen: seen == []) == []
        assert {p.version for p in publishes(client, ops, count)} == {1}
    finally:
        await stop(client)


async def test_a_fix_of_a_rule_defined_in_another_module_edits_that_module(tmp_path: Path) -> None:
    """pkg/ops.py registers `scale_bwd`, which pkg/rules.py defines and which returns a bare array
    (VJP307): the finding is on the registration in ops.py, and its quick fix is a WorkspaceEdit of
    rules.py (its URI, never ops.py's) that makes what `vjplint --fix` writes there; with rules.py
    open, the edit is made on its buffer's lines, and once applied ops.py is published clean."""
    from tests.cli.test_fix_elsewhere import FIXED_RULES, MESSAGE, OPS, RULES

    (tmp_path / "pkg").mkdir()
    write(tmp_path / "pkg", {"ops.py": OPS, "rules.py": RULES})
    expected = cli_check(tmp_path)
    assert expected == {"pkg/ops.py": [(12, 25, "VJP307", MESSAGE)]}
    client = await start(tmp_path)
    try:
        ops = open_doc(client, tmp_path / "pkg" / "ops.py", OPS)
        assert await settled(client, ops, lambda seen: seen == expected["pkg/ops.py"]) == expected["pkg/ops.py"]
        diagnostics = latest(client, ops)
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=ops), range=rng(11, 0, 11, 34),
            context=types.CodeActionContext(diagnostics=diagnostics)))
        quick = [a for a in actions or [] if a.title.startswith("VJP307: ")]
        assert [(a.title, a.is_preferred) for a in quick] == [("VJP307: Wrap as `(g * res,)` (in pkg/rules.py)", True)]
        rules_uri = (tmp_path / "pkg" / "rules.py").as_uri()
        edit = quick[0].edit
        assert edit is not None and edit.changes is not None and list(edit.changes) == [rules_uri]
        assert apply_text_edits(RULES, edits_of(edit, rules_uri)) == FIXED_RULES

        # rules.py open in the editor with two lines more above the rule: the edit follows its buffer
        shifted = "# the rules\n\n" + RULES
        rules = open_doc(client, tmp_path / "pkg" / "rules.py", shifted)
        moved = [(row, column, code, m.replace("rules.py:9", "rules.py:11")) for row, column, code, m in expected["pkg/ops.py"]]
        assert await settled(client, ops, lambda seen: seen == moved) == moved
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=ops), range=rng(11, 0, 11, 34),
            context=types.CodeActionContext(diagnostics=latest(client, ops))))
        [action] = [a for a in actions or [] if a.title.startswith("VJP307: ")]
        fixed = apply_text_edits(shifted, edits_of(action.edit, rules))
        assert fixed == "# the rules\n\n" + FIXED_RULES
        change(client, rules, 2, fixed)
        assert await settled(client, ops, lambda seen: seen == []) == []
    finally:
        await stop(client)
