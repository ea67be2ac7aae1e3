"""`needle tune DATASET [--split train]`: fit the hybrid fusion on a training split and install it in the index.

Steps: reuse, or build when it does not fit, the eval index of the dataset's corpus (``needle_retrieval.eval.command``,
the one `needle eval` searches), fetch every training query's dense and BM25 top 100 once, fit the mix curve and the
RRF k in numpy on four fifths of the training queries and check each on the other fifth (``needle_retrieval.tune.fit``:
a value that does not beat the default there by ``MARGIN`` is not installed, the default is recorded in its place
and the report says so), write ``DIR/fusion.json`` and publish one new generation whose ``hybrid_search.yaml``
carries the values, both under the directory's writer lock (``needle_retrieval.tune.publish``: the live generation's
parts are linked into it, nothing is encoded, tokenised or saved again). `needle search`, `needle eval` and `needle
serve` on DIR read fusion.json from then on, and name it ("tuned") in what they report.

The index is searched as it is when it fits the corpus and the model, the check `needle eval` makes before it
reports ``index build: reused`` (``needle_retrieval.eval.index_reuse.prepare_index``); only one that does not fit is
built first, and the report says which.

``--out FILE`` writes the fit to FILE only and leaves the index's fusion as it is: `--fusion FILE` applies it to
one search, eval or serve (of this index or another). ``--reset`` undoes a tune: it removes ``DIR/fusion.json``
and publishes a generation whose pipelines carry the defaults again, the same way.

The fit never reads another split's judgements. Afterwards, when the dataset has a test split and it was not
the one fitted, tune scores defaults and tuned values on it, labelled "test, not fitted on".
"""

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.joiners.rrf_batch_joiner import RRF_K
from needle_retrieval.defaults import RUN_DEPTH
from needle_retrieval.errors import NeedleError
from needle_retrieval.pipelines.fusion import DEFAULT_FUSION, Fusion, Mix, fusion_path, write_fusion_file

if TYPE_CHECKING:
    from needle_retrieval.eval import BeirDataset
    from needle_retrieval.tune.fit import CandidateMatrices

TEST_SPLIT = "test"  # the split `needle eval` scores by default


def cmd_tune(args: argparse.Namespace) -> None:
    """Fit, install (or write to --out) and report, or --reset; see the module docstring."""
    if args.reset:
        if args.json:
            raise NeedleError("--json: `needle tune --reset` fits nothing and writes no report; drop --json")
        print(reset(Path(args.dataset_dir), index_dir=args.index_dir))
        return
    out = Path(args.out) if args.out else None
    report = tune(Path(args.dataset_dir), split=args.split, model=args.model, index_dir=args.index_dir, out=out)
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def tune(
    dataset_dir: Path, *, split: str, model: str, index_dir: str | Path | None, out: Path | None = None
) -> dict[str, Any]:
    """Fit on SPLIT, install into the index (or write OUT only), score the test split; returns the report."""
    from needle_retrieval.eval import load_beir
    from needle_retrieval.eval.command import default_index_dir
    from needle_retrieval.eval.index_reuse import prepare_index
    from needle_retrieval.tune.publish import install

    if split == TEST_SPLIT:
        print(f"needle: warning: fitting on split {split!r}, the one `needle eval` scores by default", file=sys.stderr)
    dataset = load_beir(dataset_dir, split)
    index = Path(index_dir) if index_dir else default_index_dir(dataset.corpus_path)
    refuse_sparse_fusion(index)
    reused, build_seconds = prepare_index(dataset.corpus_path, index, "hybrid", model)
    train = fetch(index, dataset)
    fusion = fit(train, {"dataset": dataset.name, "split": split, "queries": len(dataset.queries), "model": model})
    report: dict[str, Any] = {"schema": "needle.tune/1"}
    report["index"] = {"dir": str(index), "reused": reused, "build_seconds": build_seconds}
    if out is None:
        report.update(fusion_file=str(fusion_path(index)), generation=install(index, fusion)[1])
    else:
        report.update(fusion_file=str(write_fusion_file(out, fusion)), generation=None)
    report["fusion"] = fusion.as_json()
    report["train"] = scores(train, fusion.mix, fusion.rrf_k, dataset.qrels, list(dataset.queries))
    report["test"] = scores_on_test(dataset_dir, split, index, fusion.mix, fusion.rrf_k)
    return report


