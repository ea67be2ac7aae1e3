"""`needle index/search/serve --store milvus` end to end: Milvus Lite inside the index, and a real Milvus server.

Milvus Lite: the sample corpus indexed once through the CLI, searched in all four modes, rebuilt (a bad corpus
line leaves the live generation answering), moved, served by `needle serve`, and opened while that server
holds its database (one-line error). Server: `milvus-lite server` on a free port, an index built with
``--uri``/``--collection``, rebuilt twice (the alias follows the live generation, the collection of a removed
generation is dropped) and a failed build (its collection dropped, the live one untouched).
"""

import contextlib
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import needle_retrieval.index.generation_build
from needle_retrieval.cli import main
from tests.support.integrity import edit_manifest
from tests.support.paths import REPO, SAMPLE
from tests.support.serve import free_port, server_env, started

MILVUS_LITE = REPO / ".venv" / "bin" / "milvus-lite"
QUERY = "parse command line arguments and options"
ANSWERS = ("argparse", "getopt", "optparse")
MODES = ("dense", "bm25", "hybrid", "rrf")


def live_generation(index_dir: Path) -> Path:
    """The generation directory CURRENT names."""
    return index_dir / (index_dir / "CURRENT").read_text().strip()


def manifest_of(index_dir: Path) -> dict:
    return json.loads((live_generation(index_dir) / "manifest.json").read_text())


