"""`needle eval --store milvus` on a small BEIR dataset built from the sample corpus: the FAISS store's figures on
the same vectors (its embeddings carried over from the FAISS eval index), and every mode scored."""

import json
from pathlib import Path

import pytest

import needle_retrieval.eval.command
from needle_retrieval.cli import main
from needle_retrieval.pipelines import shipped
from tests.support.beir import SAMPLE

from .test_command import QUERIES


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BEIR dir: every sample passage of the modules the queries ask for, and those of a few others."""
    root = tmp_path_factory.mktemp("beir") / "pydocs"
    (root / "qrels").mkdir(parents=True)
    with SAMPLE.open() as src, (root / "corpus.jsonl").open("w") as dst:
        for number, line in enumerate(src):
            row = json.loads(line)
            if number % 3 == 0 or row["id"] in {doc for _, doc in QUERIES.values()}:
                dst.write(json.dumps({"_id": row["id"], "title": row["title"], "text": row["contents"]}) + "\n")
    with (root / "queries.jsonl").open("w") as f:
        for qid, (text, _) in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    rows = [f"{qid}\t{doc}\t1" for qid, (_, doc) in QUERIES.items()]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return root


def evaluate(dataset: Path, out: Path, *extra: str) -> dict:
    assert main(["eval", str(dataset), "--json", str(out), *extra]) == 0
    result: dict = json.loads(out.read_text())
    return result


def test_milvus_scores_what_faiss_scores_on_the_same_vectors_and_runs_every_mode(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(needle_retrieval.eval.command, "CACHE_ROOT", tmp_path / "cache")
    faiss = evaluate(dataset, tmp_path / "faiss.json", "--mode", "dense")
    evaluate(dataset, tmp_path / "faiss-bm25.json", "--mode", "bm25")  # keeps the dense part and its embeddings
    milvus = evaluate(dataset, tmp_path / "milvus.json", "--mode", "dense", "--store", "milvus")
    assert milvus["embedding_cache_hit"] is True  # seeded from the FAISS eval index of the same corpus
    assert evaluate(dataset, tmp_path / "again.json", "--mode", "dense")["embedding_cache_hit"] is True
    assert (milvus["name"], milvus["mode"], milvus["params"]["store"]) == ("milvus-dense", "dense", "milvus")
    assert milvus["params"]["index_dir"].endswith("-milvus")
    assert milvus["metrics"] == pytest.approx(faiss["metrics"], abs=1e-6)
    assert milvus["per_query_ndcg10"] == pytest.approx(faiss["per_query_ndcg10"], abs=1e-6)
    for mode in ("bm25", "rrf", "hybrid"):
        result = evaluate(dataset, tmp_path / f"{mode}.json", "--mode", mode, "--store", "milvus")
        assert result["n_queries"] == len(QUERIES)
        assert result["embedding_cache_hit"] is True
        assert result["metrics"]["recall@10"] >= 0.8, (mode, result["metrics"])


def test_a_pipeline_file_with_a_store_is_refused(dataset: Path, capsys: pytest.CaptureFixture) -> None:
    pipeline = Path(str(shipped.folder() / "milvus_dense_search.yaml"))
    assert main(["eval", str(dataset), "--pipeline", str(pipeline), "--store", "milvus"]) == 2
    assert "--store milvus applies to --mode" in capsys.readouterr().err
