"""An incremental BM25 index over document ids: a bm25s main segment, a deletion mask and a delta segment.

Writes and deletes cost almost nothing: a write appends the document's term ids to the delta, a delete clears
the document's bit in the main segment's alive mask (or drops it from the delta). The next search rebuilds
only what changed, lazily: the delta's weight matrix when the delta changed (``delta_builds``), or the whole
main segment — a compaction — when the delta plus the deleted rows outgrow ``compaction_ratio`` times the
main segment (``full_builds``). Compaction reuses the stored term ids, so it never re-tokenizes.

Scores before and after a compaction. Main-segment documents keep the statistics of their build: document
count N, document frequency df and average length avgdl of the main rows, deleted rows included (as Lucene
does until segments merge). Delta documents are scored with N, df and avgdl over main rows + delta, so their
scores are on the same scale. A compaction recomputes the statistics over the live documents only, so scores
then move a little: terms common among recently written documents get a lower IDF, terms of deleted
documents a higher one. With the default ratio 0.1 the IDF of a term moves by at most log(1.1) ≈ 0.1 through
N; rankings within one query barely change. A freshly built index scores exactly like raw bm25s.
"""

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from components.stores.bm25.matrix import SaveProgress, chunks, quiet
from components.stores.bm25.segments import NO_HITS, BM25Params, DeltaSegment, Hits, MainSegment, SearchableMain
from components.stores.bm25.tokenizers import EncodedTexts

# BM25Index.checkpoint(): main segment, vocabulary, alive mask, main rows by id, delta term ids, delta view,
# full_builds, delta_builds
IndexState = tuple[
    MainSegment | None,
    dict[str, int],
    np.ndarray,
    dict[str, int],
    dict[str, np.ndarray],
    DeltaSegment | None,
    int,
    int,
]


IdHits = tuple[list[str], list[float]]
"""One query's hits: document ids and their scores, best first."""
M = TypeVar("M", bound=SearchableMain, covariant=True)


@dataclass(frozen=True)
class IndexSnapshot(Generic[M]):
    """A consistent, read-only view of the index for one search; later writes do not affect it. Its main segment is
    the index's (``MainSegment``), or what a search sees of it (``SearchableMain``: one tenant's rows)."""

    version: int
    vocab: dict[str, int]
    main: M | None
    alive: np.ndarray  # the main segment's live rows; empty without a main segment
    delta: DeltaSegment | None
    deleted: bool = False  # whether any main row is deleted (``alive`` has a False), known without a scan

    def search(
        self,
        queries: list[list[str]],
        k: int,
        n_threads: int = 0,
        main_accept: np.ndarray | None = None,
        delta_accept: np.ndarray | None = None,
    ) -> list[IdHits]:
        """Best ``k`` (ids, scores) per query (terms), merged over both segments, best first."""
        vocab = self.vocab
        ids = [[vocab[t] for t in q if t in vocab] for q in queries]
        main_hits = self._main_hits(ids, k, n_threads, main_accept)
        if self.delta is None:
            main_ids = self.main.ids if self.main is not None else []
            return [(list(map(main_ids.__getitem__, rows.tolist())), scores.tolist()) for rows, scores in main_hits]
        delta_hits = self.delta.search(ids, k, delta_accept)
        return [self._merge(m, d, k) for m, d in zip(main_hits, delta_hits, strict=True)]

    def _main_hits(self, ids: list[list[int]], k: int, n_threads: int, accept: np.ndarray | None) -> list[Hits]:
        """Search the main segment with deleted (and, with ``accept``, filtered-out) rows masked to zero."""
        if self.main is None:
            return [NO_HITS] * len(ids)
        mask = None
        if accept is not None or self.deleted:
            mask = self.alive if accept is None else self.alive & accept
        return self.main.search(ids, k, mask, n_threads)

    def _merge(self, main: Hits, delta: Hits, k: int) -> IdHits:
        """Interleave both segments' hits (each already best first) by score; on equal scores main rows first."""
        pairs = _pairs(self.main.ids, main) if self.main is not None else []
        if self.delta is not None and len(delta[0]):
            pairs += _pairs(self.delta.ids, delta)
            pairs.sort(key=lambda pair: -pair[1])
        return [doc_id for doc_id, _ in pairs[:k]], [score for _, score in pairs[:k]]


def _pairs(ids: list[str], hits: Hits) -> list[tuple[str, float]]:
    """(document id, score) for a segment's hits."""
    return [(ids[row], score) for row, score in zip(hits[0].tolist(), hits[1].tolist(), strict=True)]


