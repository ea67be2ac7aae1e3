#!/usr/bin/env bash
# The package as users install it (`make smoke`; CI). Builds the sdist and the wheel (the wheel from the sdist) of a
# clean copy of this checkout, checks what they hold, installs the wheel with its `serve` extra into a fresh venv
# (not editable), then, from an empty directory outside the repository with HF_HUB_OFFLINE=1, runs what a user runs:
# the `needle` CLI (index, search in every mode, pipelines), the shipped YAML pipelines through `import components`,
# the Python API, `needle serve` (UltraRAG's /search, MCP) and `hayhooks run`; last, that the unrelated PyPI
# distribution needle-python (a top-level `needle/` package) installs beside it without sharing a file.
#
# Needs only Python (>= 3.11, venv), pip and a package index; nothing of the dev venv. Every check prints one
# `ok N - ...` line, every step its time; the last line is `N passed, 0 failed` (or `N passed, 1 failed` and a
# non-zero exit at the first failure). Servers started here are stopped and the temporary directory is removed on
# any exit. Environment: PYTHON (default python3), SMOKE_WAIT_S (bound of each wait for a server, default 120),
# SMOKE_CMD_TIMEOUT_S (bound of every other command, default 600), SMOKE_KEEP=1 keeps the temporary directory.
set -Eeuo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WAIT_S="${SMOKE_WAIT_S:-120}"
CMD_TIMEOUT_S="${SMOKE_CMD_TIMEOUT_S:-600}"
STOP_S=30                 # how long a stopped server may take to exit before SIGKILL
TORCH="torch==2.13.0"     # first, before anything that depends on torch: the CPU wheel (else pip takes a CUDA build)
QUERY="read and write zip archives"
SECOND_QUERY="run a function in a separate thread"
SEARCH_WAVES=("dense bm25" "hybrid rrf")  # every mode of `needle search`, two at a time
INDEX_PIPELINES="dense_search,bm25_search,hybrid_search,rrf_search"  # what `needle index --bm25` writes and serves

export HF_HUB_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export HAYSTACK_TELEMETRY_ENABLED=False  # as the tests set it: CI sends nothing to Haystack's PostHog
# Nothing of this checkout or of an active venv may leak in; Hayhooks must start with no allowlist set by hand.
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE VIRTUAL_ENV HAYSTACK_DESERIALIZATION_ALLOWLIST

TMP="$(mktemp -d "${TMPDIR:-/tmp}/needle-smoke.XXXXXX")"
SRC="$TMP/src"       # a clean copy of the checkout: what a fresh clone holds
DIST="$TMP/dist"     # the sdist and the wheel
TOOLS="$TMP/tools"   # the venv that builds them
VENV="$TMP/venv"     # the user's venv
WORK="$TMP/work"     # the user's empty directory
LOGS="$TMP/logs"
mkdir -p "$DIST" "$WORK" "$LOGS"

PASSED=0
STEP="setup"
SERVER_PID=""
SERVER_LOG=""
BACKGROUND=()  # other processes started in the background (the parallel searches), killed on exit if still running

now_us() {  # wall-clock microseconds
    if [[ -n "${EPOCHREALTIME:-}" ]]; then echo "${EPOCHREALTIME/[.,]/}"; else echo $(($(date +%s%N) / 1000)); fi
}
seconds_since() {  # seconds since START_US (one decimal)
    local tenths=$((($(now_us) - $1) / 100000))
    printf '%d.%d' $((tenths / 10)) $((tenths % 10))
}
START_US="$(now_us)"

ok() {  # one passed check
    PASSED=$((PASSED + 1))
    echo "ok $PASSED - $*"
}

fail() {  # stop at the first failed check
    echo "FAIL [$STEP]: $*" >&2
    exit 1
}

tail_log() {  # the end of a log, indented, to stderr
    [[ -f "$1" ]] && tail -n "${2:-40}" "$1" | sed 's/^/    | /' >&2
    return 0
}

bounded() {  # bounded COMMAND...: run COMMAND, killed after CMD_TIMEOUT_S
    local rc=0
    timeout "$CMD_TIMEOUT_S" "$@" || rc=$?
    if ((rc == 124)); then echo "timed out after $CMD_TIMEOUT_S s: $*" >&2; fi
    return "$rc"
}

