"""Latency from `textDocument/didChange` to `textDocument/publishDiagnostics` of `vjplint server`.

A 2,000-line module of custom_vjp definitions (some with the VJP101 bug) is opened; then each
round inserts a comment line at the top and times until the diagnostics for that version
arrive. The median of the rounds is reported, with the server's debounce delay (included in the
figure) and the engine's own lint time on the same text. With --ruff, `ruff server` is timed on
the same file the same way (ruff does not debounce).

    python benchmarks/lsp_latency.py [--lines 2000] [--rounds 10] [--debounce-ms 30] [--vjp-every 1] [--ruff]
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


def make_module(lines: int, vjp_every: int = 1) -> str:
    """`lines` lines of ~38-line blocks; every `vjp_every`-th block defines two custom_vjps."""
    parts, i = [HEADER], 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append((BLOCK if i % vjp_every == 0 else PLAIN).format(i=i))
        i += 1
    return "".join(parts)


class Client:
    """A bare JSON-RPC client over the server's stdio: nothing between the bytes and the clock."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.responses: Dict[int, Any] = {}
        self.diagnostics: Dict[Any, Tuple[float, int]] = {}  # version -> (arrival, count)
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


async def measure(command: List[str], text: str, rounds: int, workdir: Path) -> List[float]:
    proc = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, cwd=workdir)
    client = Client(proc)
    await client.request("initialize", {"processId": None, "rootUri": workdir.as_uri(), "capabilities": {},
                                        "workspaceFolders": [{"uri": workdir.as_uri(), "name": "bench"}]})
    client.send("initialized", {})
    path = workdir / "module.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                          "text": text}})
    await client.published(1)  # the first lint warms caches and imports
    times = []
    for version in range(2, rounds + 2):
        await asyncio.sleep(0.2)  # an editor's pause between bursts of typing
        start = time.perf_counter()
        client.send("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                "text": "# edit\n"}]})
        times.append((await client.published(version) - start) * 1000)
    count = client.diagnostics[rounds + 1][1]
    await client.request("shutdown", None)
    client.send("exit", None)
    await proc.wait()
    print(f"  {command[-1] if 'ruff' in command[0] else 'vjplint'}: {len(text.splitlines())} lines, "
          f"{count} diagnostics per publish", file=sys.stderr)
    return times


def engine_ms(text: str, rounds: int) -> float:
    sys.path.insert(0, str(ROOT))
    from vjplint.config import Config
    from vjplint.engine import lint_source

    lint_source("module.py", text, Config())
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        lint_source("module.py", text, Config())
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--debounce-ms", type=int, default=30)
    parser.add_argument("--vjp-every", type=int, default=1,
                        help="only every N-th block defines custom_vjps (default 1: all, the worst case)")
    parser.add_argument("--ruff", action="store_true", help="also time `ruff server` on the same file")
    args = parser.parse_args()
    text = make_module(args.lines, args.vjp_every)
    report = {"lines": len(text.splitlines()), "custom_vjps": text.count("@partial(jax.custom_vjp"),
              "rounds": args.rounds, "debounce_ms": args.debounce_ms,
              "engine_lint_ms_median": round(engine_ms(text, args.rounds), 1)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "pyproject.toml").write_text("[tool.vjplint]\n", encoding="utf-8")
        vjp = asyncio.run(measure([sys.executable, "-m", "vjplint", "server", "--debounce-ms",
                                   str(args.debounce_ms)], text, args.rounds, work))
        report["vjplint_change_to_diagnostics_ms_median"] = round(statistics.median(vjp), 1)
        report["vjplint_samples_ms"] = [round(t, 1) for t in vjp]
        ruff = shutil.which("ruff") or (str(Path(sys.executable).parent / "ruff")
                                        if (Path(sys.executable).parent / "ruff").exists() else None)
        if args.ruff and ruff:
            times = asyncio.run(measure([ruff, "server"], text, args.rounds, work))
            report["ruff_change_to_diagnostics_ms_median"] = round(statistics.median(times), 1)
            report["ruff_samples_ms"] = [round(t, 1) for t in times]
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
