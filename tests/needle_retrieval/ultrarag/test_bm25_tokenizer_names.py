"""UltraRAG's BM25 `tokenizer` names (auto, default, regex, jieba, character, char) and `lang` give the terms
UltraRAG's BM25 backend gives: a bm25s Tokenizer with `stopwords=lang`, no stemmer, and a splitter by name.

The expected terms below are written by hand from UltraRAG's servers/retriever/src/bm25_tokenizer.py and bm25s'
rules; with ULTRARAG_SRC pointing at an UltraRAG checkout, a further test builds UltraRAG's own tokenizer from that
code (with this environment's bm25s) and compares every term of a corpus and its queries.
"""

import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.stores.bm25.tokenizers import BM25Tokenizer
from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.ultrarag.config import load_config
from tests.support.integrity import live
from tests.support.paths import DATA

SOURCE = os.environ.get("ULTRARAG_SRC")
TEXT = "The Running Dogs, a T-cell & IL-2 in 3.5mg!"
ZH = "我们在北京大学学习自然语言处理的方法。Hello World"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A BM25 parameter file (UltraRAG HEAD's, backend bm25) over UltraRAG's example corpus and the Chinese test
    corpus, run from its directory."""
    (tmp_path / "data").mkdir()
    corpus = (DATA / "ultrarag_corpus_example.jsonl").read_text() + (DATA / "zh_corpus.jsonl").read_text()
    (tmp_path / "data" / "corpus_example.jsonl").write_text(corpus, encoding="utf-8")
    shutil.copy(DATA / "ultrarag_parameter.yaml", tmp_path / "parameter.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def bm25_file(project: Path, **block: Any) -> Path:
    """The parameter file with backend bm25 and the bm25 block's keys BLOCK (lang, tokenizer)."""
    path = project / "parameter.yaml"
    data = yaml.safe_load(path.read_text())
    data["backend"] = "bm25"
    data["backend_configs"]["bm25"] = {"save_path": "index/bm25", **block}
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("lang", "tokenizer", "name"),
    [
        ("en", "auto", "regex:en"),
        ("en", "default", "regex:en"),
        ("en", " Regex ", "regex:en"),  # UltraRAG strips and lower-cases the name
        ("en", "jieba", "regex:en"),  # jieba only for a Chinese lang
        ("en", "char", "char:en"),
        ("zh", "auto", "jieba:zh"),
        ("chinese", "jieba", "jieba:zh"),
        ("zh", "default", "regex:zh"),
        ("zh", "character", "char:zh"),
        ("german", "auto", "regex:de"),
    ],
)
def test_each_name_maps_to_the_store_tokenizer_that_cuts_the_same_terms(
    project: Path, lang: str, tokenizer: str, name: str
) -> None:
    config = load_config(bm25_file(project, lang=lang, tokenizer=tokenizer))
    assert config.options.bm25_tokenizer == name
    assert config.spec.bm25_lang() == ("zh" if name.endswith(":zh") else "en")


def test_the_head_files_auto_en_gives_bm25s_terms_unstemmed(project: Path) -> None:
    """UltraRAG HEAD's bm25 block (lang en, tokenizer auto): 'the', 'a', 'in' go, 'running' is not stemmed,
    one-character words go (bm25s' pattern), '3.5mg' leaves '5mg'."""
    config = load_config(bm25_file(project, lang="en", tokenizer="auto"))
    assert BM25Tokenizer(tokenizer=config.options.bm25_tokenizer)([TEXT]) == [["running", "dogs", "cell", "il", "5mg"]]


def test_character_gives_each_non_space_character(project: Path) -> None:
    config = load_config(bm25_file(project, lang="zh", tokenizer="char"))
    (terms,) = BM25Tokenizer(tokenizer=config.options.bm25_tokenizer)(["北京 大学。A b"])
    assert terms == ["北", "京", "大", "学", "。", "a", "b"]


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"lang": "zh-cn"}, "backend_configs.bm25.lang must be one of en, english, en_plus, english_plus, de,"),
        ({"tokenizer": "bert"}, "backend_configs.bm25.tokenizer must be one of auto, default, regex, jieba, character"),
    ],
)
def test_a_lang_or_name_ultrarag_cannot_build_is_refused(project: Path, block: dict[str, str], message: str) -> None:
    """UltraRAG fails at start-up on both (bm25s knows no stopwords 'zh-cn'; 'bert' is no mode): one line here."""
    with pytest.raises(NeedleError, match=message):
        load_config(bm25_file(project, **block))


def test_the_index_records_the_tokenizer_and_its_searches_cut_queries_alike(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tokenizer: char` over Chinese: a one-character query finds its passage (jieba would not cut 熊 alone)."""
    config = bm25_file(project, lang="zh", tokenizer="char")
    assert main(["index", "--config", str(config)]) == 0
    store = live(live(project / "index" / "bm25") / "bm25")  # the BM25 store inside the index's generation
    assert json.loads((store / "manifest.json").read_text())["tokenizer"]["tokenizer"] == "char:zh"
    assert IndexManifest.load(project / "index" / "bm25").bm25_lang == "zh"
    capsys.readouterr()
    assert main(["search", "--config", str(config), "熊", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0][0]["id"] == "zh-02"


# --- against UltraRAG's own tokenizer code ---------------------------------------------------------------------------


def ultrarag_terms(lang: str, mode: str, texts: list[str]) -> list[list[str]]:
    """The terms UltraRAG's BM25 backend indexes for TEXTS: its build_bm25_splitter (from $ULTRARAG_SRC) in a bm25s
    Tokenizer with stopwords=lang, as its retriever_init builds it (a text with no terms: none, not bm25s' '')."""
    import bm25s

    assert SOURCE is not None
    where = Path(SOURCE) / "servers" / "retriever" / "src" / "bm25_tokenizer.py"
    spec = importlib.util.spec_from_file_location("ultrarag_bm25_tokenizer", where)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    splitter = module.build_bm25_splitter(lang, mode)
    kwargs: dict[str, Any] = {"stopwords": lang} | ({} if splitter is None else {"splitter": splitter})
    ids, vocab = bm25s.tokenization.Tokenizer(**kwargs).tokenize(texts, return_as="tuple", show_progress=False)
    words = {number: word for word, number in vocab.items()}
    return [[words[i] for i in text if words[i] != ""] for text in ids]


@pytest.mark.skipif(not SOURCE, reason="ULTRARAG_SRC (an UltraRAG checkout) not set")
@pytest.mark.parametrize("lang", ["en", "zh", "de"])
@pytest.mark.parametrize("mode", ["auto", "default", "regex", "jieba", "character", "char"])
def test_every_term_of_a_corpus_and_its_queries_is_ultrarags(project: Path, lang: str, mode: str) -> None:
    rows = (project / "data" / "corpus_example.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["query"] for line in (DATA / "zh_queries.jsonl").read_text().splitlines()]
    texts = [json.loads(row)["contents"] for row in rows] + queries + [TEXT, ZH, "the a of", "", "  \t"]
    config = load_config(bm25_file(project, lang=lang, tokenizer=mode))
    assert BM25Tokenizer(tokenizer=config.options.bm25_tokenizer)(texts) == ultrarag_terms(lang, mode, texts)
