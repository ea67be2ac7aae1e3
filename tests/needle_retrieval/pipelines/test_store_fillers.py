"""The table that points a search template's document stores at an index generation
(``needle_retrieval.index.templates.STORE_FILLERS``) is keyed on store classes: every store a shipped search template
names has an entry, and every entry names a class that exists, so a renamed or added store is a failing test rather
than a pipeline searching the wrong directory."""

import pytest
from haystack.utils import deserialize_type

from needle_retrieval.index.templates import STORE_FILLERS
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.shipped import names


def stores_of(name: str) -> set[str]:
    """The document store types the shipped pipeline NAME names."""
    params = [spec.get("init_parameters") or {} for spec in pf.load_template(name)["components"].values()]
    return {p["document_store"]["type"] for p in params if "document_store" in p}


@pytest.mark.parametrize("name", [name for name in names() if name.endswith("_search")])
def test_every_store_of_a_search_template_has_a_filler(name: str) -> None:
    assert stores_of(name) <= set(STORE_FILLERS), name


@pytest.mark.parametrize("qualified", sorted(STORE_FILLERS))
def test_every_key_names_a_store_class(qualified: str) -> None:
    store = deserialize_type(qualified)
    assert f"{store.__module__}.{store.__name__}" == qualified
    assert hasattr(store, "count_documents")
