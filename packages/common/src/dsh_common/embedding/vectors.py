"""Vectors as bytes (for a SQLite BLOB, a PostgreSQL bytea or a file) and exact cosine search.

A vector is stored as its float32 components in little-endian order, nothing else: 512
components are 2,048 bytes, the same on every platform and backend, and a matrix of many
is one ``frombuffer`` away. Reading refuses a blob of the wrong length or with a component
that is not finite, so a damaged row is treated as missing (re-encoded) rather than ranked.

Search is exact: rows are unit length, so cosine is a dot product, and a 10,000 x 512 float32
matrix times one query takes well under a millisecond in numpy - faster than an approximate
index would answer, with nothing to build or keep in sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from dsh_common.errors import DshError

Matrix = np.ndarray[Any, np.dtype[np.float32]]

#: How a stored vector's components are laid out.
STORED_DTYPE: Final = np.dtype("<f4")


class InvalidVectorError(DshError, ValueError):
    """Stored vector bytes of the wrong length, or with a component that is not finite."""

    code = "invalid-vector"


def vector_to_bytes(vector: Any) -> bytes:
    """One 1-D vector as little-endian float32 bytes."""
    array = np.asarray(vector)
    if array.ndim != 1:
        raise InvalidVectorError(f"a vector is one-dimensional, not of shape {array.shape}")
    return array.astype(STORED_DTYPE, copy=False).tobytes()


def matrix_to_bytes(matrix: Any) -> bytes:
    """An ``(n, d)`` matrix as ``n * d`` little-endian float32 values, row after row."""
    array = np.asarray(matrix)
    if array.ndim != 2:
        raise InvalidVectorError(f"a matrix is two-dimensional, not of shape {array.shape}")
    return np.ascontiguousarray(array, dtype=STORED_DTYPE).tobytes()


def vector_from_bytes(data: bytes | bytearray | memoryview, dimension: int) -> Matrix:
    """The float32 vector stored in ``data``; raises :class:`InvalidVectorError`."""
    return matrix_from_bytes(data, dimension).reshape(dimension)


def matrix_from_bytes(data: bytes | bytearray | memoryview, dimension: int) -> Matrix:
    """An ``(n, dimension)`` native float32 matrix from concatenated stored vectors."""
    if dimension <= 0:
        raise InvalidVectorError("the dimension must be positive")
    raw = memoryview(data).cast("B")
    row_bytes = dimension * STORED_DTYPE.itemsize
    if len(raw) == 0:
        return np.empty((0, dimension), dtype=np.float32)
    if len(raw) % row_bytes:
        raise InvalidVectorError(
            f"{len(raw)} bytes are not whole vectors of {dimension} float32 components"
        )
    matrix = np.frombuffer(raw, dtype=STORED_DTYPE).reshape(-1, dimension)
    if not np.isfinite(matrix).all():
        raise InvalidVectorError("a stored vector has a component that is not finite")
    native: Matrix = matrix.astype(np.float32, copy=False)
    return native


def stack_vectors(blobs: Sequence[bytes | bytearray | memoryview], dimension: int) -> Matrix:
    """One matrix from one stored vector per row (each checked like :func:`vector_from_bytes`)."""
    row_bytes = dimension * STORED_DTYPE.itemsize
    for position, blob in enumerate(blobs):
        if len(memoryview(blob).cast("B")) != row_bytes:
            raise InvalidVectorError(f"stored vector {position} is not {row_bytes} bytes")
    return matrix_from_bytes(b"".join(bytes(b) for b in blobs), dimension)


def normalize_rows(matrix: Any) -> Matrix:
    """Each row scaled to unit length (zero rows stay zero)."""
    array = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    out: Matrix = np.zeros_like(array)
    np.divide(array, norms, out=out, where=norms > 0)
    return out


def cosine_scores(matrix: Matrix, query: Any) -> Matrix:
    """The cosine of ``query`` with each row of unit-length ``matrix``: one dot product each."""
    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    if matrix.ndim != 2 or matrix.shape[1] != vector.shape[0]:
        raise InvalidVectorError(
            f"a query of {vector.shape[0]} components against rows of {matrix.shape[-1]}"
        )
    if matrix.shape[0] == 0:
        return np.empty(0, dtype=np.float32)
    # einsum, not the BLAS matrix-vector product: BLAS kernels take rows in blocks and
    # finish the remainder another way, so a row's last bits would depend on where it sits
    # in the matrix. Here they do not: a matrix completed on demand, or one whose rows
    # another backend orders differently, gives every document the very same cosine (and
    # so the same order among near-ties). It costs ~0.5 ms at 10,000 x 512.
    scores: Matrix = np.einsum("ij,j->i", matrix, vector)
    return scores


def cosine_top_k(matrix: Matrix, query: Any, k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(row, cosine)`` pairs, best first; equal cosines by row number."""
    scores = cosine_scores(matrix, query)
    if k <= 0 or scores.shape[0] == 0:
        return []
    if k < scores.shape[0]:
        # Everything at least as good as the k-th best, then an exact, stable order.
        threshold = np.partition(scores, scores.shape[0] - k)[scores.shape[0] - k]
        rows = np.nonzero(scores >= threshold)[0]
    else:
        rows = np.arange(scores.shape[0])
    order = rows[np.lexsort((rows, -scores[rows]))][:k]
    return [(int(row), float(scores[row])) for row in order]
