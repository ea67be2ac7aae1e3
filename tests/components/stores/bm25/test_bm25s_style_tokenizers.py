"""The ``SPLITTER:STOPWORDS`` BM25 tokenizers: bm25s' Tokenizer without a stemmer (what UltraRAG's BM25 backend
indexes), by name, serialized with the store, recorded with a saved index and used by its searches.

The expected terms are written out by hand from bm25s' rules: lower-case first, then split (``regex``: words of
two or more word characters; ``char``: every non-space character; ``jieba``: search-mode pieces, stripped), then
the stopwords of the language dropped, nothing stemmed.
"""

import json
from pathlib import Path

import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.settings import saved_settings
from components.stores.bm25.tokenizers import BM25Tokenizer

TEXT = "The Running Dogs, a T-cell & IL-2 in 3.5mg!"


def test_regex_keeps_words_of_two_characters_unstemmed_without_the_stopwords() -> None:
    """'the', 'a', 'in' are English stopwords; 'running' stays unstemmed; '3.5mg' gives '5mg' (the '3' is alone)."""
    assert BM25Tokenizer(tokenizer="regex:en")([TEXT]) == [["running", "dogs", "cell", "il", "5mg"]]
    assert BM25Tokenizer(tokenizer="regex:none")([TEXT]) == [["the", "running", "dogs", "cell", "il", "in", "5mg"]]
    assert BM25Tokenizer(tokenizer="regex:de")(["Die Hunde und der Ball"]) == [["hunde", "ball"]]


def test_char_gives_every_non_space_character_punctuation_too() -> None:
    """Each character is a term; 'a', the one one-letter word of bm25s' English stopwords, goes wherever it stands,
    as bm25s drops it; with no stopwords nothing goes."""
    assert BM25Tokenizer(tokenizer="char:none")(["Ab, c!\tD"]) == [["a", "b", ",", "c", "!", "d"]]
    assert BM25Tokenizer(tokenizer="char:en")(["a ball is red"]) == [["b", "l", "l", "i", "s", "r", "e", "d"]]


def test_jieba_keeps_punctuation_and_latin_words_and_drops_bm25s_chinese_stopwords() -> None:
    """jieba's search mode gives 北京大学 and its parts; 我们, 在, 的 and 处理 are in bm25s' Chinese list; the
    full stop and the English words stay (bm25s' Chinese list has no English)."""
    (terms,) = BM25Tokenizer(tokenizer="jieba:zh")(["我们在北京大学学习自然语言处理的方法。Hello the World"])
    words = ["北京", "大学", "北京大学", "学习", "自然", "语言", "自然语言", "方法"]
    assert terms == [*words, "。", "hello", "the", "world"]


@pytest.mark.parametrize("name", ["regex", "regex:", "regex:xx", "words:en", ":en", "jieba:zh:x", "REGEX:en"])
def test_a_malformed_name_is_refused_naming_the_allowed_forms(name: str) -> None:
    with pytest.raises(ValueError, match=r"or SPLITTER:STOPWORDS with SPLITTER one of regex, char, jieba and STOP"):
        BM25DocumentStore(tokenizer=name)


def test_the_name_round_trips_through_to_dict_and_from_dict() -> None:
    data = BM25DocumentStore(tokenizer="char:zh").to_dict()
    assert data["init_parameters"]["tokenizer"] == "char:zh"
    again = BM25DocumentStore.from_dict(data)
    again.write_documents([Document(id="1", content="北京"), Document(id="2", content="上海")])
    assert again.settings["tokenizer"] == "char:zh"
    assert [d.id for d in again.bm25_retrieval("京", top_k=2)] == ["1"]  # one character matches under char


def test_a_saved_index_records_the_name_and_its_searches_cut_queries_the_same_way(tmp_path: Path) -> None:
    path = str(tmp_path / "bm25")
    documents = [Document(id="run", content="Running dogs"), Document(id="ran", content="He runs a dog")]
    BM25DocumentStore(path=path, tokenizer="regex:en").write_documents(documents)
    manifest = next((tmp_path / "bm25").rglob("manifest.json"))
    assert json.loads(manifest.read_text())["tokenizer"]["tokenizer"] == "regex:en"
    reopened = BM25DocumentStore(path=path)  # no tokenizer given: the saved one
    assert reopened.settings["tokenizer"] == "regex:en"
    assert [d.id for d in reopened.bm25_retrieval("running", top_k=2)] == ["run"]  # no stemming: 'runs' differs
    with pytest.raises(ValueError, match="tokenizer='regex:none' contradicts the index saved in"):
        BM25DocumentStore(path=path, tokenizer="regex:none").count_documents()


def test_a_manifest_naming_an_unknown_pair_is_refused(tmp_path: Path) -> None:
    """A saved index's tokenizer is checked before use (the store also refuses an edited, unsealed manifest)."""
    path = tmp_path / "bm25"
    BM25DocumentStore(path=str(path), tokenizer="regex:en").write_documents([Document(id="1", content="dogs")])
    manifest = next(path.rglob("manifest.json"))
    data = json.loads(manifest.read_text())
    assert saved_settings(data, manifest)["tokenizer"] == "regex:en"
    data["tokenizer"]["tokenizer"] = "regex:klingon"
    with pytest.raises(DocumentStoreError, match=r"field 'tokenizer.tokenizer' is 'regex:klingon'; expected null"):
        saved_settings(data, manifest)
