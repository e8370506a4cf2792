"""Latency of `vjplint server` where an editor waits: open, change, quick fix.

For each size (default 2,020 and 10,000 lines of custom_vjp definitions, some with the VJP101
bug): the time from the process start and from `didOpen` to the first diagnostics, then, each
round, an inserted comment line at the top timed until the diagnostics of that version arrive
(median; the debounce delay, 0 by default, is included), and a second later the time from
opening another module of that size to its diagnostics (the server started and warm, as when a
file is opened during a session). Then a quick fix on a 5,000-line module
with 10 fixable custom_vjps: `codeAction` (and `codeAction/resolve`, for a client that resolves)
until the edit is there, after an edit so that nothing is cached. With --ruff, `ruff server`
runs the same files the same way (its quick fix: F401 on an unused import); with --baseline
DIR, the vjplint of another checkout too, for before/after figures from one run. With
--callers N, N other modules of the workspace call the module's custom_vjps with traced values
(what the server's project index summarises and passes to the module's lint, VJP104 included).
With --interleave, the servers (this checkout, --baseline, ruff) run side by side on the same
workspace and each round edits them in turn, so that a busy machine slows them alike: the
before/after ratio of one run. `VJPLINT_LINT_HELPER=0` in the environment times the servers
without their lint helper (one process, vjplint.server.lint_helper).

    python benchmarks/lsp_latency.py [--lines 2000,10000] [--rounds 10] [--ruff] [--baseline DIR] [--callers N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple


ROOT = Path(__file__).resolve().parent.parent

BLOCK = '''\
@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_{i}(lo, hi, x):
    """Clip the gradient of x to [lo, hi]."""
    return x


def clip_{i}_fwd(lo, hi, x):
    return x, None


def clip_{i}_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_{i}.defvjp(clip_{i}_fwd, clip_{i}_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply_{i}(fn, x):
    return fn(x)


def apply_{i}_fwd(fn, x):
    return fn(x), x


def apply_{i}_bwd(fn, x, g):
    return (jax.vjp(fn, x)[1](g)[0],)


apply_{i}.defvjp(apply_{i}_fwd, apply_{i}_bwd)


def model_{i}(params, x):
    y = apply_{i}(jnp.tanh, x * params["w"])
    return jnp.sum(y ** 2)


'''
PLAIN = '''\
def layer_{i}(params, x):
    """A dense layer with a residual connection."""
    h = jnp.dot(x, params["w_{i}"]) + params["b_{i}"]
    h = jax.nn.gelu(h)
    return x + 0.5 * h


def loss_{i}(params, batch):
    x, y = batch
    pred = layer_{i}(params, x)
    return jnp.mean((pred - y) ** 2)


def update_{i}(params, grads, lr=1e-3):
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def evaluate_{i}(params, batches):
    total = 0.0
    for batch in batches:
        total += loss_{i}(params, batch)
    return total / max(len(batches), 1)


def schedule_{i}(step, warmup=100):
    if step < warmup:
        return step / warmup
    return 1.0


'''
HEADER = "from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\n"


CALLER = '''\
import jax
import jax.numpy as jnp

from module import apply_{i}, clip_{i}


@jax.jit
def step_{i}(x, lo):
    return clip_{i}(lo, 1.0, x) + apply_{i}(jnp.tanh, x)
'''


def write_callers(workdir: Path, count: int) -> None:
    """`caller_K.py` for K < count, each passing a traced `lo` to `module.clip_K`'s nondiff slot."""
    for old in workdir.glob("caller_*.py"):
        old.unlink()
    for i in range(count):
        (workdir / f"caller_{i}.py").write_text(CALLER.format(i=i), encoding="utf-8")


def make_module(lines: int, vjp_every: int = 1) -> str:
    """`lines` lines of ~38-line blocks; every `vjp_every`-th block defines two custom_vjps."""
    parts, i, count = [HEADER], 0, HEADER.count("\n")
    while count < lines:  # (a running count: summing every part each time was quadratic)
        parts.append((BLOCK if i % vjp_every == 0 else PLAIN).format(i=i))
        count += parts[-1].count("\n")
        i += 1
    return "".join(parts)


