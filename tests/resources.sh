#!/bin/bash
# Resources per task (spits-jm --cpus-per-task, --gpus-per-task,
# --mem-per-task): bad values are refused in one line; the request reaches
# the TMs (through a relay too) and jm.json and report.json; a TM runs as
# many workers as its GPUs and cores allow, each owning its own (the
# restrace module records, per task, its variables, affinity and times);
# a TM that can run no worker says why and leaves non-zero while the job
# waits, and resumes with its request from the journal; a task over
# --mem-per-task fails, and only it. report.json, report.html and the
# live page list each worker's cores, GPUs and memory, with a lane per
# GPU. With nvidia-smi, one job runs on the real GPUs.
. "$(dirname "$0")/lib.sh"
MOD=$TMODS/restrace.so

# bad PROG ARGS... WANT: a usage error's exit status (2; spits-parallel's
# is GNU parallel's 255) and one line naming the option
bad() {
    local want=${!#} status=2
    case $1 in *spits-parallel) status=255 ;; esac
    "${@:1:$#-1}" >"$T/bad.out" 2>&1 && fail "accepted: ${*:2:$#-2}"
    [ $? = $status ] || fail "exit status not $status for: ${*:2:$#-2}"
    [ "$(wc -l <"$T/bad.out")" = 1 ] && grep -qF -- "$want" "$T/bad.out" ||
        fail "for ${*:2:$#-2}: $(cat "$T/bad.out")"
}
bad "$JM" --gpus-per-task 0 "$MOD" 1 0 x "--gpus-per-task wants a whole number from 1 to 64, not '0'"
bad "$JM" --cpus-per-task 2x "$MOD" 1 0 x "--cpus-per-task wants a whole number from 1 to 4096, not '2x'"
bad "$JM" --mem-per-task 4GB "$MOD" 1 0 x "--mem-per-task wants a size"
bad "$RUN" --gpus-per-task -1 "$MOD" 1 0 x "--gpus-per-task wants a whole number"
bad "$top_builddir/tools/spits-parallel" --mem-per-task 0 echo ::: a "--mem-per-task wants a size"
bad "$TM" --gpus 0,,1 --jobdir "$T" "--gpus wants auto, none or a list"

# check NAME: python over NAME's trace, every line a task:
# (id, start, end, {CUDA, ROCR, ZE, GPUS, OMP, OOM, CPUS})
check() {
    local name=$1 expr=$2 what=$3
    local got
    got=$($PY - "$T/$name.trace" <<PYEOF
import sys
t = []
for line in open(sys.argv[1]):
    f = line.split()
    t.append((int(f[0]), int(f[1]), int(f[2]), dict(x.split('=', 1) for x in f[3:])))
overlap = lambda a, b: a[1] < b[2] and b[1] < a[2]
print($expr)
PYEOF
) || fail "$name: python failed"
    [ "$got" = True ] || fail "$name: $what ($got)"
}

# run_job NAME TASKS JMARGS... -- TMARGS...: a job of TASKS restrace tasks
# (150 ms each) and one TM; waits for both.
run_job() {
    local name=$1 n=$2; shift 2
    local jargs=()
    while [ "$1" != -- ]; do jargs+=("$1"); shift; done
    shift
    start_jm "$name" "${jargs[@]}" "$MOD" "$n" 150 "$T/$name.trace"
    start_tm "$name" "$name.tm" "$@"
    wait $TM_PID || fail "$name: spits-tm exited $?: $(cat "$T/$name.tm.log")"
    wait $JM_PID || fail "$name: spits-jm exited $?: $(cat "$T/$name.jm.log")"
    [ "$(wc -l <"$T/$name.trace")" = "$n" ] || fail "$name: not $n tasks traced"
}

# workers NAME [ENTRY]: each worker of report.json's first TM (or of the
# entry ENTRY names) as (cores, GPUs, memory)
workers() {
    json "$T/$1/report.json" "[(w.get('cpus'), w.get('gpus'), w.get('mem')) for w in ${2:-d['tms'][0]}['worker_res']]"
}

