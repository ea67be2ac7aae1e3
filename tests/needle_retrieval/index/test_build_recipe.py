"""The sentence-transformers embedder's recipe (``components.embedders.embedding_file_recipe``) gives the texts and the
fingerprint the component itself gives, so an ``--embeddings`` build that reads it instead of importing
sentence-transformers writes the same fingerprint, and a later build that encodes reuses the file."""

from pathlib import Path
from typing import Any

import pytest
from haystack import Document

from components.embedders.embedding_file_recipe import TextRecipe
from needle_retrieval.index.embeddings_in import document_template
from needle_retrieval.index.options import DEFAULT_OPTIONS
from needle_retrieval.pipelines import files as pf

DOCUMENTS = [
    Document(id="a", content="first passage", meta={"title": "One", "year": 2001, "empty": None}),
    Document(id="b", content=None, meta={"title": "Two"}),
    Document(id="c", content="third\npassage", meta={}),
]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"prefix": "passage: ", "suffix": " </s>", "normalize_embeddings": True},
    {"meta_fields_to_embed": ["title", "year", "empty"], "embedding_separator": " | ", "truncate_dim": 16},
    {"revision": "main", "encode_chunk_size": 64},
]


def component(entry: dict[str, Any]) -> Any:
    """The embedder a pipeline builds from ENTRY (imports sentence-transformers; loads no model)."""
    return pf.build({"components": {"embedder": entry}, "connections": []}).get_component("embedder")


def entries(tiny_model: str, tmp_path: Path) -> list[dict[str, Any]]:
    """The default template's entry as ``needle index`` sets it, and the component's own ``to_dict`` per OPTIONS."""
    template = document_template(tiny_model, tmp_path / "embeddings.npy", None, DEFAULT_OPTIONS)["components"]
    built = [component({**template["embedder"], "init_parameters": {"model": tiny_model}}).to_dict()]
    built += [
        component({"type": template["embedder"]["type"], "init_parameters": {"model": tiny_model, **o}}).to_dict()
        for o in OPTIONS
    ]
    return [template["embedder"], *built]


def test_the_recipe_gives_the_component_s_texts_and_fingerprint(tiny_model: str, tmp_path: Path) -> None:
    for entry in entries(tiny_model, tmp_path):
        recipe, real = TextRecipe.of(entry), component(entry)
        assert recipe is not None, entry
        texts = recipe.texts_to_embed(DOCUMENTS)
        assert texts == real.texts_to_embed(DOCUMENTS)
        assert recipe.fingerprint(DOCUMENTS, texts) == real.fingerprint(DOCUMENTS, texts)
        assert recipe.fingerprint([], []) == real.fingerprint([], [])
        assert recipe.encode_chunk_size == real.encode_chunk_size


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "components.embedders.openai_document_embedder.OpenAIDocumentEmbedder", "init_parameters": {}},
        {"type": TextRecipe.__module__, "init_parameters": {}},
    ],
)
def test_other_embedders_have_no_recipe(entry: dict[str, Any]) -> None:
    assert TextRecipe.of(entry) is None


def test_a_setting_the_component_would_refuse_leaves_it_to_the_component(tiny_model: str) -> None:
    from components.embedders.embedding_file_recipe import ST_DOCUMENT_EMBEDDER

    for bad in ({"prefix": 3}, {"meta_fields_to_embed": "title"}, {"encode_chunk_size": 0}):
        assert TextRecipe.of({"type": ST_DOCUMENT_EMBEDDER, "init_parameters": {"model": tiny_model, **bad}}) is None
