"""needle in UltraRAG's retriever's place: the file a user puts at ``servers/retriever/src/retriever.py``.

UltraRAG's client launches a local server as ``python <path>`` (``path`` from the server's parameter.yaml, else
``servers/<name>/src/<name>.py``) with UltraRAG's own interpreter, whose environment cannot hold needle (UltraRAG
pins ``mcp<2``, needle needs ``mcp>=2``). So the file needle puts there only replaces that interpreter with the
``needle`` command, ``needle mcp`` plus any arguments it was given, over the same stdin and stdout: the client
speaks to needle directly, and the process it waits for is needle's. ``NEEDLE`` names the command when it is not
``needle`` on ``PATH`` (e.g. ``NEEDLE=/opt/needle/.venv/bin/needle``).

``DROPIN`` is that file's text, the one the docs print and the tests launch; ``needle mcp --drop-in >
servers/retriever/src/retriever.py`` (or ``python -m needle_retrieval.ultrarag.dropin``) writes it.
"""

__all__ = ["DROPIN"]

DROPIN = (
    "# needle's retriever for UltraRAG: runs `needle mcp` (NEEDLE=/path/to/needle picks the command)\n"
    'import os, sys; os.execvp(os.environ.get("NEEDLE", "needle"), '
    '[os.environ.get("NEEDLE", "needle"), "mcp", *sys.argv[1:]])\n'
)

if __name__ == "__main__":
    print(DROPIN, end="")
