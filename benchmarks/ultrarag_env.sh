#!/usr/bin/env bash
# A venv with UltraRAG's client (the `ultrarag` CLI) and what its retriever, benchmark and reranker servers import on
# a CPU machine, from UltraRAG's source tree, for tests/needle_retrieval/ultrarag_e2e and
# benchmarks/ultrarag_side_by_side.py:
#
#     bash benchmarks/ultrarag_env.sh /path/to/UltraRAG /path/to/venv
#     export ULTRARAG_SRC=/path/to/UltraRAG ULTRARAG_PYTHON=/path/to/venv/bin/python
#
# UltraRAG is installed from source without its dependencies (`pip install --no-deps`): its own list pulls vLLM,
# MinerU, pymilvus and GPU FAISS, none of which the retriever examples need on a CPU. torch goes first so that the
# libraries after it keep that build; the versions are the ones the tests were run with (UltraRAG HEAD 015e838 pins
# fastmcp>=3.3.1,<3.4.5 and numpy>=2,<2.4). numba is what its bm25_search runs on (bm25s' numba backend).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 ULTRARAG_SOURCE_TREE VENV_DIR" >&2
    exit 2
fi
src=$1
venv=$2
if [ ! -f "$src/pyproject.toml" ] || [ ! -f "$src/servers/retriever/src/retriever.py" ]; then
    echo "$0: $src is not UltraRAG's source tree (no pyproject.toml or servers/retriever/src/retriever.py)" >&2
    exit 2
fi
python=${PYTHON:-python3}

"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet)
"${pip[@]}" "torch==2.13.0"
"${pip[@]}" "fastmcp==3.4.4" "mcp==1.30.0" "numpy>=2,<2.4" \
    "sentence-transformers==6.3.0" "transformers==5.25.0" "faiss-cpu==1.15.1" "bm25s==0.3.16" "numba==0.68.1" \
    "fastapi==0.165.0" "uvicorn==0.55.0" "pydantic==2.14.4" \
    "openai" "aiohttp" "orjson" "pandas" "Jinja2" "rich" "PyYAML" "tqdm" "requests" "tabulate" "pillow" "flask" \
    "jieba" "pypinyin" "python-dotenv" "httpx[socks]" "charset-normalizer"
"${pip[@]}" --no-deps "$src"
"$venv/bin/ultrarag" --help > /dev/null
echo "UltraRAG's client is in $venv: export ULTRARAG_SRC=$src ULTRARAG_PYTHON=$venv/bin/python"
