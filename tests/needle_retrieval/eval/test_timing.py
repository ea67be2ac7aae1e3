"""`needle eval` times the searches apart from building and loading, and reuses an index of the same corpus content.

Real parts throughout: the sample corpus as a small BEIR dataset, `needle index` / `needle eval` through the
CLI, bm25s indexes (no model to load, so each eval takes seconds). No test asserts a duration, only that the
figures exist, are consistent, and that the index was (or was not) rebuilt.
"""

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from components.stores.crash_safe_generations import SEAL
from needle_retrieval.cli import main
from needle_retrieval.defaults import QUERY_BATCH
from needle_retrieval.errors import NeedleError
from needle_retrieval.eval import format_table
from needle_retrieval.eval.command import evaluate as run_evaluation
from needle_retrieval.eval.index_reuse import fits
from needle_retrieval.eval.timing import latency_sample, time_searches
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.search.searcher import Searcher
from tests.support.beir import write_sample_corpus
from tests.support.integrity import edit_manifest

QUERIES = {"q1": ("read and write ZIP archive files", "zipfile-0"), "q2": ("gzip compressed files", "gzip-0")}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A BEIR dir of the sample's first passages, two judged queries and one unjudged; tests may edit it."""
    root = tmp_path / "pydocs"
    write_sample_corpus(root)
    queries = [{"_id": qid, "text": text} for qid, (text, _) in QUERIES.items()] + [{"_id": "u", "text": "unjudged"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    rows = "".join(f"{qid}\t{doc}\t1\n" for qid, (_, doc) in QUERIES.items())
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return root


def evaluate(dataset: Path, index: Path, out: Path) -> dict:
    """`needle eval --mode bm25` into INDEX; returns the --json result."""
    assert main(["eval", str(dataset), "--mode", "bm25", "--index-dir", str(index), "--json", str(out)]) == 0
    result: dict = json.loads(out.read_text())
    return result


def live(index: Path) -> str:
    """The live generation's name."""
    return (index / "CURRENT").read_text().strip()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def edit_one_line(corpus: Path) -> None:
    """Change one character of the first passage's text: same file name, same size, other content."""
    lines = corpus.read_text().splitlines(keepends=True)
    row = json.loads(lines[0])
    row["text"] = row["text"][:-1] + ("x" if row["text"][-1] != "x" else "y")
    size = corpus.stat().st_size
    corpus.write_text("".join([json.dumps(row) + "\n", *lines[1:]]))
    assert corpus.stat().st_size == size


def test_a_second_eval_reuses_the_index_and_an_edited_corpus_is_rebuilt(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = tmp_path / "ix"
    first = evaluate(dataset, index, tmp_path / "first.json")
    built = live(index)
    capsys.readouterr()
    second = evaluate(dataset, index, tmp_path / "second.json")
    assert (first["index_reused"], second["index_reused"]) == (False, True)
    assert first["index_build_seconds"] > 0
    assert second["index_build_seconds"] is None
    assert live(index) == built
    assert "reused" in next(line for line in capsys.readouterr().out.splitlines() if line.startswith("index build"))
    assert (second["metrics"], second["per_query_ndcg10"]) == (first["metrics"], first["per_query_ndcg10"])
    edit_one_line(dataset / "corpus.jsonl")
    third = evaluate(dataset, index, tmp_path / "third.json")
    assert third["index_reused"] is False
    assert live(index) != built
    assert IndexManifest.load(index).corpus_sha256 == sha256(dataset / "corpus.jsonl")


def test_eval_reports_latency_beside_throughput(dataset: Path, tmp_path: Path) -> None:
    for result in (evaluate(dataset, tmp_path / "ix", tmp_path / f"{run}.json") for run in ("built", "reused")):
        assert result["latency_queries"] == len(QUERIES)  # every judged query (the ones eval runs)
        assert 0 < result["latency_p50_ms"] <= result["latency_p99_ms"]
        assert result["queries_per_second"] > 0
        assert result["model_load_seconds"] > 0
        assert result["warmup_seconds"] > 0


def test_a_new_manifest_records_the_corpus_hash_and_an_old_one_loads_but_is_not_reused(
    dataset: Path, tmp_path: Path
) -> None:
    index, corpus = tmp_path / "ix", dataset / "corpus.jsonl"
    assert main(["index", str(corpus), "--out", str(index), "--bm25", "--no-dense"]) == 0
    path = index / live(index) / "manifest.json"
    assert json.loads(path.read_text())["corpus_sha256"] == sha256(corpus)
    edit_manifest(path, lambda recorded: {k: v for k, v in recorded.items() if k != "corpus_sha256"})  # sealed
    assert IndexManifest.load(index).corpus_sha256 is None
    old = live(index)
    assert evaluate(dataset, index, tmp_path / "r.json")["index_reused"] is False
    assert live(index) != old
    assert IndexManifest.load(index).corpus_sha256 == sha256(corpus)


def test_a_manifest_from_before_seals_is_refused_and_eval_rebuilds(dataset: Path, tmp_path: Path) -> None:
    """A manifest as needle wrote it before seals and corpus hashes (neither field) is not trusted: eval rebuilds."""
    index = tmp_path / "ix"
    evaluate(dataset, index, tmp_path / "first.json")
    path = index / live(index) / "manifest.json"
    recorded = json.loads(path.read_text())
    path.write_text(json.dumps({k: v for k, v in recorded.items() if k not in (SEAL, "corpus_sha256")}))
    with pytest.raises(NeedleError, match=r"manifest\.json: carries no seal of its fields"):
        IndexManifest.load(index)
    assert evaluate(dataset, index, tmp_path / "second.json")["index_reused"] is False
    assert IndexManifest.load(index).corpus_sha256 == sha256(dataset / "corpus.jsonl")


def test_a_malformed_corpus_hash_is_refused_and_eval_rebuilds(dataset: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix"
    evaluate(dataset, index, tmp_path / "first.json")
    edit_manifest(index / live(index) / "manifest.json", lambda manifest: manifest | {"corpus_sha256": "ABC"})
    with pytest.raises(NeedleError, match=r"corpus_sha256 must be 64 lowercase hex digits, got 'ABC'"):
        IndexManifest.load(index)
    assert evaluate(dataset, index, tmp_path / "second.json")["index_reused"] is False
    assert IndexManifest.load(index).corpus_sha256 == sha256(dataset / "corpus.jsonl")


def test_a_damaged_index_is_rebuilt_not_trusted(dataset: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix"
    first = evaluate(dataset, index, tmp_path / "first.json")
    part = max((p for p in (index / live(index) / "bm25").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    part.write_bytes(part.read_bytes()[:-1])  # one byte short: the store refuses it when opened
    second = evaluate(dataset, index, tmp_path / "second.json")
    assert second["index_reused"] is False
    assert second["metrics"] == first["metrics"]


def test_latency_sample_is_every_query_or_a_fixed_even_spread() -> None:
    texts = [f"q{i}" for i in range(450)]
    assert latency_sample(texts[:150]) == texts[:150]
    sample = latency_sample(texts)
    assert sample == latency_sample(list(texts))
    assert len(set(sample)) == 200
    assert (sample[0], sample[-1]) == ("q0", "q447")


def test_scores_come_from_the_batch_pass_and_every_query_is_also_timed_alone(dataset: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix"
    assert main(["index", str(dataset / "corpus.jsonl"), "--out", str(index), "--bm25", "--no-dense"]) == 0
    searcher = Searcher(index, mode="bm25", top_k=10)
    titles = [json.loads(line)["title"] for line in (dataset / "corpus.jsonl").read_text().splitlines()]
    queries = {f"t{i}": f"{title} module" for i, title in enumerate(titles[:130])}
    sizes: list[int] = []

    def retrieve(texts: list[str]) -> list:
        sizes.append(len(texts))
        return searcher.search(texts)

    rankings, timings = time_searches(retrieve, queries, "bm25")
    assert sizes == [1, QUERY_BATCH, QUERY_BATCH, 2] + [1] * 130  # warm-up, batches, then each query alone
    expected = searcher.search(list(queries.values()))
    assert rankings == {qid: [d.id for d in docs] for qid, docs in zip(queries, expected, strict=True)}
    assert timings.latency_queries == 130
    assert 0 < timings.latency_p50_ms <= timings.latency_p99_ms


@pytest.mark.parametrize("count", [0, 1])
def test_latency_queries_caps_the_single_query_pass_and_zero_skips_it(
    dataset: Path, tmp_path: Path, count: int
) -> None:
    index = tmp_path / "ix"
    assert main(["index", str(dataset / "corpus.jsonl"), "--out", str(index), "--bm25", "--no-dense"]) == 0
    searcher = Searcher(index, mode="bm25", top_k=10)
    sizes: list[int] = []

    def retrieve(texts: list[str]) -> list:
        sizes.append(len(texts))
        return searcher.search(texts)

    queries = {qid: text for qid, (text, _) in QUERIES.items()}
    _, timings = time_searches(retrieve, queries, "bm25", latency_queries=count)
    assert sizes == [1, len(queries)] + [1] * count  # warm-up, the batch, then COUNT queries alone
    assert timings.latency_queries == count
    assert (timings.latency_p50_ms is None) is (count == 0)


def test_evaluate_without_the_latency_pass_reports_no_latency(dataset: Path, tmp_path: Path) -> None:
    result = run_evaluation(dataset, mode="bm25", model="unused", index_dir=tmp_path / "ix", latency_queries=0)
    assert (result.latency_queries, result.latency_p50_ms, result.latency_p99_ms) == (0, None, None)
    assert result.queries_per_second is not None
    assert result.fusion is None  # bm25 fuses nothing
    assert "skipped" in next(line for line in format_table([result]).splitlines() if line.startswith("latency q"))
    with pytest.raises(NeedleError, match=r"--latency-queries must be an integer >= 0 .* got -1"):
        run_evaluation(dataset, mode="bm25", model="unused", index_dir=tmp_path / "ix", latency_queries=-1)


FIT = IndexManifest(
    corpus="corpus.jsonl", documents=3, modes=["dense", "bm25"], model="m", dim=4, bm25_lang="en",
    corpus_sha256="a" * 64,
)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "mode"),
    [
        ({"corpus_sha256": "b" * 64}, "bm25"),  # another corpus content
        ({"corpus_sha256": None}, "bm25"),  # a manifest from before the hash
        ({"modes": ["dense"]}, "hybrid"),  # a part the mode searches is missing
        ({"model": "other"}, "dense"),  # queries would be embedded by another model
        ({"dense_index": {"type": "hnsw", "m": 32}}, "rrf"),  # eval builds a flat (exact) dense part
        ({"embedder": {"backend": "openai"}}, "dense"),  # another embedding backend
        ({"bm25_lang": "zh"}, "bm25"),  # another tokenizer
        ({"store": "milvus"}, "bm25"),  # another store than asked for
    ],
)
def test_an_index_that_a_fresh_eval_build_would_not_equal_is_not_reused(change: dict, mode: str) -> None:
    assert fits(FIT, "a" * 64, mode, "m", "faiss")
    assert not fits(dataclasses.replace(FIT, **change), "a" * 64, mode, "m", "faiss")


def test_bm25_reuses_an_index_whose_dense_part_has_another_model() -> None:
    assert fits(dataclasses.replace(FIT, model="other"), "a" * 64, "bm25", "m", "faiss")
