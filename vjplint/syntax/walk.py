"""Walking ast trees fast: `child_nodes` and `walk`, `ast.iter_child_nodes` and `ast.walk` without
expression contexts, as lists (the regions, the scopes and most facts walk every node)."""

import ast
import re
from typing import Callable, Dict, List, Tuple

# Fields that never hold nodes (names, flags, and the shared Load/Store/Del singletons):
# skipping them makes a walk about twice as fast as `ast.walk`.
_LEAF_FIELDS = frozenset({"id", "ctx", "attr", "arg", "name", "asname", "module", "level", "kind", "conversion",
                          "is_async", "simple", "type_comment", "tag", "lineno", "rest", "kwd_attrs"})
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}
def child_nodes(node: ast.AST) -> List[ast.AST]:
    """`ast.iter_child_nodes` as a list, in the same order, without expression contexts."""
    try:
        return _CHILDREN[node.__class__](node)
    except KeyError:
        _CHILDREN[node.__class__] = _children_function(node.__class__)
    except AttributeError:  # a node built by hand without some field: the generic walk
        return _child_nodes_generic(node)
    return child_nodes(node)


def _child_fields(cls: type) -> Tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(
            f for f in cls._fields
            if (f not in _LEAF_FIELDS or cls.__name__ == "TypeAlias")  # 3.12's `type X = ...` names a Name
            and not (cls is ast.Constant and f == "value"))
    return names


def _child_nodes_generic(node: ast.AST) -> List[ast.AST]:
    out: List[ast.AST] = []
    for name in _child_fields(node.__class__):
        value = getattr(node, name, None)
        if value.__class__ is list:
            out.extend([v for v in value if isinstance(v, ast.AST)])
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


# The ASDL types that are not nodes (a field of one of these never holds a child).
_ASDL_LEAVES = frozenset({"identifier", "string", "constant", "int"})
_ASDL_FIELD = re.compile(r"([A-Za-z_]+)([*?]?) ([A-Za-z_]+)")
_CHILDREN: Dict[type, Callable[[ast.AST], List[ast.AST]]] = {}


def _children_function(cls: type) -> Callable[[ast.AST], List[ast.AST]]:
    """`_child_nodes_generic` for one node class, written out from the class's ASDL signature
    (its docstring, `Call(expr func, expr* args, keyword* keywords)`): a third of the cost of
    the generic loop, which the scopes' walk runs on every node of every analysed module.
    Falls back to the generic function where the signature cannot be read."""
    names = _child_fields(cls)
    if not names:
        return _no_children
    doc = (cls.__doc__ or "").strip()
    # `Name(fields)` on one line (what `re.fullmatch(re.escape(name) + r"\((.*)\)", doc)` reads,
    # without compiling a pattern per node class: 36 of them on a one-file check)
    head = cls.__name__ + "("
    signature = doc[len(head):-1] if doc.startswith(head) and doc.endswith(")") and "\n" not in doc else None
    kinds = {} if signature is None else {f: (t, q) for t, q, f in _ASDL_FIELD.findall(signature)}
    if set(names) - set(kinds):
        return _child_nodes_generic
    items = []
    for name in names:
        asdl_type, quantifier = kinds[name]
        if asdl_type not in _ASDL_LEAVES:  # a leaf type is never a node
            items.append(f"*node.{name}" if quantifier == "*" else f"node.{name}")
    if not items:
        return _no_children
    # An empty optional field, or an empty slot of a list (`Dict.keys`, `kw_defaults`), is None.
    body = ["def children(node):", f"    out = [{', '.join(items)}]",
            "    return [x for x in out if x is not None] if None in out else out"]
    namespace: Dict[str, object] = {"AST": ast.AST, "_generic": _child_nodes_generic}
    exec("\n".join(body), namespace)  # noqa: S102 - code written from the class's own field names
    return namespace["children"]  # type: ignore[return-value]


def _no_children(node: ast.AST) -> List[ast.AST]:
    return []


def walk(node: ast.AST) -> List[ast.AST]:
    """`ast.walk`'s nodes in its (breadth-first) order, as a list, without expression contexts."""
    out = [node]
    i = 0
    while i < len(out):
        out.extend(child_nodes(out[i]))
        i += 1
    return out
