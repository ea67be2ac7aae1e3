"""The corpus embedding file: a float32 ``.npy`` matrix (row i = document i) plus a JSON fingerprint sidecar.

UltraRAG reuses an existing ``.npy`` whenever it exists, even when the model, the prompt or the corpus changed
since it was written. Here every file gets a sidecar ``<path>.json`` recording what produced it (model, prompt,
task, prefix, normalisation, ...) and SHA-256 digests of the document ids and of the exact texts embedded, so a
stale file is refused with a message that lists what differs.

Writes are atomic: the old sidecar is removed first, the matrix replaces the target through a fsynced temporary
sibling (``components.atomic_files``), and the new sidecar follows the same way; ``copy_embeddings`` copies a
pair in the same order. A crash at any point leaves either the previous pair, or a matrix without a sidecar
(refused as unverifiable), never a partial file or a matrix paired with the wrong fingerprint.

A matrix written without a sidecar (UltraRAG's ``retriever_embed``: a plain ``np.save``) is checked, adopted or
copied by ``components.embedders.embedding_file_foreign``: given the fingerprint of the run that is to reuse it --
the caller vouches for what no file can tell, that its rows are that model's vectors of those texts -- it is from
then on reused and refused as any other.
"""

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from components.atomic_files import atomic_copy, atomic_write

if TYPE_CHECKING:  # the module itself imports no Haystack
    from haystack import Document

FORMAT_VERSION = 1
REBUILD_HINT = "pass overwrite=True to rebuild it, or choose another embedding_path"
_DIGEST_BATCH = 1024  # strings hashed per call of StreamDigest.update (bounds the joined copy)
_DIGEST_KEYS = {
    "ids_sha256": "the document ids (or their order) differ",
    "texts_sha256": "the embedded inputs differ (content, prefix/suffix, embedded meta fields or image bytes)",
}


class EmbeddingFileError(ValueError):
    """An embedding file that cannot be reused: unreadable, malformed, or built for something else."""


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """The fingerprint file that goes with an embedding file: ``<path>.json``."""
    return Path(f"{os.fspath(path)}.json")


class StreamDigest:
    """SHA-256 over length-prefixed UTF-8 strings, fed piece by piece, so ``["ab", "c"]`` and ``["a", "bc"]``
    differ, and a corpus digested chunk by chunk gets the digest of the whole list."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def update(self, values: Sequence[str]) -> None:
        """Add the next strings, in order."""
        for start in range(0, len(values), _DIGEST_BATCH):  # one hash call per batch: the same digest, less overhead
            pieces: list[bytes] = []
            for value in values[start : start + _DIGEST_BATCH]:
                data = value.encode("utf-8", errors="surrogatepass")
                pieces += (len(data).to_bytes(8, "little"), data)
            self._digest.update(b"".join(pieces))

    def hexdigest(self) -> str:
        """The digest of every string added so far."""
        return self._digest.hexdigest()


def _digest(values: Sequence[str]) -> str:
    """The StreamDigest of VALUES at once."""
    digest = StreamDigest()
    digest.update(values)
    return digest.hexdigest()


def embedded_texts(
    documents: Sequence["Document"], prefix: str, separator: str, meta_fields: Sequence[str], suffix: str
) -> list[str]:
    """The exact string a document embedder encodes per document, as Haystack's document embedders join it: PREFIX,
    the META_FIELDS the document has (not None) and its content joined by SEPARATOR, SUFFIX. One rule for every
    document embedder here and for ``embedding_file_recipe``, so the texts an embedding file's fingerprint digests
    are the texts encoded."""
    texts = []
    for doc in documents:
        meta = [str(doc.meta[key]) for key in meta_fields if doc.meta.get(key) is not None]
        texts.append(prefix + separator.join([*meta, doc.content or ""]) + suffix)
    return texts


def build_fingerprint(settings: dict[str, Any], ids: Sequence[str], texts: Sequence[str]) -> dict[str, Any]:
    """Fingerprint of one embedding run: the JSON-able `settings` plus the count and digests of ids and texts."""
    if len(ids) != len(texts):
        raise ValueError(f"ids and texts must have the same length, got {len(ids)} and {len(texts)}")
    return {
        "format": FORMAT_VERSION,
        **settings,
        "count": len(ids),
        "ids_sha256": _digest(ids),
        "texts_sha256": _digest(texts),
    }


def save_embeddings(path: str | os.PathLike[str], embeddings: npt.ArrayLike, fingerprint: dict[str, Any]) -> None:
    """Atomically write a (N, dim) float32 matrix to `path` and its fingerprint (with `dim`) to the sidecar."""
    matrix = np.asarray(embeddings)
    if matrix.ndim != 2 or matrix.dtype != np.float32:
        raise ValueError(f"embeddings must be a 2-D float32 array, got {matrix.ndim}-D {matrix.dtype}")
    if matrix.shape[0] != fingerprint["count"]:
        raise ValueError(f"embeddings have {matrix.shape[0]} rows but the fingerprint counts {fingerprint['count']}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sidecar = sidecar_path(target)
    sidecar.unlink(missing_ok=True)
    atomic_write(target, lambda handle: np.save(handle, matrix, allow_pickle=False))
    write_sidecar(target, fingerprint, int(matrix.shape[1]))


def write_sidecar(path: Path, fingerprint: dict[str, Any], dim: int) -> None:
    """Atomically write the sidecar of the (count, DIM) matrix at PATH: its fingerprint plus dim and dtype."""
    record = {**fingerprint, "dim": dim, "dtype": "float32"}
    payload = json.dumps(record, indent=2, sort_keys=True).encode("utf-8")
    atomic_write(sidecar_path(path), lambda handle: handle.write(payload))


def copy_embeddings(source: Path, target: Path) -> None:
    """Copy the embedding file SOURCE and its sidecar (when it has one) to TARGET, replacing TARGET's pair in the
    order ``save_embeddings`` writes one: TARGET's old sidecar goes first, so no crash pairs a matrix with the
    fingerprint of another."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sidecar_path(target).unlink(missing_ok=True)
    atomic_copy(source, target)
    if sidecar_path(source).is_file():
        atomic_copy(sidecar_path(source), sidecar_path(target))