class Client:
    """A bare JSON-RPC client over the server's stdio: nothing between the bytes and the clock."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.responses: Dict[int, Any] = {}
        self.diagnostics: Dict[Any, Tuple[float, int]] = {}  # version -> (arrival, count)
        self.published_items: Dict[Any, List[Dict[str, Any]]] = {}  # version -> its diagnostics
        self.reader = asyncio.ensure_future(self.read())

    def send(self, method: str, params: Any, request: bool = False) -> Optional[int]:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return message.get("id")

    async def read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = await stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            message = json.loads(await stream.readexactly(length))
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                self.diagnostics.setdefault(params.get("version"), (time.perf_counter(), len(params["diagnostics"])))
                self.published_items.setdefault(params.get("version"), params["diagnostics"])
            elif "id" in message and "method" in message:  # a request from the server: accept it
                body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}).encode()
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            elif "id" in message:
                self.responses[message["id"]] = message

    async def request(self, method: str, params: Any) -> Any:
        msg_id = self.send(method, params, request=True)
        while msg_id not in self.responses:
            await asyncio.sleep(0.001)
        return self.responses.pop(msg_id)

    async def published(self, version: int) -> float:
        for _ in range(120_000):
            if version in self.diagnostics:
                return self.diagnostics[version][0]
            await asyncio.sleep(0.0005)
        raise TimeoutError(f"no diagnostics for version {version}")


async def start_server(command: List[str], workdir: Path, env: Optional[Dict[str, str]] = None,
                       capabilities: Optional[Dict[str, Any]] = None) -> Tuple[Client, float]:
    """Start a server and initialize it; with the seconds from the process start to the answer."""
    began = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, cwd=workdir, env=env)
    client = Client(proc)
    await client.request("initialize", {"processId": None, "rootUri": workdir.as_uri(),
                                        "capabilities": capabilities or {},
                                        "workspaceFolders": [{"uri": workdir.as_uri(), "name": "bench"}]})
    client.send("initialized", {})
    return client, time.perf_counter() - began


async def stop_server(client: Client) -> None:
    await client.request("shutdown", None)
    client.send("exit", None)
    await client.proc.wait()


def change(uri: str, version: int) -> Dict[str, Any]:
    return {"textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                "text": "# edit\n"}]}


async def measure(command: List[str], text: str, rounds: int, workdir: Path, name: str = "module.py",
                  env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Open latency (process start -> first diagnostics, and didOpen -> first diagnostics), then
    `rounds` times: an edit at the top, timed until that version's diagnostics arrive; then, a
    second later, another module of the same size opened in the running server."""
    began = time.perf_counter()
    client, init_s = await start_server(command, workdir, env)
    path = workdir / name
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    opened = time.perf_counter()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                          "text": text}})
    first = await client.published(1)
    times = []
    for version in range(2, rounds + 2):
        await asyncio.sleep(0.2)  # an editor's pause between bursts of typing
        start = time.perf_counter()
        client.send("textDocument/didChange", change(uri, version))
        times.append((await client.published(version) - start) * 1000)
    count = client.diagnostics[rounds + 1][1]
    # A file opened later, in a server that runs already (its imports done, the first file primed):
    # another module of the same size, its first line different.
    await asyncio.sleep(1.0)
    other = workdir / f"other_{name}"
    other.write_text("# another module\n" + text, encoding="utf-8")
    opened_later = time.perf_counter()
    client.send("textDocument/didOpen", {"textDocument": {"uri": other.as_uri(), "languageId": "python",
                                                          "version": 1000, "text": "# another module\n" + text}})
    later = await client.published(1000)
    await stop_server(client)
    other.unlink()
    return {"initialize_ms": round(init_s * 1000, 1), "open_to_diagnostics_ms": round((first - opened) * 1000, 1),
            "start_to_diagnostics_ms": round((first - began) * 1000, 1),
            "later_open_to_diagnostics_ms": round((later - opened_later) * 1000, 1), "diagnostics": count,
            "change_to_diagnostics_ms_median": round(statistics.median(times), 1),
            "samples_ms": [round(t, 1) for t in times]}


