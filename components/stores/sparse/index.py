"""An impact-scored inverted index of learned sparse vectors: one posting per (term, document), weight as given.

A SPLADE model gives each document a weight per vocabulary term; nothing is left to compute at query time but
``score(d, q) = sum over the query's terms t of q[t] * d[t]``, the dot product. The index is the document-term
matrix in CSC form (per term, the rows holding it and their weights), the layout of the BM25 store's bm25s
segment (``data``, ``indices``, ``indptr``): a query reads only its own terms' postings.

Writes append blocks of rows (CSR) and deletes clear a row's ``alive`` flag; both are searchable at once. The
CSC matrix is rebuilt from the blocks on the first search after a change (a stable sort by term, in numpy), and
a save keeps only live rows. An opened index holds only its saved CSC matrix until something needs rows (a write,
or a document's vector): then the CSR form is derived from it, so a store that is only searched holds one copy.
Every state is immutable (``IndexState``), so a transaction's checkpoint is one reference and a search scores a
snapshot without holding the store's lock.
"""

import itertools
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from haystack.dataclasses import SparseEmbedding

Hits = tuple[np.ndarray, np.ndarray]
"""Row numbers and their scores (float64), best first."""


@dataclass(frozen=True)
class Compressed:
    """A sparse matrix in compressed form: line i holds ``indices[indptr[i]:indptr[i + 1]]`` with their ``data``.

    Rows of documents (CSR: indices are term ids) or postings of terms (CSC: indices are row numbers); ``width`` is
    the other dimension (terms of a CSR block, rows of a CSC one)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    width: int

    @property
    def lines(self) -> int:
        """Number of rows (CSR) or terms (CSC)."""
        return len(self.indptr) - 1

    def line_of_each(self) -> np.ndarray:
        """The line of every stored value, in storage order."""
        return np.repeat(np.arange(self.lines, dtype=np.int64), np.diff(self.indptr))

    def transposed(self) -> "Compressed":
        """The same matrix compressed the other way; within each new line the old lines stay ascending."""
        order = np.argsort(self.indices, kind="stable")
        indptr = np.zeros(self.width + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.indices, minlength=self.width), out=indptr[1:])
        return Compressed(indptr, self.line_of_each()[order].astype(np.int32), self.data[order], self.lines)

    def kept(self, keep: np.ndarray) -> "Compressed":
        """Only the lines where KEEP is true, in order."""
        values = keep[self.line_of_each()]
        indptr = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
        np.cumsum(np.diff(self.indptr)[keep], out=indptr[1:])
        return Compressed(indptr, self.indices[values], self.data[values], self.width)


_VERSIONS = itertools.count()
"""Numbers every IndexState: caches key on a state's version, never reused (an ``id()`` is, once a state is freed)."""

EMPTY = Compressed(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32), 0)


