"""`needle index --tenant-field meta.tenant` and `needle search --tenant T` on a real index of the sample corpus
(MiniLM, FAISS, bm25s), each line given a tenant: the manifest records the field, every mode answers T's documents
only (dense and BM25: exactly the unfiltered ranking restricted to T), and a tampered or missing field is refused in
one line."""

import json
import shutil
from pathlib import Path

import pytest

from needle_retrieval.cli import main
from needle_retrieval.search.searcher import Searcher
from tests.support.cli import search_json
from tests.support.integrity import edit_manifest, live
from tests.support.paths import SAMPLE

QUERIES = ["compress data with gzip", "parse command line arguments"]
TENANTS = ("acme", "globex", "initech")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The sample corpus with a tenant on each line (by position), and the tenant of each id."""
    folder = tmp_path_factory.mktemp("tenant-corpus")
    lines = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines() if line.strip()]
    owner = {line["id"]: TENANTS[number % len(TENANTS)] for number, line in enumerate(lines)}
    path = folder / "corpus.jsonl"
    path.write_text("".join(json.dumps({**line, "tenant": owner[line["id"]]}) + "\n" for line in lines), "utf-8")
    return path, owner


@pytest.fixture(scope="module")
def index(corpus: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tenant-index") / "index"
    assert main(["index", str(corpus[0]), "--out", str(out), "--bm25", "--tenant-field", "meta.tenant"]) == 0
    return out


def test_the_manifest_records_the_tenant_field(index: Path) -> None:
    assert json.loads((live(index) / "manifest.json").read_text())["tenant_field"] == "meta.tenant"


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid", "rrf"])  # the modes of a dense + BM25 index
def test_a_tenant_search_answers_that_tenants_documents_only(
    index: Path, corpus: tuple[Path, dict[str, str]], mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    owner = corpus[1]
    mine = search_json(capsys, str(index), *QUERIES, "--mode", mode, "--top-k", "5", "--tenant", "globex")
    assert all(hits for hits in mine)
    assert {owner[str(hit["id"])] for hits in mine for hit in hits} == {"globex"}
    if mode in ("dense", "bm25"):  # a filter before the search: the unfiltered ranking, restricted to globex
        everything = search_json(capsys, str(index), *QUERIES, "--mode", mode, "--top-k", str(len(owner)))
        assert mine == [[hit for hit in hits if owner[str(hit["id"])] == "globex"][:5] for hits in everything]


def test_an_index_without_a_tenant_field_refuses_tenant(
    corpus: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plain"
    assert main(["index", str(corpus[0]), "--out", str(out), "--bm25", "--no-dense"]) == 0
    capsys.readouterr()
    assert main(["search", str(out), "zip", "--tenant", "acme"]) != 0
    error = capsys.readouterr().err.strip()
    assert "--tenant-field" in error
    assert len(error.splitlines()) == 1


def test_a_tampered_tenant_field_is_refused(index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "index"
    shutil.copytree(index, copy)
    edit_manifest(live(copy) / "manifest.json", lambda manifest: manifest.update(tenant_field="tenant; drop"))
    capsys.readouterr()
    assert main(["search", str(copy), "zip", "--tenant", "acme"]) != 0
    error = capsys.readouterr().err.strip()
    assert "corrupted index manifest" in error
    assert "tenant_field" in error


def test_tenant_field_is_for_a_faiss_index(
    corpus: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["index", str(corpus[0]), "--out", str(tmp_path / "m"), "--store", "milvus", "--tenant-field", "meta.tenant"]
    assert main(argv) != 0
    assert "--tenant-field" in capsys.readouterr().err


@pytest.mark.parametrize("tenant", ["2024-01-01", "2024-01-01T00:00:00", "acme\x00evil", " "])
def test_a_tenant_a_filter_would_not_match_exactly_is_refused(
    index: Path, tenant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A date-like tenant would also match other spellings of the same instant (Haystack compares those as dates):
    --tenant and Searcher(tenant=) refuse it, and a blank or control-character one, in one line, before loading."""
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["search", str(index), "zip", "--tenant", tenant])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--tenant" in error
    with pytest.raises(ValueError, match=r"^tenant: ") as raised:
        Searcher(index, tenant=tenant)
    assert len(str(raised.value).splitlines()) == 1
    if tenant.startswith("2024"):
        assert "date" in error
        assert "date" in str(raised.value)


def test_a_tenant_field_no_corpus_line_holds_is_refused(
    corpus: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt --tenant-field would build an index where every document is no one's tenant: refused, naming the
    field and the corpus, before anything is built."""
    out = tmp_path / "index"
    capsys.readouterr()
    assert main(["index", str(corpus[0]), "--out", str(out), "--no-dense", "--bm25", "--tenant-field", "meta.tennant"])
    error = capsys.readouterr().err.strip()
    assert "--tenant-field meta.tennant" in error
    assert str(corpus[0]) in error
    assert len(error.splitlines()) == 1
    assert not out.exists()