logged() {  # logged LOG COMMAND...: run COMMAND (bounded) with its output in LOG; on failure show the log's end, fail
    local log="$1"
    shift
    if ! bounded "$@" >"$log" 2>&1; then
        tail_log "$log"
        fail "\`$*\` failed (log above: $log)"
    fi
}

on_error() {  # a command failed outside the explicit checks
    [[ $BASH_SUBSHELL -eq 0 ]] && echo "FAIL [$STEP]: \`$2\` exited with $1 (line $3)" >&2
    return 0
}
trap 'on_error $? "$BASH_COMMAND" $LINENO' ERR

server_state() {  # the state letter of process $1 (R, S, Z...), empty once it is gone
    local stat
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
    stat="${stat##*) }"
    echo "${stat%% *}"
}

stop_server() {  # SIGTERM the server this script started, SIGKILL after STOP_S, reap it
    local pid="$SERVER_PID" state i
    [[ -n "$pid" ]] || return 0
    SERVER_PID=""
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < STOP_S * 10; i++)); do
        state="$(server_state "$pid")"
        [[ -z "$state" || "$state" == Z ]] && break
        sleep 0.1
    done
    state="$(server_state "$pid")"
    if [[ -n "$state" && "$state" != Z ]]; then
        echo "   server $pid still runs ${STOP_S} s after SIGTERM: SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local rc=$?
    trap - ERR
    set +e
    if [[ -n "$SERVER_PID" ]]; then
        [[ $rc -ne 0 ]] && echo "   the server's log ($SERVER_LOG):" >&2 && tail_log "$SERVER_LOG" 60
        stop_server
    fi
    local pid
    for pid in "${BACKGROUND[@]}"; do
        [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    if [[ "${SMOKE_KEEP:-}" == 1 ]]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
    echo "total: $(seconds_since "$START_US") s"
    if [[ $rc -ne 0 ]]; then
        echo "package smoke test FAILED in step '$STEP' (exit $rc)"
        echo "$PASSED passed, 1 failed"
    else
        echo "$PASSED passed, 0 failed"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() {  # step NAME FUNCTION: run one step and say how long it took
    STEP="$1"
    local start
    start="$(now_us)"
    echo "== $1"
    "$2"
    echo "== $1: $(seconds_since "$start") s"
}

free_port() {
    "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

archive_names() {  # the member paths of a wheel or sdist, one a line (an sdist's NAME-VERSION/ prefix removed)
    "$TOOLS/bin/python" - "$1" <<'EOF'
import sys, tarfile, zipfile
path = sys.argv[1]
if path.endswith(".whl"):
    names = zipfile.ZipFile(path).namelist()
else:
    names = [name.split("/", 1)[1] for name in tarfile.open(path).getnames() if "/" in name]
print("\n".join(sorted(names)))
EOF
}

check_archive() {  # check_archive FILE KIND: every shipped pipeline, no top-level needle/
    local file="$1" kind="$2" names missing
    names="$(archive_names "$file")"
    missing="$(comm -23 "$TMP/shipped.txt" <(grep -E '^needle_retrieval/pipelines/yaml/[^/]+\.yaml$' <<<"$names" |
        sed 's|.*/||' | sort))"
    [[ -z "$missing" ]] || fail "the $kind lacks shipped pipelines: $(tr '\n' ' ' <<<"$missing")"
    ok "the $kind holds all $(wc -l <"$TMP/shipped.txt") pipeline YAMLs under needle_retrieval/pipelines/yaml/"
    if grep -qE '^needle(/|$)' <<<"$names"; then
        fail "the $kind has a top-level needle/ path: $(grep -E '^needle(/|$)' <<<"$names" | head -3 | tr '\n' ' ')"
    fi
    ok "the $kind has no top-level needle/ path (top level: $(cut -d/ -f1 <<<"$names" | sort -u | xargs))"
}

