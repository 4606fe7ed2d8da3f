#!/usr/bin/env bash
# tools/bench/cluster-shape.sh - measures one machine (a cluster node) for
# spits, and sets each figure next to what a simple cost model predicts.
#
# Usage: cluster-shape.sh [--quick] [--json FILE] [--no-check]
#
#   --quick     small sizes (about 3.5 minutes on 2 cores; tools/spits-check
#               runs this): every row runs, exact, and its prediction must
#               be within 20% of the measurement, or the exit status is 1
#   --json FILE the table as JSON as well (rows, calibration, machine)
#   --no-check  with --quick: report the ratios but do not judge them,
#               and run each row once (the median of 3 is for the judge)
#
# Runs from a build tree (tools/bench/ of a built spits) or from an
# untarred bundle (bench/ of spits-VERSION-linux-x86_64, next to its bin/
# and lib/spits/): nothing installed is used but bash, coreutils, python3
# (the figures and the model) and taskset (util-linux; pinning only).
# Everything runs on this machine over 127.0.0.1, the bench module's jobs
# with CurveZMQ unless a row says insecure, and every job's result is
# checked (the bench module's checksum): an inexact job fails the run.
#
# Each row is preceded by its calibration: small jobs (run just before it,
# so under the same load) that measure what each process costs in CPU
# seconds (user + system of every thread, sampled from /proc every 20 ms,
# 50 ms in full mode) in a window where only that work ran:
#   empty     empty tasks, JM + 1 TM (2 workers): per task of each, from
#             the TM's join to the last commit (and the TM's start-up time)
#   relay     the same through one relay (spits-tm --serve): per task of
#             the JM, the relay and the TM
#   joins     400 (500) virtual TMs (spits-tm --simulate, CURVE) joining
#             with 1 s tasks: per join of the JM and of the harness, from
#             the harness's start to the last join (and how long it
#             waited, its TMs started, for the first join); then with
#             20 ms tasks: per task of both, less their joins' CPU
#   rjoins    the relays row's harnesses (4 at most) joining through one
#             relay (1 s tasks): per join of the relay and of the
#             harnesses (and the wait for the first join)
#   bytes     tasks of the bandwidth row's size, CURVE or insecure (the
#             row's bytes in --quick, a quarter in full): per task
# and, for each process, its busiest thread's share of its CPU.
#
# Then the rows (sizes: full / --quick; processes scale with the cores):
#   scale     10,000 slots: 20 TMs x 500 workers, 100,000 tasks of 0.5 s
#             (2 x 100, 2,000 of 0.1 s): tasks/s from the last join to the
#             last commit (and the efficiency)
#   joins     10,000 virtual TMs of 4 slots with CURVE (1,000): joins/s
#             from the first harness's start to the last join, and the
#             efficiency from the last join: the job's work over its slots
#             (rounds x task time) over the time from the last join to the
#             last commit (1 s tasks; 0.5 s)
#   relays    2,000 virtual TMs direct, then through 40 relays, a harness
#             of 50 behind each (400 and 4: 100 each): joins/s and efficiency
#   relaycost empty tasks on 1 TM direct and through 1 relay, the JM,
#             the relay and the TM pinned to a core each (taskset) when
#             there are 3 cores or more ("not pinned" otherwise): tasks/s
#             of each and relayed / direct
#   bandwidth tasks of 64 KiB, 1 MiB and 8 MiB, CURVE and insecure: MB/s
#             from the first join to the last commit, next to a plain
#             ZeroMQ transfer of the same size and shape (zmq-ceiling)
# In --quick (judged) every row but scale runs 3 times, each after its own
# calibration; the run of the median ratio stands for the row.
#
# The model: a row's work is a number of units (tasks, joins, bytes); the
# calibration's costs give the CPU seconds it takes, and the machine gives
#   rate = min(demand, free cores / CPU per unit, min over processes of
#              N / (CPU per unit x busiest thread's share))
# where demand is what the job asks (slots / task time), free cores are
# the cores less what other programs used during the row's window
# (/proc/stat less this job's processes; the loopback's interrupt time
# counts as ours), and the last term is each kind of process's serial
# part (N of them sharing the units). A pinned process has a core: its
# bound is 1 / its CPU per unit. A TM's empty tasks (relaycost) are a
# pipeline of processes: when their calibration left cores idle, they
# keep at most as many busy as they did then. Joins compete for the
# cores with the tasks of the TMs joined so far. Efficiency rows predict
# min(1, rate / demand) times what the joins' stagger allows (TMs joining
# evenly from the first join to the last, each task started at once on
# the worker free first); joins/s and relaycost add the calibration's
# wait (time = wait + units / rate): for tasks, the TM's start-up; for
# joins, a round trip once the harness has started its TMs (their
# start-up is CPU, in each join's cost). A measured/predicted ratio far from 1
# shows where the machine stops scaling as the costs say it should:
# contention, a serial thread, round trips, a cost that grows with scale.
set -uo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
quick=0 out='' check=1
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --json)
            [ $# -ge 2 ] || { echo "cluster-shape: --json needs a FILE" >&2; exit 2; }
            out=$2
            shift
            ;;
        --no-check) check=0 ;;
        -h | --help) sed -n '2,/^set -uo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "cluster-shape: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ -n "$out" ]; then
    : 2>/dev/null >>"$out" || { echo "cluster-shape: cannot write $out" >&2; exit 2; }
