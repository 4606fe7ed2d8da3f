#!/bin/bash
# python.sh - jobs written in Python (modules/python.c, docs/python.md):
# spits-run JOB.py gives the exact answer, as spits-jm and spits-tm do
# (whose TMs refuse a changed file) and worker threads do; bytes pass
# through unchanged and numpy arrays travel (when numpy is there); an
# exception in execute fails its task naming type, message and
# FILE:LINE, with a C task failure's exit status, as does sys.exit() in
# a task; a SyntaxError is one line at load; an exception in generate
# is named; one in commit stops the job, and --resume with the fixed
# file finishes it; spits_main runs two phases.
. "$top_srcdir/tests/lib.sh"

[ -f "$MODS/python.so" ] || { echo "SKIP: modules/python.so not built (python3-dev)"; exit 77; }

# pyrun NAME ARGS...: spits-run -n 2, stdout in $T/NAME.out, stderr in
# $T/NAME.err, exit status in $rc
pyrun() {
    local name=$1; shift
    rc=0
    timeout -s KILL 60 "$RUN" -q -n 2 "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
}

cat >"$T/squares.py" <<'PY'
total = 0
def generate(args):
    n = int(args[0]) if args else 1000
    for a in range(0, n, 10):
        yield (a, min(a + 10, n))
def execute(task):
    a, b = task
    return sum(x * x for x in range(a, b))
def commit(result):
    global total
    total += result
def finish():
    print("sum of squares =", total)
PY
want=$("$PY" -c 'n = 20000; print((n - 1) * n * (2 * n - 1) // 6)')
pyrun squares "$T/squares.py" 20000
[ $rc = 0 ] || fail "squares.py exited $rc: $(cat "$T/squares.err")"
[ "$(cat "$T/squares.out")" = "sum of squares = $want" ] ||
    fail "squares.py printed '$(cat "$T/squares.out")', not the sum $want"
echo "squares.py: $want"

# spits-jm and spits-tm take the .py file too, the TM's workers then
# processes, as jm.json names a Python job.
start_jm sq "$T/squares.py" 3000
start_tm sq tmsq -n 2
wait "$JM_PID" || fail "spits-jm squares.py exited $?: $(cat "$T/sq.jm.log")"
sum3000="sum of squares = $("$PY" -c 'print(sum(x * x for x in range(3000)))')"
[ "$(cat "$T/sq.out")" = "$sum3000" ] || fail "spits-jm squares.py printed '$(cat "$T/sq.out")'"
grep -q "squares.py is a Python job: each worker is a process" "$T/tmsq.log" ||
    fail "the TM's workers are not processes: $(cat "$T/tmsq.log")"
# A TM that learns the job from jm.json says HELLO once its worker
# processes have started their interpreters (slowed by 0.5 s here, by a
# sitecustomize that only the TM's processes run): the JM's join time
# comes after both starts, and the TM's log says so in that order.
mkdir -p "$T/slowsite"
cat >"$T/slowsite/sitecustomize.py" <<'PY'
import os, time
_mark = os.environ.get("SPITS_TEST_START_MARK")
if _mark:
    time.sleep(0.5)
    with open(_mark, "a") as f:
        f.write("%.6f\n" % time.time())
_hang = os.environ.get("SPITS_TEST_START_HANG")
if _hang:
    try:
        os.close(os.open(_hang, os.O_CREAT | os.O_EXCL))
        time.sleep(2)       # (the first process only)
    except FileExistsError:
        pass
