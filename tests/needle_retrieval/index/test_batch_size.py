"""``IndexOptions(batch_size=N)`` (`needle index --batch-size`): the document embedder of every index template
encodes N texts per batch, in encode calls of at least one batch; no manifest records it."""

import pytest

from needle_retrieval.index.options import IndexOptions, set_batch_size
from needle_retrieval.pipelines import files as pf


def embedder_params(template: str, options: IndexOptions) -> dict[str, object]:
    """The embedder's init parameters of TEMPLATE once OPTIONS are applied."""
    data = pf.load_template(template)
    options.apply(data, writes_dense=True)
    params: dict[str, object] = data["components"]["embedder"]["init_parameters"]
    return params


@pytest.mark.parametrize("template", ["dense_index", "milvus_index"])
def test_the_embedder_gets_the_batch_size(template: str) -> None:
    default = embedder_params(template, IndexOptions())
    params = embedder_params(template, IndexOptions(batch_size=7))
    assert params["batch_size"] == 7
    assert params["encode_chunk_size"] == default["encode_chunk_size"] == 512
    assert {k: v for k, v in params.items() if k != "batch_size"} == {
        k: v for k, v in default.items() if k != "batch_size"
    }


def test_a_batch_larger_than_an_encode_call_widens_the_call() -> None:
    params = embedder_params("dense_index", IndexOptions(batch_size=2048))
    assert (params["batch_size"], params["encode_chunk_size"]) == (2048, 2048)


def test_the_image_template_and_a_template_without_embedder() -> None:
    images = pf.load_template("image_index")
    set_batch_size(images, 5)
    assert images["components"]["embedder"]["init_parameters"]["batch_size"] == 5
    bm25 = pf.load_template("bm25_index")
    before = repr(bm25)
    IndexOptions(batch_size=5).apply(bm25, writes_dense=False)
    set_batch_size(bm25, 5)
    assert repr(bm25) == before


def test_the_manifest_records_no_batch_size() -> None:
    assert IndexOptions(batch_size=7).recorded() is None