class BM25Index:
    """Document ids and their term ids, searchable with BM25; see the module docstring for the lifecycle."""

    def __init__(self, params: BM25Params, compaction_ratio: float = 0.1, main: MainSegment | None = None) -> None:
        """Start empty, or from a main segment loaded from disk (all its rows alive)."""
        self.params = params
        self.compaction_ratio = compaction_ratio
        self.full_builds = 0
        self.delta_builds = 0
        self._lock = threading.RLock()
        self._version = 0
        self._set_main(main, dict(main.bm25.vocab_dict) if main else {})
        self._delta: dict[str, np.ndarray] = {}
        self._view: DeltaSegment | None = None

    def _set_main(self, main: MainSegment | None, vocab: dict[str, int]) -> None:
        """Make ``main`` the main segment with every row alive, and ``vocab`` the term ids."""
        self._main = main
        self._vocab = vocab
        self._alive = np.ones(main.n_docs, dtype=bool) if main else np.zeros(0, dtype=bool)
        self._row_of = {doc_id: row for row, doc_id in enumerate(main.ids)} if main else {}

    def __len__(self) -> int:
        """Number of live documents."""
        return len(self._row_of) + len(self._delta)

    @property
    def version(self) -> int:
        """Changes with every mutation: a snapshot of this version still shows the live documents."""
        return self._version

    def __contains__(self, doc_id: object) -> bool:
        """Whether a live document has this id."""
        return doc_id in self._row_of or doc_id in self._delta

    def ids(self) -> list[str]:
        """Live document ids: main rows in index order, then the delta in write order."""
        with self._lock:
            main_ids = [self._main.ids[r] for r in np.flatnonzero(self._alive)] if self._main else []
            return main_ids + list(self._delta)

    def id_pages(self, page_size: int) -> Iterator[list[str]]:
        """The ids ``ids`` lists, at most ``page_size`` at a time (a page may be short), as they were at the first
        page: the main rows' liveness is copied on write, so the walk reads a fixed view of the main segment
        without a lock (and lists only the delta's ids, which compaction keeps to a fraction of the index)."""
        with self._lock:  # the ids only: a walk must not keep a compacted segment's arrays alive
            main_ids, alive, delta = self._main.ids if self._main else [], self._alive, list(self._delta)
        for start in range(0, len(main_ids), page_size):
            yield [main_ids[row] for row in np.flatnonzero(alive[start : start + page_size]) + start]
        for start in range(0, len(delta), page_size):
            yield delta[start : start + page_size]

    def add(self, doc_ids: list[str], texts: EncodedTexts, rows: list[int]) -> None:
        """
        Add new documents (ids not yet present) to the delta: ``doc_ids[i]`` has the terms of text ``rows[i]`` of
        ``texts``. New terms extend the vocabulary, in ``texts.terms`` order.
        """
        if not doc_ids:
            return
        with self._lock:
            vocab = self._vocab
            to_global = np.fromiter(
                (vocab.setdefault(term, len(vocab)) for term in texts.terms), dtype=np.int32, count=len(texts.terms)
            )
            per_text = np.split(to_global[texts.flat], np.cumsum(texts.lengths)[:-1])
            self._delta.update(zip(doc_ids, [per_text[row] for row in rows], strict=True))
            self._changed(delta=True)

    def delete(self, doc_ids: list[str]) -> int:
        """Forget these documents; unknown ids are ignored. Returns how many were live."""
        with self._lock:
            rows = [self._row_of.pop(i) for i in doc_ids if i in self._row_of]
            dropped = [self._delta.pop(i) for i in doc_ids if i in self._delta]
            if rows:
                alive = self._alive.copy()
                alive[rows] = False
                self._alive = alive
            if rows or dropped:
                self._changed(delta=bool(dropped))
            return len(rows) + len(dropped)

    def clear(self) -> None:
        """Forget every document and term."""
        with self._lock:
            self._set_main(None, {})
            self._delta = {}
            self._changed(delta=True)

    def snapshot(self) -> IndexSnapshot[MainSegment]:
        """Bring the segments up to date (compaction or delta rebuild, if due) and return a view to search."""
        with self._lock:
            if self._compaction_due():
                self.compact()
            elif self._view is None and self._delta:
                self._view = DeltaSegment(
                    list(self._delta), list(self._delta.values()), self._main, len(self._vocab), self.params
                )
                self.delta_builds += 1
            deleted = self._main is not None and len(self._row_of) < self._main.n_docs
            return IndexSnapshot(self._version, self._vocab, self._main, self._alive, self._view, deleted)

    def compact(self) -> None:
        """Rebuild the main segment over the live documents only; the delta and the deletion mask empty."""
        with self._lock:
            self.install(*self.compacted())

    def compacted(self, report: SaveProgress = quiet) -> tuple[MainSegment | None, dict[str, int]]:
        """The main segment and vocabulary a compaction would give, built aside: the index is not changed.
        REPORT hears its stages (``gathering term ids``, then the build's: ``components.stores.bm25.matrix``)."""
        with self._lock:
            ids, tokens, offsets = self._live_tokens(report)
            if not ids:
                return None, {}
            tokens, vocab = self._drop_unused_terms(tokens)
            return MainSegment.build(ids, tokens, offsets, vocab, self.params, report), vocab

    def install(self, main: MainSegment | None, vocab: dict[str, int]) -> None:
        """Make a ``compacted()`` result the index (nothing may have changed since it was built)."""
        with self._lock:
            self._set_main(main, vocab)
            self._delta = {}
            self.full_builds += 1
            self._changed(delta=True)

    def checkpoint(self) -> IndexState:
        """The whole state, to ``restore`` after a failed transaction (copies of what mutations change in place)."""
        with self._lock:
            return (
                self._main,
                dict(self._vocab),
                self._alive,
                dict(self._row_of),
                dict(self._delta),
                self._view,
                self.full_builds,
                self.delta_builds,
            )

    def restore(self, state: IndexState) -> None:
        """Return to a ``checkpoint``; snapshots taken from now on get a new version."""
        with self._lock:
            (
                self._main,
                self._vocab,
                self._alive,
                self._row_of,
                self._delta,
                self._view,
                self.full_builds,
                self.delta_builds,
            ) = state
            self._version += 1

    def _drop_unused_terms(self, tokens: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
        """Renumber terms 0..n-1 over those the live documents still use (deleted documents leave gaps)."""
        used = np.bincount(tokens, minlength=len(self._vocab)) > 0
        if used.all():
            return tokens, self._vocab
        new_id = (np.cumsum(used) - 1).astype(np.int32)
        vocab = {term: int(new_id[old]) for term, old in self._vocab.items() if used[old]}
        return new_id[tokens], vocab

    def has_pending_changes(self) -> bool:
        """Whether the delta or the deletion mask holds anything a compaction would fold in."""
        return bool(self._delta) or (self._main is not None and len(self._row_of) < self._main.n_docs)

    def _compaction_due(self) -> bool:
        """True when there is no main segment yet, or the pending changes outgrew the ratio."""
        if self._main is None:
            return bool(self._delta)
        pending = len(self._delta) + self._main.n_docs - len(self._row_of)
        return pending > self.compaction_ratio * self._main.n_docs

    def _live_tokens(self, report: SaveProgress = quiet) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Ids, concatenated term ids and offsets of every live document, main rows first (vectorised; the delta's
        copied ``CHUNK`` documents at a time, each chunk told to REPORT as the ``gathering term ids`` stage)."""
        ids: list[str] = []
        lengths: list[np.ndarray] = []
        if self._main is not None:
            rows = np.flatnonzero(self._alive)
            main_lengths = np.diff(np.asarray(self._main.offsets))
            lengths.append(main_lengths[rows])
            ids = [self._main.ids[r] for r in rows.tolist()] if len(rows) < self._main.n_docs else list(self._main.ids)
        delta = list(self._delta.values())
        if delta:
            ids += list(self._delta)
            lengths.append(np.fromiter(map(len, delta), dtype=np.int64, count=len(delta)))
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=offsets[1:])
        tokens = np.empty(int(offsets[-1]), dtype=np.int32)
        if not ids:
            return ids, tokens, offsets
        report("gathering term ids", 0, len(ids))
        main_rows = len(ids) - len(delta)
        if self._main is not None:
            np.compress(
                np.repeat(self._alive, main_lengths), np.asarray(self._main.tokens), out=tokens[: offsets[main_rows]]
            )
            report("gathering term ids", main_rows, len(ids))
        for first, stop in chunks(len(delta)):
            start, end = offsets[main_rows + first], offsets[main_rows + stop]
            np.concatenate(delta[first:stop], out=tokens[start:end])
            report("gathering term ids", main_rows + stop, len(ids))
        return ids, tokens, offsets

    def _changed(self, delta: bool) -> None:
        """Record a mutation: snapshots taken from now on get a new version (filter caches key on it)."""
        self._version += 1
        if delta:
            self._view = None
