"""The BM25 tokenizers: what terms each built-in produces, Python functions passed in code, and refused names."""

import pytest
import Stemmer
from haystack import Document
from haystack.core.errors import SerializationError
from haystack.document_stores.errors import DocumentStoreError
from hypothesis import given, settings
from hypothesis import strategies as st

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.stemming import stem_parts
from components.stores.bm25.tokenizers import BM25Tokenizer, EncodedTexts


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


def test_whitespace_and_words_are_built_in_by_name() -> None:
    """whitespace splits at spaces only (punctuation stays); words keeps runs of word characters, no stemming."""
    assert BM25Tokenizer(tokenizer="whitespace")(["Foo-Bar  the x.y"]) == [["foo-bar", "the", "x.y"]]
    assert BM25Tokenizer(tokenizer="words")(["Foo-Bar the running"]) == [["foo", "bar", "the", "running"]]


def test_a_built_in_tokenizer_name_saves_with_the_index(tmp_path) -> None:
    """tokenizer='whitespace' is used for documents and queries, and restored on load without being given."""
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path, tokenizer="whitespace").write_documents(
        [Document(id="1", content="error-code E42 raised"), Document(id="2", content="error code")]
    )
    loaded = BM25DocumentStore(path=path)
    assert loaded.settings["tokenizer"] == "whitespace"
    assert [d.id for d in loaded.bm25_retrieval("error-code")] == ["1"]


def _case_sensitive(text: str) -> list[str]:
    return text.split()


def test_a_python_function_works_in_code_but_is_never_serialized(tmp_path) -> None:
    """A callable tokenizes; to_dict refuses it; the index records 'custom' and reopens only with a function."""
    path = str(tmp_path / "bm25")
    store = BM25DocumentStore(path=path, tokenizer=_case_sensitive)
    store.write_documents([Document(id="1", content="Case Sensitive words"), Document(id="2", content="case words")])
    assert [d.id for d in store.bm25_retrieval("Case")] == ["1"]
    with pytest.raises(SerializationError, match="Python function as tokenizer cannot be serialized"):
        store.to_dict()
    with pytest.raises(
        DocumentStoreError, match=r"manifest\.json: this index was built with a custom Python tokenizer"
    ):
        BM25DocumentStore(path=path).count_documents()
    assert [d.id for d in BM25DocumentStore(path=path, tokenizer=_case_sensitive).bm25_retrieval("Case")] == ["1"]
    BM25DocumentStore(path=str(tmp_path / "plain")).write_documents([Document(content="xylophone")])
    with pytest.raises(ValueError, match="tokenizer=a Python function contradicts the index saved"):
        BM25DocumentStore(path=str(tmp_path / "plain"), tokenizer=_case_sensitive).count_documents()


@pytest.mark.parametrize("name", ["os:system", "shlex:split", "custom", "", 42])
def test_names_that_are_not_built_in_are_refused_at_init(name: object) -> None:
    """Import paths are not tokenizers any more: nothing named in data is imported or called."""
    with pytest.raises(ValueError, match="tokenizer must be one of en, zh, character, whitespace, words"):
        BM25DocumentStore(tokenizer=name)


def test_a_python_function_returning_the_wrong_type_is_reported_with_the_text() -> None:
    """A function that does not return list[str] is named with the position of the text it failed on."""

    def length(text: str) -> object:
        return [text] if text == "a" else len(text)

    with pytest.raises(TypeError, match=r"tokenizer .*length must return list\[str\]; for text #1 it returned int"):
        BM25Tokenizer(tokenizer=length)(["a", "bb"])


ENGLISH_WORDS = ["the", "Running", "runs", "a", "of", "élan", "naïve", "x", "id_42", "ΑΒΓ", "--", "i's", "s"]
WORDS = st.sampled_from([*ENGLISH_WORDS, "mit", "Gärten", "İLK", "हिंदी"])
TEXTS = st.lists(st.lists(WORDS | st.text(max_size=6), max_size=12).map(" ".join), max_size=6)


def decoded(texts: EncodedTexts) -> list[list[str]]:
    """Each text's terms back from the batch's local ids."""
    ends = texts.lengths.cumsum().tolist()
    spans = zip(texts.lengths.tolist(), ends, strict=True)
    return [[texts.terms[i] for i in texts.flat[end - n : end].tolist()] for n, end in spans]


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.sampled_from(["en", "de", "tr", "hi", "character", "words", "whitespace"]))
def test_encoded_texts_hold_exactly_the_terms_of_each_text(texts: list[str], name: str) -> None:
    """What a write indexes (encode: the English one builds ids without per-text term lists) is what a query sees
    (the tokenizer's terms, stopwords dropped, in order, repeats kept); local ids follow sorted terms."""
    tokenizer = BM25Tokenizer(tokenizer=name)
    encoded = tokenizer.encode(texts)
    assert decoded(encoded) == tokenizer(texts)
    assert encoded.terms == sorted(set(encoded.terms))
    assert len(encoded.lengths) == len(texts)


def test_the_stem_cache_gives_every_stem_when_it_starts_afresh() -> None:
    """Past its size the cache starts again with the words asked for; words it held before still get their stem
    (a lookup of a word stemmed in an earlier batch once raised KeyError here)."""
    _, stems = stem_parts("en", 4)
    uncached = Stemmer.Stemmer("english").stemWords
    for batch in (["running", "cats"], ["running", "flies", "cats"], ["agreed", "running", "cats", "ponies"]):
        assert stems(batch) == uncached(batch)
