"""Progress of needle's long steps (reading, encoding and writing a corpus, eval searches), at any corpus size.

On a terminal a step shows a tqdm bar (count, rate, ETA). Anywhere else (a pipe, a log file) it writes plain
lines instead, which a log keeps and a reader can follow::

    needle: indexing (dense): encoding 1,200/10,000 docs (12%, 85 docs/s, ETA 1m43s)
    needle: indexing (dense): encoding 10,000/10,000 docs (100%, 85 docs/s, done in 1m58s)

The first line comes with the first batch done once the step has run ``QUIET_START`` seconds (not when the
step starts, so that a step failing before any work, on a bad first line say, leaves its error line alone, and a
step over in a blink prints nothing), then at most one line every ``NEEDLE_PROGRESS_INTERVAL`` seconds (default
5), and a last one when the step ends after that; a step that fails shows no last line (on a terminal its bar
is wiped), so the error line stands on its own. The rate is the step's own:
the clock starts when the step is created, before its work, never at an update after the work was done.
:func:`note` says what a step did (``needle: reused 5,183 embeddings from ...``). :class:`Stages` shows a step
made of stages, such as a store's save, one :class:`Progress` per stage::

    needle: saving (BM25): writing documents 120,000/200,000 docs (60%, 81,000 docs/s, ETA 1s)

``NEEDLE_PROGRESS_INTERVAL=off`` shows none of it.

:class:`Progress` takes tqdm's ``total``/``desc``/``unit``/``postfix`` and its ``update``, ``close``, ``n`` and
``leave``; :func:`track` stands for ``tqdm(iterable, desc=..., unit=...)``.
"""

import os
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from types import TracebackType
from typing import Self, TextIO, TypeVar

from tqdm.auto import tqdm

INTERVAL_VARIABLE = "NEEDLE_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 5.0  # seconds between two plain lines
QUIET_START = 1.0  # seconds a step runs before its first plain line (at most the interval)
T = TypeVar("T")


