"""The modules of a run by dotted name, an accessor beside the project index: files are named
the way `vjplint.project.index` names them (the chain of directories with an `__init__.py` above a
file is its package), so that a fix can follow an imported fwd/bwd rule to its file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from vjplint.project.index import _module_name, _package  # the index's own naming, not a second one


class RunModules:
    """dotted module name <-> path for the files of one run."""

    def __init__(self, files: Iterable[Path]) -> None:
        self.by_name: Dict[str, Path] = {}
        self.ambiguous: Dict[str, List[Path]] = {}  # a name several files of the run have
        self.package_of: Dict[Path, str] = {}
        has_init: Dict[str, bool] = {}
        for path in files:
            path = Path(path)
            if path.suffix != ".py":
                continue
            package = _package(os.path.dirname(os.path.abspath(path)), has_init)
            self.package_of[path] = package
            name = _module_name(package, path)
            first = self.by_name.setdefault(name, path)
            if first != path:  # two `utils.py` outside packages: which one an import means depends on sys.path
                self.ambiguous.setdefault(name, [first]).append(path)

    def absolute(self, qualname: str, importer: Path) -> Optional[str]:
        """`qualname` as an import in `importer` spells it (`.rules.f_fwd`), made absolute."""
        if not qualname.startswith("."):
            return qualname
        level = len(qualname) - len(qualname.lstrip("."))
        package = self.package_of.get(Path(importer), "")
        parts = package.split(".") if package else []
        if level - 1 > len(parts):
            return None
        base = parts[:len(parts) - (level - 1)]
        rest = qualname[level:]
        return ".".join([*base, rest]) if rest else None

    def defining_file(self, qualname: str, importer: Path) -> Optional[Tuple[Path, str]]:
        """(file, top-level name) when `qualname` is `module.name` for one module of the run;
        raises LookupError when several files of the run have that module name."""
        absolute = self.absolute(qualname, importer)
        if not absolute or "." not in absolute:
            return None
        module, name = absolute.rsplit(".", 1)
        if module in self.ambiguous:
            raise LookupError(f"`{module}` names {len(self.ambiguous[module])} files of this run "
                              f"({', '.join(str(p) for p in self.ambiguous[module][:2])}, ...)")
        path = self.by_name.get(module)
        return (path, name) if path is not None else None
