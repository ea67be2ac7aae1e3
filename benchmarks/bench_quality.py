"""Dense retrieval quality: our components vs raw sentence-transformers + faiss, nDCG@10 on SciFact.

Ours: JSONLCorpusReader -> SentenceTransformersDocumentEmbedder -> FAISSDocumentStore, queries through
SentenceTransformersBatchTextEmbedder -> FAISSBatchEmbeddingRetriever. Raw: ``SentenceTransformer.encode``
of BEIR's ``title + " " + text`` and ``faiss.IndexFlatIP``. Both use all-MiniLM-L6-v2 and are scored by the
same pytrec_eval code on the 300 SciFact test queries.

- small: the corpus cut to every judged document plus 200 others (about 540 passages), so it runs in a minute;
- large: the whole corpus (5,183 passages; about 5-10 minutes on 2 cores).

    .venv/bin/python benchmarks/bench_quality.py [--size small|large]
"""

import argparse
import json
import os
import tempfile
from pathlib import Path

import faiss
import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from components.converters import JSONLCorpusReader
from components.embedders import (
    SentenceTransformersBatchTextEmbedder,
    SentenceTransformersDocumentEmbedder,
    resolve_model,
)
from components.retrievers import FAISSBatchEmbeddingRetriever
from components.stores import FAISSDocumentStore
from needle_retrieval.eval import evaluate_run, load_beir, run_from_rankings

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEPTH = 100


def corpus_subset(size: str, judged: set[str], out: Path) -> Path:
    """The corpus file to index: all of it (large) or the judged documents plus 200 others (small)."""
    if size == "large":
        return SCIFACT / "corpus.jsonl"
    fillers = 200
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for line in src:
            doc_id = json.loads(line)["_id"]
            if doc_id in judged or fillers > 0:
                fillers -= doc_id not in judged
                dst.write(line)
    return out


def ours(corpus: Path, queries: list[str]) -> list[list[str]]:
    """Rankings from our Haystack components."""
    documents = JSONLCorpusReader().run(path=str(corpus))["documents"]
    embedder = SentenceTransformersDocumentEmbedder(model=MODEL, normalize_embeddings=True, progress_bar=False)
    store = FAISSDocumentStore()
    store.write_documents(embedder.run(documents)["documents"])
    query_embedder = SentenceTransformersBatchTextEmbedder(model=MODEL, normalize_embeddings=True, progress_bar=False)
    embeddings = query_embedder.run(texts=queries)["embeddings"]
    found = FAISSBatchEmbeddingRetriever(store, top_k=DEPTH).run(query_embeddings=embeddings)["documents"]
    return [[doc.id for doc in docs] for docs in found]


def raw(corpus: Path, queries: list[str]) -> list[list[str]]:
    """Rankings from sentence-transformers and faiss used directly, as their documentation shows."""
    from sentence_transformers import SentenceTransformer

    rows = [json.loads(line) for line in corpus.open(encoding="utf-8")]
    model = SentenceTransformer(resolve_model(MODEL))
    passages = model.encode([f"{r['title']} {r['text']}" for r in rows], normalize_embeddings=True, batch_size=32)
    index = faiss.IndexFlatIP(passages.shape[1])
    index.add(np.asarray(passages, dtype=np.float32))
    _, ids = index.search(model.encode(queries, normalize_embeddings=True), DEPTH)
    return [[rows[i]["_id"] for i in row if i >= 0] for row in ids]


def run(size: str = "small") -> list[dict]:
    """nDCG@10 of ours and of raw sentence-transformers + faiss on the same corpus and queries."""
    dataset = load_beir(SCIFACT, "test")
    judged = {doc for docs in dataset.qrels.values() for doc in docs}
    qids, texts = list(dataset.queries), list(dataset.queries.values())
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_subset(size, judged, Path(tmp) / "corpus.jsonl")
        n_docs = sum(1 for _ in corpus.open(encoding="utf-8"))
        scores = {
            name: evaluate_run(run_from_rankings(dict(zip(qids, rank(corpus, texts), strict=True))), dataset.qrels)
            for name, rank in (("ours", ours), ("raw", raw))
        }
    ndcg = {name: s.metrics["ndcg@10"] for name, s in scores.items()}
    return [
        {
            "benchmark": f"SciFact dense nDCG@10, all-MiniLM-L6-v2 ({n_docs} passages, {len(qids)} queries)",
            "ours": round(ndcg["ours"], 4),
            "peer": round(ndcg["raw"], 4),
            "unit": "nDCG@10",
            "ratio": ndcg["ours"] / ndcg["raw"],
            "note": "peer: raw sentence-transformers encode + faiss IndexFlatIP",
        }
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "large"], default="small")
    for row in run(parser.parse_args().size):
        print(row)
