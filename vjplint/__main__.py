import os
import sys

# `python -m vjplint` puts the working directory first on sys.path, where a user's `ast.py` or
# `token.py` would shadow the standard library; the linter never imports user code.
if sys.path and sys.path[0] in ("", ".", os.getcwd()):
    sys.path.pop(0)

from vjplint.cli import run  # noqa: E402

sys.exit(run())
