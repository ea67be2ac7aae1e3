"""OpenAI-compatible embedders against real servers on 127.0.0.1, with the real `openai` SDK.

- tests/support/servers/openai_compatible.py follows OpenAI's documented ``/v1/embeddings`` contract and error shape;
  it injects faults (401, 429, 500, malformed bodies, slow answers) and records every request and the most requests
  in flight at once, so retries, concurrency and order are observed from the server's side.
- Infinity (``infinity_emb v2`` from ``.venv-infinity``, a server no one here wrote) serves all-MiniLM-L6-v2; its
  embeddings must match sentence-transformers' for the same model within 1e-4 cosine (integration).
"""

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.embedders import OpenAITextEmbedder as HaystackOpenAITextEmbedder
from haystack.utils import Secret

import components  # noqa: F401 - registers our modules with Haystack's deserialization allowlist
from components.embedders import (
    EmbeddingFileError,
    OpenAIBatchTextEmbedder,
    OpenAIDocumentEmbedder,
    OpenAIEmbeddingError,
    OpenAITextEmbedder,
)
from tests.support.servers.openai_compatible import MALFORMED, EmbeddingServer, serving, vector_for

KEY_ENV = "NEEDLE_TEST_OPENAI_KEY"
KEY = "sk-test-5d1c"
TEXTS = [
    f"passage {i}: {'cats purr' if i % 2 else 'dogs bark'} [slow]" if i == 0 else f"passage {i}" for i in range(12)
]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    """One local OpenAI-compatible server for the module, requiring KEY."""
    with serving(api_key=KEY) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh_state(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with no faults, no delay and an empty log, and with the key in KEY_ENV."""
    monkeypatch.setenv(KEY_ENV, KEY)
    if "server" in request.fixturenames:
        request.getfixturevalue("server").state.reset()


def options(server: EmbeddingServer, **overrides: object) -> dict[str, object]:
    """Constructor arguments for `server`: its URL, the key from KEY_ENV, fast back-off."""
    return {"base_url": server.url, "api_key": Secret.from_env_var(KEY_ENV), "backoff": 0.01, **overrides}


def statuses(server: EmbeddingServer) -> list[int]:
    return [entry["status"] for entry in server.state.log]


def expected(texts: list[str], dim: int = 8) -> np.ndarray:
    return np.array([vector_for(text, dim) for text in texts])


# --- parameters, serialization ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "name", "value", "message"),
    [
        (OpenAITextEmbedder, "model_name", "", "model_name must be a non-empty string"),
        (OpenAITextEmbedder, "base_url", "ftp://host/v1", "base_url must start with http:// or https://"),
        (OpenAITextEmbedder, "api_key", "sk-plain-string", "api_key must be a haystack.utils.Secret"),
        (OpenAITextEmbedder, "dimensions", 0, r"dimensions must be an integer in \[1, 65536\]"),
        (OpenAITextEmbedder, "timeout", 0, r"timeout must be a finite number in \(0, 3600\]"),
        (OpenAITextEmbedder, "max_retries", 11, r"max_retries must be an integer in \[0, 10\]"),
        (OpenAITextEmbedder, "backoff", -1, r"backoff must be a finite number in \[0, 60\]"),
        (OpenAITextEmbedder, "query_instruction", None, "query_instruction must be a string"),
        (OpenAIBatchTextEmbedder, "batch_size", 2049, r"batch_size must be an integer in \[1, 2048\]"),
        (OpenAIBatchTextEmbedder, "concurrency", 0, r"concurrency must be an integer in \[1, 64\]"),
        (OpenAIDocumentEmbedder, "concurrency", True, r"concurrency must be an integer in \[1, 64\]"),
        (OpenAIDocumentEmbedder, "embedding_path", "vectors.txt", "embedding_path must be None or a path ending"),
        (OpenAIDocumentEmbedder, "meta_fields_to_embed", "title", "meta_fields_to_embed must be a list"),
        (OpenAIDocumentEmbedder, "overwrite", "yes", "overwrite must be a bool"),
    ],
)
def test_bad_parameters_fail_at_init_naming_the_parameter(cls: type, name: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cls(**{name: value})


@pytest.mark.parametrize("cls", [OpenAITextEmbedder, OpenAIBatchTextEmbedder, OpenAIDocumentEmbedder])
def test_to_dict_from_dict_round_trip_keeps_the_key_out(cls: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-9")
    embedder = cls(base_url="http://127.0.0.1:9/v1", model_name="m", dimensions=16, timeout=5.0, max_retries=2)
    data = embedder.to_dict()
    assert "sk-secret-value-9" not in json.dumps(data)
    assert data["init_parameters"]["api_key"] == {
        "type": "env_var",
        "env_vars": ["OPENAI_API_KEY", "RETRIEVER_API_KEY"],
        "strict": False,
    }
    rebuilt = cls.from_dict(data)
    assert rebuilt.to_dict() == data
    assert rebuilt.api_key.resolve_value() == "sk-secret-value-9"


def test_a_key_given_as_a_token_is_never_serialized() -> None:
    embedder = OpenAITextEmbedder(api_key=Secret.from_token("sk-inline"))
    with pytest.raises(ValueError, match="Cannot serialize token-based secret"):
        embedder.to_dict()


def test_pipeline_yaml_round_trip_runs(server: EmbeddingServer) -> None:
    pipeline = Pipeline()
    pipeline.add_component("embedder", OpenAIBatchTextEmbedder(**options(server, batch_size=2)))
    loaded = Pipeline.loads(pipeline.dumps())
    result = loaded.run({"embedder": {"texts": ["a", "b", "c"]}})["embedder"]
    np.testing.assert_allclose(result["embeddings"], expected(["a", "b", "c"]))


def test_key_comes_from_retriever_api_key_when_openai_api_key_is_unset(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("RETRIEVER_API_KEY", KEY)
    embedding = OpenAITextEmbedder(base_url=server.url).run(text="hello")["embedding"]
    np.testing.assert_allclose(embedding, vector_for("hello"))
    assert server.state.log[0]["authorization"] == f"Bearer {KEY}"


def test_openai_itself_without_a_key_is_an_error_naming_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "RETRIEVER_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="api_key: no key found in OPENAI_API_KEY or RETRIEVER_API_KEY"):
        OpenAITextEmbedder().warm_up()


def test_importing_the_openai_embedders_loads_no_sentence_transformers() -> None:
    code = "import sys, components.embedders.openai_document_embedder; print('sentence_transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


# --- inputs -------------------------------------------------------------------------------------------------------


def test_query_rules_apply_before_any_request(server: EmbeddingServer) -> None:
    with pytest.raises(ValueError, match="query is empty"):
        OpenAITextEmbedder(**options(server)).run(text="   ")
    with pytest.raises(ValueError, match="pass a batch of queries to the batch component"):
        OpenAITextEmbedder(**options(server)).run(text=["a list"])
    with pytest.raises(ValueError, match=r"queries\[1\] is empty"):
        OpenAIBatchTextEmbedder(**options(server)).run(texts=["fine", ""])
    with pytest.raises(TypeError, match=r"documents\[1\] must be a Document"):
        OpenAIDocumentEmbedder(**options(server)).run(documents=[Document(content="x"), "y"])
    assert server.state.log == []


def test_empty_inputs_give_empty_results_without_requests(server: EmbeddingServer) -> None:
    assert OpenAIBatchTextEmbedder(**options(server)).run(texts=[])["embeddings"] == []
    assert OpenAIDocumentEmbedder(**options(server)).run(documents=[])["documents"] == []
    assert server.state.log == []


def test_query_instruction_prefix_and_suffix_are_sent_in_that_order(server: EmbeddingServer) -> None:
    embedder = OpenAITextEmbedder(**options(server, query_instruction="query: ", prefix="<", suffix=">"))
    embedding = embedder.run(text="why do cats purr")["embedding"]
    assert server.state.log[0]["inputs"] == ["query: <why do cats purr>"]
    np.testing.assert_allclose(embedding, vector_for("query: <why do cats purr>"))


async def test_a_runs_instruction_replaces_the_init_one_and_none_keeps_it(server: EmbeddingServer) -> None:
    single = OpenAITextEmbedder(**options(server, query_instruction="recorded: ", prefix="<"))
    batch = OpenAIBatchTextEmbedder(**options(server, query_instruction="recorded: ", prefix="<"))
    for instruction, sent in [(None, "recorded: <q"), ("asked: ", "asked: <q"), ("", "<q")]:
        server.state.reset()
        single.run(text="q", query_instruction=instruction)
        await single.run_async(text="q", query_instruction=instruction)
        batch.run(texts=["q"], query_instruction=instruction)
        await batch.run_async(texts=["q"], query_instruction=instruction)
        assert [entry["inputs"] for entry in server.state.log] == [[sent]] * 4
    with pytest.raises(ValueError, match="query_instruction must be a string"):
        batch.run(texts=["q"], query_instruction=["not", "a", "string"])  # type: ignore[arg-type]


def test_document_texts_include_meta_fields_and_inputs_are_not_modified(server: EmbeddingServer) -> None:
    docs = [Document(id="same", content="body one", meta={"title": "T1"}), Document(id="same", content="body two")]
    embedder = OpenAIDocumentEmbedder(**options(server, meta_fields_to_embed=["title"], progress_bar=False))
    out = embedder.run(documents=docs)
    assert server.state.log[0]["inputs"] == ["T1\nbody one", "body two"]
    assert [doc.embedding for doc in docs] == [None, None]
    # Matched by position: two documents with one id still get their own vectors.
    np.testing.assert_allclose([doc.embedding for doc in out["documents"]], expected(["T1\nbody one", "body two"]))
    assert out["meta"] == {"model": "text-embedding-3-small", "usage": {"prompt_tokens": 5, "total_tokens": 5}}


def test_dimensions_are_requested_and_checked(server: EmbeddingServer) -> None:
    embedding = OpenAITextEmbedder(**options(server, dimensions=16)).run(text="wide")["embedding"]
    assert server.state.log[0]["dimensions"] == 16
    np.testing.assert_allclose(embedding, vector_for("wide", 16))


def test_same_vectors_as_haystacks_openai_embedder_on_the_same_server(server: EmbeddingServer) -> None:
    ours = OpenAITextEmbedder(**options(server, model_name="m")).run(text="compare me")
    theirs = HaystackOpenAITextEmbedder(api_key=Secret.from_env_var(KEY_ENV), model="m", api_base_url=server.url)
    reference = theirs.run(text="compare me")
    np.testing.assert_allclose(ours["embedding"], reference["embedding"])
    assert ours["meta"] == reference["meta"]


# --- error paths --------------------------------------------------------------------------------------------------


def test_wrong_key_is_a_clear_401_without_retries(server: EmbeddingServer) -> None:
    embedder = OpenAITextEmbedder(**options(server, api_key=Secret.from_token("sk-wrong")))
    with pytest.raises(OpenAIEmbeddingError, match=r"refused the API key \(HTTP 401, not retried") as caught:
        embedder.run(text="hello")
    assert caught.value.status == 401
    assert "Incorrect API key provided" in str(caught.value)
    assert statuses(server) == [401]


def test_429_then_success_is_retried_and_correct(server: EmbeddingServer) -> None:
    server.state.fail = [{"status": 429, "retry_after": 0}, {"status": 503}]
    embedding = OpenAITextEmbedder(**options(server, max_retries=3)).run(text="retry me")["embedding"]
    np.testing.assert_allclose(embedding, vector_for("retry me"))
    assert statuses(server) == [429, 503, 200]


def test_repeated_500_fails_after_max_retries_naming_status_and_body(server: EmbeddingServer) -> None:
    server.state.fail = [{"status": 500}] * 10
    embedder = OpenAIBatchTextEmbedder(**options(server, max_retries=2))
    with pytest.raises(
        OpenAIEmbeddingError, match=r"HTTP 500 to a request of 2 text\(s\) \(3 attempt\(s\)\)"
    ) as caught:
        embedder.run(texts=["a", "b"])
    assert caught.value.status == 500
    assert "The server had an error while processing your request" in str(caught.value)
    assert statuses(server) == [500, 500, 500]


def test_a_bad_request_is_not_retried_and_quotes_the_server(server: EmbeddingServer) -> None:
    embedder = OpenAIDocumentEmbedder(**options(server, progress_bar=False))
    with pytest.raises(OpenAIEmbeddingError, match=r"HTTP 400 .*not retried\): '\$\.input' is invalid") as caught:
        embedder.run(documents=[Document(content="")])
    assert caught.value.status == 400
    assert statuses(server) == [400]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("not-json", "not the OpenAI embeddings format: not JSON: '<html>502 Bad Gateway"),
        ("no-data", "not the OpenAI embeddings format: no 'data' list"),
        ("fewer", r"with 2 embeddings; it must send one per input"),
        ("string-value", "embeddings that are not all lists of numbers"),
        ("ragged", "vectors of different widths"),
        ("duplicate-index", "index 0 appears twice"),
        ("nan", "NaN or infinite values"),
    ],
)
def test_malformed_answers_are_errors_not_results(server: EmbeddingServer, mode: str, message: str) -> None:
    assert mode in MALFORMED
    server.state.malformed = [mode]
    embedder = OpenAIBatchTextEmbedder(**options(server))
    with pytest.raises(OpenAIEmbeddingError, match=message) as caught:
        embedder.run(texts=["one", "two", "three"])
    assert caught.value.status == 200
    assert "answered HTTP 200 to a request of 3 text(s)" in str(caught.value)


@pytest.mark.timeout(60)
def test_a_server_that_does_not_answer_times_out_instead_of_hanging(server: EmbeddingServer) -> None:
    server.state.delay_s = 30.0
    embedder = OpenAITextEmbedder(**options(server, timeout=0.3, max_retries=1))
    # the first attempt uses all of the timeout, which bounds the retries too: no second attempt is made
    said = r"did not answer a request of 1 text\(s\) in time \(1 attempt\(s\)\); no retry: .* the timeout of 0.3 s"
    with pytest.raises(OpenAIEmbeddingError, match=said):
        embedder.run(text="anyone there?")


def test_an_unreachable_server_is_an_error_after_retries() -> None:
    with serving() as closed:
        url = closed.url
    embedder = OpenAITextEmbedder(base_url=url, api_key=None, max_retries=1, backoff=0.01, timeout=5.0)
    with pytest.raises(OpenAIEmbeddingError, match=r"could not reach .* \(2 attempt\(s\)\): "):
        embedder.run(text="hello")


# --- concurrency and order ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrency_bounds_requests_in_flight_and_order_is_kept(server: EmbeddingServer, concurrency: int) -> None:
    # Long enough for every worker's first request to overlap even on a busy machine.
    server.state.delay_s = 0.25 if concurrency > 1 else 0.05
    server.state.slow_s, server.state.shuffle, server.state.gather = 0.5, True, concurrency
    embedder = OpenAIBatchTextEmbedder(**options(server, batch_size=1, concurrency=concurrency))
    embeddings = embedder.run(texts=TEXTS)["embeddings"]
    np.testing.assert_allclose(embeddings, expected(TEXTS))
    assert server.state.max_in_flight == concurrency
    assert len(server.state.log) == len(TEXTS)
    if concurrency > 1:  # the slow first batch finished after others, yet its row is still first
        assert server.state.log[0]["inputs"] != [TEXTS[0]]


def test_batches_are_cut_in_order_of_batch_size(server: EmbeddingServer) -> None:
    embedder = OpenAIBatchTextEmbedder(**options(server, batch_size=5, concurrency=1))
    embedder.run(texts=TEXTS)
    assert [entry["inputs"] for entry in server.state.log] == [TEXTS[0:5], TEXTS[5:10], TEXTS[10:12]]


def test_a_failing_batch_fails_the_run(server: EmbeddingServer) -> None:
    server.state.fail = [{"status": 401}]  # 401 is never retried: whichever batch meets it fails the run
    embedder = OpenAIBatchTextEmbedder(**options(server, batch_size=2, concurrency=3))
    with pytest.raises(OpenAIEmbeddingError, match="HTTP 401"):
        embedder.run(texts=TEXTS)


async def test_run_async_bounds_concurrency_and_keeps_order(server: EmbeddingServer) -> None:
    server.state.delay_s, server.state.slow_s, server.state.shuffle = 0.25, 0.5, True
    server.state.gather = 3  # the first three requests meet in flight however late a busy machine sends one
    embedder = OpenAIBatchTextEmbedder(**options(server, batch_size=2, concurrency=3))
    result = await embedder.run_async(texts=TEXTS)
    np.testing.assert_allclose(result["embeddings"], expected(TEXTS))
    assert server.state.max_in_flight == 3
    assert result["meta"]["usage"]["total_tokens"] == sum(len(text.split()) for text in TEXTS)
    await embedder.close_async()


async def test_run_async_of_text_and_document_embedders_and_retries(server: EmbeddingServer) -> None:
    server.state.fail = [{"status": 429, "retry_after": 0}]
    text = await OpenAITextEmbedder(**options(server)).run_async(text="async query")
    np.testing.assert_allclose(text["embedding"], vector_for("async query"))
    assert statuses(server) == [429, 200]
    docs = [Document(content=f"doc {i}") for i in range(7)]
    out = await OpenAIDocumentEmbedder(**options(server, batch_size=3)).run_async(documents=docs)
    np.testing.assert_allclose([d.embedding for d in out["documents"]], expected([d.content for d in docs]), atol=1e-6)
    server.state.fail = [{"status": 500}] * 3
    with pytest.raises(OpenAIEmbeddingError, match=r"HTTP 500 .*\(2 attempt\(s\)\)"):
        await OpenAITextEmbedder(**options(server, max_retries=1)).run_async(text="fails")


def test_one_embedder_serves_run_async_on_successive_event_loops(server: EmbeddingServer) -> None:
    embedder = OpenAITextEmbedder(**options(server))
    for text in ("first loop", "second loop"):  # asyncio.run closes its loop: the client must not outlive it
        embedding = asyncio.run(embedder.run_async(text=text))["embedding"]
        np.testing.assert_allclose(embedding, vector_for(text))


async def test_async_pipeline_warms_up_on_its_loop(server: EmbeddingServer) -> None:
    pipeline = Pipeline()
    pipeline.add_component("embedder", OpenAITextEmbedder(**options(server)))
    result = await pipeline.run_async({"embedder": {"text": "via pipeline"}})
    np.testing.assert_allclose(result["embedder"]["embedding"], vector_for("via pipeline"))


# --- the embedding file -------------------------------------------------------------------------------------------


def test_embedding_file_is_written_then_reused_without_requests(server: EmbeddingServer, tmp_path) -> None:
    path = str(tmp_path / "corpus.npy")
    docs = [Document(id=f"d{i}", content=f"text {i}") for i in range(5)]
    first = OpenAIDocumentEmbedder(**options(server, embedding_path=path, batch_size=2, progress_bar=False))
    written = first.run(documents=docs)["documents"]
    assert len(server.state.log) == 3
    server.state.reset()
    again = OpenAIDocumentEmbedder(**options(server, embedding_path=path, batch_size=2, progress_bar=False))
    out = again.run(documents=docs)
    assert server.state.log == []
    assert [d.embedding for d in out["documents"]] == [d.embedding for d in written]
    assert out["meta"] == {"model": "text-embedding-3-small", "embedding_file": path}
    np.testing.assert_allclose(np.load(path), expected([d.content for d in docs]), atol=1e-6)


def test_embedding_file_built_for_another_model_is_refused(server: EmbeddingServer, tmp_path) -> None:
    path = str(tmp_path / "corpus.npy")
    docs = [Document(id="a", content="alpha"), Document(id="b", content="beta")]
    OpenAIDocumentEmbedder(**options(server, embedding_path=path, progress_bar=False)).run(documents=docs)
    other = OpenAIDocumentEmbedder(**options(server, embedding_path=path, model_name="other", progress_bar=False))
    with pytest.raises(EmbeddingFileError, match="model: file has 'text-embedding-3-small', now 'other'"):
        other.run(documents=docs)
    with pytest.raises(EmbeddingFileError, match="the embedded inputs differ"):
        OpenAIDocumentEmbedder(**options(server, embedding_path=path, progress_bar=False)).run(
            documents=[Document(id="a", content="alpha"), Document(id="b", content="gamma")]
        )
    server.state.reset()
    rebuilt = OpenAIDocumentEmbedder(
        **options(server, embedding_path=path, model_name="other", overwrite=True, progress_bar=False)
    ).run(documents=docs)
    assert len(server.state.log) == 1
    assert len(rebuilt["documents"]) == 2


# --- a real OpenAI-compatible server: Infinity --------------------------------------------------------------------

SENTENCES = [
    "Cats purr by vibrating the muscles of the larynx.",
    "The stock market fell sharply on Tuesday after new tariffs on imported steel.",
    "purr",
    "Vitamin C deficiency causes scurvy, which sailors suffered on long voyages.",
    "Zürich liegt am Zürichsee; 東京は日本の首都です。",
    "A recipe for sourdough bread needs flour, water, salt and a starter.",
    "How do I parse command line arguments in Python?",
    "argparse makes it easy to write user-friendly command-line interfaces. " * 12,
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The quick brown fox jumps over the lazy dog.",
    "Mitochondria are the powerhouse of the cell.",
]


@pytest.fixture(scope="module")
def infinity(minilm_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Infinity serving all-MiniLM-L6-v2 from its local directory on 127.0.0.1, requiring KEY; yields base_url."""
    # Reuse the Infinity path and the port/health helpers of the rerank tests (they start Infinity the same way).
    from tests.components.rankers.test_tei import _healthy, free_port
    from tests.support.paths import INFINITY

    if not INFINITY.exists():
        pytest.skip(
            "Infinity is not installed in .venv-infinity (see tests/components/rankers/test_tei.py for the commands)"
        )
    port = free_port()
    log = tmp_path_factory.mktemp("infinity-embed") / "infinity.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
    command = [str(INFINITY), "v2", "--model-id", minilm_path, "--served-model-name", "all-MiniLM-L6-v2"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--url-prefix", "/v1", "--api-key", KEY]
    command += ["--device", "cpu", "--engine", "torch", "--no-model-warmup", "--no-vector-disk-cache"]
    with open(log, "w") as out:
        proc = subprocess.Popen([*command, "--log-level", "warning"], stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while not _healthy(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Infinity did not come up (exit code {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"{base}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def reference(minilm_path: str) -> np.ndarray:
    """sentence-transformers' normalized embeddings of SENTENCES, through our own sentence-transformers embedder."""
    from components.embedders import SentenceTransformersBatchTextEmbedder

    embedder = SentenceTransformersBatchTextEmbedder(model=minilm_path, normalize_embeddings=True, progress_bar=False)
    embedder.warm_up()
    return np.array(embedder.run(texts=SENTENCES)["embeddings"])


def cosines(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return (got * want).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))


def infinity_options(url: str, **overrides: object) -> dict[str, object]:
    return {"base_url": url, "model_name": "all-MiniLM-L6-v2", "api_key": Secret.from_env_var(KEY_ENV), **overrides}


@pytest.mark.integration
def test_infinity_batch_embeddings_match_sentence_transformers(infinity: str, reference: np.ndarray) -> None:
    embedder = OpenAIBatchTextEmbedder(**infinity_options(infinity, batch_size=3, concurrency=3))
    got = np.array(embedder.run(texts=SENTENCES)["embeddings"])
    assert got.shape == reference.shape
    assert cosines(got, reference).min() >= 1 - 1e-4


@pytest.mark.integration
def test_infinity_document_and_text_embeddings_match_and_the_file_reloads(
    infinity: str, reference: np.ndarray, tmp_path
) -> None:
    docs = [Document(id=f"s{i}", content=text) for i, text in enumerate(SENTENCES)]
    path = str(tmp_path / "minilm.npy")
    embedder = OpenAIDocumentEmbedder(**infinity_options(infinity, batch_size=4, embedding_path=path))
    out = embedder.run(documents=docs)["documents"]
    assert cosines([d.embedding for d in out], reference).min() >= 1 - 1e-4
    assert cosines(np.load(path), reference).min() >= 1 - 1e-4
    single = OpenAITextEmbedder(**infinity_options(infinity)).run(text=SENTENCES[3])["embedding"]
    assert cosines([single], reference[3:4])[0] >= 1 - 1e-4


@pytest.mark.integration
async def test_infinity_run_async_matches_sentence_transformers(infinity: str, reference: np.ndarray) -> None:
    embedder = OpenAIBatchTextEmbedder(**infinity_options(infinity, batch_size=2, concurrency=4))
    got = (await embedder.run_async(texts=SENTENCES))["embeddings"]
    assert cosines(got, reference).min() >= 1 - 1e-4
    await embedder.close_async()


@pytest.mark.integration
def test_infinity_refuses_a_wrong_key_with_a_clear_401(infinity: str) -> None:
    embedder = OpenAITextEmbedder(**infinity_options(infinity, api_key=Secret.from_token("sk-wrong")))
    with pytest.raises(OpenAIEmbeddingError, match=r"refused the API key \(HTTP 401.*\): Unauthorized"):
        embedder.run(text="hello")