# 1. --gpus-per-task 1 on --gpus 0,1,2,3: 4 workers, each task sees one
#    id (in each variable: a --gpus list names no vendor), tasks at the
#    same time never share one, and all four are used. The live page,
#    while it runs, and report.json and report.html after, show each
#    worker's GPU, with a lane per GPU.
start_jm g1 --gpus-per-task 1 "$MOD" 12 500 "$T/g1.trace"
wait_for "[ -s $T/g1/jm.json ]" 30 "g1's JM to announce itself"
start_serve g1
start_tm g1 g1.tm --gpus 0,1,2,3
wait_for "[ \"\$(live g1 \"[w['gpus'] for w in d['tms'][0]['worker_res']]\")\" = \"['0', '1', '2', '3']\" ]" \
    10 "the live status to list the workers' GPUs"
curl -s --max-time 10 -o "$T/g1.live.html" "${BASE}live?token=$TOKEN" || fail "g1: no live part"
[ "$(grep -c '<tr class="worker"><td>[^<]*:'$TM_PID'</td><td class="n">[0-3]</td><td>shared</td><td>[0-3]</td><td class="n">not limited</td>' "$T/g1.live.html")" = 4 ] ||
    fail "g1: the live page does not list the 4 workers: $(grep -c worker "$T/g1.live.html")"
[ "$(grep -c 'class="gpulane"' "$T/g1.live.html")" = 4 ] || fail "g1: the live page has not 4 GPU lanes"
wait $TM_PID || fail "g1: spits-tm exited $?: $(cat "$T/g1.tm.log")"
wait $JM_PID || fail "g1: spits-jm exited $?: $(cat "$T/g1.jm.log")"
[ "$(wc -l <"$T/g1.trace")" = 12 ] || fail "g1: not 12 tasks traced"
[ "$(workers g1)" = "[(None, '0', None), (None, '1', None), (None, '2', None), (None, '3', None)]" ] ||
    fail "g1: report.json's workers: $(workers g1)"
# (each worker's runs: at most the tasks traced on its GPU (the last
# STATS may predate the last results), together the TM's runs)
runs=$($PY - "$T/g1/report.json" "$T/g1.trace" <<'PYEOF'
import json, sys
tm = json.load(open(sys.argv[1]))['tms'][0]
traced = {}
for line in open(sys.argv[2]):
    g = dict(x.split('=', 1) for x in line.split()[3:])['GPUS']
    traced[g] = traced.get(g, 0) + 1
ws = tm['worker_res']
print(all(0 <= w['runs'] <= traced.get(w['gpus'], 0) and w['busy_s'] >= 0 for w in ws) and
      sum(w['runs'] for w in ws) == tm['runs'] > 0)
PYEOF
)
[ "$runs" = True ] || fail "g1: the workers' runs are not the tasks traced on their GPUs"
for g in 0 1 2 3; do
    grep -q "<tr class=\"worker\"><td>[^<]*:$TM_PID</td><td class=\"n\">$g</td><td>shared</td><td>$g</td>" "$T/g1/report.html" ||
        fail "g1: report.html has no row for worker $g"
    grep -q ">[^<]*:$TM_PID GPU $g</text>" "$T/g1/report.html" || fail "g1: report.html has no lane for GPU $g"
done
[ "$(grep -c 'class="gpulane"' "$T/g1/report.html")" = 4 ] || fail "g1: report.html has not 4 GPU lanes"
kill $SERVE_PID
grep -q "4 workers: 4 GPUs at 1 per task (--gpus-per-task 1)" "$T/g1.tm.log" ||
    fail "g1: the TM does not say why 4 workers: $(cat "$T/g1.tm.log")"