PY
start_jm early "$T/squares.py" 3000
SPITS_TEST_START_MARK="$T/early.marks" PYTHONPATH="$T/slowsite" start_tm early tmearly -n 2 -v
wait "$JM_PID" || fail "spits-jm squares.py (early) exited $?: $(cat "$T/early.jm.log")"
[ "$(cat "$T/early.out")" = "$sum3000" ] || fail "the early TM's job printed '$(cat "$T/early.out")'"
"$PY" - "$T/early" "$T/early.marks" <<'PY' || fail "the TM joined before its worker processes started: $(cat "$T/tmearly.log")"
import json, sys
d, marks = sys.argv[1], sys.argv[2]
ready = [float(l) for l in open(marks)]
started = json.load(open(d + "/jm.json"))["started_unix"]
rep = json.load(open(d + "/report.json"))
joins = [started + e["t"] for e in rep["timeline"]["tm_events"] if e["event"] == "join"]
assert len(ready) == 2, "%d worker process starts, not 2" % len(ready)
assert len(joins) == 1, "%d joins, not 1" % len(joins)
# (the JM's clock and the workers' are this machine's; 50 ms for the
# float the timeline keeps)
assert joins[0] >= max(ready) - 0.05, "joined %.3f s before the last start" % (
    max(ready) - joins[0])
assert joins[0] < max(ready) + 10, "joined %.1f s after the last start" % (
    joins[0] - max(ready))
PY
grep -o "2 of 2 worker process(es) started in\|joined job" "$T/tmearly.log" >"$T/tmearly.order"
printf '%s\n' "2 of 2 worker process(es) started in" "joined job" |
    cmp -s - "$T/tmearly.order" ||
    fail "the TM's log does not say the workers started, then the join: $(cat "$T/tmearly.log")"
echo "a TM with a job dir joins once its worker processes started"
# A worker process slow to start (the first one, 2 s) is waited for no
# longer than --wait (here 1 s): the TM says so and joins, that
# worker's first task waits for it, and the job ends with the exact sum.
# (Under a sanitizer the other worker may be slow too: one line each.)
start_jm hang "$T/squares.py" 3000
wait_for "test -s '$T/hang/jm.json'" 30 "the hang job's jm.json"
SPITS_TEST_START_HANG="$T/hang.once" PYTHONPATH="$T/slowsite" start_tm hang tmhang -n 2 --wait 1
wait "$JM_PID" || fail "a job whose worker is slow to start exited $?: $(cat "$T/hang.jm.log")"
[ "$(cat "$T/hang.out")" = "$sum3000" ] || fail "the job with a slow worker printed '$(cat "$T/hang.out")'"
grep -o "worker [01]: its process did not start within 1.0 s; its first task waits for it\|joined job" \
    "$T/tmhang.log" | sed 's/worker [01]/worker N/' | uniq >"$T/tmhang.order"
printf '%s\n' "worker N: its process did not start within 1.0 s; its first task waits for it" \
    "joined job" | cmp -s - "$T/tmhang.order" ||
    fail "the TM did not say a worker was slow, then join: $(cat "$T/tmhang.log")"
echo "a worker process slow to start: not waited for past --wait"

# python.so named as the module, the file its first argument: worker
# threads (one interpreter), the same sum.
pyrun sqthreads "$MODS/python.so" "$T/squares.py" 3000
[ $rc = 0 ] && [ "$(cat "$T/sqthreads.out")" = "$sum3000" ] ||
    fail "python.so squares.py exited $rc, printed '$(cat "$T/sqthreads.out")': $(cat "$T/sqthreads.err")"
# A TM refuses a job file that differs from the JM's, as a module.
cp "$T/squares.py" "$T/sq2.py"
start_jm sq2 "$T/sq2.py" 3000
jm2=$JM_PID
wait_for "test -s '$T/sq2/jm.json'" 10 "sq2.py's jm.json"
echo "# changed" >>"$T/sq2.py"
timeout -s KILL 30 "$TM" --jobdir "$T/sq2" --wait 10 >"$T/tmsq2.log" 2>&1 &&
    fail "a TM ran a changed job file: $(cat "$T/tmsq2.log")"
grep -q "sq2.py differs from the job manager's" "$T/tmsq2.log" ||
    fail "the changed file was not named: $(cat "$T/tmsq2.log")"
kill "$jm2" 2>/dev/null
echo "spits-jm, spits-tm, threads: same sum; a changed file refused"

