"""mxRAG's model-directory rules, one test per rule, made before anything is loaded.

The directories here are fake models (a few small files): the checks look at paths, modes, sizes and names only.
They live under tests/support/model_home.py's MODELS (the user's cache), because /tmp itself is a refused location.
"""

import os
import shutil
import uuid

import pytest

from components.rankers import LocalCrossEncoderRanker, ModelDirError
from components.rankers.model_dir_checks import check_model_dir, check_model_path
from tests.support.model_home import MODELS


@pytest.fixture
def model_dir():
    """A valid-looking model directory (config + safetensors + tokenizer), removed afterwards."""
    path = MODELS / f"dir-checks-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (path / name).write_text("{}")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_clean_directory_passes(model_dir):
    assert check_model_dir(str(model_dir)) == model_dir


def test_relative_path_is_refused():
    with pytest.raises(ModelDirError, match="must be an absolute path"):
        check_model_path(".pytest-models/model")


def test_path_longer_than_1024_characters_is_refused():
    with pytest.raises(ModelDirError, match="at most 1024 characters, got 1025"):
        check_model_path("/" + "a" * 1024)


@pytest.mark.parametrize("root", ["/etc", "/usr/bin", "/usr/lib", "/usr/lib64", "/sys", "/dev", "/sbin", "/tmp"])
def test_system_directories_and_tmp_are_refused_at_init(root):
    with pytest.raises(ModelDirError, match=f"lies under {root}"):
        LocalCrossEncoderRanker(model_path=f"{root}/models/bge-reranker")


def test_refusal_is_by_path_component_not_by_prefix():
    assert check_model_path("/tmpfiles/model") == "/tmpfiles/model"
    with pytest.raises(ModelDirError, match="lies under /usr/lib"):
        check_model_path("/usr/local/../lib/model")


def test_missing_directory_is_refused():
    with pytest.raises(ModelDirError, match="does not exist or is not a directory"):
        check_model_dir(str(MODELS / "no-such-model"))


def test_symlinked_directory_is_refused(model_dir):
    link = model_dir.with_name(model_dir.name + "-link")
    link.symlink_to(model_dir)
    try:
        with pytest.raises(ModelDirError, match="is a symlink; pass the real directory"):
            check_model_dir(str(link))
    finally:
        link.unlink()


def test_symlinked_file_inside_is_refused(model_dir, tmp_path):
    outside = tmp_path / "weights.safetensors"
    outside.write_text("{}")
    (model_dir / "extra.safetensors").symlink_to(outside)
    with pytest.raises(ModelDirError, match=r"extra.safetensors' is a symlink"):
        check_model_dir(str(model_dir))


def test_path_that_resolves_into_tmp_through_a_parent_symlink_is_refused(tmp_path):
    real = tmp_path / "model"
    real.mkdir()
    (real / "model.safetensors").write_text("{}")
    hop = MODELS / f"hop-{uuid.uuid4().hex[:8]}"
    hop.symlink_to(tmp_path)
    try:
        with pytest.raises(ModelDirError, match="lies under /tmp"):
            check_model_dir(str(hop / "model"))
    finally:
        hop.unlink()


@pytest.mark.parametrize(("target", "mode"), [("model.safetensors", 0o664), ("model.safetensors", 0o646), (".", 0o757)])
def test_group_or_other_writable_entries_are_refused(model_dir, target, mode):
    (model_dir / target).chmod(mode)
    with pytest.raises(ModelDirError, match=r"writable by group or others .*chmod go-w"):
        check_model_dir(str(model_dir))


@pytest.mark.skipif(os.getuid() != 0, reason="changing a file's owner needs root")
def test_file_owned_by_another_user_is_refused(model_dir):
    os.chown(model_dir / "config.json", 54321, -1)
    with pytest.raises(ModelDirError, match="belongs to uid 54321"):
        check_model_dir(str(model_dir))


def test_file_over_10_gb_is_refused(model_dir):
    with open(model_dir / "model-00002.safetensors", "wb") as f:
        f.truncate(10 * 1024**3 + 1)  # sparse: no disk space is used
    with pytest.raises(ModelDirError, match="10737418241 bytes; files above 10 GB are refused"):
        check_model_dir(str(model_dir))


def test_nesting_deeper_than_64_levels_is_refused(model_dir):
    deep = model_dir.joinpath(*["d"] * 63)
    deep.mkdir(parents=True)
    (deep / "ok.json").write_text("{}")  # depth 64: allowed
    check_model_dir(str(model_dir))
    (deep / "e").mkdir()  # depth 64 directory holding a depth-65 file
    (deep / "e" / "too-deep.json").write_text("{}")
    with pytest.raises(ModelDirError, match="nested 65 levels deep; at most 64"):
        check_model_dir(str(model_dir))


def test_more_than_512_files_are_refused(model_dir):
    for i in range(512 - 3):
        (model_dir / f"shard-{i}.json").write_text("")
    check_model_dir(str(model_dir))  # exactly 512 files
    (model_dir / "one-too-many.json").write_text("")
    with pytest.raises(ModelDirError, match="more than 512 files"):
        check_model_dir(str(model_dir))


@pytest.mark.parametrize(
    "name", ["pytorch_model.bin", "model.pt", "weights.pth", "model.ckpt", "state.pkl", "training_args.BIN"]
)
def test_pickle_based_weights_are_refused_with_a_conversion_hint(model_dir, name):
    (model_dir / name).write_bytes(b"\x80\x04pickle")
    with pytest.raises(ModelDirError) as refused:
        check_model_dir(str(model_dir))
    message = str(refused.value)
    assert name in message
    assert "only safetensors weights are loaded" in message
    assert "safetensors.torch import save_file" in message
    assert "safe_serialization=True" in message


def test_directory_without_safetensors_is_refused(model_dir):
    (model_dir / "model.safetensors").unlink()
    with pytest.raises(ModelDirError, match=r"holds no \*\.safetensors weights"):
        check_model_dir(str(model_dir))


def test_warm_up_checks_before_loading(model_dir):
    """The safetensors file here is garbage: had the loader run first, the error would come from transformers."""
    (model_dir / "pytorch_model.bin").write_bytes(b"\x80\x04pickle")
    ranker = LocalCrossEncoderRanker(model_path=str(model_dir))
    with pytest.raises(ModelDirError, match=r"pytorch_model.bin"):
        ranker.warm_up()
    assert ranker._model is None
