"""Every file in pipelines/ runs as shipped: plain `Pipeline.loads` after `import components`, in README's order.

One walk, in a scratch working directory (the files name relative paths under .needle/): first every index file,
then every search file, each read from pipelines/, loaded with `Pipeline.loads` and run on samples/python_docs.jsonl
(the image files on a toy image corpus) with a real query fed to the sockets its ``inputs:`` block names, as
Hayhooks feeds them. What a user would see of each run (documents written; the top hit and how many) is compared
with what it must be, all files at once, so one broken file does not hide another.

The only edits are those a user makes for their machine, each replacing one line of the file: a local model
directory where the file names a model the hub would have to send (the CLIP model, the cross-encoder, the SPLADE
model: tests/support/tiny_splade.py's untrained one, so the sparse files are checked for their wiring; tests are
offline), and the address of a local server where the file names a service: Infinity serving all-MiniLM-L6-v2 as
the OpenAI-compatible embedding service of the demo files, and the Tavily-protocol server of
tests/support/servers/websearch.py for the web search files. Milvus Lite runs in process.

The cross-encoder is MiniLM with a random head (no trained cross-encoder installs offline), so hybrid_rerank.yaml
is checked for its wiring: it reorders the mix ranker's 20 candidates by its own scores and keeps 5.
"""

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Document, Pipeline
from sentence_transformers import SentenceTransformer

import components  # noqa: F401  (the import alone allowlists our modules for Pipeline.loads)
from components.embedders import InfinityServer, InfinitySettings
from components.embedders.infinity_server import lease, release
from needle_retrieval.index.milvus import close_stores
from needle_retrieval.pipelines import shipped
from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401  (session fixture: a local cross-encoder dir)
from tests.support.clip import PAIRS, build_clip, toy_image, train_clip
from tests.support.paths import REPO
from tests.support.servers.websearch import API_KEY, serve
from tests.support.tiny_splade import tiny_splade_path

pytestmark = pytest.mark.integration
ZIP = "read and write ZIP files"
CSV = "read and write CSV files"
CORPUS = "samples/python_docs.jsonl"
IMAGES = "images/corpus.jsonl"
INDEX_FILES = ["dense_index", "bm25_index", "milvus_index", "demo_openai_milvus_index", "image_index", "sparse_index"]
SEARCH_FILES = [
    "dense_search",
    "dense_batch_search",
    "bm25_search",
    "bm25_batch_search",
    "hybrid_search",
    "hybrid_batch_search",
    "rrf_search",
    "rrf_batch_search",
    "hybrid_rerank",
    "milvus_dense_search",
    "milvus_dense_batch_search",
    "milvus_bm25_search",
    "milvus_bm25_batch_search",
    "milvus_hybrid_search",
    "milvus_hybrid_batch_search",
    "milvus_mix_search",
    "milvus_mix_batch_search",
    "demo_openai_milvus_search",
    "image_search",
    "image_batch_search",
    "web_search",
    "web_local_mix_search",
    "sparse_search",
    "sparse_batch_search",
]
BATCH_QUERIES = [ZIP, CSV]
IMAGE_QUERY = "blue triangle"
IMAGE_QUERIES = ["red square", "blue triangle"]

Outputs = dict[str, dict[str, Any]]
Seen = Callable[[Outputs], object]


def first_hits(component: str) -> Seen:
    """How many documents COMPONENT answered with and the first one's id."""
    return lambda out: (len(out[component]["documents"]), out[component]["documents"][0].id)


def first_hits_per_query(component: str) -> Seen:
    """``first_hits`` of each query of a batch pipeline."""
    return lambda out: [(len(docs), docs[0].id) for docs in out[component]["documents"]]


def written(out: Outputs) -> object:
    return out["writer"]["documents_written"]


def reranked(out: Outputs) -> object:
    """How many the reranker kept of how many mix candidates; whether they are candidates, in its score order."""
    kept, candidates = out["reranker"]["documents"], out["mix"]["documents"]
    scores = [doc.score for doc in kept]
    return (
        len(kept),
        len(candidates),
        {doc.id for doc in kept} <= {doc.id for doc in candidates},
        scores == sorted(scores, reverse=True),
    )


def web_hits(out: Outputs) -> object:
    docs: list[Document] = out["web"]["documents"]
    return len(docs), docs[0].meta["title"], docs[0].meta["provider"], docs[0].meta["retrieval_type"]