grep -q "with 4 worker(s)" "$T/g1.tm.log" || fail "g1: did not join with 4 workers"
check g1 "all(x[3]['GPUS'] in '0123' and len(x[3]['GPUS']) == 1 and x[3]['CUDA'] == x[3]['GPUS'] == x[3]['ROCR'] == x[3]['ZE'] for x in t)" \
    "a task did not see exactly one id"
check g1 "not any(overlap(a, b) and a[3]['GPUS'] == b[3]['GPUS'] for a in t for b in t if a is not b)" \
    "two tasks at the same time shared a GPU"
check g1 "sorted(set(x[3]['GPUS'] for x in t)) == ['0', '1', '2', '3']" "not all 4 GPUs used"
[ "$(json "$T/g1/jm.json" "d['resources']")" = "{'gpus_per_task': 1}" ] || fail "g1: jm.json"
[ "$(json "$T/g1/report.json" "d['resources']")" = "{'gpus_per_task': 1}" ] || fail "g1: report.json"

# 2. --gpus-per-task 2, through a relay: 2 workers, with ids 0,1 and 2,3;
#    and a TM with more workers than cores behind it (--gpus-per-task 1 on
#    6 GPUs): the relay takes its plan's count (6, STATS), not its HELLO's
#    (a worker per core).
start_jm g2 --gpus-per-task 2 "$MOD" 8 150 "$T/g2.trace"
port=$(free_port)
start_relay g2 g2.relay "$port"; relay=$RELAY_PID
start_tm g2 g2.tm --via "tcp://127.0.0.1:$port" --gpus 0,1,2,3
wait $TM_PID || fail "g2: spits-tm exited $?: $(cat "$T/g2.tm.log")"
wait $JM_PID || fail "g2: spits-jm exited $?"
wait $relay || fail "g2: the relay exited $?"
grep -q "2 workers: 4 GPUs at 2 per task" "$T/g2.tm.log" || fail "g2: $(cat "$T/g2.tm.log")"
# (the relay passes the TM's workers up, in its behind list)
[ "$(workers g2 "d['tms'][0]['behind']['tms'][0]")" = "[(None, '0,1', None), (None, '2,3', None)]" ] ||
    fail "g2: report.json's workers behind the relay: $(workers g2 "d['tms'][0]['behind']['tms'][0]")"
grep -q '<tr class="worker"><td>[^<]*:[0-9]* (via [^<]*)</td><td class="n">1</td><td>shared</td><td>2,3</td>' "$T/g2/report.html" ||
    fail "g2: report.html does not list the workers behind the relay"
check g2 "sorted(set(x[3]['GPUS'] for x in t)) == ['0,1', '2,3']" "ids not 0,1 and 2,3"
check g2 "not any(overlap(a, b) and a[3]['GPUS'] == b[3]['GPUS'] for a in t for b in t if a is not b)" \
    "two tasks at the same time shared GPUs"
start_jm g6 --gpus-per-task 1 "$MOD" 6 400 "$T/g6.trace"
start_relay g6 g6.relay "$port"; relay=$RELAY_PID
start_tm g6 g6.tm --via "tcp://127.0.0.1:$port" --gpus 0,1,2,3,4,5
wait $TM_PID || fail "g6: spits-tm exited $?: $(cat "$T/g6.tm.log")"
wait $JM_PID || fail "g6: spits-jm exited $?"
wait $relay || fail "g6: the relay exited $?"
check g6 "max(sum(b[1] <= a[1] < b[2] for b in t) for a in t) == 6" "not 6 tasks at once behind the relay"

# 3. Cores: on 2 cores (taskset), --cpus-per-task 2 is 1 worker on both,
#    OMP_NUM_THREADS=2; --cpus-per-task 1 is 2 workers, one core each,
#    never one core for two tasks at once. No GPU variable is set.
cores=$($PY -c 'import os; c = sorted(os.sched_getaffinity(0)); print("%d,%d" % (c[0], c[1]) if len(c) > 1 else "")')
[ -n "$cores" ] || fail "this test needs 2 cores"
start_jm c2 --cpus-per-task 2 "$MOD" 4 150 "$T/c2.trace"
taskset -c "$cores" "$TM" --jobdir "$T/c2" --wait 60 >"$T/c2.tm.log" 2>&1 ||
    fail "c2: spits-tm exited $?: $(cat "$T/c2.tm.log")"
