"""The incremental server through a real LSP client: after every edit (ranges, as editors send
them) its diagnostics are those of a fresh `vjplint check` of the same text, including edits
that change which names are recognised as custom derivatives."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, List, Tuple

import pytest
from tests.conftest import ROOT, run_cli
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.server import HANG_GUARD_S
from tests.server.test_server import change, open_doc, published, raw_request, rng, start, stop

sys.path.insert(0, str(ROOT / "benchmarks"))
from lsp_latency import make_module  # noqa: E402


def apply(text: str, start: Tuple[int, int], end: Tuple[int, int], new: str) -> str:
    lines = text.split("\n")
    offset = lambda p: sum(len(line) + 1 for line in lines[:p[0]]) + p[1]  # noqa: E731  (ASCII text)
    return text[:offset(start)] + new + text[offset(end):]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n")) if needle in line)


def edits(text: str) -> List[Tuple[Tuple[int, int], Tuple[int, int], str]]:
    """Edits in order, each on the text the previous ones made (positions computed as they go)."""
    steps: List[Any] = [
        lambda t: ((0, 0), (0, 0), "# a comment above everything\n"),  # every family moves down
        lambda t: ((line_of(t, "def clip_1_fwd"), 4), (line_of(t, "def clip_1_fwd"), 14), "forward_1"),  # rename
        lambda t: ((line_of(t, "import jax.numpy"), 0), (line_of(t, "import jax.numpy"), 0),
                   "from jax import custom_vjp as cv\n"),  # a new alias
        lambda t: ((line_of(t, "def model_2"), 0), (line_of(t, "def model_2"), 0),
                   "@cv\ndef aliased(lo, x):\n    return x\n\n\ndef use(x):\n    return aliased(1.0, x)\n\n\n"),  # spelled through it
        lambda t: ((line_of(t, "@partial(jax.custom_vjp, nondiff_argnums=(0, 1))"), 0),
                   (line_of(t, "@partial(jax.custom_vjp, nondiff_argnums=(0, 1))") + 1, 0), ""),  # not one now
        lambda t: ((line_of(t, "def apply_3(fn, x)"), 17), (line_of(t, "def apply_3(fn, x)"), 18), ""),  # broken
        lambda t: ((line_of(t, "def apply_3(fn, x:"), 17), (line_of(t, "def apply_3(fn, x:"), 17), ")"),  # repaired
        lambda t: ((line_of(t, "clip_4.defvjp"), 0), (line_of(t, "clip_4.defvjp") + 1, 0), ""),  # unregistered
        lambda t: ((t.split("\n").index("import jax"), 0), (t.split("\n").index("import jax"), 10),
                   "import jax as jx"),  # `jax` is no longer the module: nothing is recognised
        lambda t: ((line_of(t, "import jax as jx"), 0), (line_of(t, "import jax as jx"), 16), "import jax"),
    ]
    out = []
    for step in steps:
        start_, end_, new = step(text)
        out.append((start_, end_, new))
        text = apply(text, start_, end_, new)
    return out


def cli_findings(workspace: Path, texts: List[str]) -> List[List[tuple]]:
    """A fresh `vjplint check --output-format json` of each text (one process for all)."""
    folder = workspace / "cli"
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[tool.vjplint]\n", encoding="utf-8")
    for n, text in enumerate(texts):
        (folder / f"step_{n:02d}.py").write_text(text, encoding="utf-8")
    proc = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr
    found: List[List[tuple]] = [[] for _ in texts]
    for d in json.loads(proc.stdout):
        n = int(Path(d["filename"]).stem.split("_")[1])
        found[n].append((d["code"], d["location"]["row"] - 1, d["location"]["column"] - 1,
                         d["end_location"]["row"] - 1, d["end_location"]["column"] - 1, d["message"]))
    return [sorted(f) for f in found]


def lsp_findings(diagnostics: List[types.Diagnostic]) -> List[tuple]:
    return sorted((d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
                   d.message) for d in diagnostics)


async def test_edits_through_a_client_match_a_fresh_cli_lint(tmp_path: Path) -> None:
    workspace = tmp_path
    text = make_module(240)
    client = await start(workspace)
    try:
        uri = open_doc(client, workspace / "module.py", text)
        texts, got = [text], [lsp_findings(await published(client, uri, 1))]
        for version, (start_, end_, new) in enumerate(edits(text), start=2):
            count = len(client.published)
            change(client, uri, version, new, rng(start_[0], start_[1], end_[0], end_[1]))
            text = apply(text, start_, end_, new)
            texts.append(text)
            got.append(lsp_findings(await published(client, uri, version, after=count)))
    finally:
        await stop(client)
    expected = cli_findings(workspace, texts)
    assert len({len(e) for e in expected}) > 2  # the edits did change the findings
    assert any(code == "VJP900" for code, *_ in expected[6])  # the broken step
    assert any("aliased" in message for *_, message in expected[4])  # the alias is recognised
    for n, (mine, theirs) in enumerate(zip(got, expected)):
        assert mine == theirs, f"after edit {n}"


async def test_a_burst_of_edits_publishes_the_last_version_exactly(tmp_path: Path) -> None:
    workspace = tmp_path
    text = make_module(400)
    client = await start(workspace)
    try:
        uri = open_doc(client, workspace / "module.py", text)
        await published(client, uri, 1)
        count = len(client.published)
        typed = "def late(lo, hi, x):\n    return clip_0(lo, hi, x)\n"
        for version, char in enumerate(typed, start=2):  # one character per change, as typed
            change(client, uri, version, char, _at(typed[:version - 2]))
        last = len(typed) + 1
        final = await published(client, uri, last, after=count)
        versions = [p.version for p in client.published[count:]]
        assert versions[-1] == last and versions == sorted(versions)  # never an older version after a newer
    finally:
        await stop(client)
    assert lsp_findings(final) == cli_findings(workspace, [typed + text])[0]


def _at(before: str) -> types.Range:
    """The empty range at the end of `before` (text typed at the top of the document so far)."""
    line = before.count("\n")
    character = len(before) - (before.rfind("\n") + 1)
    return rng(line, character, line, character)


async def test_a_cancelled_request_is_answered_as_cancelled_and_the_server_goes_on(tmp_path: Path) -> None:
    text = make_module(3000)  # its first lint keeps the lint thread busy while the request waits
    client = await start(tmp_path)
    try:
        uri = open_doc(client, tmp_path / "module.py", text)
        body = json.dumps({"jsonrpc": "2.0", "id": "slow-1", "method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": uri}, "range": {"start": {"line": 8, "character": 0},
                                                    "end": {"line": 8, "character": 0}},
            "context": {"diagnostics": []}}}).encode()
        answer = asyncio.ensure_future(raw_request(client, "slow-1", body))
        await asyncio.sleep(0.05)
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="slow-1"))
        with pytest.raises(JsonRpcException) as cancelled:
            await answer
        assert cancelled.value.code == -32800  # RequestCancelled
        found = await published(client, uri, 1, timeout=120)
        assert lsp_findings(found) == cli_findings(tmp_path, [text])[0]
    finally:
        await stop(client)


async def test_documents_opened_together_are_primed_and_then_edited_family_by_family(tmp_path: Path) -> None:
    """Each document's first lint is whole; its families' findings are cached from it after its
    diagnostics are out (seeded: none is linted again). Both primings end (the lint thread is
    then idle), after which an edit moves every family and lints none.

    A document may be analysed again at any time once the workspace index is built (its residual
    fixes are checked against the other modules: named_elsewhere); such a re-analysis reuses every
    family and lints none, so the counts are read as what an edit adds to them, per document."""
    import re

    def counts(info: str, name: str) -> Tuple[int, int, int]:
        found = re.findall(rf"/{re.escape(name)}: .*families: (\d+) seeded, (\d+) linted, (\d+) reused", info)
        assert len(found) == 1, info
        seeded, linted, reused = (int(n) for n in found[0])
        return seeded, linted, reused

    async def debug() -> str:
        return await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="vjplint.printDebugInformation"))

    texts = {name: make_module(300) for name in ("one.py", "two.py")}
    client = await start(tmp_path)
    try:
        uris = {name: open_doc(client, tmp_path / name, text) for name, text in texts.items()}
        for name, uri in uris.items():
            assert len(await published(client, uri, 1)) == 2 * texts[name].count("nondiff_argnums=(0, 1)")
        info = ""
        for _ in range(1200):  # 120 s at most: under -n 2 another worker's JAX runs share the cores
            info = await debug()
            if "priming" not in info:
                break
            await asyncio.sleep(0.1)
        primed = {name: counts(info, name) for name in texts}
        families = primed["one.py"][0]
        # both seeded alike, none linted (a re-analysis since then reuses every family: not counted here)
        assert families > 8 and primed["two.py"][0] == families, info
        assert all(linted == 0 for _, linted, _ in primed.values()), info
        change(client, uris["one.py"], 2, "# an edit\n", rng(0, 0, 0, 0))
        await published(client, uris["one.py"], 2)
        info = await debug()
        seeded, linted, reused = counts(info, "one.py")
        # every family moved down a line, none linted again: the edit's lint reused all of them
        assert (seeded, linted) == (families, 0) and reused >= primed["one.py"][2] + families, info
    finally:
        await stop(client)


def test_the_collector_is_paused_while_any_lint_runs_and_restored_once_after_the_last() -> None:
    import gc
    import threading

    from vjplint.server.analysis import collector_paused

    before = gc.isenabled()
    gc.enable()
    try:
        inside = threading.Event()
        release = threading.Event()
        seen = []

        def other_lint() -> None:
            with collector_paused():
                inside.set()
                release.wait(HANG_GUARD_S)
                seen.append(gc.isenabled())

        thread = threading.Thread(target=other_lint)
        with collector_paused():
            thread.start()
            assert inside.wait(HANG_GUARD_S)
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())  # the other lint still runs: still paused
        release.set()
        thread.join(HANG_GUARD_S)
        assert seen == [False, False, False] and gc.isenabled()
        gc.disable()  # paused by someone else before: left so
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        (gc.enable if before else gc.disable)()