def joined_hits(out: Outputs) -> object:
    docs: list[Document] = out["joiner"]["documents"]
    return len(docs), sorted({doc.meta["retrieval_type"] for doc in docs}), "zipfile-0" in [doc.id for doc in docs]


# file -> (what its one declared input gets, what a user sees of the run, what that must be)
WALK: dict[str, tuple[object, Seen, object]] = {
    "dense_index": (CORPUS, written, 274),
    "bm25_index": (CORPUS, written, 274),
    "milvus_index": (CORPUS, written, 274),
    "demo_openai_milvus_index": (CORPUS, written, 274),
    "image_index": (IMAGES, written, len(PAIRS)),
    "sparse_index": (CORPUS, written, 274),
    "dense_search": (ZIP, first_hits("retriever"), (5, "zipfile-0")),
    "dense_batch_search": (BATCH_QUERIES, first_hits_per_query("retriever"), [(5, "zipfile-0"), (5, "csv-0")]),
    "bm25_search": (ZIP, first_hits("retriever"), (5, "zipfile-0")),
    "bm25_batch_search": (BATCH_QUERIES, first_hits_per_query("retriever"), [(5, "zipfile-0"), (5, "csv-0")]),
    "hybrid_search": (ZIP, first_hits("mix"), (5, "zipfile-0")),
    "hybrid_batch_search": (BATCH_QUERIES, first_hits_per_query("mix"), [(5, "zipfile-0"), (5, "csv-0")]),
    "rrf_search": (ZIP, first_hits("joiner"), (5, "zipfile-0")),
    "rrf_batch_search": (BATCH_QUERIES, first_hits_per_query("joiner"), [(5, "zipfile-0"), (5, "csv-0")]),
    "hybrid_rerank": (ZIP, reranked, (5, 20, True, True)),
    "milvus_dense_search": (ZIP, first_hits("retriever"), (5, "zipfile-0")),
    "milvus_dense_batch_search": (
        BATCH_QUERIES,
        first_hits_per_query("retriever"),
        [(5, "zipfile-0"), (5, "csv-0")],
    ),
    "milvus_bm25_search": (ZIP, first_hits("retriever"), (5, "zipfile-0")),
    "milvus_bm25_batch_search": (
        BATCH_QUERIES,
        first_hits_per_query("retriever"),
        [(5, "zipfile-0"), (5, "csv-0")],
    ),
    "milvus_hybrid_search": (ZIP, first_hits("retriever"), (5, "zipfile-0")),
    "milvus_hybrid_batch_search": (
        BATCH_QUERIES,
        first_hits_per_query("retriever"),
        [(5, "zipfile-0"), (5, "csv-0")],
    ),
    "milvus_mix_search": (ZIP, first_hits("mix"), (5, "zipfile-0")),
    "milvus_mix_batch_search": (BATCH_QUERIES, first_hits_per_query("mix"), [(5, "zipfile-0"), (5, "csv-0")]),
    "demo_openai_milvus_search": (ZIP, first_hits("retriever"), (5, "zipfile-0")),
    "image_search": (IMAGE_QUERY, first_hits("retriever"), (5, "blue")),
    "image_batch_search": (IMAGE_QUERIES, first_hits_per_query("retriever"), [(5, "red"), (5, "blue")]),
    "web_search": (ZIP, web_hits, (5, f"{ZIP} #1", "tavily", "web")),
    "web_local_mix_search": (ZIP, joined_hits, (8, ["dense", "web"], True)),
    "sparse_search": (ZIP, first_hits("retriever"), (5, "ast-1")),  # the untrained tiny SPLADE's pick
    "sparse_batch_search": (BATCH_QUERIES, first_hits_per_query("retriever"), [(5, "ast-1"), (5, "wave-2")]),
}


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny CLIP of tests/support/clip.py, trained on its toy pairs (no CLIP model installs offline)."""
    root = tmp_path_factory.mktemp("clip")
    model = SentenceTransformer(str(build_clip(root / "hf", root / "untrained")))
    train_clip(model)
    model.save(str(root / "trained"))
    return str(root / "trained")


@pytest.fixture(scope="module")
def infinity(minilm_path: str) -> Iterator[InfinityServer]:
    """Infinity serving all-MiniLM-L6-v2 (from .venv-infinity, which `make test` creates): the demo's service."""
    server = lease(InfinitySettings(minilm_path, device="cpu", batch_size=32))
    server.start(timeout=240)
    yield server
    release(server)