wait $JM_PID || fail "c2: spits-jm exited $?"
grep -q "1 worker: 2 cores at 2 per task (--cpus-per-task 2)" "$T/c2.tm.log" || fail "c2: $(cat "$T/c2.tm.log")"
check c2 "all(x[3]['CPUS'] == '$cores' and x[3]['OMP'] == '2' and x[3]['CUDA'] == x[3]['ZE'] == '-' for x in t)" \
    "a task did not run on both cores with OMP_NUM_THREADS=2"
start_jm c1 --cpus-per-task 1 --mem-per-task 64M "$MOD" 8 150 "$T/c1.trace"
taskset -c "$cores" "$TM" --jobdir "$T/c1" --wait 60 >"$T/c1.tm.log" 2>&1 ||
    fail "c1: spits-tm exited $?: $(cat "$T/c1.tm.log")"
wait $JM_PID || fail "c1: spits-jm exited $?"
grep -q "2 workers: 2 cores at 1 per task" "$T/c1.tm.log" || fail "c1: $(cat "$T/c1.tm.log")"
# (report.json: each worker's cores and memory, and no GPU; so the page)
both=$($PY -c "a, b = $cores; print('%d-%d' % (a, b) if b == a + 1 else '%d,%d' % (a, b))")
[ "$(workers c2)" = "[('$both', None, None)]" ] || fail "c2: report.json's workers: $(workers c2)"
[ "$(workers c1)" = "[('${cores%,*}', None, 67108864), ('${cores#*,}', None, 67108864)]" ] ||
    fail "c1: report.json's workers: $(workers c1)"
grep -q "<tr class=\"worker\"><td>[^<]*</td><td class=\"n\">1</td><td>${cores#*,}</td><td>none</td><td class=\"n\">64 MiB</td>" "$T/c1/report.html" ||
    fail "c1: report.html does not list worker 1's core and memory"
! grep -q 'class="gpulane"' "$T/c1/report.html" || fail "c1: report.html has GPU lanes"
check c1 "all(x[3]['CPUS'] in '$cores'.split(',') and x[3]['OMP'] == '1' for x in t)" "a task not on one core"
check c1 "not any(overlap(a, b) and a[3]['CPUS'] == b[3]['CPUS'] for a in t for b in t if a is not b)" \
    "two tasks at the same time shared a core"

# spits-parallel's commands get the same, over what its own environment
# carries (OMP_NUM_THREADS=7 here).
mask=$(taskset -c "$cores" grep Cpus_allowed_list /proc/self/status | cut -f2)
OMP_NUM_THREADS=7 taskset -c "$cores" "$top_builddir/tools/spits-parallel" --cpus-per-task 2 \
    'echo {}:$OMP_NUM_THREADS:$(grep Cpus_allowed_list /proc/self/status | cut -f2)' ::: a b \
    >"$T/p2.out" 2>"$T/p2.err" || fail "p2: spits-parallel exited $?: $(cat "$T/p2.err")"
[ "$(sort "$T/p2.out" | tr '\n' ' ')" = "a:2:$mask b:2:$mask " ] || fail "p2: $(cat "$T/p2.out")"

