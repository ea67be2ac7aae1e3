"""LocalCrossEncoderRanker on real (tiny, self-built) models: a random-head MiniLM cross-encoder (BERT family) and a
random XLM-RoBERTa classifier with 514 position embeddings (the bge-reranker family's layout).

Model directories are built under tests/support/model_home.py's MODELS (the user's cache): the ranker refuses
model dirs under /tmp (mxRAG's rule), so pytest's tmp_path cannot hold them.
"""

import logging
import shutil
import string
from pathlib import Path

import numpy as np
import pytest
import torch
from haystack import Document, Pipeline
from haystack.utils import ComponentDevice

import components  # noqa: F401 - registers our modules with Haystack's deserialization allowlist
from components.rankers import LocalCrossEncoderRanker, create_reranker
from tests.support.model_home import MODELS
from tests.support.once import exclusive

QUERY = "how do cats purr"
TEXTS = [
    "Cats purr by vibrating the muscles of the larynx.",
    "The stock market fell sharply on Tuesday after the announcement of new tariffs on imported steel.",
    "purr",
    "Domestic cats communicate with meows, purrs, trills, hisses and growls; purring is produced " * 3,
    "A recipe for bread.",
]


def _publish(build_dir: Path, target: Path) -> Path:
    """Make a freshly built model dir safe to load (no group/other write) and move it into place atomically."""
    for path in [build_dir, *build_dir.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o022)
    if not target.exists():
        build_dir.rename(target)
    else:
        shutil.rmtree(build_dir)
    return target


@pytest.fixture(scope="session")
def minilm_cross_encoder(minilm_path: str) -> str:
    """
    all-MiniLM-L6-v2 with a seeded random one-logit head, saved as safetensors.

    The head is drawn with std 1 (not transformers' 0.02) so that different texts get clearly different scores:
    a test of score order can then tell a swap from rounding noise.
    """
    target = MODELS / "minilm-cross-encoder"
    with exclusive(MODELS, target.name):  # pytest-xdist workers: one builds it, the others wait and reuse it
        if not (target / "model.safetensors").exists():
            _build_minilm_cross_encoder(minilm_path, target)
    return str(target)


def _build_minilm_cross_encoder(minilm_path: str, target: Path) -> None:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    build = MODELS / f"{target.name}.building"
    shutil.rmtree(build, ignore_errors=True)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(minilm_path, num_labels=1)
    torch.nn.init.normal_(model.classifier.weight, std=1.0)
    model.save_pretrained(str(build))
    AutoTokenizer.from_pretrained(minilm_path).save_pretrained(str(build))
    _publish(build, target)


def build_tiny_xlm_roberta(name: str, num_labels: int = 1) -> str:
    """
    A random 2-layer XLM-RoBERTa classifier with max_position_embeddings=514 and pad_token_id=1, like bge-reranker.

    Its tokenizer is a real XLMRobertaTokenizer built offline from a small Unigram vocabulary (transformers 5
    backs it with `tokenizers`, so no sentencepiece model file is needed). The tokenizer sets no
    model_max_length, so the ranker must derive the 512-token limit from the position table.
    """
    target = MODELS / name
    with exclusive(MODELS, name):  # pytest-xdist workers: one builds it, the others wait and reuse it
        if not (target / "model.safetensors").exists():
            _build_tiny_xlm_roberta(target, num_labels)
    return str(target)


def _build_tiny_xlm_roberta(target: Path, num_labels: int) -> None:
    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification, XLMRobertaTokenizer

    build = MODELS / f"{target.name}.building"
    shutil.rmtree(build, ignore_errors=True)
    specials = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("<mask>", 0.0), ("▁", -2.0)]
    pieces = [(c, -3.0) for c in string.ascii_lowercase + string.digits + string.punctuation]
    tokenizer = XLMRobertaTokenizer(vocab=specials + pieces + [("▁" + c, -2.5) for c in string.ascii_lowercase])
    config = XLMRobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=514,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        num_labels=num_labels,
    )
    torch.manual_seed(0)
    XLMRobertaForSequenceClassification(config).save_pretrained(str(build))
    tokenizer.save_pretrained(str(build))
    _publish(build, target)


