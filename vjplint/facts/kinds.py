"""What a value is, as `vjplint.facts.value_kinds` finds it: the kind tags (`ARRAY`, `SCALAR`,
`CALLABLE`, ...), `Kind` (a tag with its dtype class, parts, what it captures, `why` and `traced`),
their join (precision first: unknown absorbs, disagreeing evidence is "maybe"), and the kinds an
annotation, a constant or another module's caller gives. Data and pure functions of kinds: readers
that need only these need not load the engine.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from vjplint.facts.crossmodule import ExternalArg, ExternalCall
from vjplint.model.file_model import FileModel

ARRAY, SCALAR, STRING, SHAPE, DTYPE, CALLABLE = "array", "scalar", "string", "shape", "dtype", "callable"
TUPLE, LIST, DICT, RECORD, MODULE, NONE, UNKNOWN, MAYBE = (
    "tuple", "list", "dict", "record", "module", "none", "unknown", "maybe")
STATIC_TAGS = frozenset({SCALAR, STRING, SHAPE, DTYPE, NONE})

ARRAY_ANNOTATIONS = ("jax.Array", "jax.numpy.ndarray", "jax.typing.ArrayLike", "numpy.ndarray",
                     "jax.numpy.DeviceArray", "chex.Array", "chex.ArrayDevice", "numpy.typing.ArrayLike",
                     "numpy.typing.NDArray", "jax.random.KeyArray")

ARRAY_TAILS = frozenset({"Array", "ArrayLike", "ndarray", "NDArray", "DeviceArray", "PRNGKeyArray", "KeyArray",
                         "Float", "Int", "Shaped", "Bool", "Num", "Real", "Inexact", "Integer", "Complex",
                         "Key", "PRNGKey", "UInt", "Float32", "Float64"})

STATIC_TAILS = frozenset({"int", "str", "bool", "float", "complex", "tuple", "Tuple", "Sequence", "Callable",
                          "dtype", "DTypeLike", "Literal", "Enum", "Hashable", "Shape", "type", "Type",
                          "Iterable", "Mapping", "dict", "Dict", "list", "List", "None", "Axis", "AxisName"})


# jax.random functions whose result is a key, an integer or a boolean array (the rest are floats).
KEY_FUNCTIONS = frozenset({"PRNGKey", "key", "split", "fold_in", "wrap_key_data", "clone"})

INT_RANDOM = frozenset({"randint", "permutation", "categorical", "choice", "poisson", "binomial", "key_data"})

SCALAR_BUILTINS = {"int": "int", "float": "float", "bool": "bool", "len": "int", "complex": "float",
                   "round": "int", "abs": None, "sum": None, "max": None, "min": None}

STATIC_ATTRS = {"shape": SHAPE, "ndim": SCALAR, "size": SCALAR, "dtype": DTYPE}
# NumPy scalar types: `np.float64(0.1)` of a number literal is a host constant, as the literal is
NUMPY_SCALAR_TYPES = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                                "uint16", "uint32", "uint64", "bool_", "complex64", "complex128", "double",
                                "single", "intc", "longlong"})


def number_literal(e: ast.expr) -> bool:
    """A number literal, signed or not (`0.1`, `-3`, `True`)."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    return isinstance(e, ast.Constant) and isinstance(e.value, (int, float, complex, bool))


# Methods that change a list or dict in place (its length or keys are then unknown).
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem"})