fi

# The programs: a bundle's (bench/ next to bin/ and lib/spits/) or a build
# tree's (tools/bench/ under the top directory).
if [ -x "$here/../bin/spits-jm" ] && [ -f "$here/../lib/spits/bench.so" ]; then
    top=$(cd "$here/.." && pwd)
    JM=$top/bin/spits-jm TM=$top/bin/spits-tm BENCH=$top/lib/spits/bench.so
    CEIL=$here/zmq-ceiling where="bundle $top"
else
    top=$(cd "$here/../.." && pwd)
    JM=$top/jobmanager/spits-jm TM=$top/taskmanager/spits-tm BENCH=$top/modules/.libs/bench.so
    CEIL=$here/zmq-ceiling where="build tree $top"
fi
for f in "$JM" "$TM" "$CEIL"; do
    [ -x "$f" ] || { echo "cluster-shape: $f is missing: build first (make), or run the bundle's copy" >&2; exit 2; }
done
[ -f "$BENCH" ] || { echo "cluster-shape: $BENCH is missing: build first (make)" >&2; exit 2; }
PY=$(command -v python3) || { echo "cluster-shape: python3 is needed (the figures and the model) and not found" >&2; exit 2; }
MODEL=$here/cluster-shape.py
[ -f "$MODEL" ] || { echo "cluster-shape: $MODEL is missing" >&2; exit 2; }

cores=$(nproc)
pin=0
if [ "$cores" -ge 3 ] && command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
    pin=1
fi
# Virtual TMs a harness process: about five descriptors each.
fds=$(ulimit -n)
[ "$fds" = unlimited ] && fds=1048576
per_proc=$(((fds - 200) / 5))
[ $per_proc -gt 2000 ] && per_proc=2000
[ $per_proc -ge 50 ] || { echo "cluster-shape: ulimit -n is $fds: too few descriptors for the simulate harness (ulimit -n 4096 or more)" >&2; exit 2; }

W=$(mktemp -d "${TMPDIR:-/tmp}/cluster-shape.XXXXXX")
trap 'pkill -KILL -P $$ 2>/dev/null; [ -n "${SPITS_SHAPE_KEEP:-}" ] || rm -rf "$W"' EXIT
bad=0
LIMIT=900    # seconds any one process may take (a guard, not a target)

# ---- running and costing processes ---------------------------------------
# cpu_run FILE CMD...: runs CMD (in the background of a subshell, its pid
# in FILE.pid) and writes the CPU seconds it used, its threads and
# children counted, to FILE.cpu (bash's times: getrusage of the children).
cpu_run() {
    local f=$1
    shift
    (
        "$@" &
        echo $! >"$f.pid"
        wait $!
        rc=$?
        times >"$f.times"
        exit $rc
    )
}
# now: the epoch time, to the microsecond.
if [ -n "${EPOCHREALTIME:-}" ]; then
    now() { echo "${EPOCHREALTIME/,/.}"; }
