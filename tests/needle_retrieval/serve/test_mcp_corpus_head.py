"""A short list of hits is filled to UltraRAG's ``top_k`` with the corpus's first documents not in it, score 0.

On real in-memory stores (FAISS and BM25), written out of corpus order so that the order must come from
``meta["corpus_line"]``.
"""

from typing import Any

import pytest
from haystack import Document

from components.stores.bm25 import BM25DocumentStore
from components.stores.faiss import FAISSDocumentStore
from needle_retrieval.serve.corpus_head import CorpusHead

LINES = (3, 1, 2, 5, 4, 6)  # the order the documents are written in


def document(line: int) -> Document:
    return Document(id=f"d{line}", content=f"text {line}", embedding=[1.0, float(line)], meta={"corpus_line": line})


def stored(kind: str) -> Any:
    store: Any = BM25DocumentStore(backend="numpy") if kind == "bm25" else FAISSDocumentStore(embedding_dim=2)
    store.write_documents([document(line) for line in LINES])
    return store


def ids(lists: list[list[Document]]) -> list[list[str]]:
    return [[doc.id for doc in docs] for docs in lists]


@pytest.mark.parametrize("kind", ["bm25", "faiss"])
def test_short_lists_are_filled_in_corpus_order_without_repeats(kind: str) -> None:
    head = CorpusHead(stored(kind), documents=len(LINES))
    hits = [[], [document(2)], [document(5), document(1)], [document(line) for line in (6, 5, 4)]]
    assert head.short(hits, 3)
    answer = head.fill(hits, 3)
    assert ids(answer) == [["d1", "d2", "d3"], ["d2", "d1", "d3"], ["d5", "d1", "d2"], ["d6", "d5", "d4"]]
    assert answer[0][0].score == 0.0
    assert answer[0][0].embedding is None
    assert answer[3] is hits[3]  # a full list is left as it is


def test_an_index_smaller_than_top_k_answers_every_document() -> None:
    head = CorpusHead(stored("bm25"), documents=len(LINES))
    assert ids(head.fill([[document(4)]], 10)) == [["d4", "d1", "d2", "d3", "d5", "d6"]]
    assert not head.short([[document(line) for line in LINES]], 10)


def test_the_store_is_read_once_and_again_only_for_a_larger_top_k() -> None:
    store = stored("faiss")
    head = CorpusHead(store, documents=len(LINES))
    head.fill([[]], 2)
    store.write_documents([Document(id="d0", content="text 0", embedding=[1.0, 0.0], meta={"corpus_line": 0})])
    assert ids(head.fill([[]], 2)) == [["d1", "d2"]]  # kept from the first read
    assert ids(head.fill([[]], 3)) == [["d0", "d1", "d2"]]  # read again


def test_documents_without_a_corpus_line_keep_the_list_short() -> None:
    store = BM25DocumentStore(backend="numpy")
    store.write_documents([Document(id="x", content="no line")])
    assert CorpusHead(store, documents=1).fill([[]], 5) == [[]]
