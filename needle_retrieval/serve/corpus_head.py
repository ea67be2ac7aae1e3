"""UltraRAG's ``top_k`` passages per query: a short list of hits filled with the corpus's first documents.

UltraRAG's retriever answers ``top_k`` passages for every query whenever the index holds that many documents: its
FAISS search returns ``k`` rows, and bm25s scores every document, those a query does not match with 0. Its prompt
templates index into those lists. needle's retrievers return only what they find (a BM25 query of stopwords only
finds nothing: ``[[]]``), so the UltraRAG tools fill a short list (``CorpusHead.fill``): after the hits come the
index's first documents in corpus order (``meta["corpus_line"]``, which ``needle index`` records for every document)
that are not among them, each with score 0. For a query that matches nothing these are the very passages bm25s
answers, in its order too up to ``top_k`` 15 (UltraRAG's default is 5); past that, and among the zeros after real
hits, bm25s orders its ties by its heap, which nothing should rely on.

The normal path only compares list lengths with ``min(top_k, documents)``. The first short list reads the first
``top_k`` documents of the store the search runs on (``filter_documents`` on ``corpus_line``: the FAISS and BM25
stores scan their documents once for it) and keeps them for the next ones; only a larger ``top_k`` reads again. An
index whose documents carry no ``corpus_line`` keeps its lists short.

A search for one tenant (`needle serve --tenant`, or a request's ``tenant``) is filled from that tenant's first
documents only (``scope``: the tenant's filter), never another tenant's: the tenant's documents are read in one
``filter_documents`` (the stores answer a tenant's filter from its own rows, or SQLite narrows it: not a pass over
every document per read) and its first ``top_k`` in corpus order kept. A tenant with no documents keeps an empty head,
and is not read again for the same ``top_k``.

Nothing heavy is imported here: ``needle mcp`` lists its tools before the model libraries load.
"""

import dataclasses
import itertools
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from haystack import Document

    from needle_retrieval.pipelines.runner import SearchRunner

LINE = "corpus_line"  # the 1-based corpus line ``needle index`` records in each document's meta


@dataclass
class CorpusHead:
    """The first documents of one index in corpus order, read from its store on the first short list."""

    store: Any  # a document store with Haystack's filter_documents (FAISS, BM25 or Milvus)
    documents: int  # how many documents the index holds
    head: list["Document"] = field(default_factory=list)  # its first documents, by corpus line, score 0
    lines: int = 0  # how many corpus lines ``head`` was read for
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    scope: dict[str, Any] | None = None  # the filter of the one tenant whose documents fill the lists; None: all

    @classmethod
    def of(cls, runner: "SearchRunner", documents: int, scope: dict[str, Any] | None = None) -> "CorpusHead":
        """The head of the store RUNNER's pipeline searches (its first retriever's; every part holds every
        document) in an index of DOCUMENTS documents, of the documents SCOPE keeps (None: all)."""
        stores = (getattr(component, "document_store", None) for _, component in runner.pipeline.walk())
        return cls(next(store for store in stores if store is not None), documents, scope=scope)

    def wanted(self, top_k: int) -> int:
        """How many passages each list must have: ``top_k``, or every document of a smaller index."""
        return min(top_k, self.documents)

    def short(self, hits: list[list["Document"]], top_k: int) -> bool:
        """Whether any list of HITS has fewer than ``wanted(top_k)`` documents (cheap: lengths only)."""
        want = self.wanted(top_k)
        return any(len(docs) < want for docs in hits)

    def fill(self, hits: list[list["Document"]], top_k: int) -> list[list["Document"]]:
        """HITS with each short list filled from the head; blocking (the first call reads the store)."""
        want = self.wanted(top_k)
        head = self.first(want)
        return [docs if len(docs) >= want else filled(docs, head, want) for docs in hits]

    def first(self, count: int) -> list["Document"]:
        """The documents of the first COUNT corpus lines, in corpus order, with score 0 and no embedding."""
        with self.lock:
            if count > self.lines:
                found = self.read(count)
                found.sort(key=lambda doc: doc.meta[LINE])
                self.head = [dataclasses.replace(doc, score=0.0, embedding=None) for doc in found]
                self.lines = count
            return self.head

    def read(self, count: int) -> list["Document"]:
        """The documents of the first COUNT corpus lines; in a SCOPE, its first COUNT documents in corpus order (all
        of them where it has fewer), read in one pass."""
        if self.scope is None:
            return list(self.store.filter_documents(up_to(count)))
        found = [doc for doc in self.store.filter_documents(self.scope) if isinstance(doc.meta.get(LINE), int)]
        return sorted(found, key=lambda doc: doc.meta[LINE])[:count]


def up_to(line: int) -> dict[str, Any]:
    """The filter that keeps the documents of corpus lines 1 to LINE."""
    return {"field": f"meta.{LINE}", "operator": "<=", "value": line}


def filled(documents: list["Document"], head: list["Document"], want: int) -> list["Document"]:
    """DOCUMENTS followed by the documents of HEAD not among them, up to WANT in all."""
    have = {doc.id for doc in documents}
    extra = (doc for doc in head if doc.id not in have)
    return documents + list(itertools.islice(extra, want - len(documents)))
