"""UltraRAG's answer shapes, declared once (``components.deploy_protocol``): what ``needle serve`` writes is what
the remote retrievers read, and a malformed answer is named, not half-read."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.deploy_protocol import Passages, passages_json, read_passages

TEXTS = st.lists(st.lists(st.text(max_size=20), max_size=4), max_size=5)


@given(TEXTS)
def test_the_fast_writer_writes_what_the_model_writes_and_the_reader_reads_it_back(texts: list[list[str]]) -> None:
    written = passages_json(texts)
    assert json.loads(written) == json.loads(Passages(ret_psg=texts).model_dump_json())
    assert read_passages(json.loads(written), len(texts)) == texts


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"ret_psg": [["a"], [1]]}, "ret_psg[1][0]"),  # a number where a passage should be
        ({"ret_psg": "a"}, "ret_psg"),
        ({"passages": [["a"]]}, "ret_psg"),
        ([["a"]], "the answer"),
    ],
)
def test_a_malformed_answer_is_refused_naming_where(body: object, named: str) -> None:
    with pytest.raises(ValueError, match=r'expected \{"ret_psg"') as error:
        read_passages(body, 2)
    assert named in str(error.value)


def test_an_answer_with_another_number_of_lists_is_refused() -> None:
    with pytest.raises(ValueError, match="expected 3 ret_psg lists \\(one per query\\), got 2"):
        read_passages({"ret_psg": [["a"], ["b"]]}, 3)