else
    now() { date +%s.%N; }
fi
# on CORE: sets ON to the prefix that runs a command on CORE when pinning
# (and CORE is not -), else to nothing.
on() {
    ON=()
    if [ $pin = 1 ] && [ "$1" != - ]; then ON=(taskset -c "$1"); fi
}
# follow NAME: samples every process of job NAME as it starts, until
# NAME.done (cluster-shape.py sample); its pid in FOLLOW. Returns once
# the sampler runs (its first sample is written).
follow() {
    local i
    "$PY" "$MODEL" sample "$W/$1" $SAMPLE &
    FOLLOW=$!
    for i in $(seq 500); do
        [ -s "$W/$1.samp" ] && return
        sleep 0.01
    done
}
# exact NAME JM_SUBSHELL_PID N: the job's JM exited 0 with the bench
# module's checksum of N tasks; else the run fails. A JM left without a
# live TM, relay or harness for 30 s is stopped (it would wait for good).
exact() {
    local f p alone=0 live
    [ -f "$W/sum.$3" ] || "$PY" "$MODEL" checksum "$3" >"$W/sum.$3"
    while kill -0 "$2" 2>/dev/null && [ $alone -lt 300 ]; do
        live=0 f=
        for f in "$W/$1".*.pid; do
            [ "$f" = "$W/$1.jm.pid" ] || [ ! -f "$f" ] ||
                { read -r p <"$f" && kill -0 "$p" 2>/dev/null && live=1; }
        done
        [ -f "$f" ] || live=1   # (none started yet)
        if [ $live = 1 ]; then alone=0; else alone=$((alone + 1)); fi
        sleep 0.1
    done
    [ $alone -lt 300 ] || kill -KILL "$(cat "$W/$1.jm.pid")" 2>/dev/null
    if ! wait "$2" || [ "$(cat "$W/$1.out")" != "$(cat "$W/sum.$3")" ]; then
        echo "cluster-shape: job $1 was not exact: $(cat "$W/$1.out") $(tail -3 "$W/$1.err")" >&2
        bad=1
    fi
}
# jm NAME CORE OPTS... -- BENCH-ARGS...: starts job NAME's JM; JMSH is
# the subshell to wait for.
jm() {
    local name=$1 core=$2 opts=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    follow "$name"
    on "$core"
    cpu_run "$W/$name.jm" "${ON[@]}" timeout -s KILL $LIMIT "$JM" -q --journal off "${opts[@]}" \
        --jobdir "$W/$name" --bind tcp://127.0.0.1:0 "$BENCH" "$@" >"$W/$name.out" 2>"$W/$name.err" &
    JMSH=$!
}
# tm NAME TAG CORE OPTS...: a spits-tm of job NAME (also a relay or a
# harness, by its options), costed as NAME.TAG; its subshell in TMSH.
tm() {
    local name=$1 tag=$2 core=$3
    shift 3
    on "$core"
    now >"$W/$name.$tag.t0"
    cpu_run "$W/$name.$tag" "${ON[@]}" timeout -s KILL $LIMIT "$TM" --jobdir "$W/$name" --wait 120 "$@" \
        >"$W/$name.$tag.log" 2>&1 &
    TMSH=$!
}
# relay NAME TAG CORE: a relay of job NAME; its endpoint in RELAY_EP.
relay() {
    local i
    tm "$1" "$2" "$3" --serve tcp://127.0.0.1:0
    RELAY_EP=
    for i in $(seq 600); do
        RELAY_EP=$(sed -n 's/.*relay: serving task managers at \(tcp:[^ ]*\).*/\1/p' "$W/$1.$2.log" | head -1)
        [ -n "$RELAY_EP" ] && break
        sleep 0.1
    done
    [ -n "$RELAY_EP" ] || { echo "cluster-shape: job $1's relay $2 does not serve: $(tail -2 "$W/$1.$2.log")" >&2; bad=1; }
}
# waitall NAME PIDS...: every TM, relay or harness of job NAME exited 0;
# then its sampler is done.
waitall() {
    local name=$1 p
    shift
    for p in "$@"; do
        wait "$p" || { echo "cluster-shape: a process of job $name failed: $(tail -2 "$W/$name".*.log | tail -3)" >&2; bad=1; }
    done
    : >"$W/$name.done"
    wait "$FOLLOW"
}
# spec JSON: a row (or calibration) for the model, one JSON object a line.
spec() { echo "$1" >>"$W/specs"; }

