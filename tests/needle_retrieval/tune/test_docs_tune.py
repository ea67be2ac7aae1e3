"""The hybrid search guide's `needle tune` block on SciFact, run line by line as a user would: tune, eval, tune --reset.

The block is read from docs/guides/hybrid.md, its dataset path (datasets/scifact) pointed at ../shared/data/scifact, and
each line gets `--index-dir` of an index under tmp_path: without it tune would install fusion.json in eval's
shared cache (~/.cache/needle/eval), which the other SciFact tests search. That index is built from eval's
cached corpus embeddings when there are any, so nothing is encoded again. Checked: what tune prints (the split
and query count the guide's line names, both fitted values kept, the issue's 0.72 on test), that the eval after it
searches the tuned curve and scores what tune reported for test, and that --reset brings the defaults back.
"""

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from needle_retrieval.cli import main
from needle_retrieval.index.generations import live_name
from needle_retrieval.pipelines.fusion import Fusion, Mix, fusion_path, read_fusion
from tests.support.paths import REPO

GUIDE = (REPO / "docs" / "guides" / "hybrid.md").read_text(encoding="utf-8")
BLOCK = re.search(r"```text\n(needle tune .*?)```", GUIDE, flags=re.S)
pytestmark = [pytest.mark.integration, pytest.mark.slow]


@dataclass
class Session:
    """What the guide's three lines printed, and the fusion.json the tune line installed."""

    lines: list[str]
    tune: str
    installed: Fusion | None
    eval: str
    reset: str
    index: Path


def guide_lines() -> list[str]:
    """The block's command lines, in order: tune, eval, tune --reset."""
    assert BLOCK is not None, "docs/guides/hybrid.md has no ```text block starting with `needle tune`"
    lines = BLOCK.group(1).strip().splitlines()
    assert [shlex.split(line, comments=True)[:2] for line in lines] == [
        ["needle", cmd] for cmd in ("tune", "eval", "tune")
    ]
    assert "--reset" in shlex.split(lines[2], comments=True)
    return lines


def run_line(line: str, dataset: Path, index: Path) -> str:
    """Run one of the guide's lines in-process on DATASET and INDEX; returns what it printed on stdout."""
    argv = [str(dataset) if a == "datasets/scifact" else a for a in shlex.split(line, comments=True)[1:]]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--index-dir", str(index)]) == 0, line
    return out.getvalue()


@pytest.fixture(scope="module")
def session(scifact_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The guide's three lines run in order on one index (built first from eval's cached embeddings)."""
    from needle_retrieval.defaults import DEFAULT_MODEL
    from needle_retrieval.eval.command import default_index_dir
    from needle_retrieval.index.build import build_index
    from needle_retrieval.index.generations import embeddings_file

    corpus, index = scifact_dir / "corpus.jsonl", tmp_path_factory.mktemp("docs-tune") / "index"
    seed = embeddings_file(default_index_dir(corpus))  # eval's cached embeddings, when there are any
    build_index(corpus, index, model=DEFAULT_MODEL, overwrite=False, dense=True, bm25=True, seed=seed)
    lines = guide_lines()
    tuned = run_line(lines[0], scifact_dir, index)
    installed = read_fusion(index)
    evaluated = run_line(lines[1], scifact_dir, index)
    return Session(lines, tuned, installed, evaluated, run_line(lines[2], scifact_dir, index), index)


def cell(table: str, label: str) -> str:
    """The value of one row of eval's one-column plain-text table ("fusion", "nDCG@10", ...)."""
    rows = [line[len(label) :].strip() for line in table.splitlines() if re.match(rf"{re.escape(label)}\s{{2}}", line)]
    assert len(rows) == 1, (label, table)
    return rows[0]


def test_tune_fits_the_train_split_and_keeps_both_values(session: Session) -> None:
    count = re.search(r"\((\d+) queries\)", session.lines[0])  # the guide line's own comment
    assert count is not None
    assert f"tuned on scifact train ({count.group(1)} queries)" in session.tune
    assert re.search(r"^  mix  \S+: \d\.\d{4} vs default \d\.\d{4}, kept$", session.tune, flags=re.M)
    assert re.search(r"^  rrf  \d+: \d\.\d{4} vs default \d\.\d{4}, kept$", session.tune, flags=re.M)
    assert f"wrote {fusion_path(session.index)}; generation" in session.tune
    assert session.installed is not None
    assert session.installed.mix != Mix()
    assert session.installed.fitted_on["queries"] == int(count.group(1))


def tuned_test_ndcg(report: str) -> float:
    """Tune's nDCG@10 of the tuned mix on the test split ("test, not fitted on")."""
    found = re.search(r"on test, not fitted on, 300 queries:\n  mix  default \S+  tuned (\S+)", report)
    assert found is not None, report
    return float(found.group(1))


def test_tuned_mix_reaches_0_72_on_test(session: Session) -> None:
    assert tuned_test_ndcg(session.tune) >= 0.72  # the figure, on queries the fit never saw


def test_eval_afterwards_searches_the_tuned_curve(session: Session) -> None:
    assert session.installed is not None
    curve = "/".join(f"{value:g}" for value in vars(session.installed.mix).values())
    assert cell(session.eval, "split") == "test"
    assert cell(session.eval, "queries") == "300"
    assert cell(session.eval, "fusion") == f"tuned: mix {curve}"
    assert cell(session.eval, "index build (s)") == "reused"  # the index tune published, searched as it is
    assert float(cell(session.eval, "nDCG@10")) == pytest.approx(tuned_test_ndcg(session.tune), abs=1e-4)


def test_guide_table_has_the_tuned_figures(session: Session) -> None:
    row = re.search(r"^\| mix, tuned ([\d. /]+) \| ([\d.]+) \| \*\*([\d.]+)\*\* \|$", GUIDE, flags=re.M)
    assert row is not None
    assert session.installed is not None
    assert row.group(1).replace(" ", "") == "/".join(f"{v:g}" for v in vars(session.installed.mix).values())
    assert float(cell(session.eval, "nDCG@10")) == pytest.approx(float(row.group(3)), abs=0.002)


def test_reset_brings_back_the_defaults(session: Session) -> None:
    assert session.reset.startswith(f"removed {fusion_path(session.index)}; generation ")
    assert "carries the fusion default:" in session.reset
    assert read_fusion(session.index) is None
    saved = yaml.safe_load((session.index / str(live_name(session.index)) / "hybrid_search.yaml").read_text())
    params = saved["components"]["mix"]["init_parameters"]
    assert {key: params[key] for key in ("baseline", "amplitude", "slope", "midpoint")} == vars(Mix())