def refuse_sparse_fusion(index: Path) -> None:
    """Refuse an index whose hybrid fuses dense with a learned sparse part (``needle index --sparse``): the fit
    fetches dense and BM25 candidates, so its values would be installed for a fusion they were not fitted on, and a
    rebuild without the sparse part would replace the user's index.

    :raises NeedleError: one line naming the index directory.
    """
    from needle_retrieval.eval.index_reuse import live_manifest

    manifest = live_manifest(index)
    if manifest is not None and manifest.fused_side == "sparse":
        raise NeedleError(
            f"--index-dir {index}: its hybrid fuses dense with a learned sparse part (needle index --sparse); "
            "needle tune fits dense + BM25 only: give another --index-dir"
        )


def fit(train: "CandidateMatrices", fitted_on: dict[str, Any]) -> Fusion:
    """The guarded fit (``needle_retrieval.tune.fit``): what is installed, its nDCG@10 on the whole training split, and
    the held-out check of each value, in ``fitted_on``."""
    from needle_retrieval.tune.fit import HOLD_OUT_EVERY, MARGIN, guarded_mix, guarded_rrf, mix_scores, ndcg, rrf_ndcg

    mix, mix_check = guarded_mix(train)
    k, rrf_check = guarded_rrf(train)
    held = {"every": HOLD_OUT_EVERY, "margin": MARGIN, "mix": mix_check.as_json(), "rrf": rrf_check.as_json()}
    fitted = {"ndcg@10": {"mix": ndcg(train, mix_scores(train, mix)), "rrf": rrf_ndcg(train, k)}, "held_out": held}
    return Fusion(mix, k, {**fitted_on, **fitted})


def reset(dataset_dir: Path, *, index_dir: str | Path | None) -> str:
    """Undo a tune of the index of DATASET_DIR's corpus: remove DIR/fusion.json and publish a generation with the
    default fusion (``needle_retrieval.tune.publish.install``); returns what it did.

    :raises NeedleError: no index to reset (checked before anything is removed).
    """
    from needle_retrieval.eval.command import default_index_dir
    from needle_retrieval.tune.publish import install

    index = Path(index_dir) if index_dir else default_index_dir(Path(dataset_dir) / "corpus.jsonl")
    removed, generation = install(index, None)
    found = "removed" if removed else "found no"
    return f"{found} {fusion_path(index)}; generation {generation} carries the fusion {DEFAULT_FUSION.describe()}"


def fetch(index_dir: Path, dataset: "BeirDataset") -> "CandidateMatrices":
    """Every query's dense and BM25 top 100 from the index's own pipelines, laid out for the fit."""
    from needle_retrieval.search.runs import search_in_batches
    from needle_retrieval.search.searcher import Searcher
    from needle_retrieval.tune.fit import candidate_matrices

    texts = list(dataset.queries.values())
    sides = []
    for mode in ("dense", "bm25"):
        searcher = Searcher(index_dir, mode=mode, top_k=RUN_DEPTH)
        try:
            sides.append(list(search_in_batches(searcher, texts)))
        finally:
            searcher.close()
    return candidate_matrices(texts, sides[0], sides[1], [dataset.qrels[q] for q in dataset.queries])