# ---- sizes -----------------------------------------------------------------
if [ $quick = 1 ]; then
    CAL_E=1000000 CAL_K=400 CAL_BW=1600000000
    SCALE=(2 100 2000 100000)      # TMs, workers each, tasks, task us
    JOINS=(1000 4 0.5 4)           # virtual TMs, slots each, task s, rounds
    RELAYS=(400 4 4 0.5 4)         # virtual TMs, relays, slots each, task s, rounds
    RELE=2000000                   # empty tasks
    BW=1600000000                  # bytes a bandwidth job
    SAMPLE=0.02                    # seconds between samples of the processes
    REPS=3                         # runs of each row but scale (the median judged)
    [ $check = 1 ] || REPS=1       # (nothing judged: one run of each shows it)
else
    CAL_E=2000000 CAL_K=500 CAL_BW=400000000
    SCALE=(20 500 100000 500000)
    JOINS=(10000 4 1 10)
    RELAYS=(2000 40 4 1 10)
    RELE=10000000
    BW=1600000000
    SAMPLE=0.05
    REPS=1
fi
SIZES=(65536 1048576 8388608)
# harnesses K: processes for K virtual TMs (at most PER_PROC each, and
# about one a core beyond the JM's so the harnesses are not the bound).
harnesses() {
    local p=$(((($1) + per_proc - 1) / per_proc)) c=$((cores > 2 ? cores - 2 : 1))
    [ $quick = 1 ] && c=1
    [ $p -lt $c ] && p=$c
    [ $p -gt "$1" ] && p=$1
    echo $p
}

