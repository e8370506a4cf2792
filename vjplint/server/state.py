"""The Language Server's document state: the client's settings, each open document's text,
version and last analysis, and the settings of its file (the workspace layer, the project index)."""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.uris import to_fs_path

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.diagnostics import Diagnostic
from vjplint.errors import ConfigError
from vjplint.output import lsp as lspfmt
from vjplint.server.indexing import uri_path as _path
from vjplint.server.lint_helper import SPLIT_MIN_LINES
from vjplint.project.workspace import Overrides, Workspace
from vjplint.project.discover import _excluded as excluded
from vjplint.server import edits
from vjplint.syntax.positions import source_lines
from vjplint.server.notebooks import notebook_text

log = logging.getLogger("vjplint.server")


FIX_ALL_KIND = "source.fixAll.vjplint"
PYTHON_SUFFIXES = (".py", ".pyi")
CMD_FIX_ALL = "vjplint.applyAutofix"
CMD_DEBUG = "vjplint.printDebugInformation"
FEW_DIAGNOSTICS = 100  # a big document with at most this many: its lines found when asked (edits.Lines)


@dataclass
class Settings:
    """Client settings (initializationOptions or workspace/didChangeConfiguration)."""

    configuration: Optional[str] = None  # an explicit pyproject.toml
    select: Optional[Tuple[str, ...]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    unsafe_fixes: bool = False  # let fix-all apply unsafe fixes too
    fix_all: bool = True
    disable_rule_comment: bool = True
    debounce_ms: int = 0  # bursts coalesce anyway (one queued lint per document, superseded ones stop)
    diagnostic_mode: str = "auto"  # "push", "pull", or "auto": pull when the client can
    # A document longer than this (characters) is linted when opened and saved, not at each edit
    # (docs/editors-and-ci.md, "big documents"; docs/performance.md, "Big documents"); 0: no limit.
    lint_on_change_max_size: int = 1_000_000

    @classmethod
    def from_options(cls, options: Any, base: Optional["Settings"] = None) -> "Settings":
        base = base or cls()
        if not isinstance(options, dict):
            return base
        for key in ("settings", "vjplint"):  # {"settings": {...}} (ruff's shape) or {"vjplint": {...}}
            if isinstance(options.get(key), dict):
                options = options[key]
        get = options.get
        codes = lambda v: tuple(str(c) for c in v) if isinstance(v, list) else None  # noqa: E731
        action = get("codeAction") if isinstance(get("codeAction"), dict) else {}
        rule_comment = action.get("disableRuleComment", {})
        return replace(
            base,
            configuration=get("configuration", base.configuration),
            select=codes(get("select")) if "select" in options else base.select,
            extend_select=codes(get("extendSelect")) or base.extend_select,
            ignore=codes(get("ignore")) or base.ignore,
            unsafe_fixes=bool(get("unsafeFixes", base.unsafe_fixes)),
            fix_all=bool(get("fixAll", base.fix_all)),
            disable_rule_comment=bool(rule_comment.get("enable", base.disable_rule_comment)
                                      if isinstance(rule_comment, dict) else base.disable_rule_comment),
            debounce_ms=int(get("debounceMs", base.debounce_ms)),
            diagnostic_mode=str(get("diagnosticMode", base.diagnostic_mode)),
            lint_on_change_max_size=int(get("lintOnChangeMaxSize", base.lint_on_change_max_size)),
        )


@dataclass
class Analysis:
    text: str
    diagnostics: List[Diagnostic]
    config: Config
    filename: str
    path: Optional[str] = None  # the file on disk, when the document is one
    facts: RunFacts = NO_FACTS  # what the project index derives about it (vjplint.model.run_facts)
    errors: List[str] = field(default_factory=list)
    fixed_text: Dict[bool, Optional[str]] = field(default_factory=dict)  # unsafe? -> fix-all result
    named_elsewhere: Dict[str, str] = field(default_factory=dict)  # custom_vjp -> why its fix is unsafe
    residual_plans: Tuple[Any, ...] = ()  # the fixes another module may feel, before any was made unsafe
    named_checked: bool = False  # whether the workspace index was there to ask (named_elsewhere)
    far: bool = False  # analysed in the far process (a big document: vjplint.server.far)
    _lines: Optional[Sequence[str]] = field(default=None, repr=False)

    def lines(self) -> Sequence[str]:
        """The text's lines, split once; a big document's found one by one when asked (edits.Lines)."""
        if self._lines is None:
            few = self.far and len(self.diagnostics) <= FEW_DIAGNOSTICS and "\r" not in self.text
            self._lines = edits.Lines(self.text) if few else source_lines(self.text)
        return self._lines


class DocumentState:
    """Mixed into VjplintServer: open documents and the settings that apply to them."""

    # -- configuration -----------------------------------------------------------------
    def reset_configuration(self) -> None:
        with self.lock:
            self.project = None
            self.reset_index()
            self.analyses.clear()
            self.linters.clear()
            self.reported_config_errors.clear()

    def config_for(self, path: Optional[Path], wait: float = 0.0) -> Tuple[Config, RunFacts]:
        """The settings of a document: resolved by the same workspace layer as the command line
        (each file's nearest [tool.vjplint], or the client's explicit configuration), with the
        client's rule selection on top; beside them, what the run derives about it: its folder's
        wrappers and what the folder's other modules pass to, register on and call in it
        (vjplint.server.indexing; the first lint of a folder waits `wait` seconds for them at
        most). A broken configuration is reported and the defaults used."""
        with self.lock:
            if self.project is None:
                explicit = self.settings.configuration
                overrides = Overrides(select=self.settings.select, ignore=self.settings.ignore,
                                      extend_select=self.settings.extend_select)
                try:
                    self.project = Workspace(overrides, os.path.expanduser(explicit) if explicit else None)
                except ConfigError as exc:
                    self.config_error(f"vjplint settings: {exc}")
                    self.project = Workspace()
            directory = path.parent if path is not None else self.workspace_root()
            try:
                config = self.project.settings_for_dir(str(directory) if directory is not None else os.getcwd())
            except ConfigError as exc:
                self.config_error(str(exc))
                return Config(), NO_FACTS
        folder = self.folder_of(path) if path is not None else None
        if folder is None or path is None:
            return config, NO_FACTS
        return self.indexed_config(config, folder, path, wait)

    def folder_of(self, path: Path) -> Optional[str]:
        """The workspace folder holding `path` (the innermost), else the root."""
        folders = []
        try:
            folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        except Exception:  # not initialized yet
            pass
        root = self.workspace_root()
        inside = [f for f in [*folders, str(root) if root else None]
                  if f and (str(path) + os.sep).startswith(f.rstrip(os.sep) + os.sep)]
        return max(inside, key=len) if inside else None

    def refresh_pulls(self) -> None:
        if _capability(self.client_capabilities, "workspace", "diagnostics", "refresh_support"):
            self.workspace_diagnostic_refresh(None)

    def refresh_wrappers(self, uri: str) -> None:
        """After a Python file is saved: rebuild its folder's wrappers in the background; the
        open documents whose settings change are then linted again (Indexing.refresh_folder)."""
        path = _path(uri)
        folder = self.folder_of(path) if path is not None else None
        # also while the folder's first index is being built: that build may have read the file
        # before this save, and the newest build wins
        if folder is not None and (folder in self.wrappers or folder in self.indexing):
            self.start_index(folder, facts=False, again=True)

    def config_error(self, message: str) -> None:
        log.error("%s", message)
        if message not in self.reported_config_errors:
            self.reported_config_errors.add(message)
            self.call_soon(self.window_show_message, types.ShowMessageParams(
                type=types.MessageType.Error, message=f"vjplint: {message} (using the default settings)"))

    def workspace_root(self) -> Optional[Path]:
        try:
            root = self.workspace.root_path
        except Exception:  # not initialized yet
            return None
        return Path(root) if root else None

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Send from the event loop's thread, whatever thread we are on (pygls' writer is not
        thread-safe)."""
        loop = self.event_loop
        if loop is None or threading.get_ident() == self.loop_thread:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def too_big_to_lint_on_change(self, uri: str) -> bool:
        """Whether an open document is over `lintOnChangeMaxSize`: then it is linted when opened
        and saved only (its text then kept in `save_only` for pulls), and its user told so once.
        A one-line edit of a 10 MB module costs seconds to lint again: typing would queue lints
        behind each other (docs/performance.md, "Big documents")."""
        limit = self.settings.lint_on_change_max_size
        text = self.document(uri)
        if text is None or limit <= 0 or len(text) <= limit:
            self.save_only.pop(uri, None)
            return False
        if uri not in self.save_only:
            self.saved(uri)
        if uri not in self.told_save_only:
            self.told_save_only.add(uri)
            name = _path(uri).name if _path(uri) is not None else uri
            told = types.ShowMessageParams(type=types.MessageType.Info, message=(
                f"vjplint: {name} is {_size(len(text))}, over lintOnChangeMaxSize "
                f"({limit:,}): it is linted when opened and saved, not at each edit"))
            loop = self.event_loop
            if loop is None:
                self.window_show_message(told)
            else:  # after the messages read with the document's (its first sending costs 30 ms)
                loop.call_soon_threadsafe(self.window_show_message, told)
        return True

    def saved(self, uri: str) -> None:
        """A big document's text to lint now (opened or saved), with its version."""
        self.save_only[uri] = self.document(uri) or ""
        self.save_only_versions[uri] = self.versions.get(uri)

    def document(self, uri: str) -> Optional[str]:
        if uri not in self.versions:
            return None
        return self.workspace.get_text_document(uri).source

    def version_of(self, uri: str) -> Optional[int]:
        """The version of an open document or notebook (None when it is not open)."""
        return self.versions.get(uri, self.notebook_versions.get(uri))

    def buffer_text(self, uri: str) -> Optional[str]:
        """The text of an open document, or a notebook's code cells as one module (None when it
        is not open)."""
        if uri in self.notebook_versions:
            joined = self.notebook_joined(uri)
            return joined.text if joined is not None else None
        return self.document(uri)

    def notebook_joined(self, uri: str) -> Any:
        """An open notebook's code cells as one module (vjplint.server.notebooks.NotebookText)."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        cells = []
        for cell in notebook.cells:
            document = self.workspace.text_documents.get(cell.document)
            python = cell.kind == types.NotebookCellKind.Code and document is not None and \
                document.language_id in (None, "python")
            cells.append((cell.document, python, document.source if document is not None else ""))
        return notebook_text(cells)

    def lintable(self, uri: str) -> bool:
        doc = self.workspace.get_text_document(uri)
        return doc.language_id == "python" or uri.endswith(PYTHON_SUFFIXES)

    def encoding(self) -> str:
        try:
            value = self.workspace.position_encoding
        except Exception:
            return lspfmt.UTF16
        return str(getattr(value, "value", value) or lspfmt.UTF16)


class _EarlyShare:
    """A first lint sent to the helper at didOpen: the text, then its settings and the share."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ready = threading.Event()
        self.key: Optional[Tuple[str, Optional[str], Config, RunFacts]] = None
        self.split: Optional[Any] = None


