"""A managed `infinity_emb v2` server: started from its own Python environment, never outliving this process.

infinity-emb cannot share an environment with this stack (it pins numpy<2 and sentence-transformers<4), so the
seed's `infinity` backend runs the Infinity engine as a server process from another venv and talks to it over its
OpenAI-compatible `/embeddings` route. Which venv is the user's choice, never an index's: the `infinity_venv`
they pass (Python code, their parameter.yaml when building an index), else `$NEEDLE_INFINITY_VENV`, else
`.venv-infinity`. An index manifest never records it and one that does is refused
(`needle_retrieval.ultrarag.embedder_spec.MACHINE_OPTIONS`), so no file shipped inside an index can choose the
program a search runs.

How the server is kept from becoming an orphan: it is not started directly but through a small watchdog, this
very file run as a script by the current interpreter (standard library only, so it starts in milliseconds):

* this process holds the write end of the watchdog's stdin; when this process ends in any way, SIGKILL
  included, the kernel closes it and the watchdog reads EOF. The watchdog also polls its parent pid once a
  second (a `fork()`ed child of ours could keep the pipe open). Either way it stops the server: SIGTERM,
  then SIGKILL after a grace period.
* on Linux the server is started with `prctl(PR_SET_PDEATHSIG, SIGKILL)` (through ctypes, in a `preexec_fn`)
  so that it dies at once if the watchdog itself is killed. The watchdog is single-threaded; calling prctl
  from here instead would tie the server's life to whichever *thread* started it, not to the process.
* the watchdog runs in a session of its own, so a Ctrl-C in the terminal reaches only this process, which
  then stops the server in an orderly way (`close()`, or the `weakref.finalize` hook at exit).

The server listens on a free port of 127.0.0.1 and requires a random API key that it receives through its
environment (`INFINITY_API_KEY`), so other local users can neither use it nor read the key from `ps`.
Servers are shared: components with the same settings `lease` one process and the last `release` stops it.
"""

import ctypes
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
POLL_SECONDS = 0.25  # health checks while starting
WATCH_SECONDS = 1.0  # how often the watchdog checks that its parent still lives
GRACE_SECONDS = 10.0  # how long a server may take to shut down after SIGTERM
LOG_TAIL_CHARS = 4000
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV = ".venv-infinity"  # the components' default `infinity_venv`: `$NEEDLE_INFINITY_VENV` when it is set
VENV_VARIABLE = "NEEDLE_INFINITY_VENV"


def default_venv() -> str:
    """The venv a managed server runs from when none is chosen: `$NEEDLE_INFINITY_VENV`, else `.venv-infinity`."""
    return os.environ.get(VENV_VARIABLE) or DEFAULT_VENV


class InfinityServerError(RuntimeError, OSError):
    """The Infinity server could not be started: it exited, or did not become healthy before the deadline.

    An OSError too (a process that could not be brought up, like a failed exec), so callers that report
    environment problems as one line -- the `needle` CLI among them -- report this one so, with the server's last
    log lines, instead of a traceback; still a RuntimeError for callers that catch that.
    """