def search_json(capsys: pytest.CaptureFixture, index_dir: Path, *argv: str) -> list:
    """`needle search INDEX ... --json` in-process; the parsed output."""
    capsys.readouterr()
    assert main(["search", str(index_dir), *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def one_line_error(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """Run the CLI expecting a user error: exit 2 and exactly one line on stderr, returned."""
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("needle: error: ")
    return lines[0]


@pytest.fixture(scope="module")
def lite_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus in a Milvus Lite index (dense + Milvus BM25), built once through the CLI."""
    out = tmp_path_factory.mktemp("milvus-cli") / "index"
    assert main(["index", str(SAMPLE), "--out", str(out), "--store", "milvus", "--bm25"]) == 0
    return out


def test_manifest_records_the_store_and_a_relative_lite_database(lite_index: Path) -> None:
    generation = live_generation(lite_index)
    manifest = manifest_of(lite_index)
    assert (manifest["store"], manifest["uri"], manifest["collection"]) == ("milvus", "milvus.db", "needle")
    assert manifest["modes"] == ["dense", "bm25"]
    assert manifest["documents"] == sum(1 for _ in SAMPLE.open())
    assert (generation / "milvus.db").is_dir()
    assert (generation / "embeddings.npy").is_file()
    for mode in MODES:
        text = (generation / f"{mode}_search.yaml").read_text()
        assert "Milvus" in text
        assert str(lite_index.resolve()) not in text
        assert f"uri: {generation.name}/milvus.db" in text


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_answers_in_the_json_shape(lite_index: Path, capsys: pytest.CaptureFixture, mode: str) -> None:
    hits = search_json(capsys, lite_index, QUERY, "read and write zip archives", "--mode", mode, "--top-k", "4")
    assert len(hits) == 2
    for per_query in hits:
        assert len(per_query) == 4
        assert all(set(hit) == {"id", "score", "content"} for hit in per_query)
        scores = [hit["score"] for hit in per_query]
        assert scores == sorted(scores, reverse=True)
    assert any(hit["id"].startswith(ANSWERS) for hit in hits[0][:3])
    assert any(hit["id"].startswith("zipfile") for hit in hits[1][:3])


def test_bm25_and_hybrid_differ_from_dense_so_each_mode_runs_its_own_pipeline(
    lite_index: Path, capsys: pytest.CaptureFixture
) -> None:
    scores = {m: [h["score"] for h in search_json(capsys, lite_index, QUERY, "--mode", m)[0]] for m in MODES}
    assert max(scores["bm25"]) > 1.0  # BM25 scores, positive and unbounded
    assert max(scores["dense"]) <= 1.0  # inner products of normalised vectors
    assert max(scores["rrf"]) < 0.05  # Milvus RRF: 1/(60 + rank) summed over two lists
    assert scores["hybrid"] != scores["dense"]


def test_a_failed_rebuild_leaves_the_live_index_answering_and_a_good_one_reuses_embeddings(
    lite_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    index = tmp_path / "index"
    shutil.copytree(lite_index, index)
    before = search_json(capsys, index, QUERY)
    live = live_generation(index)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(SAMPLE.read_text() + "{not json\n")
    message = one_line_error(capsys, ["index", str(bad), "--out", str(index), "--store", "milvus", "--bm25"])
    assert "bad.jsonl" in message
    assert live_generation(index) == live
    assert sorted(p.name for p in index.iterdir()) == ["CURRENT", "LOCK", live.name]
    assert search_json(capsys, index, QUERY) == before

    assert main(["index", str(SAMPLE), "--out", str(index), "--store", "milvus", "--bm25"]) == 0
    new = live_generation(index)
    assert new != live
    assert (new / "embeddings.npy").stat().st_ino == (live / "embeddings.npy").stat().st_ino  # carried over
    assert search_json(capsys, index, QUERY) == before


def test_a_moved_index_answers_the_same(lite_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    expected = search_json(capsys, lite_index, QUERY, "--mode", "hybrid")
    shutil.copytree(lite_index, tmp_path / "first")
    (tmp_path / "first").rename(tmp_path / "moved")
    assert search_json(capsys, tmp_path / "moved", QUERY, "--mode", "hybrid") == expected


def test_needle_serve_answers_from_milvus_and_a_second_process_gets_the_lock_error(
    lite_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    with started(lite_index, tmp_path / "serve.log") as server:
        for name, component in [("hybrid_search", "mix"), ("rrf_search", "retriever")]:
            answer = server.post_json(f"/{name}/run", {"query": QUERY, "top_k": 3})
            assert answer.status == 200, answer.body
            documents = answer.json()["result"][component]["documents"]
            assert len(documents) == 3
            assert any(doc["id"].startswith(ANSWERS) for doc in documents)
        message = one_line_error(capsys, ["search", str(lite_index), QUERY])
    assert "open in another process" in message
    assert str(live_generation(lite_index).resolve() / "milvus.db") in message


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("store", "postgres", "store must be one of faiss, milvus"),
        ("uri", 7, "uri must be"),
        ("uri", "/etc/milvus.db", "uri must be"),
        ("uri", "../../other/milvus.db", "uri must be"),
        ("collection", "x; drop", "collection must be"),
    ],
)
def test_a_tampered_manifest_is_refused_naming_the_field(
    lite_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture, field: str, value: object, expected: str
) -> None:
    index = tmp_path / "index"
    shutil.copytree(lite_index, index)
    edit_manifest(live_generation(index) / "manifest.json", lambda manifest: manifest.update({field: value}))
    message = one_line_error(capsys, ["search", str(index), QUERY])
    assert f"corrupted index manifest in {live_generation(index)}: {expected}" in message


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--store", "milvus", "--lang", "character"], "--lang character is not available with --store milvus"),
        (["--store", "milvus", "--uri", "elsewhere.db"], "--uri 'elsewhere.db': give a Milvus server"),
        (["--store", "milvus", "--no-dense", "--bm25"], "--no-dense is not available with --store milvus"),
        (["--store", "milvus", "--collection", "9lives"], "--collection: collection_name must start"),
        (["--uri", "http://127.0.0.1:1"], "--uri and --collection need --store milvus"),
    ],
)
def test_options_a_milvus_index_cannot_take_are_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], expected: str
) -> None:
    message = one_line_error(capsys, ["index", str(SAMPLE), "--out", str(tmp_path / "index"), *extra])
    assert expected in message
    assert not (tmp_path / "index").exists()


# --- a Milvus server -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`milvus-lite server` on a free 127.0.0.1 port for this module; its URI."""
    root = tmp_path_factory.mktemp("milvus-server")
    port = free_port()
    with (root / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [str(MILVUS_LITE), "server", "--data-dir", str(root / "data"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=server_env(),
        )
    uri = f"http://127.0.0.1:{port}"
    try:
        wait_for(uri, process, root / "server.log")
        yield uri
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for(uri: str, process: subprocess.Popen, log: Path) -> None:
    """Wait until a client can list the server's collections; fail with its log when it exits or never answers."""
    from pymilvus import MilvusClient

    end = time.monotonic() + 60
    while time.monotonic() < end:
        if process.poll() is not None:
            pytest.fail(f"milvus-lite server exited with {process.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(Exception):
            MilvusClient(uri=uri, timeout=2).list_collections()
            return
        time.sleep(0.3)
    pytest.fail(f"milvus-lite server did not answer within 60 s: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def client(uri: str) -> Iterator:
    from pymilvus import MilvusClient

    milvus = MilvusClient(uri=uri, timeout=10)
    try:
        yield milvus
    finally:
        milvus.close()


def server_state(uri: str) -> tuple[str, list[str]]:
    """The collection the alias ``docs`` names, and the server's ``docs_gen*`` collections."""
    with client(uri) as milvus:
        alias = milvus.describe_alias("docs")["collection_name"]
        return alias, sorted(c for c in milvus.list_collections() if c.startswith("docs_gen"))


def test_a_server_index_builds_a_collection_per_generation_and_moves_the_alias(
    lite_index: Path, milvus_server: str, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    shutil.copytree(lite_index, index)  # a Lite index moved to a server: its embeddings are carried over
    command = ["index", str(SAMPLE), "--out", str(index), "--store", "milvus", "--uri", milvus_server]
    command += ["--collection", "docs", "--bm25"]
    allowed = ("--allow-server", milvus_server)  # a search of a server index names the server it may contact
    expected = search_json(capsys, lite_index, QUERY, "--mode", "dense")

    assert main(command) == 0
    manifest = manifest_of(index)
    assert (manifest["uri"], manifest["collection"]) == (milvus_server, "docs_gen000002")
    assert server_state(milvus_server) == ("docs_gen000002", ["docs_gen000002"])
    assert search_json(capsys, index, QUERY, "--mode", "dense", *allowed) == expected
    for mode in MODES:
        assert any(
            hit["id"].startswith(ANSWERS) for hit in search_json(capsys, index, QUERY, "--mode", mode, *allowed)[0][:3]
        )

    assert main(command) == 0
    assert server_state(milvus_server) == ("docs_gen000003", ["docs_gen000002", "docs_gen000003"])

    def fail_after_the_load(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(needle_retrieval.index.generation_build, "save_search_pipelines", fail_after_the_load)
    monkeypatch.setenv("NEEDLE_PROGRESS_INTERVAL", "off")  # the error line alone, no progress lines before it
    message = one_line_error(capsys, command)
    assert "live index is unchanged" in message
    assert server_state(milvus_server) == ("docs_gen000003", ["docs_gen000002", "docs_gen000003"])
    assert search_json(capsys, index, QUERY, "--mode", "dense", *allowed) == expected
    monkeypatch.undo()

    assert main(command) == 0
    assert manifest_of(index)["collection"] == "docs_gen000004"
    assert server_state(milvus_server) == ("docs_gen000004", ["docs_gen000003", "docs_gen000004"])
    assert search_json(capsys, index, QUERY, "--mode", "dense", *allowed) == expected

    # Back to Milvus Lite: the server collection of the generation this switch removes is dropped too.
    assert main(["index", str(SAMPLE), "--out", str(index), "--store", "milvus", "--bm25"]) == 0
    assert manifest_of(index)["uri"] == "milvus.db"
    assert server_state(milvus_server) == ("docs_gen000004", ["docs_gen000004"])
    assert search_json(capsys, index, QUERY, "--mode", "dense") == expected
