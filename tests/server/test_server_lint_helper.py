"""The server shares a big document's first lint with its lint helper (a second process): the
diagnostics are those of a server without one, at startup (sent at didOpen, while the server
still imports the engine) and later (sent from the lint thread); edits are linted incrementally
as before; the helper ends with the server."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

from tests.conftest import ROOT
from tests.server import HANG_GUARD_S
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from tests.server.test_server import PYPROJECT, change, make_client, open_doc, published

sys.path.insert(0, str(ROOT / "benchmarks"))
from lsp_latency import make_module  # noqa: E402


BIG = make_module(600)  # 32 custom_vjps; "big" here: the tests lower the threshold to 100 lines
OTHER = "# another module\n" + make_module(300)


# The server, its engine's warm-up (which begins at `initialize`) held until the client's first
# didOpen has been handled (`share_early`, whose condition is a cold engine): the engine is cold at
# it, as on a first start, however loaded the machine. (A warm-up made 2 s longer was a guess: on a
# busy CI machine the warm-up once finished before the client sent didOpen, and the share at
# didOpen rightly did not happen.) The wait's guard is the hang guard: an event, not a time.
SLOW_WARM_UP_SERVER = """\
import sys, threading
import vjplint.server.analysis as analysis
opened = threading.Event()
warm_up = analysis._warm_up
share_early = analysis.Analyses.share_early
def slow_warm_up(server=None):
    opened.wait(%r)
    warm_up(server)
def share_early_then_warm_up(self, uri, text):
    try:
        share_early(self, uri, text)
    finally:
        opened.set()
analysis._warm_up = slow_warm_up
analysis.Analyses.share_early = share_early_then_warm_up
from vjplint.server import main
sys.exit(main([]))
""" % HANG_GUARD_S


def _config(helper: bool, cold_at_open: bool = False) -> ClientServerConfig:
    command = ["-c", SLOW_WARM_UP_SERVER] if cold_at_open else ["-m", "vjplint", "server"]
    return ClientServerConfig(
        server_command=[sys.executable, *command], client_factory=make_client,
        server_env={**os.environ, "PYTHONPATH": str(ROOT), "VJPLINT_SPLIT_MIN_LINES": "100",
                    "VJPLINT_LINT_HELPER": "1" if helper else "0"})


async def _session(tmp_path: Path, helper: bool,
                   cold_at_open: bool = False) -> Tuple[Dict[str, List[tuple]], str, LanguageClient]:
    """Open BIG at once (the server just started), then OTHER once the first is linted, then edit
    BIG: each document's diagnostics, and the debug information."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    client = await _config(helper, cold_at_open).start()
    await client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")]))
    seen: Dict[str, List[tuple]] = {}
    big = open_doc(client, tmp_path / "big.py", BIG)
    seen["big"] = _shown(await published(client, big, 1))
    await asyncio.sleep(0.5)
    other = open_doc(client, tmp_path / "other.py", OTHER)
    seen["other"] = _shown(await published(client, other, 1))
    count = len(client.published)  # type: ignore[attr-defined]
    change(client, big, 2, BIG.replace("@partial(jax.custom_vjp, nondiff_argnums=(0, 1))\ndef clip_0(",
                                       "@jax.custom_vjp\ndef clip_0(", 1))
    seen["edited"] = _shown(await published(client, big, 2, after=count))
    info = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="vjplint.printDebugInformation"))
    return seen, info, client


def _shown(diagnostics: List[types.Diagnostic]) -> List[tuple]:
    return [(d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
             d.message, d.severity) for d in diagnostics]


async def test_shared_first_lints_give_the_diagnostics_of_one_process(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    with_helper, info, client = await _session(tmp_path / "a", helper=True, cold_at_open=True)
    try:
        assert re.search(r"lint helper: pid \d+, running; first lints shared with it: 2 \(1 sent at didOpen\)$", info, re.M), info
        assert "families:" in info  # the shared first lints primed the incremental linter
    finally:
        await client.shutdown_session()
        await client.stop()
    (tmp_path / "b").mkdir()
    alone, info_alone, client = await _session(tmp_path / "b", helper=False)
    try:
        assert "lint helper: none" in info_alone
    finally:
        await client.shutdown_session()
        await client.stop()
    assert with_helper == alone
    assert [d[0] for d in with_helper["big"]].count("VJP101") == 32
    assert with_helper["edited"] != with_helper["big"]  # clip_0 has no nondiff arguments any more


async def test_the_helper_ends_with_the_server(tmp_path: Path) -> None:
    _, info, client = await _session(tmp_path, helper=True)
    pid = int(re.search(r"lint helper: pid (\d+)", info).group(1))  # type: ignore[union-attr]
    os.kill(pid, 0)  # running
    await client.shutdown_session()
    await client.stop()
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError("the lint helper outlived its server")