@dataclass(frozen=True)
class InfinitySettings:
    """Everything that makes one Infinity server differ from another (and so the key under which it is shared).

    Values are checked by the components that build settings; see :class:`InfinityTextEmbedder`.
    """

    model_name_or_path: str
    infinity_venv: str = DEFAULT_VENV
    bettertransformer: bool = False
    pooling_method: str = "auto"
    model_warmup: bool = False
    trust_remote_code: bool = True
    batch_size: int = 32
    device: str = "auto"

    def executable(self) -> Path:
        """`infinity_emb` in `infinity_venv` (the default one: `default_venv()`): a relative venv is looked up in
        the current directory, then in the project checkout (where `make test` creates `.venv-infinity`).

        :raises ValueError: No `infinity_emb` there; the message names `infinity_venv` and how to create it.
        """
        chosen = default_venv() if self.infinity_venv == DEFAULT_VENV else self.infinity_venv
        venv = Path(chosen).expanduser()
        candidates = [venv] if venv.is_absolute() else [Path.cwd() / venv, PROJECT_ROOT / venv]
        for candidate in candidates:
            if (candidate / "bin" / "infinity_emb").is_file():
                return candidate / "bin" / "infinity_emb"
        raise ValueError(
            f"infinity_venv: no bin/infinity_emb in {' or '.join(map(str, candidates))}; create it with "
            f"`python3 -m venv {venv} && {venv}/bin/pip install torch==2.13.0 'infinity-emb[server,torch]'`"
        )

    def command(self, port: int) -> list[str]:
        """The `infinity_emb v2` command line serving the model on HOST:`port` under `/v1`."""
        device, _, device_ids = self.device.partition(":")
        command = [str(self.executable()), "v2", "--model-id", self.model_name_or_path]
        command += ["--served-model-name", self.model_name_or_path, "--host", HOST, "--port", str(port)]
        command += ["--url-prefix", "/v1", "--batch-size", str(self.batch_size), "--device", device]
        command += ["--device-id", device_ids] if device_ids else []
        command += ["--pooling-method", self.pooling_method, "--no-vector-disk-cache"]
        for flag, on in (
            ("bettertransformer", self.bettertransformer),
            ("model-warmup", self.model_warmup),
            ("trust-remote-code", self.trust_remote_code),
        ):
            command.append(f"--{flag}" if on else f"--no-{flag}")
        return command


