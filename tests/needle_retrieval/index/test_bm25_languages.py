"""`needle index --lang` in the languages PyStemmer stems: the FAISS store's BM25 part stems and drops stop words in
the recorded language, a Milvus index gets Milvus's analyzer of that language, and what Milvus has no analyzer for
is refused naming --lang and the values it takes."""

import json
from pathlib import Path
from typing import Any

import pytest

from needle_retrieval.cli import main
from needle_retrieval.index.milvus_place import ANALYZERS
from tests.components.stores.bm25.language_samples import SAMPLES
from tests.support.cli import search_json
from tests.support.integrity import edit_manifest, live


def corpus_of(tmp_path: Path, code: str) -> Path:
    """A JSONL corpus of language CODE's two sample sentences: ids CODE-subject and CODE-other."""
    sample = SAMPLES[code]
    path = tmp_path / f"{code}.jsonl"
    lines = [
        {"id": f"{code}-{name}", "contents": text}
        for name, text in (("subject", sample.subject), ("other", sample.other))
    ]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def manifest_of(index: Path) -> dict[str, Any]:
    """The live generation's manifest of INDEX, parsed."""
    manifest: dict[str, Any] = json.loads((live(index) / "manifest.json").read_text())
    return manifest


def hit_ids(capsys: pytest.CaptureFixture[str], index: Path, query: str) -> list[object]:
    (hits,) = search_json(capsys, str(index), query, "--mode", "bm25")
    return [hit["id"] for hit in hits]


def error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI expecting a usage error: exit 2 and one line on stderr, returned."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own refusals
        code = exit_.code  # type: ignore[assignment]
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("code", ["de", "ru", "tr"])
def test_a_bm25_index_stems_and_drops_stop_words_in_its_language(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    """The manifest records --lang; a query in another inflection finds the sentence, a stop word alone nothing."""
    index = tmp_path / "index"
    assert (
        main(["index", str(corpus_of(tmp_path, code)), "--out", str(index), "--bm25", "--no-dense", "--lang", code])
        == 0
    )
    assert manifest_of(index)["bm25_lang"] == code
    sample = SAMPLES[code]
    assert hit_ids(capsys, index, sample.query) == [f"{code}-subject"]
    assert hit_ids(capsys, index, str(sample.stopword)) == []


def test_a_language_name_instead_of_its_code_is_refused_naming_lang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = error_line(
        capsys, ["index", str(corpus_of(tmp_path, "de")), "--out", str(tmp_path / "i"), "--lang", "german"]
    )
    assert "argument --lang: invalid choice: 'german'" in line
    assert "'de'" in line
    assert not (tmp_path / "i").exists()


def test_milvus_has_an_analyzer_for_each_language_of_its_stemmer() -> None:
    milvus_stems = {"ar", "da", "de", "el", "es", "fi", "fr", "hu", "it", "nl", "no", "pt", "ro", "ru", "sv", "ta"}
    assert set(ANALYZERS) == {"en", "zh", "tr", *milvus_stems}


@pytest.mark.parametrize("code", ["hi", "pl", "character"])
def test_a_language_milvus_has_no_analyzer_for_is_refused_naming_lang_and_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    corpus = corpus_of(tmp_path, "de")
    line = error_line(capsys, ["index", str(corpus), "--out", str(tmp_path / "i"), "--store", "milvus", "--lang", code])
    assert f"--lang {code} is not available with --store milvus" in line
    assert f"choose one of {', '.join(ANALYZERS)}" in line
    assert not (tmp_path / "i").exists()


@pytest.fixture(scope="module")
def german_milvus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The German sentences in a Milvus Lite index (dense + Milvus BM25), built through the CLI with --lang de."""
    root = tmp_path_factory.mktemp("milvus-de")
    index = root / "index"
    assert (
        main(["index", str(corpus_of(root, "de")), "--out", str(index), "--store", "milvus", "--bm25", "--lang", "de"])
        == 0
    )
    return index


def test_a_milvus_index_uses_the_german_analyzer_and_its_stop_list(
    german_milvus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'mit' is a stop word in German, not in English: on Milvus Lite (no stemmer) the stop list shows the analyzer."""
    assert manifest_of(german_milvus)["bm25_lang"] == "de"
    assert hit_ids(capsys, german_milvus, "Gärten") == ["de-subject"]
    assert hit_ids(capsys, german_milvus, "mit") == []


def test_a_milvus_manifest_naming_a_language_without_an_analyzer_is_refused(
    german_milvus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    index = tmp_path / "index"
    shutil.copytree(german_milvus, index)
    edit_manifest(live(index) / "manifest.json", lambda manifest: manifest.update(bm25_lang="hi"))
    line = error_line(capsys, ["search", str(index), "Garten", "--mode", "bm25"])
    assert "'bm25_lang' is 'hi'; a Milvus index records one of en, zh, ar" in line


def test_each_milvus_language_preset_lowercases_drops_the_bm25_stop_list_and_stems() -> None:
    """The preset of --lang CODE cuts a Milvus server's terms as the BM25 store cuts them for CODE."""
    from components.stores.bm25.languages import stopwords
    from components.stores.milvus.settings import MilvusSettings

    for code, preset in ANALYZERS.items():
        if code in ("en", "zh"):
            continue
        settings = MilvusSettings(bm25_analyzer=preset)
        stop = sorted(stopwords(code))
        expected = ["lowercase", *([{"type": "stop", "stop_words": stop}] if stop else [])]
        assert settings.analyzer_params() == {
            "tokenizer": "standard",
            "filter": [*expected, {"type": "stemmer", "language": preset}],
        }
        assert settings.stems()
    assert not MilvusSettings(bm25_analyzer="standard").stems()


def test_an_index_manifest_naming_an_unknown_language_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = tmp_path / "index"
    assert (
        main(["index", str(corpus_of(tmp_path, "de")), "--out", str(index), "--bm25", "--no-dense", "--lang", "de"])
        == 0
    )
    edit_manifest(live(index) / "manifest.json", lambda manifest: manifest.update(bm25_lang="klingon"))
    line = error_line(capsys, ["search", str(index), "Garten", "--mode", "bm25"])
    assert "bm25_lang must be one of en, zh, character, ar" in line
    assert "'klingon'" in line
