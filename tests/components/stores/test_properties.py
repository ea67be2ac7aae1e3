"""Property: after any sequence of writes and deletes, some of them failing, a store equals a plain dict model."""

import tempfile
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.stores import KINDS, doc, make_store, state

IDS = st.sampled_from(["a", "b", "c", "d"])
WORDS = st.lists(st.sampled_from(["planet", "star", "moon", "ice", "rock"]), min_size=1, max_size=4).map(" ".join)
DEFECTS = st.sampled_from([None, None, None, "surrogate", "unserializable"])
WRITE = st.tuples(
    st.just("write"),
    st.lists(st.tuples(IDS, WORDS, DEFECTS), min_size=1, max_size=3),
    st.sampled_from([DuplicatePolicy.NONE, DuplicatePolicy.SKIP, DuplicatePolicy.OVERWRITE]),
)
DELETE = st.tuples(st.just("delete"), st.lists(IDS, max_size=3), st.just(None))
Model = dict[str, tuple[str, dict[str, Any]]]


def _document(doc_id: str, words: str, defect: str | None) -> Document:
    """A document, made unsavable by ``defect``."""
    if defect == "surrogate":
        return Document(id=doc_id, content=words + "\ud800", embedding=[1.0, 1.0, 1.0])
    return doc(doc_id, words, n=object() if defect == "unserializable" else len(words))


def _expected(model: Model, items: list[tuple[str, str, str | None]], policy: DuplicatePolicy) -> Model | None:
    """The model after a write, or None when the write must fail and change nothing."""
    if any(defect for _, _, defect in items):
        return None
    ids = [doc_id for doc_id, _, _ in items]
    if policy == DuplicatePolicy.NONE and (len(set(ids)) < len(ids) or set(ids) & set(model)):
        return None
    after = dict(model)
    for doc_id, words, _ in items:
        if policy == DuplicatePolicy.SKIP and doc_id in after:  # stored, or earlier in this batch: the first wins
            continue
        after[doc_id] = (words, {"n": len(words)})
    return after


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.one_of(WRITE, DELETE), min_size=1, max_size=6))
def test_a_saved_store_always_equals_the_model(kind: str, steps: list[tuple[str, Any, Any]]) -> None:
    """Each step changes the store exactly as the model, or fails and changes nothing; a reload agrees."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        store, model = make_store(kind, path), {}
        for action, payload, policy in steps:
            if action == "delete":
                store.delete_documents(payload)
                model = {k: v for k, v in model.items() if k not in payload}
            else:
                expected = _expected(model, payload, policy)
                documents = [_document(*item) for item in payload]
                if expected is None:
                    with pytest.raises((ValueError, DuplicateDocumentError)):
                        store.write_documents(documents, policy=policy)
                else:
                    store.write_documents(documents, policy=policy)
                    model = expected
            assert state(store) == model
        assert state(make_store(kind, path)) == model
