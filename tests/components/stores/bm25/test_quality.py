"""Retrieval quality: SciFact nDCG@10 against the published bm25s number, and Chinese needing segmentation."""

import json
from pathlib import Path

import pytest
from haystack import Document

from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from components.stores.bm25.document_store import BM25DocumentStore
from tests.support.paths import DATA


def read_jsonl(path: Path) -> list[dict]:
    """One dict per line."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.integration
def test_scifact_ndcg_at_10_matches_raw_bm25s(scifact_dir: Path) -> None:
    """Lucene BM25 (k1=0.9, b=0.4), English stopwords, Snowball stemmer: raw bm25s scores 0.676; we need >= 0.670."""
    from ranx import Qrels, Run, evaluate

    corpus = read_jsonl(scifact_dir / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(scifact_dir / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (scifact_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, grade = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    store = BM25DocumentStore()
    store.write_documents([Document(id=d["_id"], content=f"{d['title']} {d['text']}") for d in corpus])
    query_ids = list(qrels)
    hits = BM25BatchRetriever(store, top_k=10).run(queries=[queries[q] for q in query_ids])["documents"]
    run = {q: {d.id: d.score for d in docs} for q, docs in zip(query_ids, hits, strict=True)}
    ndcg = evaluate(Qrels(qrels), Run(run), "ndcg@10")
    assert len(query_ids) == 300
    assert ndcg >= 0.670, f"nDCG@10 {ndcg:.4f} < 0.670"


def test_chinese_needs_word_segmentation_and_zh_provides_it() -> None:
    """With zh (jieba) every question finds its passage first; the English tokenizer finds almost none."""
    passages = read_jsonl(DATA / "zh_corpus.jsonl")
    questions = read_jsonl(DATA / "zh_queries.jsonl")
    assert len(passages) >= 50
    assert len(questions) >= 20
    documents = [Document(id=p["id"], content=p["contents"]) for p in passages]
    first_hits = {}
    for lang in ("zh", "en"):
        store = BM25DocumentStore(lang=lang)
        store.write_documents(documents)
        results = BM25BatchRetriever(store, top_k=1).run(queries=[q["query"] for q in questions])["documents"]
        first_hits[lang] = sum(bool(r) and r[0].id == q["answer"] for q, r in zip(questions, results, strict=True))
    assert first_hits["zh"] == len(questions)
    assert first_hits["en"] <= 2


def test_character_bigrams_handle_cjk_without_a_segmenter() -> None:
    """The character tokenizer finds Japanese text by overlapping bigrams, where en sees one giant token."""
    documents = [
        Document(id="tokyo", content="東京大学で日本語を勉強する。"),
        Document(id="kyoto", content="京都の寺を見学した。"),
    ]
    store = BM25DocumentStore(lang="character")
    store.write_documents(documents)
    assert [d.id for d in store.bm25_retrieval("日本語の勉強", top_k=1)] == ["tokyo"]
    english = BM25DocumentStore(lang="en")
    english.write_documents(documents)
    assert english.bm25_retrieval("日本語の勉強") == []
