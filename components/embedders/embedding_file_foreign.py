"""An embedding matrix written elsewhere -- UltraRAG's ``retriever_embed``, a GPU run, any ``np.save`` of an
encoder's output: a ``.npy`` without needle's fingerprint, checked and read a bounded chunk of rows at a time.

``ForeignMatrix.open`` reads the ``.npy`` header only and refuses what cannot be indexed: an unreadable or
truncated file, a pickle, a matrix that is not 2-D, a dtype other than float32 or float16 (either byte order).
``check_rows`` compares its rows and dimension with the corpus and the model's. The rows themselves are read
through memory maps of one chunk (about 16 MB) each, dropped before the next, so neither a check nor a copy of a
multi-GB file holds more than a chunk of it in memory (a map's touched pages count in a process's resident
memory for as long as the map lives).

``write_float32`` writes the matrix as the embedders read it (little-endian, C-ordered float32, ``np.save``'s
header) crash-safely, refusing the first row holding NaN or infinity: ``needle index --embeddings`` copies a file
into the new generation with it (``needle_retrieval.index.embeddings_in``), ``adopt_embeddings`` rewrites a
float16 file in place. ``check_foreign`` is the same finiteness check without writing.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from components.atomic_files import atomic_write
from components.embedders.embedding_file import EmbeddingFileError, sidecar_path, write_sidecar

__all__ = ["FOREIGN_DTYPES", "ForeignMatrix", "adopt_embeddings", "check_foreign", "refuse_bad_row", "write_float32"]

FOREIGN_DTYPES = (np.dtype("float32"), np.dtype("float16"))
CHUNK_BYTES = 16 << 20  # the rows read (and converted) at a time: bounded whatever the file's size


@dataclass(frozen=True)
class ForeignMatrix:
    """The header of a ``.npy`` embedding matrix: where its rows are and how they are stored."""

    path: Path
    rows: int
    dim: int
    dtype: np.dtype[Any]
    offset: int  # bytes before row 0
    fortran: bool  # stored column by column (``np.save`` of a Fortran-ordered array)

    @classmethod
    def open(cls, path: Path) -> "ForeignMatrix":
        """Read PATH's header, without its rows.

        :raises EmbeddingFileError: unreadable, not a ``.npy``, truncated, not 2-D, or neither float32 nor float16.
        """
        try:
            with path.open("rb") as handle:
                version = np.lib.format.read_magic(handle)
                two = version != (1, 0)  # 2.0, or 3.0 (the same layout, its text UTF-8)
                read_header = np.lib.format.read_array_header_2_0 if two else np.lib.format.read_array_header_1_0
                shape, fortran, dtype = read_header(handle)
                offset = handle.tell()
            size = path.stat().st_size
        except (OSError, ValueError) as error:
            raise EmbeddingFileError(f"{path} is not a readable .npy file ({str(error)[:200]})") from None
        if len(shape) != 2 or dtype.newbyteorder("=") not in FOREIGN_DTYPES:
            raise EmbeddingFileError(
                f"{path} holds a {len(shape)}-D {dtype} array; embeddings are a 2-D float32 or float16 matrix"
            )
        needed = offset + shape[0] * shape[1] * dtype.itemsize
        if size < needed:
            raise EmbeddingFileError(
                f"{path} is not a readable .npy file (its header promises {needed:,} bytes, it holds {size:,})"
            )
        return cls(path, int(shape[0]), int(shape[1]), dtype, offset, bool(fortran))

    def check_rows(self, count: int, dim: int | None = None) -> None:
        """Refuse another number of rows than COUNT (one per document), or another dimension than DIM (None: any).

        :raises EmbeddingFileError: naming both numbers, without a hint.
        """
        if self.rows != count:
            raise EmbeddingFileError(f"{self.path} holds {self.rows} rows, but the corpus has {count} documents")
        if self.dim < 1 or (dim is not None and self.dim != dim):
            gives = f", but the model gives {dim}" if dim is not None else ""
            raise EmbeddingFileError(f"{self.path} holds {self.dim}-dimensional rows{gives}")

    @property
    def native(self) -> bool:
        """Whether the file is already what the embedders read: little-endian, C-ordered float32."""
        return self.dtype == np.dtype("<f4") and not self.fortran

    def chunks(self) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """(first row, float32 rows) of the whole matrix in order, about ``CHUNK_BYTES`` of the file at a time.

        C-ordered files are mapped one chunk at a time; a Fortran-ordered one (rare: its rows are not contiguous)
        is mapped whole, so its touched pages stay resident until the last chunk.
        """
        step = max(1, CHUNK_BYTES // max(1, self.dim * self.dtype.itemsize))
        whole = None
        if self.fortran:
            whole = self._map(self.offset, (self.rows, self.dim), "F")
        for start in range(0, self.rows, step):
            count = min(step, self.rows - start)
            if whole is not None:
                window = whole[start : start + count]
            else:
                window = self._map(self.offset + start * self.dim * self.dtype.itemsize, (count, self.dim), "C")
            rows = np.array(window, dtype=np.float32, order="C")  # a copy: the map goes with `window`
            del window
            yield start, rows

    def rows_at(self, start: int, count: int) -> npt.NDArray[np.float32]:
        """COUNT rows from row START as a new float32 C-ordered array, read through a map of those rows only
        (a Fortran-ordered file: of the whole matrix, dropped again before returning).

        :raises EmbeddingFileError: the file shrank or went away.
        """
        if self.fortran:
            window = self._map(self.offset, (self.rows, self.dim), "F")[start : start + count]
        else:
            window = self._map(self.offset + start * self.dim * self.dtype.itemsize, (count, self.dim), "C")
        rows = np.array(window, dtype=np.float32, order="C")  # a copy: the map goes with `window`
        del window
        return rows

    def sample(self, count: int) -> npt.NDArray[np.float32]:
        """At most COUNT rows spread evenly over the whole matrix (first and last included), as float32: what an
        index trains on before the rows are added chunk by chunk. Only the sampled rows' pages are read.

        :raises EmbeddingFileError: the file shrank or went away.
        """
        picks = np.unique(np.linspace(0, max(self.rows - 1, 0), min(self.rows, count)).astype(np.int64))
        whole = self._map(self.offset, (self.rows, self.dim), "F" if self.fortran else "C")
        rows = np.array(whole[picks], dtype=np.float32, order="C")
        del whole
        return rows

    def _map(self, offset: int, shape: tuple[int, int], order: str) -> npt.NDArray[Any]:
        """A read-only map of SHAPE rows at OFFSET. :raises EmbeddingFileError: the file shrank or went away."""
        try:
            mapped: npt.NDArray[Any] = np.memmap(self.path, self.dtype, "r", offset, shape, order)  # type: ignore[call-overload]
            return mapped
        except (OSError, ValueError) as error:
            raise EmbeddingFileError(f"{self.path} changed while it was read ({str(error)[:200]})") from None


def _first_bad_row(start: int, rows: npt.NDArray[np.float32]) -> int | None:
    """The corpus row (START + i) of the first of ROWS holding NaN or infinity, or None."""
    finite = np.isfinite(rows).all(axis=1)
    return None if finite.all() else start + int(np.argmin(finite))


def refuse_bad_row(matrix: ForeignMatrix, start: int, rows: npt.NDArray[np.float32]) -> None:
    """Refuse ROWS of MATRIX (from corpus row START) when one holds NaN or infinity.

    :raises EmbeddingFileError: a row of ROWS holds NaN or infinity (naming the first)."""
    bad = _first_bad_row(start, rows)
    if bad is not None:
        raise EmbeddingFileError(f"{matrix.path} holds NaN or infinity in row {bad}")


def check_foreign(path: Path, count: int, dim: int | None = None) -> ForeignMatrix:
    """Check a matrix written without a fingerprint before it is adopted; returns its header.

    :param count: the rows it must hold (one per document).
    :param dim: the dimension it must have, when known (None: any).
    :raises EmbeddingFileError: unreadable (not a ``.npy``, a pickle, truncated), not 2-D, neither float32 nor
        float16, another row count or dimension, or a row holding NaN or infinity (the message says which,
        without a hint).
    """
    matrix = ForeignMatrix.open(path)
    matrix.check_rows(count, dim)
    for start, rows in matrix.chunks():
        refuse_bad_row(matrix, start, rows)
    return matrix


def write_float32(matrix: ForeignMatrix, target: Path) -> None:
    """Write MATRIX's rows to TARGET as little-endian, C-ordered float32 with ``np.save``'s header, chunk by chunk,
    crash-safely (TARGET may be MATRIX's own file: it is replaced once every row was read).

    :raises EmbeddingFileError: a row holds NaN or infinity (TARGET is then unchanged).
    """

    def write(handle: IO[bytes]) -> None:
        header = {"descr": "<f4", "fortran_order": False, "shape": (matrix.rows, matrix.dim)}
        np.lib.format.write_array_header_1_0(handle, header)
        for start, rows in matrix.chunks():
            refuse_bad_row(matrix, start, rows)
            handle.write(rows.astype("<f4", copy=False).data)  # the rows' own buffer: no third copy

    atomic_write(target, write)


def adopt_embeddings(path: Path, fingerprint: dict[str, Any]) -> None:
    """Give the matrix at PATH (checked by ``check_foreign``) the sidecar of FINGERPRINT, the run that will reuse it.

    A matrix not stored as little-endian, C-ordered float32 (float16, say) is first rewritten as such, chunk by
    chunk and crash-safely, its old sidecar removed first (as ``save_embeddings`` orders it): the embedders read
    exactly that layout.
    """
    matrix = ForeignMatrix.open(path)
    if not matrix.native:
        sidecar_path(path).unlink(missing_ok=True)
        write_float32(matrix, path)
    write_sidecar(path, fingerprint, matrix.dim)
