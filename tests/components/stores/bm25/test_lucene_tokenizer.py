"""The ``lucene`` BM25 tokenizer: Lucene's terms, recorded with the index and used by its searches; the default
tokenizer still answers exactly as raw bm25s does, also from a saved index."""

import json
from pathlib import Path

import bm25s
import pytest
import Stemmer
from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.tokenizers import BM25Tokenizer

CELLS = [
    Document(id="t", content="T cells attack infected cells."),
    Document(id="b", content="B cells make antibodies."),
    Document(id="one", content="Type 1 diabetes destroys the cells that make insulin."),
]


def test_lucene_keeps_the_one_character_and_numeric_tokens_that_the_default_drops() -> None:
    text = "T cells and IL-2 in type 1 diabetes: 3.5 mg/kg in the U.S.A."
    assert BM25Tokenizer("en")([text]) == [["cell", "il", "type", "diabet", "mg", "kg"]]
    assert BM25Tokenizer("en", "lucene")([text]) == [
        ["t", "cell", "il", "2", "type", "1", "diabet", "3.5", "mg", "kg", "u.s.a"]
    ]


def test_lucene_english_is_lucenes_english_analyzer() -> None:
    """Possessives go, Lucene's 33 stopwords go (bm25s' English list is the same), Porter stems (the default's
    Snowball English stemmer keeps "generous")."""
    assert BM25Tokenizer("en", "lucene")(["Bob's generously running, which would be THE case"]) == [
        ["bob", "gener", "run", "which", "would", "case"]
    ]
    assert BM25Tokenizer("en")(["Bob's generously running"]) == [["bob", "generous", "run"]]


def test_lucene_segments_unicode_words_as_the_standard_tokenizer() -> None:
    """Han characters one by one, Katakana and Hangul words whole, accents kept, tokens cut at 255 characters."""
    tokenize = BM25Tokenizer("zh", "lucene")  # not English: nothing removed or stemmed (StandardAnalyzer)
    assert tokenize(["日本語テスト 한국어 Café, Bob's"]) == [["日", "本", "語", "テスト", "한국어", "café", "bob's"]]
    assert tokenize(["x" * 300]) == [["x" * 255, "x" * 45]]
    assert tokenize(["", "!!! ---"]) == [[], []]


def test_a_lucene_store_finds_a_one_letter_query_the_default_store_cannot() -> None:
    lucene, default = BM25DocumentStore(tokenizer="lucene"), BM25DocumentStore()
    for store in (lucene, default):
        store.write_documents(CELLS)
    assert [d.id for d in lucene.bm25_retrieval("T", top_k=3)] == ["t"]
    assert [d.id for d in lucene.bm25_retrieval("type 1", top_k=1)] == ["one"]
    assert default.bm25_retrieval("T", top_k=3) == []


def test_the_saved_index_records_lucene_and_its_searches_use_it(tmp_path: Path) -> None:
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path, tokenizer="lucene").write_documents(CELLS)
    reopened = BM25DocumentStore(path=path)  # no tokenizer given: the saved one
    assert reopened.settings["tokenizer"] == "lucene"
    assert [d.id for d in reopened.bm25_retrieval("T", top_k=3)] == ["t"]
    with pytest.raises(ValueError, match="tokenizer='words' contradicts the index saved in"):
        BM25DocumentStore(path=path, tokenizer="words").count_documents()


def test_lucene_is_serialised_with_the_store() -> None:
    store = BM25DocumentStore(tokenizer="lucene")
    data = store.to_dict()
    assert data["init_parameters"]["tokenizer"] == "lucene"
    again = BM25DocumentStore.from_dict(data)
    again.write_documents(CELLS)
    assert again.settings["tokenizer"] == "lucene"
    assert [d.id for d in again.bm25_retrieval("T", top_k=3)] == ["t"]


def test_an_unknown_tokenizer_name_lists_lucene_among_the_allowed() -> None:
    with pytest.raises(ValueError, match="tokenizer must be one of en, zh, character, whitespace, words, lucene"):
        BM25DocumentStore(tokenizer="standard")


def test_a_saved_default_index_answers_as_raw_bm25s(scifact_dir: Path, tmp_path: Path) -> None:
    """The default (no tokenizer) saves ``tokenizer: null`` and, reopened, gives raw bm25s' ids and float32 scores
    at top_k 10 and 100 (ties aside: an equal score may come in either order)."""
    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as lines:
        rows = [json.loads(line) for _, line in zip(range(1500), lines, strict=False)]
    documents = [Document(id=r["_id"], content=f"{r['title']} {r['text']}") for r in rows]
    with open(scifact_dir / "queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for _, line in zip(range(60), lines, strict=False)]
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path).write_documents(documents)
    saved = BM25DocumentStore(path=path)
    assert saved.settings["tokenizer"] is None
    stemmer = Stemmer.Stemmer("english")
    raw = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    raw.index(bm25s.tokenize([d.content for d in documents], stopwords="en", stemmer=stemmer, show_progress=False))
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    for k in (10, 100):
        found = raw.retrieve(tokens, k=k, show_progress=False)
        expected = [
            {(documents[r].id, float(s)) for r, s in zip(rr, ss, strict=True) if s > 0}
            for rr, ss in zip(found.documents, found.scores, strict=True)
        ]
        hits = [_scored(found) for found in saved.bm25_retrieval_batch(queries, top_k=k)]
        for ours, theirs in zip(hits, expected, strict=True):
            assert [score for _, score in ours] == sorted((score for _, score in ours), reverse=True)
            if len(ours) < k or not theirs:
                assert set(ours) == theirs
            else:  # the k-th score may be shared by more documents than fit: compare those above it
                last = ours[-1][1]
                assert {hit for hit in ours if hit[1] > last} == {hit for hit in theirs if hit[1] > last}


def _scored(documents: list[Document]) -> list[tuple[str, float]]:
    """(id, score) of each hit; every hit has a score."""
    pairs = [(d.id, d.score) for d in documents if d.score is not None]
    assert len(pairs) == len(documents)
    return pairs


def test_needle_index_bm25_tokenizer_lucene_is_recorded_and_searched(tmp_path: Path, capsys) -> None:
    """`needle index --bm25-tokenizer lucene`: the index finds a one-letter query (vitamin "d") that a default
    index cannot, every later search uses the recorded tokenizer, and the flag is refused where it cannot apply."""
    from needle_retrieval.cli import main

    corpus = tmp_path / "corpus.jsonl"
    lines = [{"id": "d", "contents": "vitamin d and bone density"}, {"id": "k", "contents": "vitamin k and clotting"}]
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    hits = {}
    for name, flags in (("lucene", ["--bm25-tokenizer", "lucene"]), ("default", [])):
        out = tmp_path / name
        assert main(["index", str(corpus), "--out", str(out), "--bm25", "--no-dense", *flags]) == 0
        capsys.readouterr()
        assert main(["search", str(out), "d", "--mode", "bm25", "--json"]) == 0
        hits[name] = [hit["id"] for hit in json.loads(capsys.readouterr().out)[0]]
    assert hits == {"lucene": ["d"], "default": []}
    refused = ["index", str(corpus), "--out", str(tmp_path / "x"), "--bm25-tokenizer", "lucene"]
    assert main(refused) == 2  # without --bm25 there is no BM25 index to tokenize for
    assert "--bm25-tokenizer needs --bm25 and --store faiss" in capsys.readouterr().err
