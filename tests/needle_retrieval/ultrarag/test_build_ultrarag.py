"""What UltraRAG's own retriever server wrote -- its `retriever_embed`, `retriever_index` and `bm25_index` run in
UltraRAG's python on its source tree -- taken over by needle's tools: the `.npy` indexed as it is, the FAISS file
and bm25s' directory replaced with `overwrite=true`, the dense answers UltraRAG's FAISS file gave.

Skipped unless ULTRARAG_SRC and ULTRARAG_PYTHON are set (tests.support.ultrarag)."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from needle_retrieval.errors import NeedleError
from needle_retrieval.index.trust import config_trust
from needle_retrieval.search.searcher import Searcher
from needle_retrieval.ultrarag.build import bm25_with_config, index_from_embeddings
from needle_retrieval.ultrarag.config import load_config
from tests.support.ultrarag import ultrarag_or_skip
from tests.support.ultrarag_files import corpus_ids, encode_query, make_project, tree

QUERY = "how are AIFF files structured"
# UltraRAG's retriever server, driven as its client drives it: retriever_init with the file's values, then the
# build tools. ARGV: source tree, model.
ULTRARAG_BUILD = """
import asyncio, sys
sys.path.insert(0, sys.argv[1] + "/servers/retriever/src")
import retriever

async def build(backend):
    server = retriever.Retriever(retriever.app)
    encode = {"normalize_embeddings": False, "encode_chunk_size": 256, "q_prompt_name": None,
              "psg_prompt_name": None, "psg_task": None, "q_task": None}
    configs = {"sentence_transformers": {"trust_remote_code": True, "sentence_transformers_encode": encode},
               "bm25": {"lang": "en", "tokenizer": "auto", "save_path": "index/bm25"}}
    faiss = {"faiss": {"index_use_gpu": False, "index_chunk_size": 2000, "index_path": "index/index.index"}}
    await server.retriever_init(model_name_or_path=sys.argv[2], backend_configs=configs, batch_size=16,
                                corpus_path="data/corpus_example.jsonl", backend=backend, index_backend="faiss",
                                index_backend_configs=faiss)
    if backend == "bm25":
        await server.bm25_index(overwrite=False)
    else:
        await server.retriever_embed(embedding_path="embedding/embedding.npy", overwrite=False)
        await server.retriever_index(embedding_path="embedding/embedding.npy", overwrite=False)

asyncio.run(build("sentence_transformers"))
asyncio.run(build("bm25"))
"""


def test_needle_takes_over_what_ultrarag_built(
    tmp_path: Path, tiny_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    ultrarag = ultrarag_or_skip()
    monkeypatch.chdir(tmp_path)  # both servers run from the project's root
    project = make_project(tmp_path, tiny_model)
    root = project.parent
    done = subprocess.run(
        [str(ultrarag.python), "-c", ULTRARAG_BUILD, str(ultrarag.src), tiny_model],
        cwd=root,
        env=ultrarag.env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    npy, faiss_file, bm25 = (
        root / "embedding" / "embedding.npy",
        root / "index" / "index.index",
        root / "index" / "bm25",
    )
    rows = np.load(npy)
    ultrarag_index = faiss.read_index(str(faiss_file))
    _, found = ultrarag_index.search(encode_query(tiny_model, QUERY)[None, :], 5)
    ids = corpus_ids(project)
    ultrarag_answer = [ids[i] for i in found[0]]

    for build, place in ((index_from_embeddings, faiss_file), (bm25_with_config, bm25)):
        before = tree(place)
        with pytest.raises(NeedleError, match="that UltraRAG built, not a needle index: pass overwrite=true"):
            build(project, {})
        assert tree(place) == before

    assert index_from_embeddings(project, {"overwrite": True}) == f"indexed 40 documents (dense) into {faiss_file}"
    assert bm25_with_config(project, {"overwrite": True}) == f"indexed 40 documents (bm25) into {bm25}"
    np.testing.assert_array_equal(np.load(npy), rows)  # UltraRAG's vectors, indexed as they are
    searcher = Searcher(faiss_file, top_k=5, trust=config_trust(load_config(project).spec))
    try:
        assert [doc.id for doc in searcher.search([QUERY])[0]] == ultrarag_answer
    finally:
        searcher.close()