def workdir(root: Path) -> Path:
    """A user's working directory: the sample corpus under samples/ and the toy image corpus under images/."""
    (root / "samples").mkdir()
    (root / CORPUS).write_bytes((REPO / CORPUS).read_bytes())
    (root / "images" / "img").mkdir(parents=True)
    lines = []
    for colour, caption in PAIRS.items():
        toy_image(colour).save(root / "images" / "img" / f"{colour}.png")
        lines.append(json.dumps({"id": colour, "image_path": f"img/{colour}.png", "contents": caption}) + "\n")
    (root / IMAGES).write_text("".join(lines), encoding="utf-8")
    return root


def machine_edits(clip: str, cross_encoder: str, embeddings: InfinityServer, minilm: str, web: str) -> dict[str, Any]:
    """The lines a user changes for this machine, per file: old line -> new line."""
    clip_model = {"model: sentence-transformers/clip-ViT-B-32": f"model: {clip}"}
    demo = {
        "base_url: http://127.0.0.1:7997/v1": f"base_url: {embeddings.base_url}",
        "model_name: text-embedding-3-small": f"model_name: {minilm}",
    }
    web_url = {"base_url: null": f"base_url: {web}"}
    splade = {"model: prithivida/Splade_PP_en_v1": f"model: {tiny_splade_path(minilm)}"}
    return {
        "hybrid_rerank": {"model_path: /models/bge-reranker-base": f"model_path: {cross_encoder}"},
        "demo_openai_milvus_index": demo,
        "demo_openai_milvus_search": demo,
        "image_index": clip_model,
        "image_search": clip_model,
        "image_batch_search": clip_model,
        "web_search": web_url,
        "web_local_mix_search": web_url,
        "sparse_index": splade,
        "sparse_search": splade,
        "sparse_batch_search": splade,
    }


def edited(name: str, edits: dict[str, dict[str, str]]) -> str:
    """pipelines/NAME.yaml with this machine's lines changed (each must be in the file)."""
    text = shipped.read(name)
    for old, new in edits.get(name, {}).items():
        assert old in text, f"{name}.yaml no longer has the line {old!r} this test changes"
        text = text.replace(old, new)
    return text


def run_file(text: str, value: object) -> Outputs:
    """`Pipeline.loads` the text and run it with VALUE fed to every target of its one declared input; every
    component's output is kept (a user's view may need an inner one, e.g. the candidates before a reranker)."""
    declared = yaml.safe_load(text)
    ((_, targets),) = declared["inputs"].items()
    feed: dict[str, dict[str, object]] = {}
    for target in targets if isinstance(targets, list) else [targets]:
        component, socket = target.split(".", 1)
        feed.setdefault(component, {})[socket] = value
    pipeline = Pipeline.loads(text)
    try:
        return pipeline.run(feed, include_outputs_from=set(declared["components"]))
    finally:
        close_stores(pipeline)  # a Milvus Lite database is then free for the next file


def test_the_walk_covers_every_file_in_pipelines() -> None:
    assert sorted(INDEX_FILES + SEARCH_FILES) == shipped.names()
    assert list(WALK) == INDEX_FILES + SEARCH_FILES


@pytest.mark.timeout(1800)
def test_every_pipeline_file_runs_with_plain_pipeline_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    minilm_path: str,
    minilm_cross_encoder: str,  # noqa: F811
    clip_dir: str,
    infinity: InfinityServer,
) -> None:
    monkeypatch.chdir(workdir(tmp_path))
    monkeypatch.setenv("RETRIEVER_API_KEY", infinity.api_key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TAVILY_API_KEY", API_KEY)
    seen: dict[str, object] = {}
    with serve("tavily") as (web, _state):
        edits = machine_edits(clip_dir, minilm_cross_encoder, infinity, minilm_path, web)
        for name, (value, view, _) in WALK.items():
            try:
                seen[name] = view(run_file(edited(name, edits), value))
            except Exception as error:  # recorded, so that the comparison below names every broken file
                seen[name] = f"{type(error).__name__}: {' '.join(str(error).split())[:400]}"
    assert seen == {name: expected for name, (_, _, expected) in WALK.items()}
    assert sorted(p.name for p in (tmp_path / ".needle").iterdir()) == ["demo", "images", "milvus", "sample"]
