"""A one-line edit in a big document, through `vjplint server`, beside a fresh lint of it.

For each size (default 1 and 10 MB of lsp_latency.py's custom_vjp blocks, about 17 bytes a
line), the server: `didOpen` to its diagnostics (a fresh lint of the document, the reference;
with --cli also `vjplint check --no-cache` on the file), a comment line inserted in the middle, and
- with the default `lintOnChangeMaxSize` (1,000,000 characters): over it, the edit is not linted;
  the time until the server answers a request after it, then `didSave` to the diagnostics;
- with `lintOnChangeMaxSize: 0` (no limit; sizes up to --no-limit-mb): once the document's
  families are cached (a quick-fix `codeAction` answered after the first lint waits for that),
  the edit to its diagnostics.
Each figure is also given as a ratio to the fresh lint of the same document.

With --in-process, no server: the server's incremental linter (vjplint.lint.incremental) alone, in
this process: the whole lint of the document (fresh), the caching of its families from that lint
(`prime`), then the one-line edit's lint, which is what the server runs at each edit without the
limit (it adds the wait for the lint thread and the diagnostics' conversion and transfer).

    python benchmarks/big_document.py [--mb 1,10] [--no-limit-mb 10] [--cli] [--in-process] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_latency import make_module  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


class Server:
    def __init__(self, cwd: Path, options: Dict[str, Any]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "vjplint", "server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, cwd=cwd)
        self.inbox: "queue.Queue[tuple]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"processId": None, "rootUri": cwd.as_uri(), "capabilities": {},
                                    "initializationOptions": options})
        self.notify("initialized", {})

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length, line = None, out.readline()
            while line.strip():
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                line = out.readline()
            if not line or length is None:
                return
            self.inbox.put((time.perf_counter(), json.loads(out.read(length))))

    def write(self, message: Dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.write({"method": method, "params": params})

    def wait(self, match: Any, timeout: float = 900) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                at, message = self.inbox.get(timeout=1)
            except queue.Empty:
                continue
            if match(message):
                return at
        raise TimeoutError("no answer")

    def request(self, method: str, params: Any, msg_id: Any = "r") -> float:
        self.write({"id": msg_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m)

    def published(self, version: int) -> Any:
        return lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == version

    def close(self) -> None:
        self.write({"id": "bye", "method": "shutdown"})
        self.notify("exit", None)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def edit(uri: str, version: int, line: int) -> Dict[str, Any]:
    return {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{
        "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
        "text": "# an edit\n"}]}


def measure(mb: float, workdir: Path, cli: bool, no_limit: bool) -> Dict[str, Any]:
    text = make_module(int(mb * 1e6 / 17.06))
    path = workdir / f"big_{mb:g}mb.py"
    path.write_text(text, encoding="utf-8")
    uri, middle = path.as_uri(), text.count("\n") // 2
    row: Dict[str, Any] = {"MB": round(len(text.encode()) / 1e6, 2), "lines": text.count("\n")}
    if cli:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "vjplint", "check", "--no-cache", "--output-format", "concise",
                               str(path)], env=ENV, cwd=workdir, capture_output=True, text=True)
        row["vjplint check (CLI) s"] = round(time.perf_counter() - start, 2)
        row["diagnostics"] = proc.stdout.count(": VJP")
    opened = {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    # the default limit: the edit is not linted, the save is
    server = Server(workdir, {})
    start = time.perf_counter()
    server.notify("textDocument/didOpen", opened)
    row["didOpen -> diagnostics (fresh lint) s"] = round(server.wait(server.published(1)) - start, 2)
    start = time.perf_counter()
    server.notify("textDocument/didChange", edit(uri, 2, middle))
    row["default limit: edit -> next request answered s"] = round(server.request(
        "workspace/executeCommand", {"command": "vjplint.printDebugInformation", "arguments": []}, "d") - start, 2)
    start = time.perf_counter()
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    row["default limit: didSave -> diagnostics s"] = round(server.wait(server.published(2)) - start, 2)
    server.close()
    if no_limit:
        _no_limit(row, workdir, uri, opened, middle)
    fresh = row["didOpen -> diagnostics (fresh lint) s"]
    for key in [k for k in row if k.endswith(" s") and not k.startswith("didOpen")]:
        row[key.replace(" s", " / fresh")] = round(row[key] / fresh, 3)
    return row


def _no_limit(row: Dict[str, Any], workdir: Path, uri: str, opened: Dict[str, Any], middle: int) -> None:
    """No limit: the edit is linted again (incrementally)."""
    server = Server(workdir, {"lintOnChangeMaxSize": 0})
    server.notify("textDocument/didOpen", opened)
    server.wait(server.published(1))
    server.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["quickfix"]}})
    start = time.perf_counter()
    server.notify("textDocument/didChange", edit(uri, 2, middle))
    row["no limit: edit -> diagnostics s"] = round(server.wait(server.published(2)) - start, 2)
    server.close()


def in_process(mb: float) -> Dict[str, Any]:
    from vjplint.settings.config import Config
    from vjplint.lint.incremental import IncrementalLinter

    text = make_module(int(mb * 1e6 / 17.06))
    lines = text.split("\n")
    edited = "\n".join(lines[:len(lines) // 2] + ["# an edit"] + lines[len(lines) // 2:])
    linter = IncrementalLinter("big.py", Config())
    row: Dict[str, Any] = {"MB": round(len(text.encode()) / 1e6, 2), "lines": text.count("\n")}
    start = time.perf_counter()
    row["diagnostics"] = len(linter.lint(text, whole_first=True).diagnostics)
    row["whole lint (fresh) s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    linter.prime(text)
    row["prime s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    after = linter.lint(edited)
    row["one-line edit s"] = round(time.perf_counter() - start, 2)
    row["families linted again"] = linter.stats["linted"]
    row["one-line edit / fresh"] = round(row["one-line edit s"] / row["whole lint (fresh) s"], 3)
    assert len(after.diagnostics) == row["diagnostics"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", default="1,10")
    parser.add_argument("--no-limit-mb", type=float, default=10.0,
                        help="measure the edit without the limit for sizes up to this (MB)")
    parser.add_argument("--cli", action="store_true", help="also time `vjplint check --no-cache` on the file")
    parser.add_argument("--in-process", action="store_true", help="the incremental linter alone, no server")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in [float(x) for x in args.mb.split(",")]:
            rows.append(in_process(mb) if args.in_process else measure(mb, Path(tmp), args.cli, mb <= args.no_limit_mb))
            print(json.dumps(rows[-1], indent=1), flush=True)
    print("load average at the end:", os.getloadavg())
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
