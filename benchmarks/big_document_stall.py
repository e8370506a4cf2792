"""Does a big document stall the server? A small document's code action while a 10 MB one is analysed.

A module of about 10 MB (the issue's probe: one custom_vjp with a VJP305 bug, then ordinary JAX
code, about 14 bytes a line) is opened in `vjplint server` (default settings: it is over
`lintOnChangeMaxSize`, so it is analysed in the server's far process, vjplint.server.far);
at once a 30-line module with its own VJP305 bug is opened, and, until the big document's
diagnostics arrive, a quick-fix `codeAction` on the small one is sent every --every seconds:
each one's latency (request written -> answer read). Then, with the big document analysed, one
more after a one-character edit of it (`didChange`, then `didSave`: analysed again), and a
`vjplint.applyAutofix` on the big document (its fix-all waits for that analysis) cancelled
with `$/cancelRequest`: the time to the cancel's answer. Reported: the small document's code
action latencies (count, median, max), the big document's time to diagnostics, the cancel's.

    python benchmarks/big_document_stall.py [--mb 10] [--every 0.25] [--limit CHARS] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
import big_document  # noqa: E402
from big_document import Server  # noqa: E402

# the server finds this vjplint first, then what the caller's PYTHONPATH holds (pygls, say)
big_document.ENV["PYTHONPATH"] = os.pathsep.join(p for p in (str(big_document.ROOT), os.environ.get("PYTHONPATH"))
                                                 if p)

HEAD = '''import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(g):
    return (g,)


clip.defvjp(clip_fwd, clip_bwd)

'''
FILLER = '''
def layer_{i}(params, x):
    h = jnp.dot(x, params[{i}])
    h = jax.nn.gelu(h)
    return x + 0.5 * h
'''


def big_module(mb: float) -> str:
    parts, size, i = [HEAD], len(HEAD), 0
    while size < mb * 1e6:
        block = FILLER.format(i=i)
        parts.append(block)
        size += len(block)
        i += 1
    return "".join(parts)


def code_action(uri: str) -> Dict[str, Any]:
    return {"textDocument": {"uri": uri}, "range": {"start": {"line": 13, "character": 0},
                                                   "end": {"line": 13, "character": 0}},
            "context": {"diagnostics": [], "only": ["quickfix"]}}


def server_cpu_ms(server: Server) -> float:
    """CPU the server's threads have used so far (ms; Linux: each live thread's schedstat, in ns),
    the machine's load left out: what the server itself had to do while a request waited."""
    total = 0
    for task in Path(f"/proc/{server.proc.pid}/task").glob("*"):
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            pass
    return total / 1e6


