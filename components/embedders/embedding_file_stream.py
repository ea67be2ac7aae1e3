"""The corpus embedding file assembled chunk by chunk, so a streamed indexing run never holds the whole matrix.

A document embedder run once per chunk of a corpus of ``total`` documents (``offset``/``total`` run inputs)
opens an :class:`EmbeddingFileStream` on the first chunk and finishes it on the last. The file and its
fingerprint sidecar end up byte for byte what ``embedding_file.save_embeddings`` writes for the whole corpus
at once, and the reuse rule is the same (``embedding_file.load_or_encode``):

* reuse: each chunk's rows are read from the existing file. Its model and options and
  its row count are checked on the first chunk; the ids and texts digests can only be compared once every
  chunk was seen, so a file built from other texts of the same count is refused at the last chunk.
* encode: the rows are appended to a temporary ``.npy`` beside the target, whose header (``np.save``'s) is
  written for ``total`` rows with the first chunk, then fsynced and renamed over the target
  (``components.atomic_files``), sidecar last, exactly as the one-shot write does: a crash leaves the previous
  pair or a matrix without sidecar, never a partial file.
"""

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from components.atomic_files import publish, sync_file, temp_sibling
from components.embedders.embedding_file import (
    FORMAT_VERSION,
    StreamDigest,
    check_record,
    check_shape,
    load_matrix,
    reusable,
    sidecar_path,
    write_sidecar,
)


class EmbeddingFileStream:
    """One embedding file being read (reuse) or written (encode) chunk by chunk, in corpus order.

    Rows go through plain sequential reads and writes, not a memory map, whose touched pages would count in
    the process's resident memory for as long as it is mapped.
    """

    def __init__(self, path: str | os.PathLike[str], overwrite: bool, settings: dict[str, Any], total: int) -> None:
        """
        Open the stream for a corpus of TOTAL documents embedded with SETTINGS (the fingerprint's settings).

        :raises EmbeddingFileError: a reusable file whose settings or row count differ, or that is unreadable.
        """
        self.path = Path(path)
        self.total = total
        self.count = 0
        self._settings = settings
        self._ids, self._texts = StreamDigest(), StreamDigest()
        self._reuse = reusable(self.path, overwrite)
        self._handle: BinaryIO | None = None  # reuse: the file read; encode: the temporary file written
        self._dim = 0
        self._tmp = temp_sibling(self.path)
        if self._reuse:
            record = check_record(self.path, {"format": FORMAT_VERSION, **settings, "count": total})
            mapped = load_matrix(self.path, mmap=True)
            check_shape(self.path, mapped, record)
            self._dim = int(mapped.shape[1])
            self._handle = self.path.open("rb")
            self._handle.seek(int(getattr(mapped, "offset", 0)))  # past the .npy header: row 0
            del mapped

    def rows(
        self, ids: Sequence[str], texts: Sequence[str], encode: Callable[[], npt.NDArray[Any]]
    ) -> npt.NDArray[np.float32]:
        """The next chunk's (len(ids), dim) float32 rows: read from the reused file, or ``encode()``d and kept."""
        if len(ids) != len(texts) or self.count + len(ids) > self.total:
            raise ValueError(f"a chunk of {len(ids)} documents at row {self.count} does not fit {self.total} rows")
        self._ids.update(ids)
        self._texts.update(texts)
        self.count += len(ids)
        if self._reuse:
            assert self._handle is not None  # opened in __init__
            data = self._handle.read(len(ids) * self._dim * 4)
            return np.frombuffer(data, dtype="<f4").reshape(len(ids), self._dim).astype(np.float32)
        chunk = np.asarray(encode())
        if chunk.ndim != 2 or chunk.dtype != np.float32 or len(chunk) != len(ids):
            raise ValueError(f"embeddings must be 2-D float32 with {len(ids)} rows, got {chunk.dtype} {chunk.shape}")
        if self._handle is None:
            self._dim = int(chunk.shape[1])
            self._handle = self._tmp.open("wb")
            header = {"descr": "<f4", "fortran_order": False, "shape": (self.total, self._dim)}
            np.lib.format.write_array_header_1_0(self._handle, header)  # np.save's header for this shape
        self._handle.write(np.ascontiguousarray(chunk, dtype="<f4").tobytes())
        return chunk

    def fingerprint(self) -> dict[str, Any]:
        """The fingerprint of the rows seen so far, as ``embedding_file.build_fingerprint`` computes it."""
        return {
            "format": FORMAT_VERSION,
            **self._settings,
            "count": self.count,
            "ids_sha256": self._ids.hexdigest(),
            "texts_sha256": self._texts.hexdigest(),
        }

    def finish(self) -> None:
        """After the last chunk: check the reused file's digests, or put the written file and its sidecar in place.

        :raises EmbeddingFileError: the reused file was built from other ids or texts.
        """
        if self.count != self.total:
            raise ValueError(f"the embedding file got {self.count} of its {self.total} rows")
        handle, self._handle = self._handle, None
        assert handle is not None  # total >= 1 rows went through it
        if self._reuse:
            handle.close()
            check_record(self.path, self.fingerprint())
            return
        with handle:
            sync_file(handle)
        sidecar_path(self.path).unlink(missing_ok=True)
        publish(self._tmp, self.path)
        write_sidecar(self.path, self.fingerprint(), self._dim)

    def close(self) -> None:
        """Give up the stream: close its file and remove the temporary one (a no-op after ``finish``)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._tmp.unlink(missing_ok=True)


def check_chunk(offset: int | None, total: int | None, size: int, expected: int | None) -> tuple[int, int]:
    """
    ``(offset, total)`` when these run inputs describe the next chunk of a streamed corpus: both given, integers,
    offset + SIZE <= total, and offset 0 (a new stream) or the row the open stream expects (EXPECTED).

    :raises ValueError: naming the input and what was expected.
    """
    if not _is_count(offset) or not _is_count(total):
        raise ValueError(f"offset and total must both be integers >= 0, got offset={offset!r}, total={total!r}")
    assert isinstance(offset, int) and isinstance(total, int)  # noqa: PT018 (_is_count checked both)
    if offset + size > total:
        raise ValueError(f"a chunk of {size} documents at offset {offset} goes past total={total}")
    if offset != 0 and offset != expected:
        after = "no chunk was embedded yet" if expected is None else f"the next chunk starts at offset {expected}"
        raise ValueError(f"chunks must come in order from offset 0: got offset {offset}, but {after}")
    return offset, total


def _is_count(value: object) -> bool:
    """An int >= 0 that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
