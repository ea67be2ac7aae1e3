"""BM25 engines for ``bench_bm25.py`` to set against ours, when installed: PISA (``pyterrier_pisa``) and tantivy.

Each indexes the benchmark's passages once (row i's id is its position), on one thread, then answers a list of
queries with the best ``k`` rows per query, which ``documents_out`` turns into Haystack Documents the cheapest way,
as for raw bm25s: every side returns what a Haystack retriever must. They use their own analyzers (PISA: Porter
stemmer, its stop list; tantivy: ``en_stem``), so their hits differ a little from ours; the rows compare speed.
Neither is installed where this was written: these adapters follow the projects' documented APIs (pyterrier_pisa
0.1, tantivy-py 0.22+) and were not run here; an engine that is missing or fails to build is left out, with a note.
"""

import gc
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from haystack import Document

Search = Callable[[list[str]], object]
_NOT_A_WORD = re.compile(r"[^\w\s]")  # tantivy's query syntax characters (+ - : ( ) ^ " ...), dropped from queries


class Peer(Protocol):
    """An engine with its passages indexed."""

    def bind(self, k: int) -> Search:
        """The search function answering with ``k`` Documents per query."""


def documents_out(stored: list[Document], rows: list[list[int]], scores: list[list[float]]) -> list[list[Document]]:
    """Each query's hits as new Documents, built the cheapest way (stored fields copied, own meta), collector off."""
    gc.disable()
    try:
        out = []
        for query_rows, query_scores in zip(rows, scores, strict=True):
            hits = []
            for row, score in zip(query_rows, query_scores, strict=True):
                base = stored[row]
                hit = object.__new__(Document)
                hit.__dict__.update(base.__dict__, score=score, meta={**base.meta, "retrieval_type": "sparse"})
                hits.append(hit)
            out.append(hits)
        return out
    finally:
        gc.enable()


def installed_peers(stored: list[Document], work: Path, print_note: Callable[[str], None]) -> dict[str, Peer]:
    """The engines installed here, each with ``stored`` indexed under ``work``; a note for each one left out."""
    peers: dict[str, Peer] = {}
    for name, module, make in (("PISA", "pyterrier_pisa", PisaPeer), ("tantivy", "tantivy", TantivyPeer)):
        try:
            peers[name] = make(stored, work / name)
        except ImportError:
            print_note(f"{name} ({module}) is not installed: its rows are left out")
        except Exception as error:  # an engine that cannot index here must not stop the other rows
            print_note(f"{name} ({module}) failed to index ({type(error).__name__}: {error}): its rows are left out")
    return peers


class PisaPeer:
    """PISA through pyterrier_pisa: BM25 k1 0.9, b 0.4, one thread; queries as a pyterrier DataFrame."""

    def __init__(self, stored: list[Document], where: Path) -> None:
        from pyterrier_pisa import PisaIndex  # type: ignore[import-not-found]

        self.stored = stored
        self.index = PisaIndex(str(where), stemmer="porter", threads=1)
        self.index.index({"docno": str(row), "text": d.content or ""} for row, d in enumerate(stored))

    def bind(self, k: int) -> Search:
        import pandas as pd  # type: ignore[import-untyped]

        retriever = self.index.bm25(k1=0.9, b=0.4, num_results=k, threads=1)

        def search(queries: list[str]) -> list[list[Document]]:
            asked = pd.DataFrame({"qid": [str(i) for i in range(len(queries))], "query": queries})
            found = retriever.transform(asked)
            rows: list[list[int]] = [[] for _ in queries]
            scores: list[list[float]] = [[] for _ in queries]
            for qid, docno, score in zip(found["qid"], found["docno"], found["score"], strict=True):
                rows[int(qid)].append(int(docno))
                scores[int(qid)].append(float(score))
            return documents_out(self.stored, rows, scores)

        return search


class TantivyPeer:
    """tantivy through tantivy-py: a stored row number and an ``en_stem`` body, one indexing thread."""

    def __init__(self, stored: list[Document], where: Path) -> None:
        import tantivy  # type: ignore[import-not-found]

        where.mkdir(parents=True, exist_ok=True)
        builder = tantivy.SchemaBuilder()
        builder.add_unsigned_field("row", stored=True)
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self.stored, self.index = stored, tantivy.Index(builder.build(), path=str(where))
        writer = self.index.writer(heap_size=256_000_000, num_threads=1)
        for row, document in enumerate(stored):
            writer.add_document(tantivy.Document(row=row, body=document.content or ""))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def bind(self, k: int) -> Search:
        searcher = self.index.searcher()

        def search(queries: list[str]) -> list[list[Document]]:
            found = [list(self._hits(searcher, query, k)) for query in queries]
            return documents_out(self.stored, [[r for r, _ in q] for q in found], [[s for _, s in q] for q in found])

        return search

    def _hits(self, searcher: Any, query: str, k: int) -> Iterator[tuple[int, float]]:
        """(row, score) of the best ``k`` for one query (its words OR-ed, as tantivy's parser does by default)."""
        words = _NOT_A_WORD.sub(" ", query).strip()
        if not words:
            return
        for score, address in searcher.search(self.index.parse_query(words, ["body"]), k).hits:
            yield int(searcher.doc(address)["row"][0]), float(score)
