"""BM25 in every language PyStemmer stems: the stemmer and the stop list act on real text, the language is recorded
with the index and used by every search of it, and a bad or tampered language is refused naming the setting."""

import unicodedata
from pathlib import Path
from typing import Any

import pytest
import regex
import Stemmer
from haystack import Document, Pipeline
from haystack.document_stores.errors import DocumentStoreError

import components  # noqa: F401  (allowlists our component types for Pipeline.loads)
from components.retrievers.bm25.retriever import BM25Retriever
from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.languages import LANGUAGES, STEMMED, VARIANTS
from needle_retrieval.index.milvus_place import ANALYZERS
from tests.components.stores.bm25.language_samples import SAMPLES
from tests.support.integrity import edit_manifest, live
from tests.support.paths import REPO

WITH_STOP_LIST = sorted(code for code, sample in SAMPLES.items() if sample.stopword is not None)


def words(text: str) -> set[str]:
    """The case-folded words of TEXT as written (Unicode word characters, marks included): no stemming."""
    return set(regex.findall(r"\w+", unicodedata.normalize("NFC", text).casefold()))


def store_of(code: str, **settings: object) -> BM25DocumentStore:
    """A store in language CODE holding its two sample sentences, ids ``subject`` and ``other``."""
    store = BM25DocumentStore(lang=code, **settings)  # type: ignore[arg-type]
    sample = SAMPLES[code]
    store.write_documents([Document(id="subject", content=sample.subject), Document(id="other", content=sample.other)])
    return store


def test_every_language_pystemmer_stems_has_one_code_and_a_sample() -> None:
    """A code per Snowball stemmer of the installed PyStemmer (its two variants aside), each with test sentences."""
    assert sorted(language.stemmer for language in STEMMED.values()) == sorted(
        set(Stemmer.algorithms()) - set(VARIANTS)
    )
    assert set(SAMPLES) == set(STEMMED)
    assert set(STEMMED) | {"zh", "character"} == set(LANGUAGES)


def test_the_guide_table_says_what_each_language_does() -> None:
    """docs/guides/bm25-languages.md lists every stemmed code with its stemmer, stop list and Milvus analyzer."""
    rows = {}
    for line in (REPO / "docs" / "guides" / "bm25-languages.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip("|").split("|")]
        if line.startswith("| `") and cells[0] in STEMMED:
            rows[cells[0]] = (cells[2], cells[3], cells[4])
    assert rows == {
        code: (language.stemmer, "yes" if language.stopwords else "no", ANALYZERS.get(code, "no"))
        for code, language in STEMMED.items()
    }


@pytest.mark.parametrize("code", sorted(SAMPLES))
def test_a_query_in_another_inflection_finds_the_sentence(code: str) -> None:
    """The query's word is not written in the sentence (another inflection of it is): only the stemmer joins them,
    and the sentence about the weather shares no stem with it."""
    sample = SAMPLES[code]
    assert not words(sample.query) & words(sample.subject)
    assert [document.id for document in store_of(code).bm25_retrieval(sample.query)] == ["subject"]


@pytest.mark.parametrize("code", WITH_STOP_LIST)
def test_a_stop_word_alone_matches_nothing(code: str) -> None:
    """The stop word is in the sentence, yet a query of it alone finds nothing: bm25s' list of the language acts."""
    sample = SAMPLES[code]
    assert sample.stopword is not None
    assert sample.stopword in words(sample.subject)
    assert store_of(code).bm25_retrieval(sample.stopword) == []


def test_the_samples_name_a_stop_word_exactly_where_bm25s_has_a_list() -> None:
    """Languages without a bm25s stop list (Arabic, Finnish, Greek, ...) keep every word; the docs table says so."""
    assert {code for code, language in STEMMED.items() if language.stopwords} == set(WITH_STOP_LIST)


@pytest.mark.parametrize(
    ("code", "query"),
    [
        ("tr", "KÖPEKLERİ"),  # Turkish İ is a dotted i (str.lower would leave a combining dot behind)
        ("el", "ΣΚΎΛΟΙ"),
        ("de", "GÄRTEN"),
        ("es", unicodedata.normalize("NFD", "JARDÍN")),  # accents as combining marks
    ],
)
def test_capitals_and_decomposed_accents_find_the_same_sentence(code: str, query: str) -> None:
    """Texts are put in NFC and case-folded the language's way before they are stemmed."""
    assert [document.id for document in store_of(code).bm25_retrieval(query)] == ["subject"]


def test_the_language_is_recorded_and_every_search_of_the_reopened_index_uses_it(tmp_path: Path) -> None:
    """A German index reopens German without saying so; asking for another language names the manifest."""
    path = str(tmp_path / "de")
    store_of("de", path=path)
    reopened = BM25DocumentStore(path=path)
    assert reopened.settings["lang"] == "de"
    assert [document.id for document in reopened.bm25_retrieval("Garten")] == ["subject"]
    with pytest.raises(ValueError, match=r"lang='fr' contradicts the index saved in .*manifest\.json"):
        BM25DocumentStore(path=path, lang="fr").count_documents()


def test_norwegian_survives_the_yaml_round_trip(tmp_path: Path) -> None:
    """'no' is false to YAML 1.1 unless quoted: a dumped pipeline quotes it, and loads back Norwegian."""
    path = str(tmp_path / "no")
    store_of("no", path=path)
    pipeline = Pipeline()
    pipeline.add_component("retriever", BM25Retriever(document_store=BM25DocumentStore(path=path, lang="no")))
    loaded = Pipeline.loads(pipeline.dumps())
    retriever = loaded.get_component("retriever")
    assert retriever.document_store.lang == "no"  # type: ignore[attr-defined]
    hits = loaded.run({"retriever": {"query": "hund"}})["retriever"]["documents"]
    assert [document.id for document in hits] == ["subject"]


@pytest.mark.parametrize(
    ("lang", "hint"),
    [
        ("german", "for german use its ISO 639-1 code 'de'"),
        ("DE", "codes are lower-case without spaces: 'de'"),
        (False, "Norwegian is 'no', quoted in YAML"),
        ("xx", ""),
    ],
)
def test_a_language_not_listed_is_refused_at_init_naming_lang(lang: object, hint: str) -> None:
    """One line: the setting, every allowed code, what was given, and what was probably meant."""
    with pytest.raises(ValueError, match=r"lang must be one of en, zh, character, ar, ") as error:
        BM25DocumentStore(lang=lang)  # type: ignore[arg-type]
    assert hint in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("recorded", ["xx", "german", False, None, ["de"]])
def test_a_tampered_recorded_language_is_refused_naming_the_field(tmp_path: Path, recorded: object) -> None:
    """A manifest (digests and seal rewritten to match) naming no language we build is refused before any search."""
    path = tmp_path / "de"
    store_of("de", path=str(path))

    def tamper(manifest: dict[str, Any]) -> None:
        manifest["tokenizer"]["lang"] = recorded

    edit_manifest(live(path) / "manifest.json", tamper)
    with pytest.raises(
        DocumentStoreError, match=r"manifest\.json: field 'tokenizer\.lang' is .*; expected one of en, zh"
    ):
        BM25DocumentStore(path=str(path)).bm25_retrieval("Garten")