def _size(characters: int) -> str:
    return f"{characters / 1e6:.1f} million characters" if characters >= 1e6 else f"{characters:,} characters"


def _big(text: str) -> bool:
    return text.count("\n") + 1 >= SPLIT_MIN_LINES


def _copy(d: Diagnostic) -> Diagnostic:
    copy = object.__new__(Diagnostic)  # field by field, 5x cheaper than dataclasses.replace
    copy.__dict__.update(d.__dict__)
    return copy


def _capability(root: Any, *names: str) -> Any:
    for name in names:
        root = getattr(root, name, None)
        if root is None:
            return None
    return root


def _display_name(uri: str, path: Optional[Path], config: Config, root: Optional[Path]) -> str:
    """The name per-file-ignores match against: relative to the project (as on the CLI)."""
    if path is None:
        return uri
    for base in (config.root, root):
        if base:
            try:
                return path.relative_to(base).as_posix()
            except ValueError:
                continue
    return path.as_posix()


def _excluded(path: Path, config: Config) -> bool:
    if not config.root:
        return False

    root = Path(config.root)
    patterns = tuple(config.exclude) + tuple(config.extend_exclude)
    try:
        inside = path.relative_to(root)
    except ValueError:
        return False
    parents = [root / p for p in list(inside.parents)[:-1]]
    return excluded(path, root, patterns) or any(excluded(p, root, patterns) for p in parents)