# 4. A request no TM can meet: the TM says why in one line and exits 1;
#    the job waits for another TM (stopped here by SIGTERM).
start_jm n1 --gpus-per-task 1 "$MOD" 2 0 "$T/n1.trace"
jm=$JM_PID
"$TM" --jobdir "$T/n1" --wait 60 --gpus none >"$T/n1.tm.log" 2>&1 && fail "n1: the TM exited 0"
[ $? = 1 ] || fail "n1: the TM did not exit 1"
[ "$(grep -c . "$T/n1.tm.log")" = 1 ] &&
    grep -q "cannot run a task of job .* (--gpus-per-task 1): 0 workers: 0 GPUs at 1 per task; GPUs from --gpus" "$T/n1.tm.log" ||
    fail "n1: $(cat "$T/n1.tm.log")"
kill -0 $jm || fail "n1: the job did not wait"
# (its BYE says why: the JM logs it, and counts a refusal, not a loss)
wait_for "grep -q 'refused the job: cannot run a task of job .*: 0 workers: 0 GPUs at 1 per task' '$T/n1.jm.log'" \
    10 "the JM to log why the TM refused the job"
# ...and one behind a relay: the relay logs why, and the job waits on.
port=$(free_port)
start_relay n1 n1.relay "$port"; relay=$RELAY_PID
wait_for "grep -q 'joined job' '$T/n1.relay.log'" 30 "n1: the relay to join"
"$TM" --jobdir "$T/n1" --via "tcp://127.0.0.1:$port" --wait 60 --gpus none \
    >"$T/n1.tm2.log" 2>&1 && fail "n1: the TM behind the relay exited 0"
wait_for "grep -q 'relay: TM .* refused the job: cannot run a task of job .*: 0 workers: 0 GPUs at 1 per task' '$T/n1.relay.log'" \
    10 "the relay to log why the TM refused the job"
kill -TERM $relay; wait $relay
"$top_builddir/tools/spits-status" --jobdir "$T/n1" >"$T/n1.status" || fail "n1: spits-status failed"
grep -q "^  refused by 1 task manager(s); the last: cannot run a task of job .* (--gpus-per-task 1): 0 workers: 0 GPUs at 1 per task; GPUs from --gpus$" \
    "$T/n1.status" || fail "n1: spits-status does not say why: $(cat "$T/n1.status")"
kill -TERM $jm
wait $jm
[ ! -e "$T/n1.trace" ] || fail "n1: a task ran"
[ "$(json "$T/n1/report.json" "(d['counters']['tm_refusals'], d['counters']['tm_losses'])")" = "(1, 0)" ] ||
    fail "n1: report.json does not count one refusal and no loss"

# The stopped job resumes with its request from the journal: another one
# on the command line is one error line; none at all keeps it, and a TM
# with 2 GPUs runs 2 workers.
"$JM" --resume --jobdir "$T/n1" --bind tcp://127.0.0.1:0 --gpus-per-task 2 >"$T/n1.bad" 2>&1 &&
    fail "n1: a resume with another request was accepted"
[ "$(grep -c . "$T/n1.bad")" = 1 ] &&
    grep -q "error: job .* in $T/n1 asks --gpus-per-task 1 per task (its journal), not --gpus-per-task 2: a resumed job keeps its request" "$T/n1.bad" ||
    fail "n1: a conflicting request on resume: $(cat "$T/n1.bad")"
start_jm n1 --resume
start_tm n1 n1.tm2 --gpus 0,1
wait $TM_PID || fail "n1: the TM of the resumed job exited $?: $(cat "$T/n1.tm2.log")"
wait $JM_PID || fail "n1: the resumed job exited $?: $(cat "$T/n1.jm.log")"
grep -q "2 workers: 2 GPUs at 1 per task (--gpus-per-task 1)" "$T/n1.tm2.log" ||
    fail "n1: the resumed job's TM: $(cat "$T/n1.tm2.log")"
[ "$(json "$T/n1/report.json" "(d['resumed'], d['status'], d['resources'])")" = "(True, 'ok', {'gpus_per_task': 1})" ] ||
    fail "n1: the resumed job's report.json: $(json "$T/n1/report.json" "(d['resumed'], d['status'], d.get('resources'))")"

