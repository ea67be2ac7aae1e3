"""`POST /search`'s body is read as UltraRAG's deploy server reads it: its ``SearchRequest`` is a plain pydantic
model under FastAPI (script/deploy_retriever_server.py), so pydantic's lax mode decides what ``top_k`` may be and
unknown fields are ignored. Our model must take the same bodies (inside our limits) to the same values, and its
OpenAPI schema must say exactly which strings are a ``top_k``. ``collection_name`` is ignored unless the index has a
dense part on Milvus, where it must name the collection."""

import random
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi import HTTPException
from hayhooks.server.pipelines.registry import ImmutablePipelineRegistry
from pydantic import BaseModel, ValidationError

from components.checks import MAX_TOP_K
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.pipelines.fusion import DEFAULT_FUSION
from needle_retrieval.serve.pipelines import ServedPipelines
from needle_retrieval.serve.ultrarag import (
    TOP_K_PATTERN,
    UltraRAGSearchRequest,
    check_search_request,
    collection_names,
    dense_first,
)


class UltraRAGSearchRequestAsShipped(BaseModel):
    """UltraRAG's ``SearchRequest`` as its deploy server declares it (HEAD 015e838)."""

    query_list: list[str]
    top_k: int = 5
    query_instruction: str = ""
    collection_name: str = ""


# What a client may put in top_k: numbers, strings pydantic reads as numbers (signs, padding, underscores, zero
# fractions, every kind of white space it strips and some it does not), and values it refuses.
TOP_K_VALUES: list[Any] = [
    5, 0, -1, 10_000, 10_001, 5.0, 2.5, 1e3, True, False, None, [5], {"k": 5},
    "5", " 5 ", "+5", "-5", "05", "0_5", "1_000", "1__0", "_1", "1_", "5.0", "5.00", "5.", ".5", "5.0_0", "5e0",
    "10000", "010_000", "10001", "0", "+0", "-0", "", " ", "five", "0x10", "\u0661", "\uff15", "\u20035\u3000", "\x1c5",
    "\x855", "5\u200b", "\ufeff5", "1 000", "9_999.000",
]  # fmt: skip


def shipped_top_k(value: Any) -> int | None:
    """The top_k UltraRAG's server would search with, or None when its model refuses the body."""
    try:
        return UltraRAGSearchRequestAsShipped.model_validate({"query_list": ["q"], "top_k": value}).top_k
    except ValidationError:
        return None


def our_top_k(value: Any) -> int | None:
    try:
        return UltraRAGSearchRequest.model_validate({"query_list": ["q"], "top_k": value}).top_k
    except ValidationError:
        return None


@pytest.mark.parametrize("value", TOP_K_VALUES, ids=repr)
def test_top_k_is_read_as_ultrarags_model_reads_it_within_our_range(value: Any) -> None:
    shipped = shipped_top_k(value)
    expected = shipped if shipped is not None and 1 <= shipped <= MAX_TOP_K else None
    assert our_top_k(value) == expected


def random_strings(count: int) -> list[str]:
    """Strings near numbers: digits, signs, underscores, points, letters and white space pydantic strips or not."""
    rng = random.Random(33)
    alphabet = "0123456789" * 3 + "_+-.e x\t\n\x0b\x1c\xa0\u2028\u3000\u200b"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(count)]


def test_the_openapi_pattern_is_exactly_the_strings_taken_as_a_top_k() -> None:
    """schemathesis generates top_k strings from the pattern and expects them answered, and strings off it refused."""
    pattern = re.compile(TOP_K_PATTERN)
    strings = [value for value in TOP_K_VALUES if isinstance(value, str)] + random_strings(20_000)
    taken = [value for value in strings if our_top_k(value) is not None]
    assert len(taken) > 1000  # the sample holds many strings pydantic reads as a top_k
    for value in strings:
        assert (pattern.search(value) is not None) == (value in taken), repr(value)


def test_unknown_fields_are_ignored_and_the_rest_kept() -> None:
    body = {"query_list": ["zip"], "top_k": "3", "query_instruction": "Q: ", "filters": {"a": 1}, "stream": True}
    ours = UltraRAGSearchRequest.model_validate(body)
    assert ours.model_dump(exclude={"tenant"}) == UltraRAGSearchRequestAsShipped.model_validate(body).model_dump()
    assert ours.tenant is None  # needle's own field, for a tenant index


@pytest.mark.parametrize(
    "body",
    [{"query_list": "zip"}, {"query_list": ["zip", 3]}, {"query_list": ["zip"], "collection_name": 5}, {"top_k": 3}],
)
def test_what_ultrarags_model_refuses_is_refused(body: dict) -> None:
    with pytest.raises(ValidationError):
        UltraRAGSearchRequestAsShipped.model_validate(body)
    with pytest.raises(ValidationError):
        UltraRAGSearchRequest.model_validate(body)


def served(manifest: IndexManifest, index_dir: Path = Path("/indexes/docs")) -> ServedPipelines:
    """What ``collection_names`` reads of a served index: its directory and manifest (nothing is opened)."""
    return ServedPipelines(ImmutablePipelineRegistry([]), {}, index_dir, manifest, {}, DEFAULT_FUSION)


def manifest(modes: list[str], store: str = "faiss", collection: str | None = None) -> IndexManifest:
    return IndexManifest(corpus="c.jsonl", documents=3, modes=modes, store=store, collection=collection)


@pytest.mark.parametrize("modes", [["dense"], ["dense", "bm25"], ["bm25"]])
def test_any_collection_name_is_taken_on_faiss_or_bm25_alone(modes: list[str]) -> None:
    collections = collection_names(served(manifest(modes)))
    assert collections is None
    for name in ["", "wiki", "docs", "anything at all"]:
        check_search_request(UltraRAGSearchRequest(query_list=["zip"], collection_name=name), collections)


def test_a_milvus_index_answers_to_its_collection_alias_and_name_only() -> None:
    collections = collection_names(served(manifest(["dense", "bm25"], "milvus", "docs_v2_gen000004")))
    for name in ["", "docs", "docs_v2_gen000004", "docs_v2"]:
        check_search_request(UltraRAGSearchRequest(query_list=["zip"], collection_name=name), collections)
    with pytest.raises(HTTPException) as refused:
        check_search_request(UltraRAGSearchRequest(query_list=["zip"], collection_name="wiki"), collections)
    assert refused.value.status_code == 404
    assert "'wiki' is not served here" in str(refused.value.detail)


def test_a_bm25_only_milvus_index_takes_any_collection_name() -> None:
    assert collection_names(served(manifest(["bm25"], "milvus", "docs_gen000001"))) is None


@pytest.mark.parametrize(("modes", "mode"), [(["dense", "bm25"], "dense"), (["dense"], "dense"), (["bm25"], "bm25")])
def test_ultrarags_search_is_dense_when_the_index_has_a_dense_part(modes: list[str], mode: str) -> None:
    assert dense_first(manifest(modes)) == mode