async def measure_interleaved(servers: List[Tuple[str, List[str], Optional[Dict[str, str]]]], text: str,
                              rounds: int, workdir: Path, settle_s: float = 8.0) -> Dict[str, Any]:
    """All servers open the module, are left `settle_s` (their project index built), then each
    round edits each in turn, timed until that version's diagnostics arrive."""
    path = workdir / "module.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    clients = {}
    for name, command, env in servers:
        client, _ = await start_server(command, workdir, env)
        client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": text}})
        await client.published(1)
        clients[name] = client
    await asyncio.sleep(settle_s)
    times: Dict[str, List[float]] = {name: [] for name in clients}
    for version in range(2, rounds + 2):
        for name, client in clients.items():
            await asyncio.sleep(0.2)
            start = time.perf_counter()
            client.send("textDocument/didChange", change(uri, version))
            times[name].append((await client.published(version) - start) * 1000)
    out: Dict[str, Any] = {}
    for name, client in clients.items():
        found = client.published_items[rounds + 1]
        out[name] = {"change_to_diagnostics_ms_median": round(statistics.median(times[name]), 1),
                     "diagnostics": len(found), "codes": sorted({str(d.get("code")) for d in found})}
        await stop_server(client)
    return out


async def measure_quick_fix(command: List[str], text: str, rounds: int, workdir: Path, resolve: bool,
                            code: str, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """After each edit, on another derivative each round (a fix once computed is kept with its
    finding): the time from `textDocument/codeAction` on its `code` diagnostic to having the
    edit (with `codeAction/resolve` when `resolve`). The server is left idle 3 s after opening
    first, as an editor is before a quick fix, so the fix machinery's import is not counted."""
    capabilities: Dict[str, Any] = {}
    if resolve:
        capabilities = {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]},
                                                        "dataSupport": True}}}
    client, _ = await start_server(command, workdir, env, capabilities)
    path = workdir / "fixable.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                          "text": text}})
    await client.published(1)
    await asyncio.sleep(3)
    times = []
    for version in range(2, rounds + 2):
        client.send("textDocument/didChange", change(uri, version))
        await client.published(version)
        found = [d for d in client.published_items[version] if d.get("code") == code]
        lines = sorted({d["range"]["start"]["line"] for d in found})
        line = lines[(version - 2) % len(lines)]
        diagnostic = next(d for d in found if d["range"]["start"]["line"] == line)
        start = time.perf_counter()
        answer = await client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": diagnostic["range"],
            "context": {"diagnostics": [diagnostic], "only": ["quickfix"]}})
        action = next(a for a in answer["result"] if a.get("diagnostics") and a.get("kind") == "quickfix"
                      and not a["title"].startswith(("Disable", "Ignore")))
        if "edit" not in action:
            action = (await client.request("codeAction/resolve", action))["result"]
        assert action.get("edit"), action
        times.append((time.perf_counter() - start) * 1000)
    await stop_server(client)
    return {"quick_fix_ms_median": round(statistics.median(times), 1), "samples_ms": [round(t, 1) for t in times]}


def engine_ms(text: str, rounds: int) -> float:
    sys.path.insert(0, str(ROOT))
    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source

    lint_source("module.py", text, Config())
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        lint_source("module.py", text, Config())
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def ruff_command() -> Optional[str]:
    local = Path(sys.executable).parent / "ruff"
    return str(local) if local.exists() else shutil.which("ruff")


