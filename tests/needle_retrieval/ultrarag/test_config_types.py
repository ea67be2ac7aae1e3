"""UltraRAG's parameter.yaml is typed: every value of the wrong YAML type is one error naming the file and key path.

YAML 1.2 types `false` as a boolean and `"false"` as a string; Python takes the string as true. So a quoted
boolean, a quoted number, a number where a string belongs or a scalar where a block belongs is refused, naming
the key's full path, never taken the wrong way (`is_demo: "false"` used to turn the demo preset on, and
`trust_remote_code: "false"` / `normalize_embeddings: "no"` reached the embedders as truthy strings). Unknown
keys are all named, whatever their type (`1:` and `zzz:` together used to crash sorting them), and a managed
Infinity server that fails to start is one line from the CLI, not a traceback.

The walks below take tests/data/ultrarag_parameter.yaml (UltraRAG HEAD's keys) and retype each of its values in
turn, so a key added to that file is covered without a new test.
"""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.ultrarag.config import load_config
from needle_retrieval.ultrarag.embedder_spec import embedder_spec
from tests.support.paths import DATA, REPO

EXAMPLE = DATA / "ultrarag_parameter.yaml"
SECRETS = ("RETRIEVER_API_KEY", "OPENAI_API_KEY", "MILVUS_TOKEN", "EXA_API_KEY", "TAVILY_API_KEY", "ZHIPUAI_API_KEY")
# Milvus' own index and search parameters (opaque mappings passed to Milvus), and gpu_ids ("1", 1 and [1] all mean
# GPU 1): no single type to break.
OPAQUE = ("index_backend_configs.milvus.index_params.", "index_backend_configs.milvus.search_params.", "gpu_ids")
Path_ = tuple[str, ...]


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key variables set, and whatever a parameter file's literal keys put there removed afterwards."""
    for name in SECRETS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The HEAD-shaped parameter file beside a small corpus at its corpus_path, run from there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    lines = (REPO / "samples" / "python_docs.jsonl").read_text().splitlines(True)[:5]
    (tmp_path / "data" / "corpus_example.jsonl").write_text("".join(lines))
    shutil.copy(EXAMPLE, tmp_path / "parameter.yaml")
    return tmp_path