class InfinityServer:
    """One `infinity_emb v2` process behind a watchdog; `start` and `stop` are idempotent and thread-safe."""

    def __init__(self, settings: InfinitySettings) -> None:
        """Keep the settings; nothing starts until `start`."""
        self.settings = settings
        self.api_key = secrets.token_urlsafe(24)
        self.pid: int | None = None  # the server's pid once started (the watchdog's child)
        self.port: int | None = None
        self._lock = threading.Lock()
        self._stopper: weakref.finalize[[subprocess.Popen[bytes], Path], InfinityServer] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, e.g. ``http://127.0.0.1:41234/v1``."""
        if self.port is None:
            raise InfinityServerError("the Infinity server is not running; call start() first")
        return f"http://{HOST}:{self.port}/v1"

    @property
    def running(self) -> bool:
        """Whether the server was started and not stopped since."""
        return self._stopper is not None and self._stopper.alive

    def start(self, timeout: float = 300.0) -> None:
        """Start the server and wait until `/health` answers 200, at most `timeout` seconds.

        :raises ValueError: `infinity_venv` holds no `infinity_emb`.
        :raises InfinityServerError: The server exited, or was not healthy in time; the message holds the last
            lines of its log. The process is stopped before this is raised.
        """
        with self._lock:
            if self.running:
                return
            command = self.settings.command(port := _free_port())
            logdir = Path(tempfile.mkdtemp(prefix="needle-infinity-"))
            watchdog = _spawn(command, logdir / "server.log", self.api_key)
            self._stopper = weakref.finalize(self, _stop, watchdog, logdir)
            self.pid, self.port = _read_pid(watchdog), port
            try:
                self._wait_healthy(watchdog, logdir / "server.log", timeout)
            except BaseException:
                self.stop_locked()
                raise

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after a grace period) and remove its log; harmless when stopped."""
        with self._lock:
            self.stop_locked()

    def stop_locked(self) -> None:
        """`stop` for a caller that holds the lock."""
        if self._stopper is not None:
            self._stopper()
        self.pid = self.port = None

    def _wait_healthy(self, watchdog: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
        """Poll `/health` until it answers 200; raise with the log tail if the server exits or time runs out."""
        deadline = time.monotonic() + timeout
        what = f"Infinity server for {self.settings.model_name_or_path!r} (pid {self.pid}, port {self.port})"
        while not _healthy(f"http://{HOST}:{self.port}/health"):
            if watchdog.poll() is not None or self.pid is None:
                raise InfinityServerError(f"{what} exited before becoming healthy; last log lines:\n{_tail(log)}")
            if time.monotonic() > deadline:
                raise InfinityServerError(
                    f"{what} did not become healthy within {timeout:g} s (startup_timeout); last log lines:\n"
                    f"{_tail(log)}"
                )
            time.sleep(POLL_SECONDS)


_leases: dict[InfinitySettings, tuple[InfinityServer, int]] = {}
_leases_lock = threading.Lock()


def lease(settings: InfinitySettings) -> InfinityServer:
    """The shared server for `settings` (created, not started, if there is none); `release` it when done."""
    with _leases_lock:
        server, count = _leases.get(settings, (None, 0))
        server = server or InfinityServer(settings)
        _leases[settings] = (server, count + 1)
        return server


def release(server: InfinityServer) -> None:
    """Give back one lease of `server`; the last one stops it."""
    with _leases_lock:
        _, count = _leases.get(server.settings, (server, 1))
        if count > 1:
            _leases[server.settings] = (server, count - 1)
            return
        _leases.pop(server.settings, None)
    server.stop()


def _free_port() -> int:
    """A port on HOST that nothing listens on now (the server binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _spawn(command: list[str], log: Path, api_key: str) -> subprocess.Popen[bytes]:
    """Start the watchdog, which starts `command` with its output in `log` and the key in its environment."""
    env = {**os.environ, "INFINITY_API_KEY": api_key, "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve()), *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=out,
            env=env,
            start_new_session=True,
        )


def _read_pid(watchdog: subprocess.Popen[bytes]) -> int | None:
    """The server pid, the watchdog's first line of output (None if it failed to start the server)."""
    assert watchdog.stdout is not None
    line = watchdog.stdout.readline().strip()
    return int(line) if line.isdigit() else None


def _healthy(url: str) -> bool:
    """Whether `url` answers 200 (directly: a proxy from the environment must not see 127.0.0.1)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _tail(log: Path) -> str:
    """The last LOG_TAIL_CHARS characters of the server's log."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return text[-LOG_TAIL_CHARS:].strip() or "(the log is empty)"


def _stop(watchdog: subprocess.Popen[bytes], logdir: Path) -> None:
    """Close the watchdog's stdin (it stops the server and exits); kill it if it does not; remove the log."""
    for stream in (watchdog.stdin, watchdog.stdout):
        if stream is not None:
            stream.close()
    try:
        watchdog.wait(timeout=GRACE_SECONDS + 5)
    except subprocess.TimeoutExpired:
        watchdog.kill()  # the server gets SIGKILL from PR_SET_PDEATHSIG
        watchdog.wait()
    shutil.rmtree(logdir, ignore_errors=True)


# --- the watchdog (this file run as a script: standard library only) --------------------------------------------


def _die_with(parent: int) -> None:
    """In the server, before exec: ask Linux for SIGKILL when `parent` (the watchdog) dies; exit if it already has."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _parent_gone(parent: int) -> bool:
    """Wait up to WATCH_SECONDS for EOF on stdin (the parent closed it or died); also true if we were re-parented."""
    readable, _, _ = select.select([sys.stdin], [], [], WATCH_SECONDS)
    return bool(readable and not os.read(sys.stdin.fileno(), 4096)) or os.getppid() != parent


def _watch(command: list[str]) -> int:
    """Run `command`, print its pid, and stop it once the parent is gone; the server's exit code."""
    parent, me = os.getppid(), os.getpid()
    pre_exec = (lambda: _die_with(me)) if sys.platform.startswith("linux") else None
    # PLW1509: preexec_fn is unsafe in threaded processes; the watchdog has one thread.
    server = subprocess.Popen(command, stdout=sys.stderr, stderr=subprocess.STDOUT, preexec_fn=pre_exec)  # noqa: PLW1509
    print(server.pid, flush=True)
    while server.poll() is None:
        if _parent_gone(parent):
            server.terminate()
            try:
                server.wait(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                server.kill()
    return server.wait()


if __name__ == "__main__":
    sys.exit(_watch(sys.argv[1:]))
