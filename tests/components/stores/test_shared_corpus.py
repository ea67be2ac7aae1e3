"""A BM25 index over a FAISS store's corpus: one copy of the documents in memory, and a pair that can be moved."""

import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore
from tests.support.paths import REPO

PEAK_RSS = textwrap.dedent(
    """
    import sys
    import numpy as np
    from components.stores.bm25.document_store import BM25DocumentStore
    from components.stores.faiss.document_store import FAISSDocumentStore

    mode, root = sys.argv[1], sys.argv[2]
    queries = ["word%d word%d" % (i, i + 7) for i in range(30)]
    if mode in ("dense", "hybrid"):
        dense = FAISSDocumentStore(path=root + "/dense")
        assert len(dense.search(np.ones((5, 384), np.float32), 100)[0]) == 100
    if mode in ("bm25", "hybrid"):
        bm25 = BM25DocumentStore(path=root + ("/bm25" if mode == "hybrid" else "/bm25solo"))
        assert all(len(hits) == 100 for hits in bm25.bm25_retrieval_batch(queries, top_k=100))
    print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")))
    """
)


def _corpus(n: int, words_per_doc: int, seed: int = 0) -> list[Document]:
    rng = random.Random(seed)
    vocabulary = [f"word{i}" for i in range(3000)]
    return [
        Document(id=f"d{i}", content=" ".join(rng.choices(vocabulary, k=words_per_doc)), meta={"n": i})
        for i in range(n)
    ]


def _build_pair(root: Path, documents: list[Document], dim: int) -> None:
    """DIR/dense (FAISS) and DIR/bm25 reading its documents from there, the layout ``needle index`` makes."""
    vectors = np.random.default_rng(0).standard_normal((len(documents), dim)).astype(np.float32)
    FAISSDocumentStore(path=str(root / "dense")).write_embeddings(documents, vectors)
    BM25DocumentStore(path=str(root / "bm25"), document_store_path=str(root / "dense")).write_documents(documents)


def test_a_moved_pair_of_stores_still_searches_and_no_manifest_holds_an_absolute_path(tmp_path: Path) -> None:
    """mv DIR DIR2: the BM25 store finds its documents in DIR2/dense, because it saved the path relative."""
    documents = _corpus(50, 20)
    _build_pair(tmp_path / "index", documents, dim=8)
    before = [
        (d.id, d.content) for d in BM25DocumentStore(path=str(tmp_path / "index" / "bm25")).bm25_retrieval("word7")
    ]
    shutil.move(tmp_path / "index", tmp_path / "moved")
    moved = BM25DocumentStore(path=str(tmp_path / "moved" / "bm25"))
    assert [(d.id, d.content) for d in moved.bm25_retrieval("word7")] == before != []
    for manifest in (tmp_path / "moved").rglob("manifest.json"):
        text = manifest.read_text()
        assert str(tmp_path) not in text, manifest
        assert '"/' not in text, manifest


def test_bm25_hits_stay_those_of_the_generation_it_opened_while_the_dense_store_changes(tmp_path: Path) -> None:
    """Hits come from the FAISS store loaded in this process, then from the saved file once it changes."""
    documents = _corpus(50, 20)
    _build_pair(tmp_path, documents, dim=8)
    bm25 = BM25DocumentStore(path=str(tmp_path / "bm25"))
    expected = [(d.id, d.content, d.meta) for d in bm25.bm25_retrieval("word7")]
    dense = FAISSDocumentStore(path=str(tmp_path / "dense"))
    assert dense.count_documents() == 50
    assert [(d.id, d.content, d.meta) for d in bm25.bm25_retrieval("word7")] == expected
    dense.update_by_filter({"field": "meta.n", "operator": ">=", "value": 0}, {"n": -1})
    dense.delete_documents([expected[0][0]])
    assert [(d.id, d.content, d.meta) for d in bm25.bm25_retrieval("word7")] == expected


def _peak_rss_kib(mode: str, root: Path) -> int:
    result = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, mode, str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.strip())


def test_a_hybrid_pair_holds_the_corpus_in_memory_once(tmp_path: Path) -> None:
    """
    Peak RSS of loading and searching both stores ≤ 1.15 * (what the dense store alone adds + what a standalone
    BM25 index adds), each over a process that only imported the same modules. Holding the corpus twice (a second
    FAISS store loaded for the BM25 documents) adds the whole dense increment again and fails this (measured
    here: dense +31 MB, BM25 alone +15 MB, hybrid +41 MB; with a second FAISS store +70 MB).
    """
    documents = _corpus(3000, 300)
    _build_pair(tmp_path, documents, dim=384)
    BM25DocumentStore(path=str(tmp_path / "bm25solo")).write_documents(documents)
    base = _peak_rss_kib("base", tmp_path)
    dense, bm25, hybrid = (_peak_rss_kib(mode, tmp_path) - base for mode in ("dense", "bm25", "hybrid"))
    assert hybrid <= 1.15 * (dense + bm25), f"hybrid +{hybrid} KiB; dense +{dense} KiB, BM25 alone +{bm25} KiB"