def nodes(data: dict[str, Any], prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (key path, value) of DATA, mappings included, depth first."""
    for key, value in data.items():
        yield (*prefix, key), value
        if isinstance(value, dict):
            yield from nodes(value, (*prefix, key))


def with_value(data: dict[str, Any], where: Path_, value: Any) -> dict[str, Any]:
    """A deep copy of DATA with the value at key path WHERE replaced by VALUE."""
    copy: dict[str, Any] = yaml.safe_load(yaml.safe_dump(data))
    block = copy
    for key in where[:-1]:
        block = block[key]
    block[where[-1]] = value
    return copy


def retyped(value: Any) -> Any:
    """VALUE as the wrong YAML type: a boolean or number quoted, a string or null as a number, a block as false."""
    if isinstance(value, bool):
        return str(value).lower()  # "true" / "false": a string in YAML 1.2
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return False
    return 5


def refusals(workdir: Path, kinds: tuple[type, ...]) -> list[str]:
    """Retype each value of KINDS in the HEAD file in turn; what went wrong where the error was not one naming the
    file, the key path and the value (empty: every one was)."""
    config = workdir / "parameter.yaml"
    data = yaml.safe_load(EXAMPLE.read_text())
    problems = []
    for where, value in nodes(data):
        dotted = ".".join(where)
        if not isinstance(value, kinds) or dotted.startswith(OPAQUE):
            continue
        wrong = retyped(value)
        config.write_text(yaml.safe_dump(with_value(data, where, wrong)))
        try:
            load_config(config)
        except NeedleError as error:
            message = str(error)
            if not message.startswith(f"{config}: ") or dotted not in message or repr(wrong) not in message:
                problems.append(f"{dotted}: {wrong!r}: {message}")
        else:
            problems.append(f"{dotted}: {wrong!r} was accepted")
    return problems


def test_every_boolean_of_the_file_refuses_a_quoted_boolean(workdir: Path) -> None:
    """is_demo, is_multimodal, overwrite, trust_remote_code, bettertransformer, model_warmup, normalize_embeddings,
    index_use_gpu, search_intent: each `"true"` / `"false"` is an error naming its key path."""
    assert refusals(workdir, (bool,)) == []


def test_every_number_of_the_file_refuses_a_quoted_number(workdir: Path) -> None:
    """batch_size, top_k, encode_chunk_size, concurrency, index_chunk_size, id_max_length, retries, base_delay..."""
    assert refusals(workdir, (int, float)) == []


def test_every_string_and_null_of_the_file_refuses_a_number(workdir: Path) -> None:
    """Paths, names, URLs, prompt names, field names, keys (in the chosen backend's block and in every other)."""
    assert refusals(workdir, (str, type(None))) == []


def test_every_block_of_the_file_refuses_a_scalar(workdir: Path) -> None:
    """A block set to `false` is an error, never read as "no options" (each backend and web search block)."""
    assert refusals(workdir, (dict,)) == []


def test_is_demo_false_as_a_string_no_longer_turns_the_demo_on(workdir: Path) -> None:
    """The issue's case: `is_demo: "false"` used to choose openai + milvus; now it is refused, and `false` is off."""
    config = workdir / "parameter.yaml"
    data = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump(data | {"is_demo": "false"}))
    with pytest.raises(NeedleError, match=r"parameter\.yaml: is_demo must be true or false, got 'false'$"):
        load_config(config)
    config.write_text(yaml.safe_dump(data | {"is_demo": False}))
    assert load_config(config).spec.backend == "sentence_transformers"


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"trust_remote_code": "false"}, "backend_configs.sentence_transformers.trust_remote_code must be true or"),
        (
            {"sentence_transformers_encode": {"normalize_embeddings": "no"}},
            "sentence_transformers.sentence_transformers_encode.normalize_embeddings must be true or false, got 'no'",
        ),
        ({"sentence_transformers_encode": False}, "sentence_transformers_encode must be a mapping of options or null"),
    ],
)
def test_the_factory_refuses_truthy_strings_for_sentence_transformers(block: dict[str, Any], message: str) -> None:
    """embedder_spec itself (what every caller of the factory goes through) refuses them, naming the key path."""
    with pytest.raises(ValueError, match=message):
        embedder_spec("sentence_transformers", "m", block)


def write(workdir: Path, text: str) -> Path:
    """The parameter file with TEXT (YAML) appended at its top level."""
    config = workdir / "parameter.yaml"
    config.write_text(EXAMPLE.read_text() + text)
    return config


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in-process: exit 2 (a user error) and exactly one line on stderr, which is returned."""
    capsys.readouterr()
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("needle: error: ")
    return err.strip()


def test_unknown_keys_of_any_type_are_all_named_sorted_as_text(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`1:` and `zzz:` together (an int and a string key) used to crash sorting with a TypeError."""
    config = write(workdir, "1: one\nzzz: two\n")
    for command in ("index", "search"):
        argv = [command, "--config", str(config), *(["q"] if command == "search" else [])]
        assert cli_error(capsys, *argv).endswith(
            f"{config}: parameter file: options 1, zzz are not supported; allowed: model_name_or_path, corpus_path, "
            "embedding_path, collection_name, backend, backend_configs, index_backend, index_backend_configs, "
            "websearch_backend, websearch_backend_configs, batch_size, top_k, gpu_ids, query_instruction, "
            "is_multimodal, overwrite, retrieve_thread_num, retriever_url, is_demo, path"
        )


