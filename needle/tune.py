"""`needle tune DATASET [--split train]`: fit the hybrid fusion on a training split and install it in the index.

Steps: build or refresh the eval index of the dataset's corpus (``needle.eval.command``, the one `needle eval`
searches), fetch every training query's dense and BM25 top 100 once, search the mix curve and the RRF k in numpy
(``needle.fusion_fit``), write ``DIR/fusion.json`` under the directory's writer lock, then publish a new
generation so its ``hybrid_search.yaml`` carries the values (the embeddings are carried over, not encoded
again). `needle search`, `needle eval` and `needle serve` on DIR read fusion.json from then on.

The fit never reads another split's judgements. Afterwards, when the dataset has a test split and it was not
the one fitted, tune scores defaults and tuned values on it, labelled "test, not fitted on".
"""

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.joiners.rrf_batch_joiner import RRF_K
from needle.fusion import Fusion, Mix, write_fusion
from needle.index_dir import DEFAULT_MODEL
from needle.index_generations import take_lock

if TYPE_CHECKING:
    from needle.eval import BeirDataset
    from needle.fusion_fit import Candidates

DEPTH = 100  # candidates per side, as the hybrid pipelines retrieve
BATCH = 64  # queries per search call
HELD_OUT = "test"  # the split `needle eval` scores by default


def add_parser(sub: Any) -> None:
    """The `tune` sub-command of the `needle` parser."""
    tu = sub.add_parser("tune", help="fit the hybrid fusion (mix curve, RRF k) on a BEIR training split")
    tu.add_argument("dataset_dir", help="BEIR dir: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    tu.add_argument("--split", default="train", help="qrels split to fit on (default train)")
    tu.add_argument("--model", default=DEFAULT_MODEL, help="embedding model of the dense side")
    tu.add_argument("--index-dir", help="index of the corpus to build or reuse and tune (default: `needle eval`'s)")
    tu.add_argument("--json", help="write the fitted values and the scores to this file (schema needle.tune/1)")
    tu.set_defaults(func=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> None:
    """Fit, install and report; see the module docstring."""
    report = tune(Path(args.dataset_dir), split=args.split, model=args.model, index_dir=args.index_dir)
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def tune(dataset_dir: Path, *, split: str, model: str, index_dir: str | Path | None) -> dict[str, Any]:
    """Fit on SPLIT, install into the index, score the held-out test split; returns the report."""
    from needle.eval import load_beir
    from needle.eval.command import default_index_dir, index_for_eval
    from needle.fusion_fit import fit_mix, fit_rrf
    from needle.indexing import build_index

    if split == HELD_OUT:
        print(f"needle: warning: fitting on split {split!r}, the one `needle eval` scores by default", file=sys.stderr)
    dataset = load_beir(dataset_dir, split)
    out = Path(index_dir) if index_dir else default_index_dir(dataset.corpus_path)
    index_for_eval(dataset.corpus_path, out, "hybrid", model)
    train = fetch(out, dataset)
    mix, mix_ndcg = fit_mix(train)
    k, rrf_ndcg = fit_rrf(train)
    fitted_on = {"dataset": dataset.name, "split": split, "queries": len(dataset.queries), "model": model}
    fusion = Fusion(mix, k, {**fitted_on, "ndcg@10": {"mix": mix_ndcg, "rrf": rrf_ndcg}})
    with take_lock(out):
        path = write_fusion(out, fusion)
    # A new generation whose search pipelines carry the values (a live generation is never rewritten).
    manifest = build_index(dataset.corpus_path, out, model=model, overwrite=False, dense=True, bm25=True)
    report: dict[str, Any] = {"schema": "needle.tune/1", "fusion_file": str(path), "generation": manifest.generation}
    report["fusion"] = fusion.as_json()
    report["train"] = scores(train, mix, k, dataset.qrels, list(dataset.queries))
    report["test"] = held_out(dataset_dir, split, out, mix, k)
    return report


def fetch(index_dir: Path, dataset: "BeirDataset") -> "Candidates":
    """Every query's dense and BM25 top 100 from the index's own pipelines, laid out for the fit."""
    from needle.fusion_fit import candidates
    from needle.search import Searcher

    texts = list(dataset.queries.values())
    sides = []
    for mode in ("dense", "bm25"):
        searcher = Searcher(index_dir, mode=mode, top_k=DEPTH)
        try:
            sides.append([docs for i in range(0, len(texts), BATCH) for docs in searcher.search(texts[i : i + BATCH])])
        finally:
            searcher.close()
    return candidates(texts, sides[0], sides[1], [dataset.qrels[q] for q in dataset.queries])


def scores(c: "Candidates", mix: Mix, k: int, qrels: dict[str, dict[str, int]], ids: list[str]) -> dict[str, Any]:
    """nDCG@10 of default and tuned mix and RRF on these candidates, scored by ``needle.eval.evaluate_run``."""
    from needle.eval import evaluate_run, run_from_rankings
    from needle.fusion_fit import mix_scores, rankings, rrf_scores

    def score(ranked: list[list[str]]) -> float:
        return evaluate_run(run_from_rankings(dict(zip(ids, ranked, strict=True))), qrels).metrics["ndcg@10"]

    return {
        "queries": len(ids),
        "mix": {
            "default": score(rankings(c, mix_scores(c, Mix()), DEPTH)),
            "tuned": score(rankings(c, mix_scores(c, mix), DEPTH)),
        },
        "rrf": {
            "default": score(rankings(c, rrf_scores(c, RRF_K), DEPTH, c.rrf_position)),
            "tuned": score(rankings(c, rrf_scores(c, k), DEPTH, c.rrf_position)),
        },
    }


def held_out(dataset_dir: Path, split: str, index_dir: Path, mix: Mix, k: int) -> dict[str, Any] | None:
    """Scores on the test split when there is one and it was not fitted on; a broken one is a warning only
    (the fit is already installed and never read it)."""
    from needle.eval import DatasetError, load_beir

    if split == HELD_OUT or not (Path(dataset_dir) / "qrels" / f"{HELD_OUT}.tsv").is_file():
        return None
    try:
        test = load_beir(dataset_dir, HELD_OUT)
    except DatasetError as error:
        print(f"needle: warning: not scored on the {HELD_OUT} split: {error}", file=sys.stderr)
        return None
    return scores(fetch(index_dir, test), mix, k, test.qrels, list(test.queries))


def format_report(report: dict[str, Any]) -> str:
    """The report for people: fitted values, train fit, and the held-out test figures, clearly labelled."""
    fusion, fitted = report["fusion"], report["fusion"]["fitted_on"]
    mix = ", ".join(f"{key} {value:g}" for key, value in fusion["mix"].items())
    lines = [
        f"tuned on {fitted['dataset']} {fitted['split']} ({fitted['queries']} queries), model {fitted['model']}",
        f"  mix: {mix}",
        f"  rrf: k {fusion['rrf']['k']}",
        f"wrote {report['fusion_file']}; generation {report['generation']} carries it",
    ]
    for label, part in ((f"{fitted['split']} (fitted on)", report["train"]), ("test, not fitted on", report["test"])):
        if part is None:
            continue
        lines.append(f"nDCG@10 on {label}, {part['queries']} queries:")
        lines.append(f"  mix  default {part['mix']['default']:.4f}  tuned {part['mix']['tuned']:.4f}")
        rrf = part["rrf"]
        lines.append(f"  rrf  k={RRF_K} {rrf['default']:.4f}  k={fusion['rrf']['k']} {rrf['tuned']:.4f}")
    return "\n".join(lines)
