"""The dense part of a generation built from brought-in embeddings (``needle index --embeddings FILE``) into the
FAISS store, in one pass over the corpus and one over FILE.

``build_dense`` runs ``pipelines/dense_index.yaml`` chunk by chunk: its document embedder reads each chunk's rows
from the generation's ``embeddings.npy`` (copied from FILE first) and hands them on as one Python list of floats
per Document, which the writer turns back into a matrix. With brought-in vectors nothing is encoded, so this
build feeds the same store the same chunks without that round trip:

* the corpus is read once by the template's own reader, chunk by chunk (the chunks ``build_dense`` runs: the
  same FAISS adds, so the same index); its ids and texts are digested for the embedding file's fingerprint as
  they go, by the sentence-transformers embedder's recipe (``embedding_file_recipe``: sentence-transformers is
  never imported) or else by the embedder component itself;
* each chunk's rows are read from FILE (a map of those rows only), refused if one holds NaN or infinity,
  appended to the generation's ``embeddings.npy`` and written with their documents' fields by the store's
  ``write_fields``, which stores them exactly as ``write_documents`` stores the Documents, without encoding a
  Document per passage; its ids must be new, which they are: the store is new and the reader gives no id twice
  (its ``duplicate_ids`` rule), so the writer's policy has nothing to decide;
* Python's cyclic garbage collector is off meanwhile (``hits.collector_paused``): the chunks' objects hold no
  cycle, and each collection would walk every object of the process (Haystack's, torch's) again and again;
* the embedding file is published with its fingerprint (and ``brought_from``) once every row is in, as
  ``embeddings_in.bring_in`` writes it, its sha256 taken on a thread of its own as the rows are written (the
  manifest records it without reading the file again: ``file_digests.remember``), and the store is saved once
  (``parts.save_store``), its document table built in place (``FAISSDocumentStore.write_in_place``: the store's
  directory lies in the generation being built) and linked into its generation, not copied.

The result is ``build_dense``'s byte for byte: the same ``embeddings.npy`` and sidecar, document table, vectors
and manifest (tests/needle_retrieval/index/test_build_brought.py compares the two).
"""

import hashlib
import io
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import numpy as np

from components.atomic_files import atomic_write
from components.embedders.embedding_file import EmbeddingFileError, StreamDigest, write_sidecar
from components.embedders.embedding_file_foreign import refuse_bad_row
from components.stores.faiss.row_writes import TRAINING_SAMPLE
from components.stores.file_digests import remember
from components.stores.hits import collector_paused
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE
from needle_retrieval.errors import EmbeddingsNotReusable, NeedleError
from needle_retrieval.index.dense_type import FLAT, DenseIndexType
from needle_retrieval.index.embeddings_in import FLAG, BroughtEmbeddings, brought_from, text_source
from needle_retrieval.index.generations import EMBEDDINGS
from needle_retrieval.index.options import DEFAULT_OPTIONS, IndexOptions
from needle_retrieval.index.parts import dense_template, save_store
from needle_retrieval.index.streaming import aligned
from needle_retrieval.pipelines.embedders import Recorded
from needle_retrieval.progress import Progress