def line_interval() -> float | None:
    """Seconds between two plain progress lines from ``NEEDLE_PROGRESS_INTERVAL``; None when it is ``off``.

    :raises ValueError: a value that is neither a number of seconds >= 0 nor ``off`` (naming the variable).
    """
    raw = os.environ.get(INTERVAL_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    if raw.lower() == "off":
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{INTERVAL_VARIABLE} must be a number of seconds >= 0 or 'off', got {raw!r}")
    return seconds


class Progress:
    """The progress of one step: a tqdm bar on a terminal, plain lines elsewhere, nothing when switched off.

    ```python
    with Progress(total=len(texts), desc="indexing (dense)", unit="docs", postfix="encoding") as bar:
        for batch in batches:
            bar.update(len(batch))
    ```
    """

    def __init__(
        self,
        *,
        total: int | None = None,
        desc: str = "",
        unit: str = "it",
        postfix: str | None = None,
        file: TextIO | None = None,
    ) -> None:
        """Start the step's clock; nothing is shown before the first ``update`` except a terminal's empty bar.

        :param total: The count the step reaches when done; None when unknown (no percentage, no ETA).
        :param postfix: What the step is doing, e.g. ``encoding`` (after the bar; before the count in lines).
        :param file: Where to write (default: stderr at the time of the call).
        :raises ValueError: ``NEEDLE_PROGRESS_INTERVAL`` holds something else than seconds or ``off``.
        """
        self.total, self.desc, self.unit, self.postfix = total, desc, unit, postfix
        self.n = 0
        self.leave = True  # set False to end the step without its last line (tqdm: the bar is wiped)
        self._file = sys.stderr if file is None else file
        self._interval = line_interval()
        self._start = time.monotonic()
        self._shown: float | None = None  # when the last plain line was written
        self._closed = False
        terminal = self._interval is not None and _is_terminal(self._file)
        self._bar = tqdm(total=total, desc=desc, unit=unit, postfix=postfix, file=self._file) if terminal else None

    def update(self, n: int = 1) -> None:
        """Count N more units done; a plain line is written when the interval since the last one has passed."""
        if n <= 0:
            return
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
            return
        if self.total is not None and self.n >= self.total:
            return  # the last line says it, at `close`
        now = time.monotonic()
        if self._interval is None:
            return
        if now >= (self._shown + self._interval if self._shown is not None else self._quiet_until()):
            self._shown = now
            self._write(done=False)

    def advance_to(self, count: int) -> None:
        """Count up to COUNT units done (nothing when already there)."""
        if count > self.n:
            self.update(count - self.n)

    def close(self) -> None:
        """End the step: its last line (not if ``leave`` is False or it ended within ``QUIET_START``); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.leave = self.leave
            self._bar.close()
        elif self._interval is not None and self.leave and self.n > 0 and self._may_end_with_a_line():
            self._write(done=True)

    def _may_end_with_a_line(self) -> bool:
        """Whether the step showed a line, or ran long enough to show its last one."""
        return self._shown is not None or time.monotonic() >= self._quiet_until()

    def _quiet_until(self) -> float:
        """When a step that has shown no line yet may show its first: after ``QUIET_START`` (at most the interval)."""
        return self._start + min(QUIET_START, self._interval or 0.0)

    def __enter__(self) -> Self:
        """The step itself, closed on leaving the block (without its last line when the block raised)."""
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        """Close the step; one that raised ends without its last line, so the error line stands alone."""
        if error is not None:
            self.leave = False
        self.close()

    def _write(self, *, done: bool) -> None:
        """Write one plain line: what, how far, how fast, and how long still (or, when done, how long it took)."""
        elapsed = time.monotonic() - self._start
        rate = self.n / elapsed if elapsed > 0 else None
        details = []
        if self.total:
            details.append(f"{100 * self.n // self.total}%")
        if rate is not None:
            details.append(f"{_number(rate)} {self.unit}/s")
        if done:
            details.append(f"done in {_duration(elapsed, precise=True)}")
        elif self.total and rate:
            details.append(f"ETA {_duration(max(self.total - self.n, 0) / rate)}")
        count = f"{self.n:,}" if self.total is None else f"{self.n:,}/{self.total:,}"
        doing = f"{self.postfix} " if self.postfix else ""
        what = f"{self.desc[:1].lower()}{self.desc[1:]}: " if self.desc else ""  # needle's lines are lowercase
        self._file.write(f"needle: {what}{doing}{count} {self.unit} ({', '.join(details)})\n")
        self._file.flush()


class Stages:
    """The stages of one step, each shown as a :class:`Progress` named by its stage: the callback a store's save
    takes (``save(on_progress=...)``), called as ``stages(stage, done, total)``.

    ```python
    with Stages(desc="Saving (BM25)", unit="docs") as report:
        store.save(on_progress=report)
    ```

    A stage's clock starts at its first call (which the stores make with ``done`` 0, as the stage starts) and it
    ends once ``done`` reaches ``total``, when another stage is called, or when the block ends; a block that
    raises ends its stage without a last line.
    """

    def __init__(self, *, desc: str = "", unit: str = "it", file: TextIO | None = None) -> None:
        """Nothing is shown before the first stage; DESC, UNIT and FILE are those of each stage's Progress."""
        self.desc, self.unit, self._file = desc, unit, file
        self._stage: str | None = None
        self._bar: Progress | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        """DONE of TOTAL units through STAGE; a stage other than the last one called ends that one first."""
        if self._bar is None or stage != self._stage:
            self._end(leave=True)
            self._stage = stage
            self._bar = Progress(total=total, desc=self.desc, unit=self.unit, postfix=stage, file=self._file)
        self._bar.advance_to(done)
        if done >= total:
            self._end(leave=True)  # its last line now, not after what follows it

    def _end(self, *, leave: bool) -> None:
        """End the current stage, with its last line when LEAVE."""
        if self._bar is not None:
            self._bar.leave = leave
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Self:
        """The callback, its last stage ended on leaving the block."""
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        """End the last stage; without its last line when the block raised, so the error line stands alone."""
        self._end(leave=error is None)


def track(iterable: Iterable[T], *, desc: str = "", unit: str = "it", total: int | None = None) -> Iterator[T]:
    """The items of ITERABLE, counted under a :class:`Progress` (tqdm's ``tqdm(iterable, ...)``).

    The total is ``len(iterable)`` when it has one. Iteration stopped early ends the step without its last line.
    """
    if total is None and isinstance(iterable, Sized):
        total = len(iterable)
    bar = Progress(total=total, desc=desc, unit=unit)
    finished = False
    try:
        for item in iterable:
            yield item
            bar.update()
        finished = True
    finally:
        bar.leave = finished
        bar.close()


def note(message: str, file: TextIO | None = None) -> None:
    """Tell what a step did, e.g. ``needle: reused 5,183 embeddings from ...``, on stderr (or FILE) at once;
    nothing when ``NEEDLE_PROGRESS_INTERVAL=off``."""
    if line_interval() is None:
        return
    out = sys.stderr if file is None else file
    out.write(f"needle: {message}\n")
    out.flush()


def _is_terminal(file: TextIO) -> bool:
    """Whether FILE is a terminal (a file without ``isatty`` is not)."""
    isatty = getattr(file, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def _number(value: float) -> str:
    """A rate for people: ``12,345``, ``85``, ``2.5``, ``0.04``."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def _duration(seconds: float, *, precise: bool = False) -> str:
    """``3s`` (``3.4s`` when PRECISE), ``1m43s``, ``2h05m``."""
    if seconds < 60:
        return f"{seconds:.1f}s" if precise else f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