echo "cluster-shape on $(hostname) ($cores cores, $(uname -r)), $(date -u +%FT%TZ)$([ $quick = 1 ] && echo ', --quick'); $where"
[ $pin = 1 ] || echo "(relaycost not pinned: $([ "$cores" -lt 3 ] && echo "$cores cores, pinning needs 3" || echo "taskset does not work here"))"
# ---- calibration: each row's costs, measured just before it --------------
CALN=0    # calibration jobs so far (each job's name is its own)
# cal_empty SEC [pinned]: empty tasks, JM + 1 TM (pinned as the
# relaycost row's are).
cal_empty() {
    local sec=$1 o=() name=cal-e$1-$((++CALN)) j t c1=- c2=-
    [ $sec = insecure ] && o=(--insecure)
    [ "${2:-}" = pinned ] && c1=0 c2=2
    jm $name $c1 "${o[@]}" -- -n $CAL_E
    j=$JMSH
    tm $name tm $c2 "${o[@]}" -n 2 --prefetch 2000
    t=$TMSH
    exact $name $j $CAL_E
    waitall $name $t
    spec "{\"cal\": \"empty\", \"job\": \"$name\", \"sec\": \"$sec\", \"n\": $CAL_E}"
}
# cal_relay: the same through a relay (pinned as the relaycost row is).
cal_relay() {
    local j r t name=cal-rel-$((++CALN))
    jm $name 0 -- -n $CAL_E
    j=$JMSH
    relay $name rel 1
    r=$TMSH
    tm $name tm 2 -n 2 --prefetch 2000 --via "$RELAY_EP"
    t=$TMSH
    exact $name $j $CAL_E
    waitall $name $t $r
    spec "{\"cal\": \"relay\", \"job\": \"$name\", \"n\": $CAL_E}"
}
# cal_joins: one harness of CAL_K virtual TMs of 4 slots, with one round
# of 1 s tasks (joins with little else); then again with 25 rounds of
# 20 ms tasks (a task among many connections).
cal_joins() {
    local what rounds task n j t name
    for what in joins tasks; do
        rounds=1 task=1 name=cal-$what-$((++CALN))
        [ $what = tasks ] && rounds=25 task=0.02
        n=$((CAL_K * 4 * rounds))
        jm $name - -- -n $n
        j=$JMSH
        tm $name sim0 - --simulate $CAL_K -n 4 --sim-task-time $task
        t=$TMSH
        exact $name $j $n
        waitall $name $t
        spec "{\"cal\": \"$what\", \"job\": \"$name\", \"n\": $n, \"k\": $CAL_K}"
    done
}
# cal_rjoins P KK: P harnesses of KK virtual TMs of 4 slots (the relays
# row's harnesses, at most 4 of them) joining through one relay, with one
# round of 1 s tasks: per join of the relay and of the harnesses (whose
# cost a join grows with the TMs each drives), and the wait for the first
# join through a relay.
cal_rjoins() {
    local p=$1 kk=$2 i j r pids=() name=cal-rjoins-$((++CALN))
    [ "$p" -gt 4 ] && p=4
    local n=$((p * kk * 4))
    jm $name - --tm-timeout 30 -- -n $n
    j=$JMSH
    relay $name rel -
    r=$TMSH
    for ((i = 0; i < p; i++)); do
        tm $name "sim$i" - --simulate "$kk" -n 4 --sim-task-time 1 --via "$RELAY_EP"
        pids+=("$TMSH")
    done
    exact $name $j $n
    waitall $name "${pids[@]}" $r
    spec "{\"cal\": \"rjoins\", \"job\": \"$name\", \"n\": $n, \"k\": $((p * kk))}"
}
# bytes_job NAME SIZE SEC N: one JM and one TM (2 workers) run N tasks
# of SIZE bytes, CURVE or insecure; the result checked, both waited for.
bytes_job() {
    local name=$1 size=$2 sec=$3 n=$4 o=() j t
    [ $sec = insecure ] && o=(--insecure)
    jm $name - "${o[@]}" -- -n $n -t $size
    j=$JMSH
    tm $name tm - "${o[@]}" -n 2
    t=$TMSH
    exact $name $j $n
    waitall $name $t
}

# cal_bytes SIZE SEC N: N tasks of SIZE bytes, CURVE or insecure.
cal_bytes() {
    local size=$1 sec=$2 n=$3 name=cal-b$2$1-$((++CALN))
    bytes_job $name $size $sec $n
    spec "{\"cal\": \"bytes\", \"job\": \"$name\", \"sec\": \"$sec\", \"n\": $n, \"size\": $size}"
}

# ---- rows --------------------------------------------------------------------
echo "measuring..."
# scale: real TMs with real worker threads.
cal_empty curve
read -r k w n us <<<"${SCALE[*]}"
jm scale - --tm-timeout 120 -- -n "$n" -s "$us"
j=$JMSH
pids=()
for ((i = 0; i < k; i++)); do
    tm scale "tm$i" - -q -n "$w"
    pids+=("$TMSH")
done
exact scale $j "$n"
waitall scale "${pids[@]}"
spec "{\"row\": \"scale\", \"job\": \"scale\", \"n\": $n, \"slots\": $((k * w)), \"task\": $(awk -v u="$us" 'BEGIN { print u / 1e6 }'), \"what\": \"$((k * w)) slots ($k TMs x $w), $((us / 1000)) ms tasks\"}"