# --- 1. build -----------------------------------------------------------------------------------------------------
step_build() {
    # A clean copy of the checkout: its tracked and untracked-but-not-ignored files (a stale *.egg-info, build/ or
    # leftover needle/ of this working tree must not reach the archives), symlinks kept as links.
    mkdir -p "$SRC"
    if git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$REPO" && git ls-files -z --cached --others --exclude-standard --deduplicate |
            while IFS= read -r -d '' file; do if [[ -e "$file" || -L "$file" ]]; then printf '%s\0' "$file"; fi; done |
            tar -cf - --null --no-recursion -T -) | tar -xf - -C "$SRC"
    else
        # No git here: the checkout less what .gitignore names.
        tar -C "$REPO" -cf - --exclude=.git --exclude='.venv*' --exclude='*.egg-info' --exclude=build --exclude=dist \
            --exclude='*_cache' --exclude=__pycache__ --exclude=.needle --exclude=.hypothesis --exclude=site . |
            tar -xf - -C "$SRC"
    fi
    (cd "$SRC/pipelines" && ls -- *.yaml) | sort >"$TMP/shipped.txt"
    [[ -s "$TMP/shipped.txt" ]] || fail "no pipelines/*.yaml in the checkout"
    [[ -L "$SRC/needle_retrieval/pipelines/yaml" ]] ||
        fail "needle_retrieval/pipelines/yaml is not a link in the checkout"

    logged "$LOGS/tools-venv.log" "$PYTHON" -m venv "$TOOLS"
    logged "$LOGS/tools-pip.log" "$TOOLS/bin/pip" install -q "build>=1.2"
    # No --sdist/--wheel: build makes the sdist, then the wheel from the unpacked sdist, as a user's pip would.
    logged "$LOGS/build.log" "$TOOLS/bin/python" -m build --outdir "$DIST" "$SRC"
    grep -q "Building wheel from sdist" "$LOGS/build.log" || fail "build did not make the wheel from the sdist"
    SDIST="$(ls "$DIST"/*.tar.gz)"
    WHEEL="$(ls "$DIST"/*.whl)"
    ok "built $(basename "$SDIST") and, from it, $(basename "$WHEEL")"
    check_archive "$SDIST" sdist
    check_archive "$WHEEL" wheel
}

# --- 2. install ---------------------------------------------------------------------------------------------------
step_install() {
    logged "$LOGS/venv.log" "$PYTHON" -m venv "$VENV"
    # --no-compile: byte-compiling all of torch & co. doubles the install time; our own modules are compiled below.
    logged "$LOGS/pip-torch.log" "$VENV/bin/pip" install -q --no-compile "$TORCH"
    logged "$LOGS/pip-wheel.log" "$VENV/bin/pip" install -q --no-compile "$WHEEL[serve]"
    ok "installed $TORCH, then $(basename "$WHEEL")[serve] into a fresh venv"
    local show
    show="$("$VENV/bin/pip" show needle-retrieval)"
    if grep -q "^Editable project location" <<<"$show"; then fail "needle-retrieval is installed editable"; fi
    grep -q "^Location: $VENV/" <<<"$show" || fail "needle-retrieval is not installed in the venv: $show"
    ok "needle-retrieval $(grep '^Version:' <<<"$show" | cut -d' ' -f2) is a regular install in the venv"
    local site
    site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    logged "$LOGS/compileall.log" "$VENV/bin/python" -m compileall -q -j 0 "$site/needle_retrieval" "$site/components"
    ok "every installed module of needle_retrieval and components byte-compiles"
    logged "$LOGS/pip-check.log" "$VENV/bin/pip" check
    ok "pip check: no broken requirements"
    # From here on the user's shell: the venv first on PATH, working in an empty directory outside the repository.
    export PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV"
    cd "$WORK"
}