# 5. --mem-per-task 64M (with --cpus-per-task 1): each worker is a
#    process, with OMP_NUM_THREADS=1 and oom_score_adj 1000; task 0 touches
#    200M and fails, "exceeded --mem-per-task 64M", in the TM's log, the
#    joblog and report.json; the other tasks commit; the TM goes on.
start_jm m1 --cpus-per-task 1 --mem-per-task 64M --max-attempts 1 --joblog "$T/m1.jl" \
    "$MOD" 6 100 "$T/m1.trace" 200
taskset -c "$cores" "$TM" --jobdir "$T/m1" --wait 60 >"$T/m1.tm.log" 2>&1 ||
    fail "m1: spits-tm exited $?: $(cat "$T/m1.tm.log")"
wait $JM_PID
[ $? = 3 ] || fail "m1: spits-jm did not exit 3 (task 0 failed): $(cat "$T/m1.jm.log")"
over="exceeded --mem-per-task 64M: its process reached"
grep -q "each worker is a process (--isolate), so that --mem-per-task limits each task" \
    "$T/m1.tm.log" || fail "m1: $(cat "$T/m1.tm.log")"
# (the peak, in MiB with a decimal: over 64, and at most the task's 200
# with the worker's own few)
peak=$(sed -n "s/^spits-tm: error: task 0: $over \([0-9]*\.[0-9]\)M resident$/\1/p" "$T/m1.tm.log")
[ -n "$peak" ] && awk -v p="$peak" 'BEGIN { exit !(p > 64 && p < 240) }' ||
    fail "m1: the TM's log does not say task 0 $over 64-240M: $(cat "$T/m1.tm.log")"
[ "$(awk -F '\t' '$1 == 0 { print $7, $9 }' "$T/m1.jl")" = "-1 phase 1: $over ${peak}M resident" ] ||
    fail "m1: joblog: $(cat "$T/m1.jl")"
[ "$(json "$T/m1/report.json" "([(f['task'], f['reason'], f['return_code'], f['error']) for f in d['failed_tasks']], d['counters']['committed'])")" = \
  "([(0, 'failed', -1, '$over ${peak}M resident')], 5)" ] ||
    fail "m1: report.json: $(json "$T/m1/report.json" "d['failed_tasks']")"
[ "$(wc -l <"$T/m1.trace")" = 5 ] || fail "m1: not 5 tasks traced"
check m1 "sorted(x[0] for x in t) == [1, 2, 3, 4, 5] and all(x[3]['OMP'] == '1' and x[3]['OOM'] == '1000' for x in t)" \
    "a task without OMP_NUM_THREADS=1 or oom_score_adj 1000"

# A command of spits-parallel's over the limit fails its task too (the
# largest peak of the processes a worker process waited for; dd's buffer
# is 96M, filled).
"$top_builddir/tools/spits-parallel" --mem-per-task 64M \
    "if [ {} = big ]; then dd if=/dev/zero of=/dev/null bs=96M count=1 2>/dev/null; fi; echo {}" \
    ::: a big c \
    >"$T/pm.out" 2>"$T/pm.err" && fail "pm: spits-parallel exited 0"
[ "$(sort "$T/pm.out" | tr '\n' ' ')" = "a c " ] || fail "pm: $(cat "$T/pm.out")"
grep -q "task 1 of phase 1 failed (last run: failed) on .*: exceeded --mem-per-task 64M: a process it started reached [0-9.]*M resident$" \
    "$T/pm.err" || fail "pm: $(cat "$T/pm.err")"

# 6. A real GPU: every task sees one of the TM's own (--gpus auto).
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    run_job r1 4 --gpus-per-task 1 -- --gpus auto
    check r1 "all(len(x[3]['GPUS']) > 0 and x[3]['CUDA'] == x[3]['GPUS'] for x in t)" "a task saw no GPU"
else
    echo "resources.sh: no nvidia-smi: the real-GPU check skips"
fi
echo "resources.sh: ok"
