"""Run files of `needle search --queries` and `needle eval --run-file` (``needle_retrieval.search.runs``): the writers
keep the retrieval's order and exact scores, and a failed write leaves the old run file as it was."""

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytrec_eval

from needle_retrieval.errors import NeedleError
from needle_retrieval.search.runs import jsonl_text, trec_text, write_run


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_trec_lines_keep_order_and_exact_scores_and_write_ties_just_below() -> None:
    ranking = [("d3", 2.5), ("d1", 1.0000001192092896), ("d2", 1.0000001192092896), ("d3", 0.5), ("d9", 1e-05)]
    lines = [line.split(" ") for line in trec_text("q1", ranking, "bm25").splitlines()]
    assert [(q, q0, d, r, t) for q, q0, d, r, _, t in lines] == [
        ("q1", "Q0", "d3", "1", "bm25"),
        ("q1", "Q0", "d1", "2", "bm25"),  # a tie stays in the returned order
        ("q1", "Q0", "d2", "3", "bm25"),
        ("q1", "Q0", "d9", "4", "bm25"),  # the repeated d3 kept its first place only
    ]
    # d2 ties d1: written as the next 32-bit float below it (1 + 2**-23 is one; 1.0 is the next below)
    assert [float(line[4]) for line in lines] == [2.5, 1.0000001192092896, 1.0, 1e-05]


def test_trec_eval_reads_the_ranks_as_written_despite_ties() -> None:
    """Ties, and scores that differ only beyond a 32-bit float (as trec_eval holds them), which trec_eval would order
    by doc id, descending: pytrec_eval ranks each document where the run says."""
    ranking = [("a", 0.5), ("z", 0.5), ("b", 0.49999999), ("y", 0.0), ("x", 0.0), ("c", -1.0), ("w", -1.0)]
    ranks = {row.split(" ")[2]: int(row.split(" ")[3]) for row in trec_text("q1", ranking, "t").splitlines()}
    run = {"q1": {row.split(" ")[2]: float(row.split(" ")[4]) for row in trec_text("q1", ranking, "t").splitlines()}}
    for doc, rank in ranks.items():
        scored = pytrec_eval.RelevanceEvaluator({"q1": {doc: 1}}, {"recip_rank"}).evaluate(run)
        assert scored["q1"]["recip_rank"] == 1 / rank, doc
    jsonl = json.loads(jsonl_text("q1", ranking))["hits"]
    assert [(hit["id"], hit["rank"]) for hit in jsonl] == list(ranks.items())


def test_json_lines_hold_id_score_and_rank() -> None:
    assert json.loads(jsonl_text("q1", [("d1", 3.25), ("d2", 1.5)])) == {
        "qid": "q1",
        "hits": [{"id": "d1", "score": 3.25, "rank": 1}, {"id": "d2", "score": 1.5, "rank": 2}],
    }
    assert json.loads(jsonl_text("q2", [])) == {"qid": "q2", "hits": []}
    assert trec_text("q2", [], "t") == ""


@pytest.mark.parametrize("score", [None, float("nan"), float("inf"), "1.0"])
def test_a_run_refuses_a_hit_without_a_finite_score(score: object) -> None:
    with pytest.raises(NeedleError, match=r"query 'q1', document 'd1': a run needs a finite score"):
        trec_text("q1", [("d1", score)], "t")


def test_a_doc_id_with_a_space_points_to_json_lines() -> None:
    refusal = r"document id 'a b' holds whitespace.*as JSON lines instead \(a file named \*\.jsonl\)"
    with pytest.raises(NeedleError, match=refusal):
        trec_text("q1", [("a b", 1.0)], "t")
    assert json.loads(jsonl_text("q1", [("a b", 1.0)]))["hits"][0]["id"] == "a b"


def test_a_failed_write_leaves_the_old_run_and_no_temporary_file(tmp_path: Path) -> None:
    run = write(tmp_path, "run.trec", "old run\n")

    def answers() -> Iterator[tuple[str, list[tuple[str, object]]]]:
        yield "q1", [("d1", 1.0)]
        yield "q2", [("d2", None)]

    with pytest.raises(NeedleError, match="query 'q2'"):
        write_run(run, answers(), "trec", "t")
    assert run.read_text() == "old run\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.trec"]
    write_run(run, iter([("q1", [("d1", 1.0)])]), "jsonl", "t")
    assert json.loads(run.read_text())["hits"] == [{"id": "d1", "score": 1.0, "rank": 1}]


def test_a_run_through_a_symbolic_link_replaces_the_file_it_names_and_keeps_the_link(tmp_path: Path) -> None:
    target = write(tmp_path, "target.trec", "old run\n")
    (tmp_path / "run.trec").symlink_to("target.trec")
    write_run(tmp_path / "run.trec", iter([("q1", [("d1", 1.5)])]), "trec", "t")
    assert (tmp_path / "run.trec").is_symlink()
    assert target.read_text() == "q1 Q0 d1 1 1.5 t\n"


def test_a_run_into_a_fifo_is_written_into_it(tmp_path: Path) -> None:
    """A named pipe (or /dev/stdout) is written into as it is, never replaced by a regular file."""
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    write_run(fifo, iter([("q1", [("d1", 2.0)])]), "trec", "t")
    reader.join(timeout=30)
    assert received == ["q1 Q0 d1 1 2.0 t\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
