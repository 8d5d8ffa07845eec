"""The nearest-vector scan of hybrid memory search: numpy when it is installed, pure Python
otherwise, with the same answer either way.

Both scans score a chunk by the dot product of its stored float32 unit vector with the
float32 query, summed in double precision in order (``sum(map(mul, q, v))``), and rank by
``(score, id)`` from the highest down, so equal scores put the larger id first. The numpy
scan computes every score at once in float32 (one matrix-vector product), keeps the chunks
that could still be in the top ``limit`` given float32's worst-case rounding (within twice
the error bound of the ``limit``-th score), and scores only those again exactly as the
pure-Python scan does. The chosen chunks, their scores and their order are therefore
identical; only the time differs (about 1 ms instead of hundreds at 50,000 notes).
"""

from __future__ import annotations

import importlib
import math
from array import array
from collections.abc import Sequence
from operator import mul
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_FLOAT32_UNIT = 2.0 ** -24
_FLOAT64_UNIT = 2.0 ** -53


class VectorScan(Protocol):
    """Stored vectors that answer nearest-vector queries."""

    def top(self, query: Sequence[float], limit: int) -> dict[int, float]:
        """The ``limit`` best chunks for ``query``: ``id -> score``, best first."""
        ...


def load_numpy() -> Any:
    """The numpy module, or None when it is not installed (the pure-Python scan is used)."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def unpack_vector(blob: bytes) -> array[float]:
    """The float32 vector stored in ``blob``."""
    vec = array("f")
    vec.frombytes(blob)
    return vec


def vector_scan(rows: Sequence[tuple[int, bytes]], *, use_numpy: bool = True) -> VectorScan:
    """A scan over ``(id, float32 blob)`` rows: numpy's when asked for and installed."""
    numpy = load_numpy() if use_numpy else None
    return NumpyScan(numpy, rows) if numpy is not None else PythonScan(rows)


class PythonScan:
    """Every vector as an ``array('f')``; each query walks them all."""

    def __init__(self, rows: Sequence[tuple[int, bytes]]) -> None:
        self._vectors = [(cid, unpack_vector(blob)) for cid, blob in rows]

    def top(self, query: Sequence[float], limit: int) -> dict[int, float]:
        """The ``limit`` best chunks for ``query``: ``id -> score``, best first."""
        if limit < 1:
            return {}
        q = array("f", query)
        scored = [(sum(map(mul, q, vec)), cid) for cid, vec in self._vectors if len(vec) == len(q)]
        scored.sort(reverse=True)
        return {cid: score for score, cid in scored[:limit]}


class _Group:
    """The vectors of one dimension as a float32 matrix, with their ids and largest norm."""

    def __init__(self, numpy: Any, ids: list[int], blobs: list[bytes], dim: int) -> None:
        self.ids = ids
        self.matrix: npt.NDArray[np.float32] = numpy.frombuffer(
            b"".join(blobs), dtype=numpy.float32).reshape(len(ids), dim)
        norms = numpy.linalg.norm(self.matrix, axis=1) if dim else numpy.zeros(len(ids))
        self.max_norm = float(norms.max()) * (1 + 1e-6) if len(ids) else 0.0


class NumpyScan:
    """The vectors as one float32 matrix per dimension; a query is a matrix-vector product."""

    def __init__(self, numpy: Any, rows: Sequence[tuple[int, bytes]]) -> None:
        self._np = numpy
        by_dim: dict[int, tuple[list[int], list[bytes]]] = {}
        for cid, blob in rows:
            if len(blob) % 4:
                unpack_vector(blob)  # raises the same ValueError as the pure-Python scan
            ids, blobs = by_dim.setdefault(len(blob) // 4, ([], []))
            ids.append(cid)
            blobs.append(bytes(blob))
        self._groups = {dim: _Group(numpy, ids, blobs, dim) for dim, (ids, blobs) in by_dim.items()}

    def top(self, query: Sequence[float], limit: int) -> dict[int, float]:
        """The ``limit`` best chunks for ``query``: ``id -> score``, best first."""
        q = array("f", query)
        group = self._groups.get(len(q))
        if limit < 1 or group is None:
            return {}
        count = len(group.ids)
        if limit < count:
            approx = group.matrix @ self._np.frombuffer(q, dtype=self._np.float32)
            kth = float(self._np.partition(approx, count - limit)[count - limit])
            q_norm = math.sqrt(sum(x * x for x in q)) * (1 + 1e-6)
            dim = len(q)
            # |float32 product - exact| and |exact - double sum| are each at most
            # gamma_d * |q| * |v|; a top-``limit`` chunk is within twice that of the kth.
            gamma = dim * (_FLOAT32_UNIT + _FLOAT64_UNIT) / (1 - dim * _FLOAT32_UNIT)
            margin = 2 * gamma * q_norm * group.max_norm
            rows = self._np.flatnonzero(approx >= kth - 2 * margin).tolist()
        else:
            rows = range(count)
        matrix, ids = group.matrix, group.ids
        scored = [(sum(map(mul, q, matrix[i].tolist())), ids[i]) for i in rows]
        scored.sort(reverse=True)
        return {cid: score for score, cid in scored[:limit]}
