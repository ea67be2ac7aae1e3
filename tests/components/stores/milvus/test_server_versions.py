"""Milvus servers as they are: one too old for what the store needs is refused on connect, in one line naming its
version and the one needed, before anything is embedded or written; one that has it (or Milvus Lite) is not.

No Milvus before 2.5 runs here: tests/support/servers/old_milvus.py plays one over Milvus's real wire protocol
(Connect and GetVersion as Milvus 2.3.3 answers them, a sparse index refused as 2.3 refuses it, every other call
forwarded to a real `milvus-lite server`), so the store and the CLI run against it unchanged.
"""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.stores.milvus import MilvusDocumentStore
from components.stores.milvus.connection import MilvusVersionError, open_client
from components.stores.milvus.settings import MilvusSettings
from tests.support import milvus as milvus_support
from tests.support.milvus import MilvusServer, corpus, ids
from tests.support.paths import REPO, SAMPLE
from tests.support.serve import needle_command, server_env
from tests.support.servers.old_milvus import OldMilvus, serving

milvus_server = milvus_support.milvus_server
milvus_collection = milvus_support.milvus_collection
WRITES = {"CreateCollection", "CreateIndex", "Insert", "Upsert"}


@pytest.fixture
def old_milvus(milvus_server: MilvusServer) -> Iterator[OldMilvus]:
    """A Milvus 2.3.3 (as clients see it) in front of the module's `milvus-lite server`."""
    with serving(backend=milvus_server.uri) as server:
        yield server


def needle(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a fresh process (its stderr is what a user sees)."""
    command = needle_command(*args)
    return subprocess.run(command, check=False, cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("version", "bm25", "needed"),
    [("v2.3.3", True, "2.5"), ("v2.4.17", True, "2.5"), ("v2.2.16", False, "2.3"), ("2.4.0-rc.1", True, "2.5")],
)
def test_a_server_without_what_the_settings_need_is_refused_in_one_line_naming_both_versions(
    version: str, bm25: bool, needed: str
) -> None:
    with serving(version) as server, pytest.raises(MilvusVersionError) as raised:
        open_client(MilvusSettings(uri=server.uri, bm25=bm25), None)
    message = str(raised.value)
    assert f"Milvus at {server.uri} runs {version}, but" in message
    assert f"needs Milvus >= {needed}: upgrade the server" in message
    assert ("set bm25=False" in message) == bm25  # the setting that does without it, when there is one
    assert "\n" not in message


@pytest.mark.parametrize(
    ("version", "bm25"),
    [("v2.3.3", False), ("v2.4.5", False), ("v2.5.0", True), ("v2.6.4", True), ("master-20251101-ab12cd3", True)],
)
def test_a_server_that_has_what_the_settings_need_is_not_refused(version: str, bm25: bool) -> None:
    """Including one whose version names no release (a development build): the server has the last word."""
    with serving(version) as server:
        client = open_client(MilvusSettings(uri=server.uri, bm25=bm25), None)
        try:
            assert client.get_server_version() == version
        finally:
            client.close()


def test_a_bm25_store_on_an_old_server_refuses_before_writing_and_claims_no_analyzer(
    old_milvus: OldMilvus, milvus_server: MilvusServer, milvus_collection: str
) -> None:
    store = MilvusDocumentStore(uri=old_milvus.uri, collection_name=milvus_collection, bm25=True)
    with pytest.raises(MilvusVersionError, match=r"runs v2\.3\.3, but bm25=True .*needs Milvus >= 2\.5"):
        store.write_documents(corpus(5))
    with pytest.raises(MilvusVersionError):
        _ = store.bm25_analyzer_in_use
    assert not WRITES & set(old_milvus.calls)
    lite = MilvusDocumentStore(uri=milvus_server.uri, collection_name=milvus_collection)
    assert not lite.client.has_collection(milvus_collection)
    assert lite.bm25_analyzer_in_use == "english on Milvus Lite (without stemming)"
    lite.close()


def test_a_dense_store_on_an_old_server_writes_and_searches(old_milvus: OldMilvus, milvus_collection: str) -> None:
    documents = corpus(12)
    store = MilvusDocumentStore(uri=old_milvus.uri, collection_name=milvus_collection, bm25=False)
    try:
        assert store.write_documents(documents) == 12
        store.flush()
        assert store.count_documents() == 12
        hits = store.embedding_search([documents[3].embedding or []], top_k=3)[0]
        assert ids(hits)[0] == "d03"
        assert store.bm25_analyzer_in_use == "none (bm25=False)"
    finally:
        store.close()
    assert {"CreateCollection", "Insert", "Search"} <= set(old_milvus.calls)


def test_needle_index_bm25_on_an_old_server_fails_in_one_line_before_embedding(
    old_milvus: OldMilvus, tmp_path: Path
) -> None:
    out = tmp_path / "index"
    done = needle("index", str(SAMPLE), "--out", str(out), "--store", "milvus", "--bm25", "--uri", old_milvus.uri)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # no model loading, no progress bar, no pymilvus traceback
    assert lines[0].startswith(f"needle: error: Milvus at {old_milvus.uri} runs v2.3.3, but bm25=True")
    assert "needs Milvus >= 2.5" in lines[0]
    assert not WRITES & set(old_milvus.calls)


def test_needle_index_without_bm25_builds_on_an_old_server_and_answers(
    old_milvus: OldMilvus, tmp_path: Path, milvus_collection: str
) -> None:
    small = tmp_path / "corpus.jsonl"
    small.write_text("".join(SAMPLE.read_text().splitlines(True)[:30]))
    out = tmp_path / "index"
    command = ["index", str(small), "--out", str(out), "--store", "milvus", "--uri", old_milvus.uri]
    done = needle(*command, "--collection", milvus_collection)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "[ERROR]" not in done.stderr
    found = needle(
        "search", str(out), "command-line parsing", "--json", "--top-k", "3", "--allow-server", old_milvus.uri
    )
    assert found.returncode == 0, found.stderr
    assert any(hit["id"].startswith("argparse") for hit in json.loads(found.stdout)[0])
