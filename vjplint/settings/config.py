"""`[tool.vjplint]` discovery, validation and rule selection."""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from vjplint.errors import ConfigError
from vjplint.settings.cache_files import CACHE_DIR_NAME
from vjplint.settings.redirects import redirect_all


def _tomllib():
    """Imported when a pyproject.toml is found, not on every start (it pulls in datetime)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


KNOWN_KEYS = {
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
    "respect-gitignore", "array-names", "static-names", "custom-vjp-aliases", "custom-jvp-aliases",
    "target", "verify", "cache-dir", "extend", "docs-url", "notebooks",
    "extend-ignore", "fixable", "unfixable", "extend-fixable",
}
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox", ".pants.d",
    ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__", "_build", "buck-out",
    "build", "dist", "node_modules", "venv", ".vjplint_cache",
)
TARGETS = ("current", "vjp3")


@dataclass(frozen=True)
class Config:
    """The settings of a run or a file: pyproject.toml's [tool.vjplint] with the command line on top."""

    select: Optional[Tuple[str, ...]] = None  # None: the default set
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    extend_ignore: Tuple[str, ...] = ()  # ruff's deprecated spelling: added to `ignore`
    # Which rules' fixes are offered and applied (ruff's keys): None is every rule ("ALL").
    fixable: Optional[Tuple[str, ...]] = None
    unfixable: Tuple[str, ...] = ()
    extend_fixable: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    respect_gitignore: bool = True
    notebooks: bool = True  # discover and lint `.ipynb` files (vjplint.syntax.notebook), as ruff does
    array_names: FrozenSet[str] = frozenset()
    static_names: FrozenSet[str] = frozenset()
    custom_vjp_aliases: Tuple[Tuple[str, str], ...] = ()
    custom_jvp_aliases: Tuple[Tuple[str, str], ...] = ()
    target: str = "current"
    # Not hashed (its examples are a table): a Config is hashable, the key of the run's memos by value.
    verify: Tuple[Tuple[str, Any], ...] = field(default=(), hash=False)
    cache_dir: Optional[str] = None
    docs_url: Optional[str] = None  # where rule links point (vjplint.links); None: the shipped pages
    root: Optional[str] = None  # the directory holding the pyproject.toml
    source: Optional[str] = None  # the pyproject.toml read, if any

    # -- rule selection -------------------------------------------------------------------
    def enabled_codes(self, all_codes: Sequence[str], default_off: FrozenSet[str]) -> FrozenSet[str]:
        # Off-by-default rules are enabled by their exact code or by target = "vjp3", never by a
        # prefix: `--select VJP1` keeps meaning "the VJP1xx rules you get by default".
        def picked(code: str, selectors: Sequence[str]) -> bool:
            if code in default_off:
                return code in selectors or (self.target == "vjp3" and _matches(code, selectors))
            return _matches(code, selectors)

        if self.select is None:
            chosen = {c for c in all_codes if c not in default_off or self.target == "vjp3"}
        else:
            chosen = {c for c in all_codes if picked(c, self.select)}
        chosen |= {c for c in all_codes if picked(c, self.extend_select)}
        chosen -= {c for c in all_codes if _matches(c, self.ignore) or _matches(c, self.extend_ignore)}
        return frozenset(chosen)

    def fix_allowed(self, code: str) -> bool:
        """Whether `code`'s fixes are offered (`fixable` + `extend-fixable`, less `unfixable`: ruff's)."""
        fixable = ("ALL",) if self.fixable is None else self.fixable
        return (_matches(code, fixable) or _matches(code, self.extend_fixable)) and not _matches(code, self.unfixable)

    @property
    def all_fixable(self) -> bool:
        return self.fixable is None and not self.unfixable

    def relative_path(self, path: str) -> str:
        """`path` relative to the directory of this configuration's pyproject.toml, which is what
        `per-file-ignores` and `exclude` patterns are matched against (ruff's rule); paths outside
        it, and every path when there is no configuration file, stay as given."""
        if not self.root:
            return path
        absolute = os.path.abspath(path)
        root = self.root.rstrip(os.sep) + os.sep
        return os.path.relpath(absolute, self.root) if absolute.startswith(root) else path

    def ignored_for(self, relative_path: str) -> Tuple[str, ...]:
        """The codes `per-file-ignores` turns off for a path relative to `root` (relative_path())."""
        codes: List[str] = []
        for pattern, ignored in self.per_file_ignores:
            if _glob_match(relative_path, pattern):
                codes.extend(ignored)
        return tuple(codes)

    def fingerprint(self) -> str:
        """A stable text for cache keys: every setting that changes results (what the run derives
        about a file, vjplint.model.run_facts.RunFacts, adds its own fingerprint)."""
        return repr((self.select, self.ignore, self.extend_select, self.extend_ignore, self.fixable,
                     self.unfixable, self.extend_fixable, self.per_file_ignores,
                     sorted(self.array_names), sorted(self.static_names), self.custom_vjp_aliases,
                     self.custom_jvp_aliases, self.target, self.root))


