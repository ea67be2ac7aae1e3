"""Safety checks on a local model directory, made BEFORE any file in it is loaded (mxRAG's rules).

A model directory is code-adjacent: loading pickled weights runs arbitrary code, and a directory that others can
write to, or that reaches elsewhere through symlinks, lets them swap what gets loaded. mxRAG refuses such
directories; so do we, with an error that names the file and the rule:

- the path is absolute, at most 1024 characters, and not under a system directory
  (/etc /usr/bin /usr/lib /usr/lib64 /sys /dev /sbin) nor under /tmp;
- neither the directory nor anything in it is a symlink;
- at most 512 files, nested at most 64 levels deep, none larger than 10 GB;
- nothing in it is writable by group or others, and it belongs to the running user (or root);
- weights are safetensors only: pickle-based files (.bin .pt .pth .ckpt .pkl .pickle) are refused.

``check_model_path`` checks the string alone (cheap, done at ``__init__``); ``check_model_dir`` walks the
directory (done in ``warm_up``, right before loading).
"""

import os
import stat
from pathlib import Path

MAX_PATH_CHARS = 1024
MAX_FILES = 512
MAX_DEPTH = 64
MAX_FILE_BYTES = 10 * 1024**3
FORBIDDEN_ROOTS = ("/etc", "/usr/bin", "/usr/lib", "/usr/lib64", "/sys", "/dev", "/sbin", "/tmp")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")

CONVERT_HINT = (
    "Convert the weights to safetensors once, in a trusted environment, e.g.:\n"
    "    import torch; from safetensors.torch import save_file\n"
    "    state = torch.load('{file}', map_location='cpu', weights_only=True)\n"
    "    save_file({{k: v.clone().contiguous() for k, v in state.items()}}, '{dir}/model.safetensors')\n"
    "or `AutoModelForSequenceClassification.from_pretrained(dir).save_pretrained(dir, safe_serialization=True)`; "
    "then remove '{name}' from the directory."
)


class ModelDirError(ValueError):
    """A model directory breaks one of the safety rules; the message names the path and the rule."""


def _under(path: str, root: str) -> bool:
    """True if ``path`` is ``root`` or inside it (component-wise, so /tmpfoo is not under /tmp)."""
    return path == root or path.startswith(root + "/")


def check_model_path(model_path: str) -> str:
    """
    Check the path string alone: absolute, at most 1024 characters, not under a forbidden root.

    :returns: the path, normalised.
    :raises ModelDirError: naming the rule that failed.
    """
    if not isinstance(model_path, str) or not model_path:
        raise ModelDirError(f"model_path must be a non-empty string, got {model_path!r}")
    if len(model_path) > MAX_PATH_CHARS:
        raise ModelDirError(f"model_path must be at most {MAX_PATH_CHARS} characters, got {len(model_path)}")
    if not os.path.isabs(model_path):
        raise ModelDirError(f"model_path must be an absolute path, got relative path {model_path!r}")
    normalised = os.path.normpath(model_path)
    for root in FORBIDDEN_ROOTS:
        if _under(normalised, root):
            raise ModelDirError(
                f"model_path {model_path!r} lies under {root}; model directories under "
                f"{', '.join(FORBIDDEN_ROOTS)} are refused"
            )
    return normalised


def _check_entry(path: Path, is_dir: bool, uid: int) -> None:
    """Per-entry rules: no symlink, not group/other-writable, owned by the running user or root, size."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise ModelDirError(f"model directory entry {str(path)!r} is a symlink; symlinks are refused")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ModelDirError(
            f"{str(path)!r} is writable by group or others (mode {stat.filemode(info.st_mode)}); run `chmod go-w` on it"
        )
    if info.st_uid not in (uid, 0):
        raise ModelDirError(f"{str(path)!r} belongs to uid {info.st_uid}, not to the running user (uid {uid}) or root")
    if not is_dir and info.st_size > MAX_FILE_BYTES:
        raise ModelDirError(f"file {str(path)!r} is {info.st_size} bytes; files above 10 GB are refused")


def _check_weights_format(path: Path, top: Path) -> None:
    """Refuse pickle-based weight files, with a hint on converting them to safetensors."""
    if path.suffix.lower() in PICKLE_SUFFIXES:
        hint = CONVERT_HINT.format(file=path, dir=top, name=path.name)
        raise ModelDirError(
            f"{str(path)!r} is a pickle-based file ({path.suffix}); only safetensors weights are loaded.\n{hint}"
        )


def check_model_dir(model_path: str) -> Path:
    """
    Walk the model directory and apply every rule before anything is loaded.

    :returns: the directory as a ``Path``.
    :raises ModelDirError: at the first entry that breaks a rule, naming it and the rule.
    """
    top = Path(check_model_path(model_path))
    if os.path.islink(top):
        raise ModelDirError(f"model_path {str(top)!r} is a symlink; pass the real directory")
    if not top.is_dir():
        raise ModelDirError(f"model_path {str(top)!r} does not exist or is not a directory")
    check_model_path(os.path.realpath(top))
    uid = os.getuid()
    _check_entry(top, True, uid)
    n_files = 0
    has_safetensors = False
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        for name in dirnames + filenames:
            entry = here / name
            depth = len(entry.relative_to(top).parts)
            if depth > MAX_DEPTH:
                raise ModelDirError(f"{str(entry)!r} is nested {depth} levels deep; at most {MAX_DEPTH} are allowed")
            _check_entry(entry, name in dirnames, uid)
        for name in filenames:
            n_files += 1
            if n_files > MAX_FILES:
                raise ModelDirError(f"model directory {str(top)!r} holds more than {MAX_FILES} files")
            _check_weights_format(here / name, top)
            has_safetensors = has_safetensors or name.endswith(".safetensors")
    if not has_safetensors:
        raise ModelDirError(f"model directory {str(top)!r} holds no *.safetensors weights")
    return top
