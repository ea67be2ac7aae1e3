"""`needle search DIR --queries FILE [--output RUN] [--run-tag T]` end to end, on a real BM25 index of the sample.

The run holds what `needle search --json` answers for the same query (ids, order, scores; a tied score written just
below the one before it), at `needle eval`'s depth of 100 hits unless --top-k says otherwise; a bad request is one
line on stderr and writes nothing; a run killed mid-way leaves the old file, and the next one cleans up its
temporary file.
"""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.atomic_files import temp_pattern
from needle_retrieval.cli import main
from needle_retrieval.index.build import build_index
from tests.support.paths import SAMPLE

QUERIES = {"q1": "parse command line arguments", "q2": "compress data with gzip", "q3": "zip"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("batch-search") / "index"
    build_index(SAMPLE, out, model="unused", overwrite=False, dense=False, bm25=True)
    return out


@pytest.fixture
def queries(tmp_path: Path) -> Path:
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"_id": qid, "text": text}) + "\n" for qid, text in QUERIES.items()))
    return path


def searched(index: Path, text: str, capsys: pytest.CaptureFixture[str], *flags: str) -> list[tuple[str, float]]:
    """What `needle search DIR TEXT --json` answers: (id, score) best first."""
    assert main(["search", str(index), text, "--json", *flags]) == 0
    return [(hit["id"], hit["score"]) for hit in json.loads(capsys.readouterr().out)[0]]


def trec_rows(text: str) -> list[list[str]]:
    return [line.split(" ") for line in text.splitlines()]


def test_the_run_holds_the_searches_ids_order_and_scores(
    index: Path, queries: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run.trec"
    assert main(["search", str(index), "--queries", str(queries), "--output", str(run)]) == 0
    assert capsys.readouterr().out == ""
    rows = trec_rows(run.read_text())
    assert {len(row) for row in rows} == {6}
    assert {(row[1], row[5]) for row in rows} == {("Q0", "bm25")}  # the tag: the mode, as `needle eval` names it
    for qid, text in QUERIES.items():
        mine = [row for row in rows if row[0] == qid]
        assert [int(row[3]) for row in mine] == list(range(1, len(mine) + 1))
        hits = searched(index, text, capsys, "--top-k", "100")
        assert [row[2] for row in mine] == [doc_id for doc_id, _ in hits]
        # each score the search's; a tie is written a few 32-bit float steps below it (needle_retrieval.search.runs)
        assert [float(row[4]) for row in mine] == pytest.approx([score for _, score in hits], rel=1e-6)
    assert len([row for row in rows if row[0] == "q1"]) > 5  # needle eval's depth, not the search default of 5


def test_stdout_gets_trec_lines_or_json_lines_with_top_k_and_tag(
    index: Path, queries: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", str(index), "--queries", str(queries), "--top-k", "3"]
    assert main([*argv, "--run-tag", "my-run"]) == 0
    rows = trec_rows(capsys.readouterr().out)
    assert [(row[0], row[3], row[5]) for row in rows[:3]] == [
        ("q1", "1", "my-run"),
        ("q1", "2", "my-run"),
        ("q1", "3", "my-run"),
    ]
    assert len(rows) == 9
    assert main([*argv, "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["qid"] for line in lines] == list(QUERIES)
    expected = searched(index, QUERIES["q2"], capsys, "--top-k", "3")
    assert [(hit["id"], hit["score"], hit["rank"]) for hit in lines[1]["hits"]] == [
        (doc_id, score, rank) for rank, (doc_id, score) in enumerate(expected, 1)
    ]


def test_an_output_named_jsonl_gets_json_lines(index: Path, queries: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    assert main(["search", str(index), "--queries", str(queries), "--output", str(run), "--top-k", "2"]) == 0
    lines = [json.loads(line) for line in run.read_text().splitlines()]
    assert [(line["qid"], [hit["rank"] for hit in line["hits"]]) for line in lines] == [
        ("q1", [1, 2]),
        ("q2", [1, 2]),
        ("q3", [1, 2]),
    ]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["a query"], "give QUERY... or --queries FILE, not both (got QUERY 'a query')"),
        (["--json", "--output", "{tmp}/run.trec"], "--json prints JSON lines to stdout; with --output"),
        (["--output", "{tmp}/no/such/dir/run.trec"], "--output {tmp}/no/such/dir/run.trec: directory"),
        (["--run-tag", "two words"], "--run-tag must be one word"),
    ],
)
def test_a_bad_request_is_one_line_and_writes_nothing(
    index: Path,
    queries: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    expected: str,
) -> None:
    flags = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    argv = ["search", str(index), *flags, "--queries", str(queries)]  # a QUERY goes before the flags
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert expected.replace("{tmp}", str(tmp_path)) in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queries.jsonl"]


def test_a_bad_queries_file_names_its_line_and_leaves_the_old_run(
    index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "topics.tsv"
    bad.write_text("1\tfine\n2\tfine too\n1\tagain\n")
    run = tmp_path / "run.trec"
    run.write_text("an older run\n")
    assert main(["search", str(index), "--queries", str(bad), "--output", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}, line 3: duplicate query id '1' (first on line 1)" in err
    assert run.read_text() == "an older run\n"


def test_output_and_run_tag_need_queries(index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(index), "zip", "--output", str(tmp_path / "run.trec")]) == 2
    assert "--output and --run-tag go with --queries FILE" in capsys.readouterr().err
    assert not (tmp_path / "run.trec").exists()


def test_a_run_killed_mid_way_then_run_again_leaves_only_the_run_file(
    index: Path, queries: Path, tmp_path: Path
) -> None:
    many = tmp_path / "many.jsonl"
    texts = list(QUERIES.values())
    many.write_text("".join(json.dumps({"_id": f"q{i}", "text": texts[i % 3]}) + "\n" for i in range(10_000)))
    runs = tmp_path / "runs"
    runs.mkdir()
    run = runs / "run.trec"
    argv = [str(Path(sys.executable).with_name("needle")), "search", str(index), "--queries", str(many)]
    proc = subprocess.Popen([*argv, "--output", str(run)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not any(p.stat().st_size for p in runs.iterdir()) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the search ended before its run file was being written"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    (orphan,) = (p.name for p in runs.iterdir())
    assert re.fullmatch(temp_pattern(run.name), orphan), orphan
    assert main(["search", str(index), "--queries", str(queries), "--output", str(run)]) == 0
    assert [p.name for p in runs.iterdir()] == ["run.trec"]
    assert {row[0] for row in trec_rows(run.read_text())} == set(QUERIES)
