"""The code blocks of README.md and docs/, and the local stand-ins for outside services their examples talk to.

``tests/test_docs.py`` runs the blocks; this module finds them (fenced blocks, indented ones in lists too) with the
``<!-- docs-test: ... -->`` comment on the line before a fence, and starts what a block ``needs``:

- ``milvus-server``: a Milvus server (milvus-lite's) on 127.0.0.1: ``MILVUS_URI``.
- ``openai-server``: an OpenAI-compatible ``/v1/embeddings`` server: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``.
- ``web-servers``: Exa, Tavily and ZhipuAI search APIs: ``EXA_BASE_URL``, ``TAVILY_BASE_URL``, ``ZHIPUAI_BASE_URL``
  and the keys ``EXA_API_KEY``, ``TAVILY_API_KEY``, ``ZHIPUAI_API_KEY``.
- ``scifact``: SciFact in BEIR format where it lies (``SCIFACT_DIR``); the page is skipped without it.
- ``ultrarag``: the page's scratch directory made an UltraRAG project (its shipped BM25 examples, the servers they
  name, its example data) with UltraRAG's venv first on PATH, as a user who activated it
  (``tests.support.ultrarag``); the page is skipped without ``ULTRARAG_SRC`` and ``ULTRARAG_PYTHON``.
"""

import re
import shlex
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import REPO, SCIFACT

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
SETUP = re.compile(r"<!--\s*docs-test:(?P<settings>.*?)-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, its text (dedented) and the settings of its docs-test comment."""

    page: Path
    line: int
    lang: str
    body: str
    file: str | None = None
    expect: str | None = None
    needs: tuple[str, ...] = field(default_factory=tuple)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line} ({self.lang} block)"

    def commands(self, prompt: str = "$ ") -> list[str]:
        """The command lines of a console block (lines after PROMPT, joined over ``\\`` line ends)."""
        commands: list[str] = []
        continued = False
        for raw in self.body.splitlines():
            if continued:
                commands[-1] = commands[-1][:-1].rstrip() + " " + raw.strip()
            elif raw.startswith(prompt):
                commands.append(raw[len(prompt) :].strip())
            else:
                continue
            continued = commands[-1].endswith("\\")
        return commands


def pages() -> list[Path]:
    """README.md, then every page under docs/ in path order."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of PAGE in order, each with the settings of the comment on the line before it."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n \t").rsplit("\n", 1)[-1]
        settings = settings_of(before)
        indent = match.group("indent")
        body = "".join(
            ln[len(indent) :] if ln.startswith(indent) else ln for ln in match.group("body").splitlines(True)
        )
        found.append(
            Block(
                page=page,
                line=line,
                lang=match.group("lang"),
                body=body,
                file=settings.get("file"),
                expect=settings.get("expect"),
                needs=tuple(n for n in settings.get("needs", "").split(",") if n),
            )
        )
    return found


def settings_of(line: str) -> dict[str, str]:
    """``key=value`` pairs of a ``<!-- docs-test: ... -->`` comment (values may be quoted), or none."""
    match = SETUP.search(line)
    if match is None:
        return {}
    return dict(item.split("=", 1) for item in shlex.split(match.group("settings")))


@contextmanager
def milvus_server(scratch: Path) -> Iterator[dict[str, str]]:
    from tests.support.milvus import running_server

    root = scratch / ".milvus-server"
    root.mkdir(exist_ok=True)
    with running_server(root) as server:
        yield {"MILVUS_URI": server.uri}


@contextmanager
def openai_server(_: Path) -> Iterator[dict[str, str]]:
    from tests.support.servers.openai_compatible import serving

    with serving(api_key="sk-docs-example") as server:
        yield {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-docs-example"}


@contextmanager
def web_servers(_: Path) -> Iterator[dict[str, str]]:
    from tests.support.servers.websearch import API_KEY, serve

    env = {}
    with ExitStack() as stack:
        for provider in ("exa", "tavily", "zhipuai"):
            url, _state = stack.enter_context(serve(provider))
            env[f"{provider.upper()}_BASE_URL"] = url
            env[f"{provider.upper()}_API_KEY"] = API_KEY  # the one key the stand-ins accept
        yield env


@contextmanager
def ultrarag(scratch: Path) -> Iterator[dict[str, str]]:
    from tests.support.ultrarag import locate, make_project

    found = locate()
    if isinstance(found, str):
        pytest.skip(found)
    make_project(scratch, found, ["bm25_index", "bm25_search"], needle=False)
    yield {name: value for name, value in found.env().items() if name in ("PATH", "VIRTUAL_ENV", "NO_COLOR", "COLUMNS")}


@contextmanager
def scifact(_: Path) -> Iterator[dict[str, str]]:
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip(f"SciFact data not found at {SCIFACT}")
    yield {"SCIFACT_DIR": str(SCIFACT)}


SERVICES: dict[str, Callable[[Path], AbstractContextManager[dict[str, str]]]] = {
    "milvus-server": milvus_server,
    "openai-server": openai_server,
    "web-servers": web_servers,
    "scifact": scifact,
    "ultrarag": ultrarag,
}


@contextmanager
def services(names: list[str], scratch: Path) -> Iterator[dict[str, str]]:
    """Start every service NAMES lists; yield their variables together; stop them all after."""
    env: dict[str, str] = {}
    with ExitStack() as stack:
        for name in names:
            env |= stack.enter_context(SERVICES[name](scratch))
        yield env