@dataclass(frozen=True)
class Kind:
    """What kind of value an expression holds."""

    tag: str
    dtype: Optional[str] = None  # "float", "int", "bool", "key" for arrays and scalars
    why: str = ""  # where the value comes from, quotable
    traced: Optional[str] = None  # why it is a tracer, where known
    items: Optional[Tuple["Kind", ...]] = None  # tuple/list elements when the length is known
    item: Optional["Kind"] = None  # the element kind of a homogeneous sequence
    fields: Tuple[Tuple[str, "Kind"], ...] = ()  # dict keys, NamedTuple/dataclass fields
    captures: Tuple[Tuple[str, "Kind"], ...] = ()  # what a callable closes over (or partial binds)
    node: Optional[ast.AST] = None  # the def/lambda of a callable; the class of a record built here
    # A value nothing shows traced or static that comes from a parameter of a function (its
    # annotation says array, or nothing is known): (function, parameter, quotable chain). What a
    # caller passes there decides whether it is differentiated, so rules may say "may".
    origin: Optional[Tuple[ast.AST, str, str]] = None

    @property
    def is_static(self) -> bool:
        if self.tag in STATIC_TAGS:
            return True
        return self.tag in (TUPLE, LIST) and self.items is not None and all(k.is_static for k in self.items)

    @property
    def holds_array(self) -> bool:
        if self.tag == ARRAY:
            return True
        parts = [*(self.items or ()), *(k for _, k in self.fields), *((self.item,) if self.item else ())]
        return any(k.holds_array for k in parts)

    def traced_leaf(self, depth: int = 0) -> Optional[Tuple[str, str]]:
        """(where, why) of the first part known to be a tracer: a field (`.name`), an element
        (`[i]`) or the value itself (""); None when no part is known to be one."""
        if self.traced:
            return "", self.traced
        if depth > 4:
            return None
        parts = [(f".{n}", k) for n, k in self.fields] + [(f"[{i}]", k) for i, k in enumerate(self.items or ())]
        for where, kind in parts:
            inner = kind.traced_leaf(depth + 1)
            if inner is not None:
                return where + inner[0], inner[1]
        return None

    def origin_leaf(self, depth: int = 0) -> Optional[Tuple[str, Tuple[ast.AST, str, str]]]:
        """(where, origin) of the first part that comes from a parameter nothing shows traced,
        as `traced_leaf` finds a traced one."""
        if self.origin is not None:
            return "", self.origin
        if depth > 4:
            return None
        for where, kind in [(f".{n}", k) for n, k in self.fields] + [(f"[{i}]", k) for i, k in
                                                                     enumerate(self.items or ())]:
            inner = kind.origin_leaf(depth + 1)
            if inner is not None:
                return where + inner[0], inner[1]
        return None

    def field(self, name: str) -> Optional["Kind"]:
        return next((k for n, k in self.fields if n == name), None)

    def because(self, why: str) -> "Kind":
        return replace(self, why=why)

    def via(self, why: str) -> "Kind":
        """The same value read through a binding: `why` joins the chain (of the tracer too, and
        of a parameter's value, also where a container holds it)."""
        return replace(self, why=why, traced=f"{why}; {self.traced}" if self.traced else None,
                       **_parts_via(self, why, 0))

    def from_param(self) -> bool:
        """Whether the value, or a part of it, comes from a parameter nothing shows traced."""
        return self.origin is not None or any(k.from_param() for k in self._parts())

    def _parts(self) -> List["Kind"]:
        return [*(k for _, k in self.fields), *(self.items or ())]

UNKNOWN_KIND = Kind(UNKNOWN)


def _parts_via(kind: Kind, why: str, depth: int) -> Dict[str, object]:
    """The fields of `replace` that extend, with `why`, the chains of a parameter's value (the
    value's own) and of the traced or parameter-derived parts of a container (a dict literal
    passed to `__init__`, a record's fields)."""
    out: Dict[str, object] = {}
    if kind.origin is not None:
        fn, param, chain = kind.origin
        out["origin"] = (fn, param, f"{why}; {chain}")
    if depth > 3 or not (kind.fields or kind.items):
        return out

    def extended(part: Kind) -> Kind:
        if not (part.traced or part.from_param() or part.fields or part.items):
            return part
        return replace(part, traced=f"{why}; {part.traced}" if part.traced else None,
                       **_parts_via(part, why, depth + 1))

    if kind.fields:
        out["fields"] = tuple((n, extended(k)) for n, k in kind.fields)
    if kind.items is not None:
        out["items"] = tuple(extended(k) for k in kind.items)
    return out


