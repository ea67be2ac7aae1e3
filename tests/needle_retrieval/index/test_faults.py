"""Fault injection: `needle index` killed with SIGKILL at random points never leaves a broken or mixed index.

Each trial starts a `needle index ... --overwrite` process that rebuilds the index from the other corpus, kills
it after a seeded random delay, then checks that `needle search --json` answers exactly as the old corpus or
exactly as the new one, and that the next `needle index` succeeds (the killed writer's lock never blocks it)
and leaves no `.partial` debris. Most trials rebuild a BM25-only index in a process forked from a server that
imported needle once (a console script spends seconds importing before it writes anything), killed anywhere in
its build; every tenth is the console script itself, killed anywhere in its run or inside its build once its
`.partial` generation exists. A few dense trials kill the embedding and FAISS writes too.
"""

import contextlib
import io
import json
import multiprocessing
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from needle_retrieval.cli import main
from tests.support.paths import SAMPLE

NEEDLE = str(Path(sys.executable).with_name("needle"))
QUERIES = ["read and write files", "thread", "parse command line arguments", "compress data"]
BM25_TRIALS, DENSE_TRIALS = 20, 3
pytestmark = pytest.mark.integration


def corpus_slice(directory: Path, name: str, start: int, stop: int) -> Path:
    """Lines [start, stop) of the sample corpus as a corpus file of their own."""
    path = directory / name
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[start:stop]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def answer(index: Path, *extra: str) -> str:
    """What `needle search INDEX QUERIES --json` prints (run in-process, as the console script runs it)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["search", str(index), *QUERIES, "--json", *extra])
    assert status == 0, err.getvalue()
    return out.getvalue()


def rounded(printed: str) -> list:
    """A dense answer with scores rounded: another process may encode the same corpus in the last float bits."""
    return [[(h["id"], round(h["score"], 4), h["content"]) for h in hits] for hits in json.loads(printed)]


def index_in_process(corpus: Path, out: Path, *flags: str) -> None:
    """A `needle index` run that must succeed."""
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(["index", str(corpus), "--out", str(out), *flags]) == 0, err.getvalue()


def run_until_partial(argv: list[str], out: Path, limit_s: float) -> tuple[subprocess.Popen, float | None]:
    """Start argv; return it with the seconds after which a `.partial` generation appeared (None: not yet)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and time.monotonic() - start < limit_s:
        if any(out.glob("gen-*.partial")):
            return proc, time.monotonic() - start
        time.sleep(0.002)
    return proc, None


def kill_at_random(
    argv: list[str], out: Path, rng: random.Random, whole_s: float, build_s: float, inside: bool
) -> None:
    """Run argv and SIGKILL it: after a random delay in its whole run, or a random delay into its build."""
    if inside:
        proc, _ = run_until_partial(argv, out, limit_s=3 * whole_s)
        time.sleep(rng.uniform(0, build_s))
    else:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, 1.1 * whole_s))
    proc.kill()
    proc.wait()


def forked(target, *args: object) -> multiprocessing.Process:
    """Start target(*args) in a process forked from a server that has imported needle's indexing modules."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        [
            "needle_retrieval.cli",
            "needle_retrieval.index.build",
            "components.stores.bm25.document_store",
            "components.converters.jsonl_corpus_reader",
        ]
    )
    proc = context.Process(target=target, args=args, daemon=True)
    proc.start()
    return proc


def check_after_kill(out: Path, old: str, new: str, compare=lambda printed: printed, *extra: str) -> bool:
    """The index answers exactly as before the rebuild or exactly as the new corpus; True for the new one."""
    got = compare(answer(out, *extra))
    assert got in (compare(old), compare(new)), f"after a kill the index answers neither corpus: {got!r:.300}"
    return got == compare(new)


def test_bm25_rebuilds_killed_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    corpora = {"a": corpus_slice(tmp_path, "a.jsonl", 0, 120), "b": corpus_slice(tmp_path, "b.jsonl", 140, 274)}
    out, flags = tmp_path / "ix", ["--bm25", "--no-dense", "--overwrite"]
    argv = {k: [NEEDLE, "index", str(c), "--out", str(out), *flags] for k, c in corpora.items()}
    start = time.monotonic()
    proc, partial_at = run_until_partial(argv["b"], out, limit_s=600)
    assert proc.wait() == 0
    whole_s = time.monotonic() - start
    build_s = max(whole_s - (partial_at or 0), 0.05)
    answers = {"b": answer(out)}
    index_in_process(corpora["a"], out, *flags)
    answers["a"] = answer(out)
    assert answers["a"] != answers["b"]
    assert all(json.loads(answers["a"]))
    forked(time.sleep, 0).join()  # starts the fork server
    start = time.monotonic()
    forked(main, argv["a"][1:]).join()
    forked_s = time.monotonic() - start
    state, outcomes = "a", []
    for trial in range(BM25_TRIALS):
        target = "b" if state == "a" else "a"
        if trial % 10 == 0:
            kill_at_random(argv[target], out, rng, whole_s, build_s, inside=trial == 10)
        else:
            proc = forked(main, argv[target][1:])
            time.sleep(rng.uniform(0, 1.2 * forked_s))
            proc.kill()
            proc.join()
        outcomes.append(check_after_kill(out, answers[state], answers[target]))
        state = rng.choice("ab")
        index_in_process(corpora[state], out, *flags)
        assert answer(out) == answers[state]
        assert not list(out.glob("*.partial"))
    cli = subprocess.run([NEEDLE, "search", str(out), *QUERIES, "--json"], capture_output=True, text=True, check=False)
    assert cli.returncode == 0
    assert cli.stdout == answers[state]
    print(f"{BM25_TRIALS} kills: {outcomes.count(False)} left the old index, {outcomes.count(True)} the new one")


def test_dense_rebuilds_killed_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(8)
    corpora = {"a": corpus_slice(tmp_path, "a.jsonl", 0, 20), "b": corpus_slice(tmp_path, "b.jsonl", 130, 150)}
    out, flags = tmp_path / "ix", ["--bm25", "--overwrite"]
    answers = {}
    start = time.monotonic()
    for key in ("b", "a"):
        index_in_process(corpora[key], out, *flags)
        answers[key] = answer(out, "--mode", "hybrid")
    build_s = (time.monotonic() - start) / 2
    state = "a"
    for _ in range(DENSE_TRIALS):
        target = "b" if state == "a" else "a"
        argv = [NEEDLE, "index", str(corpora[target]), "--out", str(out), *flags]
        kill_at_random(argv, out, rng, whole_s=3 * build_s, build_s=build_s, inside=True)
        check_after_kill(out, answers[state], answers[target], rounded, "--mode", "hybrid")
        state = rng.choice("ab")
        index_in_process(corpora[state], out, *flags)
        assert rounded(answer(out, "--mode", "hybrid")) == rounded(answers[state])
        assert not list(out.glob("*.partial"))