# Bytes arrive as bytes, every value of a byte; execute reverses them
# with what init made.
cat >"$T/raw.py" <<'PY'
n = w = 0
def generate(args):
    for i in range(64):
        yield bytes((i * 7 + k) % 256 for k in range(i * 5))
def init(args):                 # once per worker: execute needs it
    global flip
    flip = lambda b: b[::-1]
def execute(task):
    assert type(task) is bytes, type(task)
    return flip(task)
def commit(result):
    global n, w
    assert type(result) is bytes, type(result)
    n += len(result)
    w += sum((k + 1) * c for k, c in enumerate(result))
def finish():
    print(n, w)
PY
want=$("$PY" -c '
r = [bytes((i * 7 + k) % 256 for k in range(i * 5))[::-1] for i in range(64)]
print(sum(map(len, r)), sum(sum((k + 1) * c for k, c in enumerate(b)) for b in r))')
pyrun raw "$T/raw.py"
[ $rc = 0 ] || fail "raw.py exited $rc: $(cat "$T/raw.err")"
[ "$(cat "$T/raw.out")" = "$want" ] || fail "bytes came back as $(cat "$T/raw.out"), not $want"
echo "bytes: passed through; init ran"

# An exception in execute: the task fails as a C module's failed task
# does (exit status 3), named by type, message and file:line.
cat >"$T/boom.py" <<'PY'
def generate(args):
    return range(20)
def execute(task):
    if task == 7:
        raise ValueError("bad task %d" % task)
    return task
def commit(result):
    pass
PY
pyrun boom "$T/boom.py"
[ $rc = 3 ] || fail "boom.py exited $rc, not 3: $(cat "$T/boom.err")"
grep -q "execute failed: $T/boom.py:5: ValueError: bad task 7\$" "$T/boom.err" ||
    fail "the exception is not named: $(cat "$T/boom.err")"
grep -q "task 7 of phase 1 failed (last run: failed) on .*, where the worker returned 1: $T/boom.py:5: ValueError: bad task 7\$" "$T/boom.err" ||
    fail "task 7 not failed with its exception: $(cat "$T/boom.err")"
echo "exception in execute: named in the JM's log, exit 3"

# sys.exit() in a task is a C module's exit() there: its worker process
# ends with that status, and the task fails.
cat >"$T/sx.py" <<'PY'
import sys
def generate(args):
    return range(5)
def execute(task):
    if task == 2:
        sys.exit(4)
    return task
def commit(result):
    pass
PY
rc=0
timeout -s KILL 60 "$RUN" -n 2 --max-attempts 1 "$T/sx.py" >"$T/sx.out" 2>"$T/sx.err" || rc=$?
[ $rc = 3 ] || fail "sys.exit in a task: exit $rc, not 3: $(cat "$T/sx.err")"
grep -q "task 2 crashed its worker process (exit status 4)" "$T/sx.err" ||
    fail "sys.exit(4) is not the worker's exit: $(cat "$T/sx.err")"
echo "sys.exit in a task: its worker exits 4, exit 3"

# A SyntaxError: one line naming it, before any TM joins.
printf 'def generate(args):\n    yield 1\ndef execute(t)\n    return t\ndef commit(r):\n    pass\n' >"$T/syn.py"
pyrun syn "$T/syn.py"
[ $rc != 0 ] || fail "a SyntaxError exited 0"
[ "$(grep -c SyntaxError "$T/syn.err")" = 1 ] &&
    grep -q "$T/syn.py:3: SyntaxError: expected ':'\$" "$T/syn.err" ||
    fail "the SyntaxError is not one line naming it: $(cat "$T/syn.err")"
! grep -q "joined" "$T/syn.err" || fail "a TM joined a job that cannot load: $(cat "$T/syn.err")"
echo "SyntaxError: one line, exit $rc"

# An exception in generate ends the job, named.
cat >"$T/gboom.py" <<'PY'
def generate(args):
    yield 1
    raise OSError("no input")
def execute(task):
    return task
def commit(result):
    pass
PY
pyrun gboom "$T/gboom.py"
[ $rc != 0 ] || fail "an exception in generate exited 0"
grep -q "generate failed: $T/gboom.py:3: OSError: no input\$" "$T/gboom.err" ||
    fail "the generate exception is not named: $(cat "$T/gboom.err")"
echo "exception in generate: named, exit $rc"

# An exception in commit stops the job, its journal kept: fixed, the job
# resumes and commits each result exactly once.
# Its workers are processes (--isolate) in both runs, the resumed one
# told nothing but the job dir: a worker's parent is then the TM.
cat >"$T/cboom.py" <<'PY'
import os
total = 0
def generate(args):
    return range(1, 41)
def execute(task):
    parent = open("/proc/%d/comm" % os.getppid()).read().strip()
    return task * task if parent == "spits-tm" else 10 ** 9
def commit(result):
    global total
    if result == 25:
        raise KeyError("no %d" % result)
    total += result
def finish():
    print("total", total)
PY
pyrun cboom -d "$T/cjob" "$T/cboom.py"
[ $rc != 0 ] || fail "an exception in commit exited 0"
grep -q "commit failed: $T/cboom.py:11: KeyError: 'no 25'\$" "$T/cboom.err" ||
    fail "the commit exception is not named: $(cat "$T/cboom.err")"
sed -i 's/^    if result == 25:$/    if False:/' "$T/cboom.py"
pyrun cresume -d "$T/cjob" --resume --module-changed
[ $rc = 0 ] || fail "the fixed job did not resume: $(cat "$T/cresume.err")"
[ "$(cat "$T/cresume.out")" = "total $("$PY" -c 'print(sum(x * x for x in range(1, 41)))')" ] ||
    fail "resumed job printed '$(cat "$T/cresume.out")'"
echo "exception in commit: stopped, resumed"

# Two phases: spits_main(args, run) runs each; run returns finish()'s
# value; workers see each phase's args. Not run as __main__.
cat >"$T/two.py" <<'PY'
acc = []
def generate(args):
    for lo in range(0, 1000, 50):
        yield (lo, float(args[1]) if len(args) > 1 else None)
def execute(task):
    lo, cut = task
    xs = [(x * 7919) % 1009 for x in range(lo, lo + 50)]
    return max(xs) if cut is None else sum(1 for x in xs if x > cut)
def commit(result):
    acc.append(result)
def finish():
    r = max(acc) if phase == "max" else sum(acc)
    acc.clear()
    return r
def spits_main(args, run):
    global phase
    phase = "max"
    m = run(["max"])
    phase = "count"
    print("max", m, "above half", run(["count", str(m / 2)]))
if __name__ == "__main__":
    print("ran as __main__")
PY
want=$("$PY" -c '
xs = [(x * 7919) % 1009 for x in range(1000)]
print("max", max(xs), "above half", sum(1 for x in xs if x > max(xs) / 2))')
pyrun two "$T/two.py"
[ $rc = 0 ] && [ "$(cat "$T/two.out")" = "$want" ] ||
    fail "two.py exited $rc, printed '$(cat "$T/two.out")', not '$want': $(cat "$T/two.err")"
echo "two phases: $want"

# numpy arrays as tasks and results, where the system python has numpy
# (not under a sanitizer: numpy's import there takes most of the test,
# and the plain build's check runs this case).
if ! sanitized && "$PY" -c 'import numpy' 2>/dev/null; then
    cat >"$T/np.py" <<'PY'
import numpy as np
acc = np.zeros(8)
def generate(args):
    for i in range(30):
        yield np.arange(8, dtype=np.float64) * i
def execute(task):
    return task * 2
def commit(result):
    global acc
    acc += result
def finish():
    print(int(acc.sum()))
PY
    pyrun np "$T/np.py"
    [ $rc = 0 ] || fail "np.py exited $rc: $(cat "$T/np.err")"
    [ "$(cat "$T/np.out")" = "$((2 * 28 * 435))" ] || fail "np.py printed '$(cat "$T/np.out")'"
    echo "numpy: arrays travel"
else
    echo "numpy: not installed; its case skipped"
fi
exit 0