@pytest.mark.parametrize(
    ("block", "where"),
    [
        ("backend_configs", "backend_configs.sentence_transformers"),
        ("index_backend_configs", "index_backend_configs.faiss"),
        ("websearch_backend_configs", "websearch_backend_configs.tavily"),
    ],
)
def test_unknown_keys_of_any_type_inside_chosen_blocks_are_all_named(workdir: Path, block: str, where: str) -> None:
    """The same inside the chosen backend's block (the file's backend, index_backend, websearch_backend): 10 and
    'aaa' both named, in text order."""
    config = workdir / "parameter.yaml"
    data = yaml.safe_load(config.read_text())
    data[block][where.split(".")[1]] |= {"aaa": 1, 10: 2}
    config.write_text(yaml.safe_dump(data))
    with pytest.raises(NeedleError, match=rf"{where}: options 10, aaa are not supported; allowed: "):
        load_config(config)


def test_unknown_keys_of_any_type_in_blocks_not_chosen_are_named_in_one_warning(
    workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """UltraRAG never reads the blocks of the backends not chosen: their unknown keys (10 and 'aaa', of any type,
    in text order), unknown blocks and a `path` are accepted, all named in one warning."""
    config = workdir / "parameter.yaml"
    data = yaml.safe_load(config.read_text())
    for block, name in (
        ("backend_configs", "bm25"),
        ("index_backend_configs", "milvus"),
        ("websearch_backend_configs", "exa"),
    ):
        data[block][name] |= {"aaa": 1, 10: 2}
    data["backend_configs"]["vllm"] = {"x": 1}
    data["path"] = "servers/retriever/src/retriever.py"
    config.write_text(yaml.safe_dump(data))
    assert load_config(config).spec.backend == "sentence_transformers"
    said = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert said == [
        f"{config}: ignored, as UltraRAG ignores them (not read with these backends): path, backend_configs.vllm, "
        "backend_configs.bm25.10, backend_configs.bm25.aaa, index_backend_configs.milvus.10, "
        "index_backend_configs.milvus.aaa, websearch_backend_configs.exa.10, websearch_backend_configs.exa.aaa"
    ]


def test_a_quoted_boolean_is_one_line_from_the_cli(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`needle index --config` names the file and the key path, exit 2."""
    data = yaml.safe_load(EXAMPLE.read_text())
    config = workdir / "parameter.yaml"
    config.write_text(
        yaml.safe_dump(with_value(data, ("backend_configs", "sentence_transformers", "trust_remote_code"), "false"))
    )
    assert cli_error(capsys, "index", "--config", str(config)) == (
        f"needle: error: {config}: backend_configs.sentence_transformers.trust_remote_code must be true or false, "
        "got 'false'"
    )


def test_a_managed_infinity_server_that_exits_at_once_is_one_line_from_the_cli(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An infinity_venv whose infinity_emb exits at once: exit 2, one line with the server's last log lines.

    The broken venv is both the file's infinity_venv and NEEDLE_INFINITY_VENV, so whichever the build starts the
    server from, it is this one (never a real .venv-infinity of the checkout).
    """
    venv = workdir / "venv-broken"
    monkeypatch.setenv("NEEDLE_INFINITY_VENV", str(venv))
    (venv / "bin").mkdir(parents=True)
    executable = venv / "bin" / "infinity_emb"
    executable.write_text("#!/bin/sh\necho 'infinity_emb: no engine here' >&2\nexit 3\n")
    executable.chmod(0o755)
    data = yaml.safe_load(EXAMPLE.read_text()) | {"backend": "infinity", "gpu_ids": None}
    data["backend_configs"]["infinity"] |= {"infinity_venv": str(venv), "device": "cpu"}
    config = workdir / "parameter.yaml"
    config.write_text(yaml.safe_dump(data))
    err = cli_error(capsys, "index", "--config", str(config))
    assert "exited before becoming healthy; last log lines: infinity_emb: no engine here" in err
