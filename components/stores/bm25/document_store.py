"""A Haystack document store searched with BM25 through bm25s: English, Chinese, persisted, incremental."""

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from haystack import Document, default_from_dict, default_to_dict
from haystack.core.errors import SerializationError
from haystack.document_stores.errors import MissingDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from components.checks import check_filters
from components.stores.async_twins import DocumentStoreAsyncTwins
from components.stores.bm25.document_table import JsonlDocumentTable, document_line
from components.stores.bm25.documents import DocumentsState, StoredDocuments, apply_policy, copied
from components.stores.bm25.generation_files import document_table, write_generation
from components.stores.bm25.index import BM25Index, IndexState
from components.stores.bm25.matrix import SaveProgress, quiet
from components.stores.bm25.persistence import GENERATIONS, MANIFEST
from components.stores.bm25.searches import BM25Searches
from components.stores.bm25.segment_files import load_main_segment
from components.stores.bm25.segments import BM25Params
from components.stores.bm25.settings import resolve_settings, saved_settings, validate_init
from components.stores.bm25.tokenizers import BM25Tokenizer, TokenizerSetting
from components.stores.document_checks import check_document_list, check_meta_storable
from components.stores.document_pages import DocumentPages
from components.stores.metadata_queries import MetadataQueries
from components.stores.transactions import SingleWriter, TransactionalStore