def server_env(checkout: Optional[str]) -> Optional[Dict[str, str]]:
    """The environment that makes `python -m vjplint` import `checkout` (a before/after pair)."""
    if checkout is None:
        return None
    return {**os.environ, "PYTHONPATH": str(Path(checkout).resolve())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", default="2000,10000", help="module sizes, comma-separated (default 2000,10000)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--debounce-ms", type=int, default=0)
    parser.add_argument("--vjp-every", type=int, default=1,
                        help="only every N-th block defines custom_vjps (default 1: all, the worst case)")
    parser.add_argument("--fix-lines", type=int, default=5000,
                        help="size of the quick-fix module (10 fixable custom_vjps); 0 skips it")
    parser.add_argument("--ruff", action="store_true", help="also time `ruff server` on the same files")
    parser.add_argument("--baseline", default=None,
                        help="also time the vjplint of this checkout (e.g. a main worktree), same run")
    parser.add_argument("--interleave", action="store_true",
                        help="run the servers side by side, edits alternating (a paired before/after ratio)")
    parser.add_argument("--callers", type=int, default=0,
                        help="other modules of the workspace calling the module's custom_vjps (default 0)")
    args = parser.parse_args()
    report: Dict[str, Any] = {"rounds": args.rounds, "debounce_ms": args.debounce_ms, "callers": args.callers,
                              "sizes": []}
    here = str(ROOT)
    servers = [("vjplint", [sys.executable, "-m", "vjplint", "server", "--debounce-ms", str(args.debounce_ms)],
                server_env(here))]
    if args.baseline:
        servers.append(("baseline", [sys.executable, "-m", "vjplint", "server", "--debounce-ms",
                                     str(args.debounce_ms)], server_env(args.baseline)))
    ruff = ruff_command() if args.ruff else None
    if ruff:
        servers.append(("ruff", [ruff, "server"], None))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "pyproject.toml").write_text("[tool.vjplint]\n", encoding="utf-8")
        write_callers(work, args.callers)
        for lines in [int(n) for n in args.lines.split(",") if n]:
            text = make_module(lines, args.vjp_every)
            size: Dict[str, Any] = {"lines": len(text.splitlines()), "custom_vjps": text.count("@partial(jax.custom_vjp"),
                                    "engine_lint_ms_median": round(engine_ms(text, 3), 1)}
            if args.interleave:
                size.update(asyncio.run(measure_interleaved(servers, text, args.rounds, work)))
                print(f"  {size['lines']} lines: {size}", file=sys.stderr)
                if args.baseline:
                    size["change_ratio_to_baseline"] = round(
                        size["vjplint"]["change_to_diagnostics_ms_median"]
                        / max(size["baseline"]["change_to_diagnostics_ms_median"], 0.1), 2)
            for name, command, env in ([] if args.interleave else servers):
                size[name] = asyncio.run(measure(command, text, args.rounds, work, env=env))
                print(f"  {name}: {size['lines']} lines: {size[name]}", file=sys.stderr)
            if ruff:
                size["change_ratio_to_ruff"] = round(size["vjplint"]["change_to_diagnostics_ms_median"]
                                                     / max(size["ruff"]["change_to_diagnostics_ms_median"], 0.1), 1)
            report["sizes"].append(size)
        if args.fix_lines:
            text = "import os\n" + make_module(args.fix_lines, vjp_every=max(1, args.fix_lines // 33 // 10))
            fix: Dict[str, Any] = {"lines": len(text.splitlines()),
                                   "fixable_custom_vjps": text.count("nondiff_argnums=(0, 1)")}
            for name, command, env in servers:
                code = "F401" if name == "ruff" else "VJP101"
                fix[name] = {mode: asyncio.run(measure_quick_fix(command, text, max(3, args.rounds // 2), work,
                                                                 mode == "resolve", code, env))
                             for mode in (("resolve", "eager") if name != "ruff" else ("eager",))}
                print(f"  {name}: quick fix: {fix[name]}", file=sys.stderr)
            report["quick_fix"] = fix
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