# --- 3. use -------------------------------------------------------------------------------------------------------
step_installed_files() {
    local where site file
    where="$(bounded python -c 'import needle_retrieval, components
print(needle_retrieval.__file__)
print(components.__file__)')" ||
        fail "import needle_retrieval, components failed from $WORK"
    site="$(bounded python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    [[ "$site" == "$VENV"/* ]] || fail "the venv's site-packages is $site"
    while read -r file; do
        [[ "$file" == "$site"/* ]] || fail "$file is imported from outside the venv's site-packages $site"
    done <<<"$where"
    [[ "$(command -v needle)" == "$VENV/bin/needle" ]] || fail "\`needle\` is $(command -v needle), not the venv's"
    ok "from $WORK: needle_retrieval and components import from $site, \`needle\` is the venv's"
}

step_cli() {
    local version wheel_version
    version="$(bounded needle --version)" || fail "needle --version failed"
    wheel_version="$(basename "$WHEEL" | cut -d- -f2)"
    [[ "$version" == "needle $wheel_version" ]] || fail "needle --version says '$version', the wheel is $wheel_version"
    ok "needle --version: $version"

    bounded needle pipelines list >"$LOGS/pipelines-list.txt" || fail "needle pipelines list failed"
    local missing
    missing="$(comm -23 <(sed 's/\.yaml$//' "$TMP/shipped.txt") <(cut -d' ' -f1 "$LOGS/pipelines-list.txt" | sort))"
    [[ -z "$missing" ]] || fail "needle pipelines list lacks: $(tr '\n' ' ' <<<"$missing")"
    ok "needle pipelines list: $(wc -l <"$LOGS/pipelines-list.txt") pipelines"

    bounded needle pipelines show bm25_search >bm25_search.yaml || fail "needle pipelines show bm25_search failed"
    cmp -s bm25_search.yaml "$SRC/pipelines/bm25_search.yaml" ||
        fail "needle pipelines show bm25_search differs from pipelines/bm25_search.yaml"
    ok "needle pipelines show bm25_search > bm25_search.yaml: the shipped file, byte for byte"
}

step_index() {
    mkdir -p samples
    cp "$SRC/samples/python_docs.jsonl" samples/  # the user's own file, in the user's directory
    logged "$LOGS/index.log" needle index samples/python_docs.jsonl --out idx --bm25
    [[ -s idx/CURRENT ]] || fail "needle index wrote no idx/CURRENT"
    GEN="$(cat idx/CURRENT)"
    ok "needle index samples/python_docs.jsonl --out idx --bm25: $(tail -n 1 "$LOGS/index.log") (live: $GEN)"
}

step_search() {
    local wave mode detail i
    # Two processes at a time (each loads torch and the model; the machine has 2 cores): dense and bm25 first, since
    # the first BM25 search compiles the numba kernels (cached on disk) that hybrid and rrf then load.
    for wave in "${SEARCH_WAVES[@]}"; do
        BACKGROUND=()
        for mode in $wave; do
            timeout "$CMD_TIMEOUT_S" needle search idx "$QUERY" --mode "$mode" --json \
                >"$LOGS/search-$mode.json" 2>"$LOGS/search-$mode.log" &
            BACKGROUND+=($!)
        done
        i=0
        for mode in $wave; do
            wait "${BACKGROUND[$i]}" || {
                tail_log "$LOGS/search-$mode.log"
                fail "needle search idx \"$QUERY\" --mode $mode --json failed"
            }
            BACKGROUND[i]=""  # reaped: nothing to kill on exit
            i=$((i + 1))
        done
    done
    for wave in "${SEARCH_WAVES[@]}"; do
        for mode in $wave; do
            detail="$(bounded python "$REPO/.ci/smoke_search.py" --expect zipfile <"$LOGS/search-$mode.json")" ||
                fail "needle search --mode $mode --json: a bad answer (above)"
            ok "needle search idx \"$QUERY\" --mode $mode --json: $detail"
        done
    done
}

step_pipelines() {
    local lines line
    cp "$REPO/.ci/smoke_pipeline.py" .  # the user's own script, beside the index
    lines="$(bounded python smoke_pipeline.py idx "$QUERY")" || fail "a bm25_search.yaml did not run (above)"
    while read -r line; do
        ok "import components + Pipeline.loads, $line"
    done <<<"$lines"
    [[ $(wc -l <<<"$lines") -eq 2 ]] || fail "smoke_pipeline.py checked $(wc -l <<<"$lines") pipelines, not 2"
}

step_python_api() {
    local line
    if ! bounded python "$REPO/.ci/smoke_readme.py" "$REPO/README.md" >"$LOGS/readme.out" 2>"$LOGS/readme.err"; then
        tail_log "$LOGS/readme.err"
        fail "the README's examples failed with the installed package (log above)"
    fi
    while read -r line; do
        ok "$line"
    done <"$LOGS/readme.out"
}

step_serve() {
    local port base detail
    port="$(free_port)"
    base="http://127.0.0.1:$port"
    SERVER_LOG="$LOGS/serve.log"
    needle serve idx --port "$port" >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    detail="$(python "$REPO/.ci/smoke_http.py" wait "$base" --pid "$SERVER_PID" --timeout "$WAIT_S" \
        --pipelines "$INDEX_PIPELINES")" || fail "needle serve idx --port $port did not come up"
    ok "needle serve idx --port $port: $detail"
    detail="$(bounded python "$REPO/.ci/smoke_http.py" ultrarag "$base" "$QUERY" "$SECOND_QUERY")" ||
        fail "POST /search (above)"
    ok "needle serve, UltraRAG's POST /search: $detail"
    detail="$(bounded python "$REPO/.ci/smoke_http.py" mcp "$base" "$QUERY")" || fail "MCP over /mcp (above)"
    ok "needle serve, /mcp with the mcp SDK's streamable HTTP client: $detail"
    stop_server
    ok "needle serve stopped"
}

step_hayhooks() {
    local port base detail
    port="$(free_port)"
    base="http://127.0.0.1:$port"
    SERVER_LOG="$LOGS/hayhooks.log"
    hayhooks run --host 127.0.0.1 --port "$port" --pipelines-dir "idx/$GEN/hayhooks" >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    detail="$(python "$REPO/.ci/smoke_http.py" wait "$base" --pid "$SERVER_PID" --timeout "$WAIT_S" \
        --pipelines "$INDEX_PIPELINES")" || fail "hayhooks run --pipelines-dir idx/$GEN/hayhooks did not come up"
    ok "hayhooks run --pipelines-dir idx/$GEN/hayhooks: $detail"
    detail="$(bounded python "$REPO/.ci/smoke_http.py" hayhooks "$base" bm25_search "zip archives")" ||
        fail "POST /bm25_search/run (above)"
    ok "hayhooks run: $detail"
    stop_server
    ok "hayhooks run stopped"
}

# --- 4. needle-python beside it -----------------------------------------------------------------------------------
files_of() {  # the paths `pip show -f DIST` lists, relative to site-packages, sorted
    pip show -f "$1" | sed -n '/^Files:/,$p' | sed -n 's/^  *//p' | sort
}

step_collision() {
    local common where version theirs
    logged "$LOGS/pip-needle-python.log" pip install --no-deps needle-python
    theirs="$(pip show needle-python | sed -n 's/^Version: //p')"
    files_of needle-retrieval >"$TMP/ours.txt"
    files_of needle-python >"$TMP/theirs.txt"
    grep -qx "needle_retrieval/__init__.py" "$TMP/ours.txt" ||
        fail "pip show -f needle-retrieval lists no needle_retrieval/__init__.py"
    grep -qx "needle/__init__.py" "$TMP/theirs.txt" || fail "pip show -f needle-python lists no needle/__init__.py"
    common="$(comm -12 "$TMP/ours.txt" "$TMP/theirs.txt")"
    [[ -z "$common" ]] || fail "needle-retrieval and needle-python share files: $(head -5 <<<"$common" | xargs)"
    ok "needle-python $theirs installed beside it (--no-deps): no file in common in pip show -f" \
        "($(wc -l <"$TMP/ours.txt") and $(wc -l <"$TMP/theirs.txt") files)"
    where="$(bounded python -c 'import needle, needle_retrieval, components
from needle_retrieval import Searcher
print(needle.__file__, needle_retrieval.__file__, Searcher.__module__)')" ||
        fail "importing needle, needle_retrieval and components together failed"
    ok "import needle, needle_retrieval, components + from needle_retrieval import Searcher: $where"
    logged "$LOGS/pip-uninstall.log" pip uninstall -y needle-python
    bounded python -c 'import importlib.util, needle_retrieval, components
from needle_retrieval import Searcher
left = importlib.util.find_spec("needle")
assert left is None, f"a needle package is left: {left}"' ||
        fail "after pip uninstall -y needle-python: needle_retrieval no longer imports, or a needle/ is left"
    version="$(bounded needle --version)" || fail "needle --version fails after uninstalling needle-python"
    ok "pip uninstall -y needle-python: needle_retrieval still imports, no needle/ is left, needle --version: $version"
}

step build step_build
step install step_install
step "import from outside" step_installed_files
step "needle CLI" step_cli
step "needle index" step_index
step "needle search" step_search
step "YAML pipelines" step_pipelines
step "Python API" step_python_api
step "needle serve" step_serve
step "hayhooks run" step_hayhooks
step "needle-python beside it" step_collision
STEP="done"
