"""The BM25 tokenizers: what terms each language setting produces, user tokenizers and their errors."""

import pytest
from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.tokenizers import BM25Tokenizer


def test_english_lowercases_drops_stopwords_and_stems() -> None:
    """'The Running Dogs are barking' keeps stemmed content words only."""
    assert BM25Tokenizer("en")(["The Running Dogs are barking!"]) == [["run", "dog", "bark"]]


def test_chinese_segments_words_and_drops_function_words_and_punctuation() -> None:
    """jieba search mode emits 北京大学 and its parts; 的, 在 and punctuation are gone; content words stay."""
    (terms,) = BM25Tokenizer("zh")(["我们在北京大学学习自然语言处理的方法。"])
    assert {"北京", "大学", "北京大学", "自然语言", "处理", "方法"} <= set(terms)
    assert not {"的", "在", "我们", "。"} & set(terms)


def test_character_gives_cjk_unigrams_and_bigrams_and_whole_latin_words() -> None:
    """CJK runs become characters and overlapping pairs; other words stay whole, lower-cased."""
    assert BM25Tokenizer("character")(["한국어 ABC"]) == [["한", "국", "어", "한국", "국어", "abc"]]


def test_a_user_tokenizer_is_an_import_path_and_saves_with_the_index(tmp_path) -> None:
    """tokenizer='shlex:split' is used for documents and queries, serialized, and restored on load."""
    path = str(tmp_path / "bm25")
    store = BM25DocumentStore(path=path, tokenizer="shlex:split")
    store.write_documents([Document(id="1", content="Case Sensitive words"), Document(id="2", content="case words")])
    loaded = BM25DocumentStore(path=path)
    assert loaded.settings["tokenizer"] == "shlex:split"
    assert [d.id for d in loaded.bm25_retrieval("Case")] == ["1"]


@pytest.mark.parametrize(
    ("import_path", "message"),
    [
        ("no_such_module_xyz:f", "tokenizer no_such_module_xyz:f: cannot import module 'no_such_module_xyz'"),
        ("shlex:nope", "tokenizer shlex:nope: module 'shlex' has no attribute 'nope'"),
        ("shlex:__doc__", "tokenizer shlex:__doc__: '__doc__' is not callable"),
    ],
)
def test_unusable_user_tokenizers_are_reported_on_first_use(import_path: str, message: str) -> None:
    """An import path that does not lead to a function fails clearly the first time text is tokenized."""
    with pytest.raises(ValueError, match=message):
        BM25Tokenizer(tokenizer=import_path)(["text"])


def test_a_user_tokenizer_returning_the_wrong_type_is_reported_with_the_text() -> None:
    """A function that does not return list[str] is named with the position of the text it failed on."""
    with pytest.raises(TypeError, match=r"tokenizer json:loads must return list\[str\]; for text #1 it returned int"):
        BM25Tokenizer(tokenizer="json:loads")(['["fine"]', "42"])