def build_dense_brought(
    corpus: Path,
    generation: Path,
    brought: BroughtEmbeddings,
    model: str,
    embedder: Recorded = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    index_type: DenseIndexType = FLAT,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> tuple[int, int]:
    """Build GENERATION's dense part (FAISS store in dense/, ``embeddings.npy``) from BROUGHT's rows, one per
    CORPUS document; returns (documents written, dimension). Arguments as ``parts.build_dense``'s.

    :raises NeedleError: a row holds NaN or infinity (naming FILE and the row); a bad corpus line (naming it).
    :raises EmbeddingsNotReusable: the corpus changed since BROUGHT was checked (another count or fingerprint).
    """
    data = dense_template(generation, model, False, embedder, index_type, options)
    pipeline, source = text_source(data, ("reader", "writer"))  # the embedder, if built: no part of the run
    reader: Any = pipeline.get_component("reader")
    writer: Any = pipeline.get_component("writer")
    matrix, size = brought.matrix, aligned(chunk_size, int(getattr(source, "encode_chunk_size", 1)))
    ids, texts, digest = StreamDigest(), StreamDigest(), hashlib.sha256()  # digest: the bytes of embeddings.npy
    read = written = 0  # documents read (row i of FILE is document i), documents the store wrote

    def fill(handle: IO[bytes]) -> None:
        """Write the embedding file's rows to HANDLE (hashing them) and the documents with them to the store, chunk
        by chunk: both on threads of their own, one chunk behind the reading of the next (``Behind``)."""
        nonlocal read, written
        header = io.BytesIO()
        shape = (matrix.rows, matrix.dim)
        np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
        with ThreadPoolExecutor(1) as file_thread, ThreadPoolExecutor(1) as store_thread:  # waited for on any exit
            file_writes, store_writes = Behind(file_thread), Behind(store_thread)
            file_writes.then(_write_hashed, handle, digest, header.getbuffer())
            with Progress(total=matrix.rows, desc="Indexing (dense)", unit="docs", postfix="reading embeddings") as bar:
                for start in range(0, max(matrix.rows, 1), size):
                    documents = reader.run(path=str(corpus), skip=start, limit=size)["documents"]
                    if read + len(documents) > matrix.rows:
                        raise EmbeddingsNotReusable(f"more than its {matrix.rows} documents")
                    chunk_ids = [document.id for document in documents]
                    ids.update(chunk_ids)
                    texts.update(source.texts_to_embed(documents))
                    rows = matrix.rows_at(read, len(documents))
                    refuse_bad_row(matrix, read, rows)
                    file_writes.then(_write_hashed, handle, digest, rows.data)
                    contents = [document.content for document in documents]
                    metas = [document.meta for document in documents]
                    written += store_writes.then(store.write_fields, chunk_ids, contents, metas, rows) or 0
                    read += len(documents)
                    bar.advance_to(read)
                file_writes.finish()
                written += store_writes.finish() or 0

    store: Any = writer.document_store
    store.write_in_place()  # dense/ lies in the generation being built: its table is linked, not copied
    try:
        # An IVF / PQ / SQ index trains on an even sample of the whole file (the sample ``build_index`` sized
        # nlist for), not on the first chunk alone; Flat and HNSW need none, and read no sample.
        if store.needs_training(matrix.dim):
            store.train(matrix.sample(TRAINING_SAMPLE))
        store.reserve(matrix.rows, matrix.dim)  # the index's vectors allocated once, not grown chunk by chunk
        with collector_paused():  # a million passages' objects, no cycle among them: no collection walks them
            atomic_write(generation / EMBEDDINGS, fill)
        remember(generation / EMBEDDINGS, digest.hexdigest())  # the generation's manifest records it unread
    except EmbeddingFileError as error:
        raise NeedleError(f"{FLAG} {error}") from None
    except ValueError as error:  # a bad corpus line (CorpusFormatError)
        raise NeedleError(str(error)) from None
    fingerprint = {**source.fingerprint([], []), "count": read, "ids_sha256": ids.hexdigest()}
    fingerprint["texts_sha256"] = texts.hexdigest()
    if read != matrix.rows:
        raise EmbeddingsNotReusable(f"{read} documents for its {matrix.rows} rows")
    if brought.fingerprint not in (None, fingerprint):
        raise EmbeddingsNotReusable("other ids or texts than it was checked with")
    write_sidecar(generation / EMBEDDINGS, {**fingerprint, "brought_from": brought_from(matrix)}, matrix.dim)
    save_store(pipeline, "dense")
    return written, matrix.dim


class Behind:
    """Calls run in order on one thread of their own (POOL's), at most one behind the caller: ``then`` waits for
    the previous call (its exception raised in the caller's thread, its result returned) before handing over the
    next, ``finish`` waits for the last. What they spend outside the GIL (FAISS adds, SQLite's inserts, file
    writes, hashing) then overlaps the caller's reading and parsing of the next chunk, on a second core."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._pending: Future[Any] | None = None

    def then(self, call: Callable[..., Any], *args: Any) -> Any:
        """Hand over CALL(*ARGS), once the previous call is done; returns the previous call's result (None: none)."""
        previous = self.finish()
        self._pending = self._pool.submit(call, *args)
        return previous

    def finish(self) -> Any:
        """The result of the call handed over last (None: none, or already returned), once it is done."""
        pending, self._pending = self._pending, None
        return None if pending is None else pending.result()


def _write_hashed(handle: IO[bytes], digest: "hashlib._Hash", data: memoryview) -> None:
    """Write DATA to HANDLE and add it to DIGEST (the file's sha256, in the order written)."""
    handle.write(data)
    digest.update(data)
