"""A small document's diagnostics while a big one is linted, under `lintOnChangeMaxSize` (the
server's own threads) or over it (the far process).

The big module (big_document_stall.py's: one custom_vjp with VJP305, then small functions) and
a 30-line module are opened at once in `vjplint server`, the big one first; printed: the seconds
from the big `didOpen` to each document's first diagnostics.

    python benchmarks/under_limit.py [--mb 5] [--limit 6000000]    (--limit 1000000: the far process)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
import big_document  # noqa: E402
import big_document_stall  # noqa: E402
from big_document import Server  # noqa: E402


def measure(mb: float, limit: int, workdir: Path) -> Dict[str, Any]:
    big_text = big_document_stall.big_module(mb)
    (workdir / "big.py").write_text(big_text)
    (workdir / "small.py").write_text(big_document_stall.HEAD)
    server = Server(workdir, {"lintOnChangeMaxSize": limit})
    big, small = (workdir / "big.py").as_uri(), (workdir / "small.py").as_uri()
    start = time.perf_counter()
    for uri, text in ((big, big_text), (small, big_document_stall.HEAD)):
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": text}})
    first: Dict[str, float] = {}

    def record(message: Dict[str, Any]) -> bool:
        if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] in (big, small):
            first.setdefault(message["params"]["uri"], time.perf_counter() - start)
        return len(first) == 2

    server.wait(record)
    server.close()
    return {"MB": mb, "lintOnChangeMaxSize": limit, "small document's diagnostics s": round(first[small], 2),
            "big document's diagnostics s": round(first[big], 2), "load": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=5.0)
    parser.add_argument("--limit", type=int, default=6_000_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(measure(options.mb, options.limit, Path(tmp))))


if __name__ == "__main__":
    main()