def _matches(code: str, selectors: Sequence[str]) -> bool:
    return any(s == "ALL" or code.startswith(s) for s in selectors)


def _glob_match(path: str, pattern: str) -> bool:
    path = path.replace("\\", "/")
    return fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(Path(path).name, pattern)


def read_tool_table(path: Path) -> Optional[Dict[str, Any]]:
    """`[tool.vjplint]` of a pyproject.toml, or None when it has none. Raises ConfigError for a
    file that cannot be read or parsed, or whose table is not a table."""
    tomllib = _tomllib()
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:  # TOML files are UTF-8
        raise ConfigError(f"{shown(path)} is not valid TOML: {exc}") from None
    tool = data.get("tool")
    if not isinstance(tool, dict) or "vjplint" not in tool:
        return None
    if not isinstance(tool["vjplint"], dict):
        raise ConfigError(f"{shown(path)}: [tool.vjplint] must be a table")
    return tool["vjplint"]


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml with a [tool.vjplint] table, from `start` (a file or a directory)
    upwards; a file that cannot be parsed is returned too (load_config reports it)."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                if read_tool_table(candidate) is not None:
                    return candidate
            except ConfigError:
                return candidate
    return None


def load_config(path: Optional[Path]) -> Config:
    """The configuration in `path` (None: the defaults), with its `extend` chain resolved."""
    if path is None:
        return Config()
    return config_from_table(_extended_table(path, ()), path)


# Keys whose values add up along an `extend` chain (ruff's extend-* keys); every other key of the
# extending file replaces the base's.
ACCUMULATED = ("extend-select", "extend-exclude", "extend-ignore", "extend-fixable")


def _extended_table(path: Path, chain: Tuple[Path, ...]) -> Dict[str, Any]:
    real = path.resolve()
    if real in chain:
        cycle = " -> ".join(str(p) for p in (*chain, real))
        raise ConfigError(f"{shown(path)}: `extend` forms a cycle: {cycle}")
    table = read_tool_table(path)
    if table is None:
        if chain:  # a base without the table contributes nothing
            return {}
        raise ConfigError(f"{shown(path)}: no [tool.vjplint] table")
    table = dict(table)
    base_name = table.pop("extend", None)
    if base_name is None:
        return table
    if not isinstance(base_name, str):
        raise ConfigError(f"{shown(path)}: `extend` must be the path of another pyproject.toml")
    base_path = (path.parent / os.path.expanduser(base_name))
    if base_path.is_dir():
        base_path = base_path / "pyproject.toml"
    if not base_path.is_file():
        raise ConfigError(f"{shown(path)}: `extend` names {base_name!r}, which is not a file")
    base = _extended_table(base_path, (*chain, real))
    merged = {**base, **table}
    for key in ACCUMULATED:
        if key in base and key in table and isinstance(base[key], list) and isinstance(table[key], list):
            merged[key] = [*base[key], *table[key]]
    return merged