def join(a: Kind, b: Kind) -> Kind:
    """Both may flow here: unknown absorbs, agreeing kinds merge, disagreeing ones are "maybe"."""
    if a.tag == UNKNOWN or b.tag == UNKNOWN:
        same = a.origin is not None and b.origin is not None and a.origin[:2] == b.origin[:2]
        return a if same and a.tag == b.tag else UNKNOWN_KIND
    if a.tag != b.tag:
        return Kind(MAYBE, why=a.why or b.why)
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items))
    return Kind(a.tag, a.dtype if a.dtype == b.dtype else None, a.why or b.why,
                a.traced if a.traced and b.traced else None, items,
                join(a.item, b.item) if a.item and b.item else None,
                tuple((n, join(k, b.field(n) or UNKNOWN_KIND)) for n, k in a.fields if b.field(n) is not None),
                a.captures if a.node is b.node else (), a.node if a.node is b.node else None,
                a.origin if a.origin is not None and b.origin is not None and a.origin[:2] == b.origin[:2] else None)


def join_all(kinds: List[Kind]) -> Kind:
    if not kinds:
        return UNKNOWN_KIND
    out = kinds[0]
    for k in kinds[1:]:
        out = join(out, k)
    return out


def classify_annotation(model: FileModel, annotation: ast.expr, depth: int = 0) -> Optional[str]:
    """"array", "static" or "callable" for a parameter annotation (jaxtyping included)."""
    if depth > 4:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # X | None
        kinds = {classify_annotation(model, side, depth + 1) for side in (annotation.left, annotation.right)}
        kinds.discard(None)
        return kinds.pop() if len(kinds) == 1 else None
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    q = model.index.qualname(base) or ""
    tail = q.rsplit(".", 1)[-1] if q else (base.attr if isinstance(base, ast.Attribute) else "")
    if isinstance(annotation, ast.Subscript) and tail in ("Optional", "Union", "Annotated"):
        inner = annotation.slice
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        if tail == "Annotated":
            parts = parts[:1]
        kinds = {classify_annotation(model, p, depth + 1) for p in parts}
        kinds.discard(None)
        return kinds.pop() if len(kinds) == 1 else None
    if q in ARRAY_ANNOTATIONS or q.startswith("jaxtyping.") or tail in ARRAY_TAILS:
        return "array"
    if tail == "Callable":
        return "callable"
    if tail in STATIC_TAILS:
        return "static"
    return None


def constant_kind(value: object, why: str) -> Kind:
    if value is None:
        return Kind(NONE, why=why)
    if isinstance(value, str):
        return Kind(STRING, why=why)
    if isinstance(value, bool):
        return Kind(SCALAR, "bool", why)
    if isinstance(value, int):
        return Kind(SCALAR, "int", why)
    if isinstance(value, (float, complex)):
        return Kind(SCALAR, "float", why)
    return UNKNOWN_KIND


def external_kind(name: str, call: "ExternalCall", arg: Optional["ExternalArg"]) -> Kind:
    """What a call in another module of the run passes as `name`, from its summary."""
    if arg is None or arg.tag in (UNKNOWN, MAYBE):
        return UNKNOWN_KIND
    why = f"`{name}` receives `{arg.quoted}` at {call.where}" + (f" ({arg.why})" if arg.why else "")
    if arg.tag == "static":
        return Kind(SCALAR, why=why)
    traced = f"{why}; {arg.traced}" if arg.traced else None
    return Kind(arg.tag, arg.dtype or None, why, traced)


def unpack_path(target: ast.expr, name: str) -> Optional[List[int]]:
    """The indices leading to `name` in an unpacking target (`(a, (b, c)) = ...` gives c: [1, 1])."""
    if isinstance(target, ast.Name):
        return [] if target.id == name else None
    if isinstance(target, (ast.Tuple, ast.List)):
        if any(isinstance(x, ast.Starred) for x in target.elts):
            return None
        for i, element in enumerate(target.elts):
            inner = unpack_path(element, name)
            if inner is not None:
                return [i, *inner]
    return None


def element_kind(kind: Kind, index: int) -> Kind:
    if kind.tag in (TUPLE, LIST, RECORD):
        if kind.items is not None and -len(kind.items) <= index < len(kind.items):
            return kind.items[index]
        if kind.item is not None:
            return kind.item
    if kind.tag == ARRAY:
        return Kind(ARRAY, kind.dtype, kind.why, kind.traced)
    if kind.tag == SHAPE:
        return Kind(SCALAR, "int", kind.why)
    return UNKNOWN_KIND
