"""What a recording keeps of the calls it sees (issue #44): per definition, a few argument
signatures; per signature, distinct concrete calls thinned so that they spread over their values
(the extremes stay), and of them the few that are checked and written. Pure functions of the
kept calls: no JAX, no state (vjplint.record.calls holds the state)."""

from __future__ import annotations

MAX_SIGNATURES = 4  # per definition
MAX_KEPT = 12  # distinct concrete calls kept per signature, thinned to spread over their values
MAX_CALLS = 5  # of them, checked (and written): the extremes and some between
MAX_OBJECTS = 3  # live objects kept per definition (a factory's, a loop's)
MAX_DEFINITIONS = 2000
MAX_ELEMENTS = 100_000
MAX_BYTES = 256 * 2 ** 20  # values kept per process
FORMAT = 2


def _summary(np, leaves):
    """(a digest of the values, where they lie: the mean of their finite floats, bytes held)."""
    import hashlib

    h, total, count, size, floats = hashlib.blake2b(digest_size=16), 0.0, 0, 0, 0
    for leaf in leaves:
        if isinstance(leaf, np.ndarray):
            h.update(str(leaf.dtype).encode() + str(leaf.shape).encode())
            h.update(np.ascontiguousarray(leaf).tobytes())
            size += leaf.nbytes
            if np.issubdtype(leaf.dtype, np.floating):  # an empty array has nothing finite either
                floats += 1
                finite = leaf[np.isfinite(leaf)]
                if finite.size:
                    total, count = total + float(finite.astype(np.float64).mean()), count + 1
        else:
            h.update(repr(leaf).encode()[:200])
            if type(leaf) in (float, int):
                floats += 1
                if abs(float(leaf)) != float("inf") and leaf == leaf:  # finite
                    total, count = total + float(leaf), count + 1
    # No finite float anywhere (`log1mexp(-inf)`, a bounds test): nothing to differentiate there.
    return h.hexdigest(), (total / count if count else None if floats else 0.0), size


def _thin(kept):
    """Drop the kept call whose loss spreads the rest least: never an extreme, else the one
    between the two closest neighbours (kept sorted by position)."""
    if any(item[0] is None for item in kept):  # values with nothing finite go first
        del kept[next(i for i, item in enumerate(kept) if item[0] is None)]
        return
    kept.sort(key=lambda item: item[0])
    worst = min(range(1, len(kept) - 1), key=lambda i: kept[i + 1][0] - kept[i - 1][0])
    del kept[worst]


def signature_order(signature, calls, count):
    """Sort key of a signature: concrete values first, then real floating-point arrays (a complex
    or integer signature cannot be differentiated as one), then more distinct calls, more calls."""
    real = "float" in signature.split("|", 1)[-1]
    return (not calls, not real, -len(calls), -count)


def spread(kept, n):
    """`n` of the kept calls, spread over where they lie: the extremes first, then between."""
    kept = sorted((item for item in kept if item[0] is not None), key=lambda item: item[0]) or \
        [item for item in kept][:1]  # calls with no finite value only when there is nothing else
    if len(kept) <= n:
        picks = list(range(len(kept)))
    else:
        picks = sorted({round(i * (len(kept) - 1) / (n - 1)) for i in range(n)}) if n > 1 else [0]
    order = ([picks[0], picks[-1]] if len(picks) > 1 else picks[:1]) + picks[1:-1]
    return [kept[i][1] for i in order]


class _Abstract:
    """An argument recorded as shape and dtype only (traced, or too large)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    def __repr__(self):
        return "{}{}".format(self.dtype, list(self.shape))

    def __reduce__(self):  # pickled as a tuple: loading needs no vjplint
        return (tuple, (("__vjplint_abstract__", self.shape, self.dtype),))
