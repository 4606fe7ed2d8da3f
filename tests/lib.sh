# lib.sh - helpers for the integration tests (sourced).
# Every test gets its own directory, every process it starts is killed on
# exit, and every wait is bounded.
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
JM=$top_builddir/jobmanager/spits-jm
TM=$top_builddir/taskmanager/spits-tm
RUN=$top_builddir/tools/spits-run
MODS=$top_builddir/modules/.libs
TMODS=$top_builddir/tests/modules/.libs
T=$(mktemp -d "${TMPDIR:-/tmp}/spits-test.XXXXXX")
# (spits-run keeps a failed job's temporary dir: here, it goes with $T)
export TMPDIR=$T
# A Python job's interpreter (modules/python.c) is never finalized: what
# it holds at exit is no leak, in any test that runs one (python.sh, the
# README's example in docs.sh).
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/lsan-python.supp"
PIDS=""
# The system python starts fast; a pyenv shim can take half a second.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

# sanitized: true in a sanitizer build (ASan or TSan), whose runtime owns
# malloc and slows every thread several times over.
sanitized() {
    ldd "$JM" 2>/dev/null | grep -Eq 'lib(a|t)san'
}

# tsanitized: true in the ThreadSanitizer build.
tsanitized() {
    ldd "$JM" 2>/dev/null | grep -q libtsan
}

cleanup() {
    # Children first: a JM runs under timeout, which cannot pass on a KILL.
    for p in $PIDS; do pkill -9 -P "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    # SPITS_TEST_KEEP=DIR keeps a failed test's files in DIR (debugging).
    if [ -n "${FAILED:-}" ] && [ -n "${SPITS_TEST_KEEP:-}" ]; then
        mkdir -p "$SPITS_TEST_KEEP" && cp -r "$T" "$SPITS_TEST_KEEP/"
    fi
    rm -rf "$T"
}
trap cleanup EXIT

fail() {
    FAILED=1
    echo "FAIL: $*"
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
    exit 1
}

# start_jm NAME ARGS...: a JM on loopback in job dir $T/NAME
start_jm() {
    local name=$1; shift
    timeout -s KILL 120 "$JM" --jobdir "$T/$name" --bind tcp://127.0.0.1:0 "$@" \
        >"$T/$name.out" 2>"$T/$name.jm.log" &
    JM_PID=$!
    PIDS="$PIDS $JM_PID"
}

# start_tm NAME LOG ARGS...: TM_PID is the TM itself (tests signal it); its
# own --wait and --reconnect-timeout bound its life if the JM goes away.
start_tm() {
    local name=$1 log=$2; shift 2
    "$TM" --jobdir "$T/$name" --wait 60 --reconnect-timeout 30 "$@" >"$T/$log.log" 2>&1 &
    TM_PID=$!
    PIDS="$PIDS $TM_PID"
}

# start_relay NAME LOG PORT ARGS...: a relay (spits-tm --serve) of job
# NAME serving on PORT; RELAY_PID is the relay.
start_relay() {
    local name=$1 log=$2 port=$3; shift 3
    "$TM" --jobdir "$T/$name" --serve "tcp://127.0.0.1:$port" --wait 60 \
        --reconnect-timeout 30 "$@" >"$T/$log.log" 2>&1 &
    RELAY_PID=$!
    PIDS="$PIDS $RELAY_PID"
}