@pytest.fixture(scope="session")
def xlm_roberta_reranker() -> str:
    return build_tiny_xlm_roberta("tiny-xlm-roberta-514")


@pytest.fixture(scope="module")
def minilm_ranker(minilm_cross_encoder: str) -> LocalCrossEncoderRanker:
    ranker = LocalCrossEncoderRanker(minilm_cross_encoder, use_fp16=False, batch_size=2)
    ranker.warm_up()
    return ranker


def test_scores_come_back_in_input_order_equal_to_scoring_each_pair_alone(minilm_ranker):
    scores = minilm_ranker.rerank(QUERY, TEXTS, batch_size=2)
    alone = np.array([minilm_ranker.rerank(QUERY, [text])[0] for text in TEXTS])
    assert scores.shape == (len(TEXTS),)
    assert scores.dtype == np.float32
    assert np.diff(np.sort(alone)).min() > 1e-3, "scores must differ, or a mix-up of order would go unseen"
    np.testing.assert_allclose(scores, alone, atol=1e-5)


def test_batch_size_does_not_change_scores(minilm_ranker):
    base = minilm_ranker.rerank(QUERY, TEXTS, batch_size=1)
    for batch_size in (3, 32):
        np.testing.assert_allclose(minilm_ranker.rerank(QUERY, TEXTS, batch_size=batch_size), base, atol=1e-5)


def test_sigmoid_activation_maps_the_raw_logits(minilm_cross_encoder, minilm_ranker):
    sigmoid = LocalCrossEncoderRanker(minilm_cross_encoder, use_fp16=False, activation="sigmoid")
    raw = minilm_ranker.rerank(QUERY, TEXTS)
    np.testing.assert_allclose(sigmoid.rerank(QUERY, TEXTS), 1 / (1 + np.exp(-raw)), atol=1e-6)
    assert raw.min() < 0 or raw.max() > 1 or not np.allclose(raw, 1 / (1 + np.exp(-raw)))


def test_run_returns_new_documents_best_first_and_leaves_inputs_alone(minilm_ranker):
    docs = [Document(content=text, meta={"n": i}) for i, text in enumerate(TEXTS)]
    result = minilm_ranker.run(query=QUERY, documents=[*docs, docs[0]], top_k=3)["documents"]
    expected = np.argsort(-minilm_ranker.rerank(QUERY, TEXTS), kind="stable")[:3]
    assert [d.meta["n"] for d in result] == list(expected)
    assert [d.score for d in result] == sorted((d.score for d in result), reverse=True)
    assert all(d.score is None for d in docs), "input documents must not be mutated"
    assert minilm_ranker.run(query=QUERY, documents=[])["documents"] == []


def test_default_top_k_and_duplicate_ids_scored_once(minilm_ranker):
    docs = [Document(content=text) for text in TEXTS] * 3
    result = minilm_ranker.run(query=QUERY, documents=docs)["documents"]
    assert len(result) == len(TEXTS)
    assert len({d.id for d in result}) == len(TEXTS)


def test_document_without_text_is_an_error_naming_it(minilm_ranker):
    docs = [Document(content="a cat"), Document(id="img-1", blob=None, content=None)]
    with pytest.raises(ValueError, match=r"documents\[1\] \(id=img-1\) has no text content"):
        minilm_ranker.run(query=QUERY, documents=docs)


def test_fp16_on_cpu_is_ignored_with_a_warning(minilm_cross_encoder, minilm_ranker, caplog):
    ranker = LocalCrossEncoderRanker(minilm_cross_encoder, use_fp16=True, device=ComponentDevice.from_str("cpu"))
    with caplog.at_level(logging.WARNING):
        ranker.warm_up()
    assert "use_fp16 is ignored on cpu" in caplog.text
    assert next(ranker._model.parameters()).dtype == torch.float32
    np.testing.assert_allclose(ranker.rerank(QUERY, TEXTS), minilm_ranker.rerank(QUERY, TEXTS), atol=1e-6)


