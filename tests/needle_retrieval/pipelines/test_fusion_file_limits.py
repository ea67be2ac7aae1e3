"""A fusion.json beside an index that Python's own limits would stop, read by `needle search` as a user runs it: JSON
nested 100,000 deep (a RecursionError traceback before) and an rrf.k of 4,301 digits (Python's "Exceeds the limit
(4300 digits)" before, naming neither field nor range) are each one line naming the file and the field."""

import subprocess
from pathlib import Path

import pytest

from components.joiners.rrf_batch_joiner import MAX_K
from tests.support.bm25_sample import build_bm25_sample, search_child


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bm25_sample(tmp_path_factory.mktemp("fusion-limits"))


def tuned(rrf_k: str = "20", baseline: str = "0.4") -> str:
    """A fusion file `needle tune` could have written, with the text of rrf.k and mix.baseline as given."""
    mix = f'"mix": {{"baseline": {baseline}, "amplitude": 0.3, "slope": 1.0, "midpoint": 6.0}}'
    return f'{{"schema": "needle.fusion/1", {mix}, "rrf": {{"k": {rrf_k}}}, "fitted_on": {{}}}}'


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 100_000 + "]" * 100_000, "not valid JSON (nested too deeply)"),
        (tuned(rrf_k="1" * 4301), f"field rrf.k must be an integer in [1, {MAX_K}], got an integer of 4,301 digits"),
        (tuned(baseline="9" * 5000), "field mix.baseline must be a number, got an integer of 5,000 digits"),
    ],
    ids=["nested-100000-deep", "rrf-k-of-4301-digits", "baseline-of-5000-digits"],
)
def test_a_fusion_file_past_python_s_limits_is_one_line_naming_file_and_field(
    built: Path, tmp_path: Path, text: str, said: str
) -> None:
    index = tmp_path / "index"
    subprocess.run(["cp", "-a", str(built), str(index)], check=True)
    (index / "fusion.json").write_text(text)
    done = search_child(index)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{index / 'fusion.json'}: {said}" in done.stderr
    assert len(done.stderr) < 400