def config_from_table(table: Dict[str, Any], path: Optional[Path] = None) -> Config:
    where = f"{shown(path)}: " if path else ""
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{where}unknown key{'s' if len(unknown) > 1 else ''} in [tool.vjplint]: "
                          f"{', '.join(_with_suggestion(k, KNOWN_KEYS) for k in unknown)} "
                          f"(known keys: {', '.join(sorted(KNOWN_KEYS))})")

    def codes(key: str) -> Tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}`{key}` must be a list of rule codes")
        check_selectors(value, f"{where}`{key}`")
        return redirect_all(value)  # a merged code names the code it was merged into

    def strings(key: str) -> Tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}`{key}` must be a list of strings")
        return tuple(value)

    def aliases(key: str) -> Tuple[Tuple[str, str], ...]:
        value = table.get(key, {})
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple((v, "nondiff_argnums") for v in value)
        if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            return tuple(sorted(value.items()))
        raise ConfigError(f"{where}`{key}` must be a list of qualified names or a table "
                          f"{{\"mylib.custom_vjp\" = \"static_argnums\"}}")

    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where}`per-file-ignores` must be a table of glob = [codes]")
    per_file_items = []
    for pattern, value in per_file.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}`per-file-ignores.{pattern}` must be a list of rule codes")
        check_selectors(value, f"{where}`per-file-ignores.{pattern}`")
        per_file_items.append((pattern, redirect_all(value)))
    target = table.get("target", "current")
    if target not in TARGETS:
        raise ConfigError(f"{where}`target` must be one of {', '.join(map(repr, TARGETS))}, not {target!r}")
    respect = table.get("respect-gitignore", True)
    if not isinstance(respect, bool):
        raise ConfigError(f"{where}`respect-gitignore` must be true or false")
    notebooks = table.get("notebooks", True)
    if not isinstance(notebooks, bool):
        raise ConfigError(f"{where}`notebooks` must be true or false")
    verify = table.get("verify", {})
    if not isinstance(verify, dict):
        raise ConfigError(f"{where}[tool.vjplint.verify] must be a table")
    verify_settings(verify, where, None)  # checked now: every command reports it the same way
    cache_dir = table.get("cache-dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"{where}`cache-dir` must be a string")
    docs_url = table.get("docs-url")
    if docs_url is not None and (not isinstance(docs_url, str) or not docs_url):
        raise ConfigError(f"{where}`docs-url` must be a URL (CODE.md is appended, or `{{code}}` replaced)")
    return Config(
        select=codes("select") if "select" in table else None,
        ignore=codes("ignore"),
        extend_select=codes("extend-select"),
        extend_ignore=codes("extend-ignore"),
        fixable=codes("fixable") if "fixable" in table else None,
        unfixable=codes("unfixable"),
        extend_fixable=codes("extend-fixable"),
        exclude=strings("exclude") if "exclude" in table else DEFAULT_EXCLUDE,
        extend_exclude=strings("extend-exclude"),
        per_file_ignores=tuple(per_file_items),
        respect_gitignore=respect,
        notebooks=notebooks,
        array_names=frozenset(strings("array-names")),
        static_names=frozenset(strings("static-names")),
        custom_vjp_aliases=aliases("custom-vjp-aliases"),
        custom_jvp_aliases=aliases("custom-jvp-aliases"),
        target=target,
        verify=tuple(sorted(verify.items())),
        cache_dir=cache_dir,
        docs_url=docs_url,
        root=str(path.parent) if path else None,
        source=str(path) if path else None,
    )


def with_overrides(config: Config, *, select: Optional[Sequence[str]] = None,
                   ignore: Sequence[str] = (), extend_select: Sequence[str] = (),
                   extend_ignore: Sequence[str] = (), fixable: Optional[Sequence[str]] = None,
                   unfixable: Sequence[str] = (), extend_fixable: Sequence[str] = ()) -> Config:
    """Command-line options override the file (ruff's semantics): `--select` and `--fixable`
    replace the file's list, the others add to it."""
    for name, values in (("--select", select or ()), ("--ignore", ignore), ("--extend-select", extend_select),
                         ("--extend-ignore", extend_ignore), ("--fixable", fixable or ()),
                         ("--unfixable", unfixable), ("--extend-fixable", extend_fixable)):
        check_selectors(values, name)
    for name, given in (("--select", select), ("--fixable", fixable)):
        if given is not None and not given:
            raise ConfigError(f"{name}: no rule codes given (an empty value would select nothing)")
    return replace(
        config,
        select=redirect_all(select) if select is not None else config.select,
        ignore=config.ignore + redirect_all(ignore),
        extend_select=config.extend_select + redirect_all(extend_select),
        extend_ignore=config.extend_ignore + redirect_all(extend_ignore),
        fixable=redirect_all(fixable) if fixable is not None else config.fixable,
        unfixable=config.unfixable + redirect_all(unfixable),
        extend_fixable=config.extend_fixable + redirect_all(extend_fixable),
    )


_SELECTOR = re.compile(r"^(ALL|VJP\d{0,3})$")


def check_selectors(selectors: Sequence[str], where: str) -> None:
    """The shape of rule selectors; whether each names an existing rule is the workspace's check
    (vjplint.project.workspace), which knows the rules."""
    for selector in selectors:
        if not _SELECTOR.match(selector):
            raise ConfigError(f"{where}: unknown rule code or prefix {selector!r}")


DEFAULT_VERIFY_TIMEOUT = 120.0
VERIFY_KEYS = ("examples", "timeout", "python")


def verify_settings(table: Dict[str, Any], where: str, root: Optional[str]) -> Tuple[Tuple[Tuple[str, str], ...], float, Optional[str]]:
    """(examples, timeout, python) of a [tool.vjplint.verify] table; ConfigError when it is wrong."""
    unknown = sorted(set(table) - set(VERIFY_KEYS))
    if unknown:
        raise ConfigError(f"{where}unknown key{'s' if len(unknown) > 1 else ''} in [tool.vjplint.verify]: "
                          f"{', '.join(_with_suggestion(k, VERIFY_KEYS) for k in unknown)} "
                          f"(known keys: {', '.join(VERIFY_KEYS)})")
    examples = table.get("examples", {})
    if not isinstance(examples, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and ":" in v for k, v in examples.items()):
        raise ConfigError(f"{where}[tool.vjplint.verify] `examples` must be a table "
                          f"{{\"module.function\" = \"module:make_args\"}}")
    timeout = table.get("timeout", DEFAULT_VERIFY_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{where}[tool.vjplint.verify] `timeout` must be a positive number of seconds")
    python = table.get("python")
    if python is not None and not isinstance(python, str):
        raise ConfigError(f"{where}[tool.vjplint.verify] `python` must be a path to an interpreter")
    if python is not None and root and not os.path.isabs(python) and os.sep in python:
        python = os.path.join(root, python)
    return tuple(sorted(examples.items())), float(timeout), python


def shown(path: "os.PathLike[str] | str") -> str:
    """A configuration file's name in messages: relative to the working directory when inside it."""
    text = os.fspath(path)
    absolute = os.path.abspath(text)
    cwd = os.getcwd().rstrip(os.sep) + os.sep
    return os.path.relpath(absolute) if absolute.startswith(cwd) else text


def _with_suggestion(key: str, known: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f"{key} (did you mean {close[0]!r}?)" if close else key


def cache_root(config: Config) -> Path:
    """`cache-dir` (absolute, or relative to the pyproject.toml's directory), else `.vjplint_cache`
    beside the pyproject.toml, else in the working directory."""
    base = Path(config.root) if config.root else Path.cwd()
    if config.cache_dir:
        return base / os.path.expanduser(config.cache_dir)
    return base / CACHE_DIR_NAME