def test_bert_limit_comes_from_its_512_positions(minilm_ranker):
    assert minilm_ranker.max_tokens == 512
    long_text = "purring cats " * 800
    assert np.isfinite(minilm_ranker.rerank(QUERY, [long_text, "cat"])).all()


def test_roberta_family_keeps_two_positions_for_the_padding_offset(xlm_roberta_reranker):
    ranker = LocalCrossEncoderRanker(xlm_roberta_reranker, use_fp16=False)
    ranker.warm_up()
    assert ranker._tokenizer.model_max_length > 10**6, "the tokenizer sets no limit: the config must give it"
    assert ranker._model.config.max_position_embeddings == 514
    assert ranker.max_tokens == 512
    long_text = "word " * 700  # far over 514 tokens: without the offset the position lookup goes out of range
    scores = ranker.rerank("query words", [long_text, "short"])
    assert np.isfinite(scores).all()
    capped = LocalCrossEncoderRanker(xlm_roberta_reranker, use_fp16=False, max_length=64)
    capped.warm_up()
    assert capped.max_tokens == 64


def test_a_model_with_more_than_one_label_is_refused():
    ranker = LocalCrossEncoderRanker(build_tiny_xlm_roberta("tiny-xlm-roberta-2-labels", num_labels=2))
    with pytest.raises(ValueError, match="num_labels=2"):
        ranker.warm_up()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dev_id": 64}, r"dev_id must be an integer in \[0, 63\]"),
        ({"dev_id": -1}, r"dev_id must be an integer in \[0, 63\]"),
        ({"batch_size": 0}, r"batch_size must be an integer in \[1, 1024\]"),
        ({"batch_size": 1025}, r"batch_size must be an integer in \[1, 1024\]"),
        ({"top_k": 10001}, r"top_k must be an integer in \[1, 10000\]"),
        ({"activation": "softmax"}, "activation must be one of"),
        ({"use_fp16": "yes"}, "use_fp16 must be a bool"),
        ({"max_length": 1}, r"max_length must be an integer in \[2, 1000000\]"),
        ({"device": "cuda:0"}, "device must be a ComponentDevice"),
    ],
)
def test_bad_init_parameters_are_refused_naming_the_range(minilm_cross_encoder, kwargs, message):
    with pytest.raises(ValueError, match=message):
        LocalCrossEncoderRanker(minilm_cross_encoder, **kwargs)


def test_to_dict_from_dict_round_trip(minilm_cross_encoder):
    ranker = LocalCrossEncoderRanker(
        minilm_cross_encoder, top_k=3, batch_size=8, device=ComponentDevice.from_str("cpu"), activation="sigmoid"
    )
    data = ranker.to_dict()
    assert data["type"] == "components.rankers.local_cross_encoder_ranker.LocalCrossEncoderRanker"
    assert data["init_parameters"]["device"] == {"type": "single", "device": "cpu"}
    restored = LocalCrossEncoderRanker.from_dict(data)
    assert restored.to_dict() == data
    assert restored.device == ComponentDevice.from_str("cpu")


def test_yaml_pipeline_round_trip_then_ranks(xlm_roberta_reranker):
    pipeline = Pipeline()
    pipeline.add_component("ranker", LocalCrossEncoderRanker(xlm_roberta_reranker, top_k=2, use_fp16=False))
    loaded = Pipeline.loads(pipeline.dumps())
    assert loaded.dumps() == pipeline.dumps()
    docs = [Document(content="alpha"), Document(content="beta gamma"), Document(content="delta")]
    out = loaded.run({"ranker": {"query": "beta", "documents": docs}})["ranker"]["documents"]
    direct = pipeline.run({"ranker": {"query": "beta", "documents": docs}})["ranker"]["documents"]
    assert len(out) == 2
    assert [d.id for d in out] == [d.id for d in direct]


def test_factory_builds_a_local_ranker_with_mxrag_names(minilm_cross_encoder):
    ranker = create_reranker("local_reranker", model_path=minilm_cross_encoder, dev_id=0, k=4, use_fp16=False)
    assert isinstance(ranker, LocalCrossEncoderRanker)
    assert ranker.top_k == 4