def decoder_cpu_ms(server: Server) -> float:
    """CPU of the server's decoder process so far (vjplint.server.far_decode; ms; 0 if none):
    the big message's JSON decode, done on another CPU than the server's."""
    total = 0
    for task in Path(f"/proc/{server.proc.pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                if b"\0-I\0-S\0-c\0" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue
                total += sum(int((t / "schedstat").read_text().split()[0]) for t in Path(f"/proc/{pid}/task").glob("*"))
            except (OSError, ValueError, IndexError):
                pass
    return total / 1e6


def small_action(server: Server, uri: str, n: int) -> float:
    start = time.perf_counter()
    return server.request("textDocument/codeAction", code_action(uri), f"small-{n}") - start


def measure(mb: float, every: float, workdir: Path, options: Dict[str, Any]) -> Dict[str, Any]:
    big_text = big_module(mb)
    big, small = workdir / "big.py", workdir / "small.py"
    big.write_text(big_text, encoding="utf-8")
    small.write_text(HEAD, encoding="utf-8")
    server = Server(workdir, options)
    row: Dict[str, Any] = {"MB": round(len(big_text.encode()) / 1e6, 2), "lines": big_text.count("\n")}
    server.notify("textDocument/didOpen", {"textDocument": {"uri": small.as_uri(), "languageId": "python",
                                                            "version": 1, "text": HEAD}})
    server.wait(server.published(1))
    small_action(server, small.as_uri(), 0)  # the fix machinery's first use, before the big document
    big_published: List[Any] = []

    def big_done(message: Dict[str, Any]) -> bool:
        done = message.get("method") == "textDocument/publishDiagnostics" and \
            message["params"]["uri"] == big.as_uri()
        if done:
            big_published.append(message["params"])
        return done

    measured = Path(f"/proc/{server.proc.pid}/task").is_dir()
    cpu_before = server_cpu_ms(server) if measured else 0.0
    start = time.perf_counter()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": big.as_uri(), "languageId": "python",
                                                            "version": 1, "text": big_text}})
    row["big didOpen written s"] = round(time.perf_counter() - start, 3)
    latencies: List[float] = []
    n = 0
    while not big_published:
        n += 1
        cpu_sent = server_cpu_ms(server) if measured else 0.0
        sent = time.perf_counter()
        server.write({"id": f"small-{n}", "method": "textDocument/codeAction", "params": code_action(small.as_uri())})
        answered = server.wait(lambda m: big_done(m) or (m.get("id") == f"small-{n}" and "method" not in m))
        if big_published:  # the big document's diagnostics came first: this answer follows
            answered = server.wait(lambda m: m.get("id") == f"small-{n}" and "method" not in m)
        latencies.append(answered - sent)
        if n == 1 and measured:  # the server's CPU: taking the big document in, and the first answer's wait
            cpu_answered = server_cpu_ms(server)
            row["server CPU ms: didOpen written -> first answer"] = round(cpu_answered - cpu_before, 1)
            row["server CPU ms: first request written -> its answer"] = round(cpu_answered - cpu_sent, 1)
            row["decoder process CPU ms by then (another CPU)"] = round(decoder_cpu_ms(server), 1)
        time.sleep(every)
    row["big didOpen -> diagnostics s"] = round(time.perf_counter() - start, 2)
    row["big diagnostics"] = [d["code"] for d in big_published[0]["diagnostics"]]
    row["small codeAction while the big one is analysed: count"] = len(latencies)
    row["... median ms"] = round(1000 * statistics.median(latencies), 1)
    row["... max ms"] = round(1000 * max(latencies), 1)
    row["... max at request"] = latencies.index(max(latencies)) + 1  # the first is sent right after didOpen
    row["... each ms"] = [round(1000 * x, 1) for x in latencies]
    # an edit and a save of the big document: analysed again; a fix-all on it, cancelled
    server.notify("textDocument/didChange", {"textDocument": {"uri": big.as_uri(), "version": 2}, "contentChanges": [{
        "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}}, "text": "#"}]})
    server.notify("textDocument/didSave", {"textDocument": {"uri": big.as_uri()}})
    row["small codeAction after the big one's edit and save ms"] = round(1000 * small_action(server, small.as_uri(), -1), 1)
    server.write({"id": "fix-all", "method": "workspace/executeCommand",
                  "params": {"command": "vjplint.applyAutofix", "arguments": [{"uri": big.as_uri()}]}})
    time.sleep(0.1)  # it waits for the analysis of the save, then runs `--fix` on 10 MB
    sent = time.perf_counter()
    server.notify("$/cancelRequest", {"id": "fix-all"})
    answer: List[Any] = []
    at = server.wait(lambda m: m.get("id") == "fix-all" and "method" not in m and not answer.append(m))
    row["$/cancelRequest -> answer ms"] = round(1000 * (at - sent), 1)
    row["... answer"] = answer[0].get("error", answer[0].get("result"))
    server.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=0.25, help="seconds between the small document's requests")
    parser.add_argument("--limit", type=int, default=None,
                        help="the server's lintOnChangeMaxSize (default: its own, 1,000,000 characters)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    options = {} if args.limit is None else {"lintOnChangeMaxSize": args.limit}
    with tempfile.TemporaryDirectory() as tmp:
        row = measure(args.mb, args.every, Path(tmp), options)
    row["load average at the end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(row, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
