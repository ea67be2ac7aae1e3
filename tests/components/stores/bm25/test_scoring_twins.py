"""The BM25 formulas live once (``components.stores.bm25.scoring``) in two twins: numpy for the delta segment,
numba for the weight-matrix kernel. They must give every term the very same weight, bit for bit, or a document
would score differently before and after a compaction moves it from the delta segment into the main one."""

import numpy as np
import pytest

from components.stores.bm25.scoring import METHOD_CODES, METHODS, nonoccurrence, term_idf, tfc, tfc_kernel


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("k1", "b", "delta"), [(0.9, 0.4, 0.5), (1.2, 0.75, 1.0), (1.7, 0.0, 0.25)])
def test_numpy_and_numba_term_weights_are_identical(method: str, k1: float, b: float, delta: float) -> None:
    rng = np.random.default_rng(7)
    tf = rng.integers(1, 40, 500).astype(np.float64)
    dl = rng.integers(1, 900, 500).astype(np.float64)
    avgdl = float(dl.mean())
    vectorised = tfc(method, tf, dl, avgdl, k1, b, delta)
    one_by_one = [tfc_kernel(METHOD_CODES[method], t, d, avgdl, k1, b, delta) for t, d in zip(tf, dl, strict=True)]
    assert vectorised.tolist() == one_by_one


def test_every_method_has_one_code_and_unknown_ones_are_refused() -> None:
    assert set(METHODS) == set(METHOD_CODES)
    assert len(set(METHOD_CODES.values())) == len(METHOD_CODES)
    with pytest.raises(ValueError, match="method must be one of lucene, robertson, atire, bm25l, bm25\\+"):
        tfc("bm26", np.ones(1), np.ones(1), 1.0, 0.9, 0.4, 0.5)


def test_idf_is_zero_for_absent_terms_and_only_bm25l_and_plus_weigh_missing_terms() -> None:
    df = np.array([0, 1, 5, 0, 50])
    for method in METHODS:
        weights = term_idf(method, df, 100)
        assert weights[0] == weights[3] == 0.0
        assert (weights[[1, 2]] > 0).all()
        missing = nonoccurrence(method, weights, 0.9, 0.4, 0.5)
        assert (missing != 0).any() == (method in ("bm25l", "bm25+"))
