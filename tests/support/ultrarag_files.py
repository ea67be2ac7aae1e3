"""Files as UltraRAG's retriever server writes them, made with the same libraries and calls, for the tests of
needle's build tools over an UltraRAG project (``needle_retrieval.ultrarag.build``).

* ``ultrarag_embeddings``: `retriever_embed` with sentence-transformers -- ``model.encode(contents,
  precision="float32")``, ``np.array(..., dtype=np.float32)``, ``np.save``: no fingerprint beside it.
* ``ultrarag_faiss``: `retriever_index` with FAISS -- an ``IndexIDMap2`` over an ``IndexFlatIP``, ids = row numbers,
  ``faiss.write_index`` to `index_path`.
* ``ultrarag_bm25``: `bm25_index` -- bm25s' ``BM25.save(save_path, corpus=None)`` and its tokenizer's
  ``save_stopwords``/``save_vocab`` into the same directory.
* ``milvus_lite_database``: a Milvus Lite database at a `uri` path, one collection in it.

A project is UltraRAG's layout: ``parameter.yaml`` (tests/data/ultrarag_parameter.yaml with the test's model)
beside ``data/corpus_example.jsonl`` (passages with ``id`` and ``contents``, no title, as UltraRAG's example).
"""

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from tests.support.paths import DATA, REPO

EXAMPLE = DATA / "ultrarag_parameter.yaml"


def make_project(root: Path, model: str, passages: int = 40, **changes: Any) -> Path:
    """An UltraRAG project in ROOT over PASSAGES passages of samples/python_docs.jsonl, the parameter file naming
    MODEL, top-level keys changed as CHANGES say; returns the parameter file."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    lines = (REPO / "samples" / "python_docs.jsonl").read_text().splitlines()[:passages]
    rows = [{"id": record["id"], "contents": record["contents"]} for record in map(json.loads, lines)]
    (root / "data" / "corpus_example.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = yaml.safe_load(EXAMPLE.read_text())
    data.update(model_name_or_path=model, **changes)
    path = root / "parameter.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def corpus_contents(project: Path) -> list[str]:
    """The `contents` of the project's corpus, line by line: what UltraRAG embeds."""
    lines = (project.parent / "data" / "corpus_example.jsonl").read_text().splitlines()
    return [json.loads(line)["contents"] for line in lines if line.strip()]


def corpus_ids(project: Path) -> list[str]:
    """The ids of the project's corpus, line by line (unique here): UltraRAG's row i is the passage of line i."""
    lines = (project.parent / "data" / "corpus_example.jsonl").read_text().splitlines()
    return [json.loads(line)["id"] for line in lines if line.strip()]


def ultrarag_embeddings(model: str, contents: list[str], npy: Path, dtype: str = "float32") -> npt.NDArray[Any]:
    """Encode CONTENTS with MODEL as UltraRAG's retriever_embed does and np.save them to NPY (as DTYPE); returns the
    float32 rows."""
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(model, device="cpu")
    rows = np.array(encoder.encode(contents, batch_size=16, normalize_embeddings=False, precision="float32"))
    rows = rows.astype(np.float32)
    npy.parent.mkdir(parents=True, exist_ok=True)
    np.save(npy, rows.astype(dtype))
    return rows


def encode_query(model: str, query: str) -> npt.NDArray[np.float32]:
    """MODEL's vector of QUERY (no instruction, no prompt), as both servers embed a query here."""
    from sentence_transformers import SentenceTransformer

    return np.asarray(SentenceTransformer(model, device="cpu").encode([query], precision="float32")[0])


def ultrarag_faiss(rows: npt.NDArray[np.float32], path: Path) -> None:
    """Write ROWS as UltraRAG's FAISS backend does: IndexIDMap2(IndexFlatIP), ids 0..N-1, faiss.write_index."""
    import faiss

    index = faiss.IndexIDMap2(faiss.IndexFlatIP(rows.shape[1]))
    index.add_with_ids(np.ascontiguousarray(rows, dtype=np.float32), np.arange(len(rows), dtype=np.int64))
    path.parent.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(path))


def ultrarag_bm25(contents: list[str], directory: Path) -> None:
    """Write a BM25 index of CONTENTS as UltraRAG's bm25_index does: bm25s' save layout plus its tokenizer's files."""
    import bm25s

    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en")
    model = bm25s.BM25()
    model.index(tokenizer.tokenize(contents, return_as="tuple", show_progress=False), show_progress=False)
    model.save(str(directory), corpus=None)
    tokenizer.save_stopwords(str(directory))
    tokenizer.save_vocab(str(directory))


def milvus_lite_database(path: Path, dim: int) -> None:
    """A Milvus Lite database at PATH holding one collection of one vector, as a Milvus Lite `uri` leaves it."""
    from pymilvus import MilvusClient

    path.parent.mkdir(parents=True, exist_ok=True)
    client = MilvusClient(str(path))
    try:
        client.create_collection("wiki", dimension=dim)
        client.insert("wiki", [{"id": 1, "vector": [0.5] * dim}])
    finally:
        client.close()


def tree(path: Path) -> dict[str, bytes]:
    """Every file under PATH (or PATH itself) by relative name, with its bytes: to show a path left untouched."""
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
