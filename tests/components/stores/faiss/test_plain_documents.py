"""``encode_fields`` writes, character for character, the JSON text ``encode_document`` writes for the Document the
fields stand for, whatever the fields hold (its pieces are encoded apart, by an encoder built once); and what JSON
cannot hold is refused the same way, naming the document and its field."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.stores.document_checks import encode_document
from components.stores.faiss.plain_documents import encode_fields
from components.stores.hits import text_document

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
)
METAS = st.dictionaries(st.text() | st.integers() | st.booleans(), VALUES, max_size=4)
FIELDS = st.tuples(st.text(min_size=1), st.none() | st.text(), METAS)


@settings(max_examples=300, deadline=None)
@given(st.lists(FIELDS, max_size=5))
def test_the_text_is_encode_documents(fields: list[tuple[str, str | None, dict[Any, Any]]]) -> None:
    ids, contents, metas = ([f[i] for f in fields] for i in range(3))
    expected = [encode_document(text_document(*f), position) for position, f in enumerate(fields)]
    assert encode_fields(ids, contents, metas) == expected


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes"])
def test_a_value_json_cannot_hold_is_refused_naming_the_document(value: Any) -> None:
    with pytest.raises(ValueError, match=r"documents\[1\] \(id 'b'\): field 'meta.k' cannot be stored as JSON"):
        encode_fields(["a", "b"], ["x", "y"], [{}, {"k": value}])


def test_a_meta_that_holds_itself_is_refused_naming_the_document() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match=r"documents\[0\] \(id 'a'\): field 'meta.self' cannot be stored as JSON"):
        encode_fields(["a"], [None], [cyclic])