# simjob NAME TABLE K RELAYS SLOTS TASK_S ROUNDS: K virtual TMs in
# harness processes, direct (RELAYS 0) or a relay each (RELAYS
# harnesses); its rows go in the table's row TABLE (joins or relays).
simjob() {
    local name=$1 table=$2 k=$3 nrel=$4 slots=$5 task=$6 rounds=$7 p i via=() pids=() rels=()
    p=$(harnesses "$k")
    [ "$nrel" -gt 0 ] && p=$nrel
    local n=$((k * slots * rounds))
    jm "$name" - --tm-timeout 30 -- -n $n
    local j=$JMSH
    for ((i = 0; i < nrel; i++)); do
        relay "$name" "rel$i" -
        rels+=("$TMSH") via+=("$RELAY_EP")
    done
    for ((i = 0; i < p; i++)); do
        local kk=$((k / p + (i < k % p)))
        if [ "$nrel" -gt 0 ]; then
            tm "$name" "sim$i" - --simulate $kk -n "$slots" --sim-task-time "$task" --via "${via[$i]}"
        else
            tm "$name" "sim$i" - --simulate $kk -n "$slots" --sim-task-time "$task"
        fi
        pids+=("$TMSH")
    done
    exact "$name" $j $n
    waitall "$name" "${pids[@]}" "${rels[@]}"
    spec "{\"row\": \"joins\", \"table\": \"$table\", \"job\": \"$name\", \"n\": $n, \"k\": $k, \"relays\": $nrel, \"procs\": $p, \"slots\": $((k * slots)), \"task\": $task}"
}
# (Rows of a second or so run REPS times in --quick, each after its own
# calibration, and the model judges the run of the median ratio: on a VM,
# two runs of the same job a few seconds apart differ by up to 25%.)
read -r k s task rounds <<<"${JOINS[*]}"
for ((rep = 1; rep <= REPS; rep++)); do
    cal_joins
    simjob joins-$rep joins "$k" 0 "$s" "$task" "$rounds"
done
read -r k nrel s task rounds <<<"${RELAYS[*]}"
for ((rep = 1; rep <= REPS; rep++)); do
    cal_joins
    simjob relays-d-$rep relays "$k" 0 "$s" "$task" "$rounds"
    cal_relay
    cal_rjoins "$nrel" $((k / nrel))
    simjob relays-r-$rep relays "$k" "$nrel" "$s" "$task" "$rounds"
done

# relaycost: empty tasks direct and through one relay, pinned.
for ((rep = 1; rep <= REPS; rep++)); do
for via in direct relayed; do
    if [ $via = direct ]; then cal_empty curve pinned; else cal_relay; fi
    name=rc-$via-$rep
    jm $name 0 -- -n $RELE -s 0
    j=$JMSH
    o=()
    if [ $via = relayed ]; then
        relay $name rel 1
        r=$TMSH o=(--via "$RELAY_EP")
    fi
    tm $name tm 2 -n 2 --prefetch 2000 "${o[@]}"
    t=$TMSH
    exact $name $j $RELE
    if [ $via = relayed ]; then waitall $name $t $r; else waitall $name $t; fi
    spec "{\"row\": \"relaycost\", \"job\": \"$name\", \"n\": $RELE, \"via\": \"$via\", \"pinned\": $pin}"
done
done

# bandwidth: spits next to the plain ZeroMQ ceiling (the best of 2);
# without CURVE twice the bytes (it moves them 2-3 times as fast).
for size in "${SIZES[@]}"; do
    for sec in curve insecure; do
        bytes=$BW
        [ $sec = insecure ] && bytes=$((2 * BW))
        n=$((bytes / size))
        [ $n -gt 100000 ] && n=100000
        c=()
        [ $sec = curve ] && c=(curve)
        best=0
        for i in 1 2; do
            v=$(timeout -s KILL $LIMIT "$CEIL" $size $n "${c[@]}" 2>/dev/null) || continue
            best=$(awk -v a="$best" -v b="$v" 'BEGIN { print (b > a ? b : a) }')
        done
        for ((rep = 1; rep <= REPS; rep++)); do
            cal_bytes $size $sec $((n * (CAL_BW / 1000000) / (BW / 1000000)))
            name=bw-$sec-$size-$rep
            bytes_job $name $size $sec $n
            spec "{\"row\": \"bandwidth\", \"job\": \"$name\", \"n\": $n, \"size\": $size, \"sec\": \"$sec\", \"ceiling\": $best}"
        done
    done
done

"$PY" "$MODEL" model "$W" "$cores" "$quick" "$check" "${out:-}"
rc=$?
[ $bad = 0 ] || { echo "SOME JOBS WERE NOT EXACT"; exit 1; }
exit $rc