def rows_matrix(vectors: list[SparseEmbedding]) -> Compressed:
    """VECTORS as CSR rows (int32 term ids, float32 weights), as wide as the largest term id + 1."""
    lengths = np.fromiter((len(v.indices) for v in vectors), dtype=np.int64, count=len(vectors))
    indptr = np.zeros(len(vectors) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.fromiter((i for v in vectors for i in v.indices), dtype=np.int32, count=int(indptr[-1]))
    data = np.fromiter((x for v in vectors for x in v.values), dtype=np.float32, count=int(indptr[-1]))
    return Compressed(indptr, indices, data, int(indices.max()) + 1 if len(indices) else 0)


def stacked(blocks: tuple[Compressed, ...]) -> Compressed:
    """CSR BLOCKS one under the other, as wide as the widest."""
    if not blocks:
        return EMPTY
    if len(blocks) == 1:
        return blocks[0]
    starts = np.cumsum([0] + [int(b.indptr[-1]) for b in blocks[:-1]])
    indptr = np.concatenate(
        [np.zeros(1, dtype=np.int64)] + [b.indptr[1:] + s for b, s in zip(blocks, starts, strict=True)]
    )
    indices = np.concatenate([b.indices for b in blocks])
    data = np.concatenate([b.data for b in blocks])
    return Compressed(indptr, indices, data, max(b.width for b in blocks))


@dataclass(frozen=True)
class IndexState:
    """The rows (ids, vectors in CSR blocks after a saved CSC ``base``) and which are alive; a change makes a new
    state, never edits one."""

    ids: tuple[str, ...] = ()
    blocks: tuple[Compressed, ...] = ()
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    row_of: dict[str, int] = field(default_factory=dict)
    base: Compressed | None = None
    """The first rows as the saved generation holds them (CSC), before ``blocks``; None when nothing was opened."""
    version: int = field(init=False, compare=False, default_factory=lambda: next(_VERSIONS))
    """Unique to this state (``replace`` draws a new one): the store's filter masks are cached under it."""

    @cached_property
    def csr(self) -> Compressed:
        """All rows in one CSR matrix (dead ones included)."""
        return stacked(self._row_blocks())

    @cached_property
    def csc(self) -> Compressed:
        """The inverted index: per term, its postings (rows ascending, weights)."""
        if self.base is not None and not self.blocks:
            return self.base  # the saved postings, already sorted: nothing to rebuild
        return self.csr.transposed()

    @classmethod
    def loaded(cls, ids: list[str], csc: Compressed) -> "IndexState":
        """The state of a saved index: IDS' rows, read as CSC (kept as the inverted index, not rebuilt)."""
        return cls(tuple(ids), (), np.ones(len(ids), dtype=bool), {d: r for r, d in enumerate(ids)}, csc)

    def _row_blocks(self) -> tuple[Compressed, ...]:
        """The rows as CSR blocks, ``base`` (transposed) first."""
        return self.blocks if self.base is None else (self.base.transposed(), *self.blocks)

    def written(self, ids: list[str], vectors: list[SparseEmbedding]) -> "IndexState":
        """This state with IDS (new, or replacing rows of the same id) appended with their VECTORS."""
        replaced = [self.row_of[i] for i in ids if i in self.row_of]
        alive = np.concatenate([self.alive, np.ones(len(ids), dtype=bool)])
        alive[replaced] = False
        row_of = dict(self.row_of)
        row_of.update((doc_id, len(self.ids) + k) for k, doc_id in enumerate(ids))
        blocks = self.blocks if self.base is None else (self.csr,)  # rows from here on: the CSR form
        return IndexState(self.ids + tuple(ids), (*blocks, rows_matrix(vectors)), alive, row_of)

    def deleted(self, ids: list[str]) -> "IndexState":
        """This state without the rows of IDS (unknown ids are ignored)."""
        rows = [self.row_of[i] for i in ids if i in self.row_of]
        if not rows:
            return self
        alive = self.alive.copy()
        alive[rows] = False
        row_of = {doc_id: row for doc_id, row in self.row_of.items() if alive[row]}
        return replace(self, alive=alive, row_of=row_of)

    def compacted(self) -> "IndexState":
        """The live rows only, in one block (what a save writes)."""
        if bool(self.alive.all()) and len(self.blocks) + (self.base is not None) <= 1:
            return self
        ids = tuple(self.ids[r] for r in np.flatnonzero(self.alive))
        block = self.csr.kept(self.alive)
        return IndexState(ids, (block,), np.ones(len(ids), dtype=bool), {d: r for r, d in enumerate(ids)})

    def vector(self, doc_id: str) -> SparseEmbedding:
        """The stored vector of a live document (the first call on an opened state derives its CSR form)."""
        csr, row = self.csr, self.row_of[doc_id]
        start, end = csr.indptr[row], csr.indptr[row + 1]
        return SparseEmbedding(indices=csr.indices[start:end].tolist(), values=csr.data[start:end].tolist())

    def search(self, query: SparseEmbedding, k: int, accept: np.ndarray | None) -> Hits:
        """The best K live rows sharing a term with QUERY (those ACCEPT allows), by dot product; ties by row."""
        csc = self.csc
        terms = np.asarray(query.indices, dtype=np.int64)
        weights = np.asarray(query.values, dtype=np.float64)
        inside = terms < csc.lines
        terms, weights = terms[inside], weights[inside]
        starts, ends = csc.indptr[terms], csc.indptr[terms + 1]
        lengths = ends - starts
        if not lengths.sum():
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        postings = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        hit_rows = csc.indices[postings]
        # dense accumulators, linear in postings + rows: cheaper than sorting the postings (np.unique) once common
        # terms bring long lists
        totals = np.bincount(
            hit_rows, weights=csc.data[postings] * np.repeat(weights, lengths), minlength=len(self.ids)
        )
        touched = np.zeros(len(self.ids), dtype=bool)
        touched[hit_rows] = True
        touched &= self.alive if accept is None else self.alive & accept
        rows = np.flatnonzero(touched)
        scores = totals[rows]
        if len(rows) > k:
            best = np.argpartition(-scores, k - 1)[:k]
            rows, scores = rows[best], scores[best]
        order = np.lexsort((rows, -scores))
        return rows[order], scores[order]

    def __len__(self) -> int:
        """Live documents."""
        return len(self.row_of)

    def __contains__(self, doc_id: object) -> bool:
        """Whether a live document has this id."""
        return doc_id in self.row_of