# start_serve NAME ARGS...: spits-status --serve 127.0.0.1:0 for job NAME
# (ARGS before --serve); SERVE_PID, and the URL it prints with its BASE and
# TOKEN (output in NAME.serve.out, its log in NAME.serve.log)
start_serve() {
    local name=$1
    shift
    "$top_builddir/tools/spits-status" --jobdir "$T/$name" "$@" --serve 127.0.0.1:0 \
        >"$T/$name.serve.out" 2>"$T/$name.serve.log" &
    SERVE_PID=$!
    PIDS="$PIDS $SERVE_PID"
    wait_for "grep -q token= '$T/$name.serve.out'" 30 "spits-status --serve to print its URL"
    URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/?token=[0-9a-f]*' "$T/$name.serve.out") ||
        fail "no URL on 127.0.0.1 with a token in: $(cat "$T/$name.serve.out")"
    BASE=${URL%%\?*}
    TOKEN=${URL##*token=}
}

# free_port: a TCP port nothing listens on now
free_port() {
    "$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

# start_proxy NAME JOB BYTES_PER_SECOND [DELAY_MS]: tests/slowlink.py in
# front of job JOB's JM (once its jm.json is there), its log NAME.proxy.log;
# PROXY_PID is the proxy, PROXY_EP the tcp:// endpoint to give TMs
start_proxy() {
    local name=$1 job=$2 port
    shift 2
    wait_for "[ -s $T/$job/jm.json ]" 30 "$job's JM to announce itself"
    port=$(json "$T/$job/jm.json" "d['endpoint'].rsplit(':', 1)[1]")
    "$PY" "$top_srcdir/tests/slowlink.py" "$T/$name.port" "$port" "$@" 2>"$T/$name.proxy.log" &
    PROXY_PID=$!
    PIDS="$PIDS $PROXY_PID"
    wait_for "[ -s $T/$name.port ]" 30 "proxy $name to listen"
    PROXY_EP="tcp://127.0.0.1:$(cat "$T/$name.port")"
}

# wait_for COND_COMMAND SECONDS WHAT
wait_for() {
    local i
    for i in $(seq 1 $(($2 * 10))); do
        eval "$1" && return 0
        sleep 0.1
    done
    fail "timed out after $2 s waiting for $3"
}

# live NAME PYTHON_EXPR: the expression over the live JM of job NAME's
# status document d (spits-status --json); empty when there is no answer
live() {
    "$top_builddir/tools/spits-status" --jobdir "$T/$1" --json >"$T/$1.status" 2>/dev/null &&
        json "$T/$1.status" "$2"
}

# tm_done NAME PID: tasks the live JM of job NAME counts as done by the TM
# with that pid
tm_done() {
    live "$1" "sum(t['done'] for t in d.get('tms', []) if t['pid'] == $2)"
}

# committed NAME: tasks the live JM of job NAME has committed
committed() {
    live "$1" "d['tasks']['committed']"
}

# json FILE PYTHON_EXPR: prints the expression over the document d
json() {
    "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# bench_checksum N: the bench module's checksum, computed independently
bench_checksum() {
    "$PY" - "$1" <<'PY'
import sys
M = (1 << 64) - 1
def sm(x):
    z = (x + 0x9e3779b97f4a7c15) & M
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
n = int(sys.argv[1])
print("bench: %d tasks, checksum 0x%016x" % (n, sum(sm(i) for i in range(n)) & M))
PY
}

# need_chromium: CHROMIUM is the headless browser the page tests load
# pages in; without it a test fails under CI=true and is skipped (77)
# elsewhere. LOGDIR is where a screenshot for a human goes.
need_chromium() {
    CHROMIUM=$(command -v chromium || command -v chromium-browser) || {
        if [ "${CI:-}" = true ]; then
            echo "FAIL: chromium is not installed: this test needs it (Debian" \
                 "package chromium; tools/spits-check installs it)"
            exit 1
        fi
        echo "SKIP: chromium is not installed (Debian package chromium)"
        exit 77
    }
    LOGDIR=${SPITS_LOGDIR:-$top_srcdir/spits-logs}
    mkdir -p "$LOGDIR" || fail "cannot make $LOGDIR"
}

# chrome ARGS... URL: headless chromium with no network beyond loopback
# (every other host goes to a proxy that answers nothing; Chromium never
# proxies loopback), its output on stdout.
chrome() {
    timeout 120 "$CHROMIUM" --headless --disable-gpu --no-sandbox --no-first-run \
        --user-data-dir="$T/chromium" --proxy-server=127.0.0.1:9 \
        "$@" 2>>"$T/chromium.log"
}