def check_record(path: Path, expected: dict[str, Any]) -> dict[str, Any]:
    """PATH's sidecar record, when every field of EXPECTED matches it.

    :raises EmbeddingFileError: no or unreadable sidecar, or differences (all are listed).
    """
    record = read_sidecar(path)
    differences = describe_differences(expected, record)
    if differences:
        raise EmbeddingFileError(f"{path} was built for something else: {'; '.join(differences)}; {REBUILD_HINT}")
    return record


def check_shape(path: Path, matrix: npt.NDArray[Any], record: dict[str, Any]) -> None:
    """Refuse a matrix whose dtype or shape disagrees with its sidecar RECORD."""
    shape = (record.get("count"), record.get("dim"))
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape != shape:
        raise EmbeddingFileError(
            f"{path} holds a {matrix.dtype} array of shape {matrix.shape}, but its fingerprint promises "
            f"float32 of shape {shape}; {REBUILD_HINT}"
        )


def read_sidecar(path: Path) -> dict[str, Any]:
    """Read the fingerprint that goes with `path`, or explain why it cannot be trusted."""
    sidecar = sidecar_path(path)
    if not sidecar.exists():
        raise EmbeddingFileError(
            f"{path} has no fingerprint file {sidecar.name}, so the model and corpus that built it are unknown; "
            f"{REBUILD_HINT}"
        )
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # not UTF-8 JSON, past 4,300 digits, nested too deeply
        raise EmbeddingFileError(f"{sidecar} is not a readable fingerprint ({str(e)[:200]}); {REBUILD_HINT}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT_VERSION:
        raise EmbeddingFileError(f"{sidecar} is not a format-{FORMAT_VERSION} fingerprint; {REBUILD_HINT}")
    return record


def describe_differences(expected: dict[str, Any], found: dict[str, Any]) -> list[str]:
    """Human-readable list of the fingerprint fields that differ between a stored file and the current run."""
    differences = []
    for key, value in expected.items():
        if key in _DIGEST_KEYS:
            if found.get(key) != value:
                differences.append(_DIGEST_KEYS[key])
        elif found.get(key) != value:
            differences.append(f"{key}: file has {found.get(key)!r}, now {value!r}")
    return differences


def load_matrix(path: Path, mmap: bool = False) -> npt.NDArray[np.generic]:
    """Read (or with MMAP, map) a .npy file without pickles, turning any failure into an EmbeddingFileError."""
    try:
        # without pickles: always an array
        matrix: npt.NDArray[np.generic] = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        return matrix
    except (OSError, ValueError) as e:
        raise EmbeddingFileError(f"{path} is not a readable .npy file ({e}); {REBUILD_HINT}") from e


def load_embeddings(path: str | os.PathLike[str], expected: dict[str, Any]) -> npt.NDArray[np.float32]:
    """Load the (N, dim) float32 matrix at `path` after checking its fingerprint and shape against `expected`.

    :raises EmbeddingFileError: No or unreadable sidecar, any fingerprint difference (all are listed), or a
        matrix whose dtype or shape disagrees with its sidecar.
    """
    target = Path(path)
    record = check_record(target, expected)
    matrix = load_matrix(target)
    check_shape(target, matrix, record)
    return matrix.astype(np.float32, copy=False)  # already float32 (checked above): no copy, typed as such


def reusable(path: str | os.PathLike[str] | None, overwrite: bool) -> bool:
    """Whether an embedder reads ``path`` instead of encoding: a path is set, exists, and ``overwrite`` is off."""
    return path is not None and not overwrite and Path(path).exists()


def load_or_encode(
    path: str | os.PathLike[str] | None,
    overwrite: bool,
    fingerprint: Callable[[], dict[str, Any]],
    encode: Callable[[], npt.NDArray[Any]],
) -> npt.NDArray[Any]:
    """
    The corpus matrix: read from ``path`` when it may be reused (its fingerprint must match), else encoded and,
    when a path is set, saved there with the fingerprint. The one reuse rule of every document embedder.

    :raises EmbeddingFileError: ``path`` exists but was built for another model, options or inputs.
    """
    if path is None:
        return encode()
    expected = fingerprint()
    if reusable(path, overwrite):
        return load_embeddings(path, expected)
    matrix = encode()
    save_embeddings(path, matrix, expected)
    return matrix