class BM25DocumentStore(BM25Searches, TransactionalStore, DocumentStoreAsyncTwins, MetadataQueries, DocumentPages):
    """
    Documents searchable with BM25 (bm25s), saved crash-safely, loaded checked.

    The UltraRAG seed's BM25 backend (``lang``, ``save_path``) as a Haystack DocumentStore: ``path`` is the
    seed's ``save_path``. Settings left as ``None`` take the saved index's values when ``path`` holds one,
    else the defaults (``lang="en"``, Lucene BM25 with ``k1=0.9``, ``b=0.4``); an explicit value that
    contradicts the saved index is an error, because its weights and terms were computed with the saved ones.

    Writes and deletes are incremental: they are searchable by the next query without rebuilding the whole
    index (see ``components.stores.bm25.index`` for when it rebuilds and what that does to scores). Each
    mutating call is all-or-nothing and, with ``path``, has one writer (``components.stores.transactions``).
    Documents are kept in memory once written (with ``path`` and ``autosave`` off, in a temporary file until
    the save: ``components.stores.bm25.spill``); a loaded store reads them from its directory as hits need
    them, or from the FAISS store at ``document_store_path`` so that both indexes share one copy of the corpus.
    Every public method has an ``*_async`` twin.

    A corpus without a single indexable word (stopwords only, or text the tokenizer drops entirely) is valid: its
    index has an empty vocabulary, builds, saves, loads and warms up, and every query answers no hits (so a hybrid
    search answers with its dense hits alone).
    """

    def __init__(
        self,
        path: str | None = None,
        lang: str | None = None,
        tokenizer: TokenizerSetting = None,
        method: str | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        backend: str = "numba",
        compaction_ratio: float = 0.1,
        document_store_path: str | None = None,
        autosave: bool = True,
    ) -> None:
        """
        :param path: Directory the index is saved to and loaded from (the seed's ``save_path``); loaded lazily.
        :param lang: Tokenizer: ``en`` (stopwords + Snowball stemmer), ``zh`` (jieba), ``character`` (CJK
            character unigrams and bigrams), or the ISO 639-1 code of another language PyStemmer stems (its
            Snowball stemmer, and bm25s' stop list where it has one: ``components.stores.bm25.languages``).
            Default ``en``.
        :param tokenizer: A built-in tokenizer by name (``whitespace``, ``words``, ``lucene``, a ``lang`` name, or
            a bm25s-style ``SPLITTER:STOPWORDS`` such as ``regex:en``, UltraRAG's terms: see
            ``components.stores.bm25.tokenizers``), used instead of ``lang``'s; or, in Python code only, a
            ``function(text) -> list[str]``: such a store
            cannot be written to YAML, and its saved index opens only with a function passed again.
        :param method: BM25 variant: one of ``lucene`` (default), ``robertson``, ``atire``, ``bm25l``, ``bm25+``.
        :param k1: Term-frequency saturation, >= 0 (default 0.9).
        :param b: Length normalisation, between 0 and 1 (default 0.4).
        :param delta: Lower bound of BM25L/BM25+ term weights, >= 0 (default 0.5; ignored by other methods).
        :param backend: How queries are scored: ``numba`` (default; our kernels, compiled once and cached on
            disk, see ``components.stores.bm25.kernels``) or ``numpy`` (bm25s' numpy scorer). Both give the same
            hits and scores; it is not saved with the index, so any saved index opens with either.
        :param compaction_ratio: Rebuild the whole index when documents written or deleted since the last
            build exceed this fraction of it, in (0, 1].
        :param document_store_path: Directory of a FAISS store over the same corpus: the saved index then holds
            no documents and reads them from there. Saved relative to ``path``, so both can move together.
        :param autosave: With ``path``, save after every mutating call, as the FAISS store does, so an indexing
            pipeline leaves a saved index. Each save first folds pending changes into a new bm25s index: cheap
            for bulk writes (a DocumentWriter writes a batch per call), costly for one-document writes; turn it
            off and call ``save()`` yourself for those.
        :raises ValueError: If a parameter is outside its allowed range (the message names it).
        """
        validate_init(
            lang=lang,
            tokenizer=tokenizer,
            method=method,
            k1=k1,
            b=b,
            delta=delta,
            backend=backend,
            compaction_ratio=compaction_ratio,
            path=path,
            document_store_path=document_store_path,
            autosave=autosave,
        )
        self.path = path
        self.lang = lang
        self.tokenizer = tokenizer
        self.method = method
        self.k1 = k1
        self.b = b
        self.delta = delta
        self.backend = backend
        self.compaction_ratio = compaction_ratio
        self.document_store_path = document_store_path
        self.autosave = autosave
        self._lock = threading.RLock()
        self._writer = SingleWriter(GENERATIONS)
        self._index: BM25Index | None = None
        self._tokenizer = BM25Tokenizer()
        self._settings: dict[str, Any] = {}
        self._documents = StoredDocuments()

    def to_dict(self) -> dict[str, Any]:
        """
        Serialize the store's configuration (not its documents: ``save`` writes those to ``path``).

        :raises SerializationError: If the tokenizer is a Python function: a pipeline file may only name
            built-in tokenizers, because loading a file must never run code it names.
        """
        if callable(self.tokenizer):
            raise SerializationError(
                "BM25DocumentStore with a Python function as tokenizer cannot be serialized: a pipeline file may only "
                "name a built-in tokenizer (en, zh, character, whitespace, words, lucene, SPLITTER:STOPWORDS), since "
                "loading one never runs code"
            )
        return default_to_dict(
            self,
            path=self.path,
            lang=self.lang,
            tokenizer=self.tokenizer,
            method=self.method,
            k1=self.k1,
            b=self.b,
            delta=self.delta,
            backend=self.backend,
            compaction_ratio=self.compaction_ratio,
            document_store_path=self.document_store_path,
            autosave=self.autosave,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BM25DocumentStore":
        """Deserialize a store from ``to_dict`` output; its index is loaded from ``path`` on first use."""
        return default_from_dict(cls, data)

    @property
    def settings(self) -> dict[str, Any]:
        """Effective tokenizer and BM25 settings (explicit, saved or default), e.g. ``{"lang": "en", ...}``."""
        self._ready()
        return dict(self._settings)

    @property
    def index_builds(self) -> int:
        """How many times the whole BM25 index was built (first build and compactions) since this store opened."""
        return self._ready().full_builds

    @property
    def delta_builds(self) -> int:
        """How many times the small index of recently written documents was rebuilt."""
        return self._ready().delta_builds

    def count_documents(self) -> int:
        """Number of documents in the store."""
        return len(self._ready())

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents matching Haystack ``filters`` (all when empty), in index order then write order."""
        return [copied(d) for d in self._matching(filters)]

    def _matching(self, filters: dict[str, Any] | None) -> list[Document]:
        """The stored Documents (not copies) matching ``filters``."""
        check_filters(filters)
        with self._lock:
            documents = self._documents.get(self._ready().ids(), cache=True)
        if not filters:
            return documents
        return [d for d in documents if document_matches_filter(filters=filters, document=d)]

    def _document_pages(self, filters: dict[str, Any] | None, page_size: int) -> Iterator[list[Document]]:
        """Pages of copies of the documents matching ``filters`` (``DocumentPages``): the index's ids as they were
        at the first page, less those deleted since, read from memory or the saved table a page at a time."""
        for ids in self._ready().id_pages(page_size):
            with self._lock:
                index = self._ready()
                documents = self._documents.get([doc_id for doc_id in ids if doc_id in index])
            yield [copied(d) for d in documents if not filters or document_matches_filter(filters=filters, document=d)]

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """Number of documents matching ``filters``."""
        return len(self._matching(filters))

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """Documents by id, in the order asked; raises MissingDocumentError naming ids that are not stored."""
        with self._lock:
            index = self._ready()
            missing = [doc_id for doc_id in ids if doc_id not in index]
            if missing:
                raise MissingDocumentError(f"{len(missing)} of the ids are not in this store, e.g. {missing[:5]}")
            return [copied(d) for d in self._documents.get(list(ids))]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Write documents, all or none; their content is tokenized now and searchable from the next query.

        :param policy: ``NONE`` behaves as ``FAIL``. ``FAIL`` writes nothing if any id exists (or repeats),
            ``SKIP`` leaves existing ones, ``OVERWRITE`` replaces them.
        :returns: The number of documents written.
        :raises ValueError: If ``documents`` is not a list of Documents, or one cannot be saved (invalid
            Unicode, a field JSON cannot hold), naming ``documents[i] (id ...)`` and the field.
        :raises DuplicateDocumentError: With ``FAIL``, naming the first id that already exists.
        """
        lines = [document_line(d, i) for i, d in enumerate(check_document_list(documents))]  # checks each one
        policy = DuplicatePolicy.FAIL if policy == DuplicatePolicy.NONE else DuplicatePolicy(policy)
        texts = self._tokenizer_ready().encode([d.content or "" for d in documents])

        def change() -> tuple[int, bool]:
            index = self._ready()
            accepted = apply_policy(index, documents, policy)
            # Documents first: a spill that fails (a full disk) leaves the index as it was.
            self._documents.put(
                {doc_id: documents[at] for doc_id, at in accepted.items()},
                {doc_id: lines[at] for doc_id, at in accepted.items()},
            )
            index.delete([doc_id for doc_id in accepted if doc_id in index])
            index.add(list(accepted), texts, list(accepted.values()))
            return len(accepted), bool(accepted)

        return self._mutate(change, rows_only=True)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete documents by id; unknown ids are ignored. Deleted documents vanish from the next search."""
        ids = list(document_ids)

        def change() -> tuple[None, bool]:
            deleted = self._ready().delete(ids)
            self._documents.drop(ids)
            return None, bool(deleted)

        self._mutate(change, rows_only=True)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching ``filters``, all or none; returns how many."""
        check_filters(filters)

        def change() -> tuple[int, bool]:
            ids = [d.id for d in self._matching(filters)]
            self._ready().delete(ids)
            self._documents.drop(ids)
            return len(ids), bool(ids)

        return self._mutate(change, rows_only=True)

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """
        Merge ``meta`` into the metadata of the documents matching ``filters``, all or none; returns how many.

        Content is unchanged, so the BM25 index is too. With ``document_store_path`` the saved index holds no
        documents: update the FAISS store as well, or the change is lost when the store is reloaded.
        """
        check_filters(filters)
        check_meta_storable(meta)

        def change() -> tuple[int, bool]:
            documents = [copied(d) for d in self._matching(filters)]
            for document in documents:
                document.meta.update(meta)
            self._documents.put({d.id: d for d in documents})  # keeps copies of its own
            return len(documents), bool(documents)

        return self._mutate(change)

    def delete_all_documents(self) -> None:
        """Empty the store (and, with autosave, its saved index)."""

        def change() -> tuple[None, bool]:
            self._ready().clear()
            self._documents.clear()
            return None, True

        self._mutate(change)

    def save(self, path: str | None = None, on_progress: SaveProgress | None = None) -> None:
        """
        Save the store to ``path`` (default: the store's ``path``) as a new generation, crash-safely.

        Pending writes and deletes are folded in first (a compaction), so the saved index is one bm25s index;
        the compacted index replaces the in-memory one only once the generation is written.

        :param on_progress: Called as ``on_progress(stage, done, total)`` while the save goes: ``done`` of the
            ``total`` documents through each stage, in order ``gathering term ids``, ``counting terms``,
            ``weighting terms`` (the compaction), ``writing the index`` and, for a store holding its own
            documents, ``writing documents``; each stage starts with ``done`` 0 and ends with ``total``. Last
            comes ``digesting``, counted in bytes, not documents: the files just written, hashed for the manifest
            (``file_digests``). ``needle index`` shows it as progress lines. A run-time argument: never saved with
            the store.
        :raises DocumentStoreError: If another writer saved to ``path`` since this store read it, or holds its lock.
        """
        target = path or self.path
        if target is None:
            raise ValueError("save needs a path: pass save(path=...) or create the store with path=...")
        self._save(Path(target), on_progress)

    def _save_locked(self, root: Path, report: SaveProgress = quiet) -> None:
        """Write the compacted index as a new generation of ``root``, then adopt it in memory (REPORT: see ``save``)."""
        index = self._ready()
        main, vocab = index.compacted(report) if index.has_pending_changes() else (index.snapshot().main, None)
        generation = self._writer.write(
            root,
            lambda directory: write_generation(directory, main, root, self._settings, self._documents.lines, report),
            report,
        )
        if vocab is not None:
            index.install(main, vocab)
        if main is not None and self._settings["document_store_path"] is None:
            manifest = GENERATIONS.read_manifest(generation)  # its files were hashed as written: not hashed again
            self._documents.use_table(JsonlDocumentTable(generation, manifest, main.ids))

    def _checkpoint(self) -> tuple[IndexState, DocumentsState]:
        """The in-memory state a failed transaction returns to."""
        return self._ready().checkpoint(), self._documents.checkpoint()

    def _restore(self, checkpoint: tuple[IndexState, DocumentsState]) -> None:
        """Return to a ``_checkpoint``."""
        self._ready().restore(checkpoint[0])
        self._documents.restore(checkpoint[1])

    def _tokenizer_ready(self) -> BM25Tokenizer:
        """The tokenizer of the effective settings (those of the saved index once it is loaded)."""
        self._ready()
        return self._tokenizer

    def _ready(self) -> BM25Index:
        """The index, loading it from ``path`` (or starting empty) on first use."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._open()
        assert self._index is not None
        return self._index

    def _open(self) -> None:
        """Resolve settings against the saved manifest, then open the saved main segment and documents."""
        found = GENERATIONS.read_current(Path(self.path)) if self.path else None
        manifest_file = found[0] / MANIFEST if found is not None else None
        saved = saved_settings(found[1], found[0] / MANIFEST) if found is not None else None
        given = {
            "lang": self.lang,
            "tokenizer": self.tokenizer,
            "method": self.method,
            "k1": self.k1,
            "b": self.b,
            "delta": self.delta,
            "document_store_path": self.document_store_path,
        }
        settings = self._settings = resolve_settings(given, saved, manifest_file)
        self._tokenizer = BM25Tokenizer(settings["lang"], settings["tokenizer"])
        params = BM25Params(settings["method"], settings["k1"], settings["b"], settings["delta"], self.backend)
        main = None
        if found is not None and found[1]["documents"]:
            generation, manifest = found
            main = load_main_segment(generation, manifest, params)
            self._documents.use_table(document_table(settings["document_store_path"], generation, manifest, main.ids))
        if self.path:
            self._writer.seen(Path(self.path), found)
            if not self.autosave:  # saved once at the end (a streamed build): written documents wait on disk
                self._documents.spill_to(Path(self.path))
        self._index = BM25Index(params, self.compaction_ratio, main)