def scores(
    c: "CandidateMatrices", mix: Mix, k: int, qrels: dict[str, dict[str, int]], ids: list[str]
) -> dict[str, Any]:
    """nDCG@10 of default and tuned mix and RRF on these candidates, scored by
    ``needle_retrieval.eval.evaluate_run``."""
    from needle_retrieval.eval import evaluate_run, run_from_rankings
    from needle_retrieval.tune.fit import mix_scores, rankings, rrf_scores

    def score(ranked: list[list[str]]) -> float:
        return evaluate_run(run_from_rankings(dict(zip(ids, ranked, strict=True))), qrels).metrics["ndcg@10"]

    return {
        "queries": len(ids),
        "mix": {
            "default": score(rankings(c, mix_scores(c, Mix()), RUN_DEPTH)),
            "tuned": score(rankings(c, mix_scores(c, mix), RUN_DEPTH)),
        },
        "rrf": {
            "default": score(rankings(c, rrf_scores(c, RRF_K), RUN_DEPTH, c.rrf_position)),
            "tuned": score(rankings(c, rrf_scores(c, k), RUN_DEPTH, c.rrf_position)),
        },
    }


def scores_on_test(dataset_dir: Path, split: str, index_dir: Path, mix: Mix, k: int) -> dict[str, Any] | None:
    """Scores on the test split when there is one and it was not fitted on; a broken one is a warning only
    (the fit is already written and never read it)."""
    from needle_retrieval.eval import DatasetError, load_beir

    if split == TEST_SPLIT or not (Path(dataset_dir) / "qrels" / f"{TEST_SPLIT}.tsv").is_file():
        return None
    try:
        test = load_beir(dataset_dir, TEST_SPLIT)
    except DatasetError as error:
        print(f"needle: warning: not scored on the {TEST_SPLIT} split: {error}", file=sys.stderr)
        return None
    return scores(fetch(index_dir, test), mix, k, test.qrels, list(test.queries))


def format_report(report: dict[str, Any]) -> str:
    """The report for people: installed values, the held-out check, the train fit and the test figures."""
    fusion, fitted = report["fusion"], report["fusion"]["fitted_on"]
    mix = ", ".join(f"{key} {value:g}" for key, value in fusion["mix"].items())
    index = report["index"]
    built = "reused as it was" if index["reused"] else f"built in {index['build_seconds']:.1f} s"
    lines = [
        f"index {index['dir']}: {built}",
        f"tuned on {fitted['dataset']} {fitted['split']} ({fitted['queries']} queries), model {fitted['model']}",
        f"  mix: {mix}",
        f"  rrf: k {fusion['rrf']['k']}",
        *format_check(fitted["held_out"], fitted["split"], fitted["queries"]),
    ]
    if report["generation"] is None:
        lines.append(f"wrote {report['fusion_file']} only (the index is unchanged): apply it with --fusion FILE")
    else:
        lines.append(f"wrote {report['fusion_file']}; generation {report['generation']} carries it")
    for label, part in ((f"{fitted['split']} (fitted on)", report["train"]), ("test, not fitted on", report["test"])):
        if part is None:
            continue
        lines.append(f"nDCG@10 on {label}, {part['queries']} queries:")
        lines.append(f"  mix  default {part['mix']['default']:.4f}  tuned {part['mix']['tuned']:.4f}")
        rrf = part["rrf"]
        lines.append(f"  rrf  k={RRF_K} {rrf['default']:.4f}  k={fusion['rrf']['k']} {rrf['tuned']:.4f}")
    return "\n".join(lines)


def format_check(held: dict[str, Any], split: str, queries: int) -> list[str]:
    """The held-out check of each value: fitted on the other queries, kept or replaced by the default."""
    count = held["mix"]["queries"]
    if count == 0:
        return [f"  too few {split} queries ({queries}) to hold any out: the defaults are recorded"]
    lines = [f"checked on every {held['every']}th {split} query ({count}), fitted on the other {queries - count}:"]
    for name, default in (("mix", "the default curve"), ("rrf", f"k {RRF_K}")):
        part = held[name]
        value = part["value"] if name == "rrf" else "/".join(f"{v:g}" for v in part["value"].values())
        score = part["ndcg@10"]
        verdict = "kept" if part["kept"] else f"not kept (gain under {held['margin']}): {default} recorded"
        lines.append(f"  {name}  {value}: {score['fitted']:.4f} vs default {score['default']:.4f}, {verdict}")
    return lines
