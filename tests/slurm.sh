#!/bin/bash
# tests/slurm.sh - the sbatch scripts of tools/slurm/ against a real Slurm
# on this machine: a one-node cluster (slurmctld, slurmd and a munged of
# its own, all on loopback, config and state in a temporary directory).
#
#   a. spits-jm.sbatch and three spits-tm.sbatch jobs: exact primes count
#      in the JM job's output, report.json "ok", work done by a TM job,
#      every job COMPLETED with exit 0.
#   b. spits-shared.sbatch submitted 3 times for one job dir: exactly one
#      JM, two TMs, exact result, every job ended with exit 0.
#   c. spits-shared.sbatch, the JM's Slurm job cancelled mid-job: a new
#      copy takes the lock over and resumes; the surviving TM job
#      re-attaches; exact bench checksum.
#   d-g. spits-alloc: a job with no TM finishes on the TM jobs it submits
#      (killed with kill -9 and restarted: nothing submitted twice); a
#      bandwidth-bound job gets fewer jobs than a compute-bound one; a bad
#      partition is one error; SIGTERM cancels its queued jobs.
#   h. spits-jm.sbatch + spits-relay.sbatch (a relay and a TM behind it in
#      one allocation, the TM reaching it by the node's name): exact, the
#      JM saw one TM, the relay, and its TM joined behind it, every job
#      COMPLETED with exit 0. Then the relay's port taken: the relay exits
#      1, the TM goes to the JM and the job is exact, the Slurm job FAILED
#      with exit code 1.
#   i. spits-parallel --jobdir (the job manager only) and two
#      spits-tm.sbatch jobs: the sweep's output equals a local run's, byte
#      for byte, and every TM job COMPLETED with exit 0.
#   j. a job of 2 cores a task (spits-jm --cpus-per-task 2): a 1-CPU TM
#      job's TM finds 1 core in Slurm's affinity mask and refuses it
#      (with task/affinity); spits-alloc reads the request from jm.json
#      and submits with --cpus-per-task=2; Slurm gives the job 2 CPUs
#      (scontrol), its TM runs 1 worker on both cores, OMP_NUM_THREADS=2.
#   k. a job of 1 GPU a task, on 2 stand-in GPUs (gres/gpu over device
#      nodes with /dev/null's numbers): spits-alloc submits with
#      --gres=gpu:2, the TM finds Slurm's 2 GPUs and runs 2 workers, each
#      task sees one, both are used, tasks at once never share one.
#
# Run as root: installs slurm-wlm and munge with apt-get when missing.
# Prints "SKIP: <reason>" and exits 77 when it cannot run (not root, no
# packages, daemons not up in time). Everything is bounded in time and
# torn down on exit. SPITS_SLURM_LOGDIR, if set, receives the daemons'
# logs and the jobs' output files.
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
top_srcdir=${top_srcdir:-$(cd "$here/.." && pwd -P)}
top_builddir=${top_builddir:-$top_srcdir}
SCRIPTS=$top_srcdir/tools/slurm
MODS=$top_builddir/modules/.libs
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

skip() {
    echo "SKIP: $*"
    exit 77
}
fail() {
    echo "FAIL: $*"
    [ -d "${T:-/nonexistent}/out" ] && for f in "$T"/out/*.out; do
        [ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }
    done
    [ -n "${T:-}" ] && [ -f "$T/slurmctld.log" ] && { echo "--- slurmctld.log"; grep -E "error|fatal" "$T/slurmctld.log" | tail -n 10; }
    exit 1
}

[ "$(id -u)" = 0 ] || skip "not root (the test installs packages and starts slurmctld, slurmd and munged)"
for p in "$top_builddir/jobmanager/spits-jm" "$top_builddir/taskmanager/spits-tm" \
    "$top_builddir/tools/spits-alloc" "$MODS/primes.so" "$MODS/bench.so"; do
    [ -e "$p" ] || fail "not built: $p"
done

# ---- the scripts' own argument checks (no Slurm needed) -------------------
for s in spits-jm spits-tm spits-shared spits-relay; do
    out=$(env -u SPITS_JOBDIR -u SPITS_MODULE bash "$SCRIPTS/$s.sbatch" 2>&1 </dev/null)
    rc=$?
    [ "$rc" = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
        case $out in *"no job directory"*) true ;; *) false ;; esac ||
        fail "$s.sbatch without arguments: exit $rc, '$out'"
done
out=$(bash "$SCRIPTS/spits-jm.sbatch" /tmp/x 2>&1 </dev/null)
case $out in "spits-jm.sbatch: no module"*) ;; *) fail "spits-jm.sbatch without module: '$out'" ;; esac

# ---- packages ---------------------------------------------------------------
need_cmds="slurmctld slurmd sbatch srun squeue scontrol scancel sinfo munged mungekey"
missing=
for c in $need_cmds; do
    PATH=$PATH:/usr/sbin:/sbin command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
if [ -n "$missing" ]; then
    command -v apt-get >/dev/null 2>&1 || skip "no Slurm (missing:$missing) and no apt-get"
    echo "installing slurm-wlm munge (missing:$missing)"
    export DEBIAN_FRONTEND=noninteractive
    { timeout 300 apt-get update -q && timeout 600 apt-get install -y -q \
        --no-install-recommends -o Dpkg::Use-Pty=0 slurm-wlm munge; } </dev/null >/tmp/spits-slurm-apt.$$.log 2>&1 ||
        { tail -n 5 /tmp/spits-slurm-apt.$$.log; rm -f /tmp/spits-slurm-apt.$$.log; skip "apt-get install slurm-wlm munge failed"; }
    rm -f /tmp/spits-slurm-apt.$$.log
fi
PATH=$PATH:/usr/sbin:/sbin
for c in $need_cmds; do
    command -v "$c" >/dev/null 2>&1 || skip "$c not found after installing slurm-wlm munge"
done

# ---- the cluster ------------------------------------------------------------
T=$(mktemp -d "${TMPDIR:-/tmp}/spits-slurm.XXXXXX") || fail "mktemp"
chmod 755 "$T" # munged wants its socket's directory searchable by all
mkdir -p "$T/state" "$T/spool" "$T/out" "$T/bin" "$T/run"
started=

BG_PIDS=    # JMs and spits-allocs the test started outside Slurm
cleanup() {
    local rc=$? p i
    trap - EXIT INT TERM
    [ -n "$BG_PIDS" ] && kill -9 $BG_PIDS 2>/dev/null
    if [ -n "${SLURM_CONF:-}" ] && [ -n "$started" ]; then
        timeout 10 scancel --quiet --full --user=root >/dev/null 2>&1
        for i in $(seq 50); do
            [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    if [ -n "${SPITS_SLURM_LOGDIR:-}" ]; then
        mkdir -p "$SPITS_SLURM_LOGDIR" &&
            cp -f "$T"/*.log "$T"/slurm.conf "$T"/out/*.out "$SPITS_SLURM_LOGDIR"/ 2>/dev/null
    fi
    # Only the daemons this test started, by their pid files.
    for p in slurmd slurmctld munged; do
        [ -f "$T/$p.pid" ] || continue
        i=$(cat "$T/$p.pid" 2>/dev/null) || continue
        case $i in '' | *[!0-9]*) continue ;; esac
        kill "$i" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$i" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$i" 2>/dev/null
    done
    rm -rf "$T"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Two free TCP ports on loopback for slurmctld and slurmd.
read -r PORT1 PORT2 < <("$PY" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])') || fail "no free ports"

H=$(hostname -s)
NCPU=$(nproc)
mungekey --create --keyfile="$T/munge.key" || skip "mungekey cannot create a key"
munged --socket="$T/munge.sock" --key-file="$T/munge.key" --pid-file="$T/munged.pid" \
    --log-file="$T/munged.log" --seed-file="$T/munged.seed" </dev/null ||
    skip "munged does not start: $(tail -n 1 "$T/munged.log" 2>/dev/null)"
started=1

write_conf() { # SELECT_TYPE SELECT_PARAMS OVERSUBSCRIBE TASK_PLUGIN (and $GRES)
    cat >"$T/slurm.conf" <<EOF
ClusterName=spitstest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$PORT1
SlurmdPort=$PORT2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=$4
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=$1
${2:+SelectTypeParameters=$2}
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
${GRES:+GresTypes=gpu}
NodeName=$H NodeAddr=127.0.0.1 CPUs=$NCPU ${GRES:+Gres=$GRES }State=UNKNOWN
PartitionName=spits Nodes=$H Default=YES MaxTime=INFINITE State=UP OverSubscribe=$3
EOF
}

# start_cluster: slurmctld and slurmd up and the node idle within 30 s.
start_cluster() {
    local i
    timeout 30 slurmctld -f "$T/slurm.conf" </dev/null >>"$T/start.log" 2>&1 || return 1
    timeout 30 slurmd -f "$T/slurm.conf" -N "$H" </dev/null >>"$T/start.log" 2>&1 || return 1
    for i in $(seq 60); do
        case $(timeout 5 sinfo -h -n "$H" -o %T 2>/dev/null) in idle) return 0 ;; esac
        sleep 0.5
    done
    return 1
}
stop_cluster() {
    local p i
    for p in slurmd slurmctld; do
        i=$(cat "$T/$p.pid" 2>/dev/null) || continue
        kill "$i" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$i" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$i" 2>/dev/null
        rm -f "$T/$p.pid"
    done
    rm -rf "$T/state" "$T/spool" && mkdir -p "$T/state" "$T/spool"
}

export SLURM_CONF=$T/slurm.conf
# task/affinity binds each task to the CPUs Slurm gave it, as clusters
# do (or task/cgroup): a TM's affinity mask is then its allocation. Two
# stand-in GPUs for part k: character devices with /dev/null's numbers,
# which gres/gpu hands out as GPUs 0 and 1, setting CUDA_VISIBLE_DEVICES
# and SLURM_JOB_GPUS; nothing opens them.
GRES=
mkdir -p "$T/dev" && mknod "$T/dev/nvidia0" c 1 3 2>/dev/null && mknod "$T/dev/nvidia1" c 1 3 2>/dev/null &&
    printf 'AutoDetect=off\nNodeName=%s Name=gpu File=%s/dev/nvidia[0-1]\n' "$H" "$T" >"$T/gres.conf" &&
    GRES=gpu:2
write_conf select/cons_tres CR_Core NO task/affinity
start_cluster || {
    echo "task/affinity${GRES:+ and 2 stand-in GPUs} did not come up; trying task/none"
    stop_cluster
    GRES=
    rm -f "$T/gres.conf"
    write_conf select/cons_tres CR_Core NO task/none
    start_cluster
} || {
    echo "select/cons_tres did not come up; trying select/linear"
    stop_cluster
    write_conf select/linear "" FORCE:4 task/none
    start_cluster
} || skip "slurmctld/slurmd did not bring node $H to idle within 30 s ($(grep -hE 'fatal|error' "$T"/slurm*.log 2>/dev/null | tail -n 1))"
echo "cluster up: $(grep -E '^(SelectType|TaskPlugin)' "$T/slurm.conf" | tr '\n' ' ')node $H, $NCPU CPUs${GRES:+, $GRES}, ports $PORT1/$PORT2"

# ---- helpers ------------------------------------------------------------------
ln -s "$top_builddir/jobmanager/spits-jm" "$top_builddir/taskmanager/spits-tm" "$T/bin/"
export SPITS_JM_OPTS="--bind tcp://127.0.0.1:0"
export SPITS_TM_OPTS="--wait 60 --reconnect-timeout 60"
unset SPITS_JOBDIR SPITS_MODULE SPITS_ARGS SPITS_BIN

submit() { # SCRIPT SBATCH_ARGS... -- SCRIPT_ARGS...: prints the job id
    local script=$1 id
    shift
    id=$(cd "$T/out" && timeout 20 sbatch --parsable --time=5 -o "$T/out/%x-%j.out" "$@" \
        </dev/null) || fail "sbatch $script $* failed"
    echo "${id%%;*}"
}
# wait_gone SECONDS IDS...: until none of the jobs is in squeue
wait_gone() {
    local limit=$1 i left
    shift
    for i in $(seq $((limit * 2))); do
        left=$(timeout 5 squeue -h -o %i -j "$(echo "$@" | tr ' ' ,)" 2>/dev/null) || left=x
        [ -z "$left" ] && return 0
        sleep 0.5
    done
    timeout 5 squeue
    fail "jobs $* still in the queue after ${limit}s"
}
# job_ok ID: COMPLETED with exit code 0:0
job_ok() {
    local info
    info=$(timeout 5 scontrol show job "$1" 2>&1)
    case $info in
        *JobState=COMPLETED*ExitCode=0:0*) ;;
        *) fail "job $1: $(printf '%s\n' "$info" | grep -oE '(JobName|JobState|ExitCode)=[^ ]*' | tr '\n' ' ')" ;;
    esac
}
out_of() { echo "$T/out/$2-$1.out"; } # ID NAME
json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- a. spits-jm.sbatch + spits-tm.sbatch ----------------------------------
t0=$SECONDS
D=$T/run/a
jm=$(SPITS_BIN=$T/bin submit spits-jm "$SCRIPTS/spits-jm.sbatch" "$D" "$MODS/primes.so" 100000000 200)
tms=
for i in 1 2 3; do
    tms="$tms $(PATH=$top_builddir/taskmanager:$PATH SPITS_JOBDIR=$D \
        submit spits-tm --cpus-per-task=1 "$SCRIPTS/spits-tm.sbatch")"
done
wait_gone 120 $jm $tms
for j in $jm $tms; do job_ok "$j"; done
grep -qx "primes below 100000000: 5761455" "$(out_of "$jm" spits-jm)" ||
    fail "a: no exact result in the JM job's output"
[ "$(json "$D/report.json" "d['status']")" = ok ] || fail "a: report.json status is not ok"
[ "$(json "$D/report.json" "d['counters']['committed']")" = 200 ] || fail "a: committed"
[ "$(json "$D/report.json" "sum(t['done'] for t in d['tms'])")" -ge 200 ] || fail "a: the TM jobs did not do the work"
joined=$(cat $(for j in $tms; do out_of "$j" spits-tm; done) | grep -c "spits-tm: joined job")
[ "$joined" -ge 1 ] || fail "a: no TM job joined the JM"
echo "a: spits-jm.sbatch + 3 spits-tm.sbatch: exact, $joined TM job(s) joined ($((SECONDS - t0))s)"

# ---- b. spits-shared.sbatch x 3 ----------------------------------------------
t0=$SECONDS
D=$T/run/b
ids=
for i in 1 2 3; do
    ids="$ids $(SPITS_BIN=$T/bin SPITS_JOBDIR=$D SPITS_MODULE=$MODS/primes.so SPITS_ARGS="100000000 200" \
        submit spits "--cpus-per-task=1" "$SCRIPTS/spits-shared.sbatch")"
done
wait_gone 120 $ids
for j in $ids; do job_ok "$j"; done
njm=0 ntm=0 jmid=
for j in $ids; do
    f=$(out_of "$j" spits)
    grep -q "role jm: Job Manager" "$f" && { njm=$((njm + 1)); jmid=$j; }
    grep -q "role tm: Task Manager" "$f" && ntm=$((ntm + 1))
done
[ "$njm" = 1 ] && [ "$ntm" = 2 ] || fail "b: $njm JM(s) and $ntm TM(s), want 1 and 2"
grep -qx "primes below 100000000: 5761455" "$(out_of "$jmid" spits)" || fail "b: no exact result"
[ "$(json "$D/report.json" "d['status']")" = ok ] || fail "b: report.json status is not ok"
echo "b: spits-shared.sbatch x3: job $jmid was the JM, exact ($((SECONDS - t0))s)"

# ---- c. spits-shared.sbatch: the JM's job cancelled, taken over ---------------
t0=$SECONDS
D=$T/run/c
n=400
export SPITS_BIN=$T/bin SPITS_JOBDIR=$D SPITS_MODULE=$MODS/bench.so SPITS_ARGS="-n $n -s 30000"
first=$(submit spits --cpus-per-task=1 "$SCRIPTS/spits-shared.sbatch")
for i in $(seq 100); do [ -s "$D/jm.lock/owner" ] && [ -e "$D/jm.json" ] && break; sleep 0.2; done
[ -e "$D/jm.json" ] || fail "c: the first job did not start a JM"
second=$(submit spits --cpus-per-task=1 "$SCRIPTS/spits-shared.sbatch")
for i in $(seq 100); do grep -q "spits-tm: joined" "$(out_of "$second" spits)" 2>/dev/null && break; sleep 0.2; done
grep -q "role tm" "$(out_of "$second" spits)" || fail "c: the second job is not a TM"
sleep 1
[ -e "$D/report.json" ] && fail "c: the job ended before the JM's job was cancelled"
timeout 10 scancel "$first" || fail "c: scancel failed"
wait_gone 30 "$first"
third=$(submit spits --cpus-per-task=1 "$SCRIPTS/spits-shared.sbatch")
wait_gone 120 "$second" "$third"
job_ok "$second"
job_ok "$third"
f=$(out_of "$third" spits)
grep -q "taking over" "$f" && grep -q "role jm: Job Manager of $D (resuming)" "$f" ||
    fail "c: the third job did not take the JM over"
want=$(top_builddir=$top_builddir top_srcdir=$top_srcdir bash -c ". '$here/lib.sh'; bench_checksum $n")
grep -qx "$want" "$f" || fail "c: no exact checksum ('$want') in the new JM's output"
[ "$(json "$D/report.json" "d['status'], d['resumed']")" = "ok True" ] ||
    fail "c: report.json: $(json "$D/report.json" "d['status'], d['resumed']")"
echo "c: JM job cancelled, job $third took over and resumed, exact ($((SECONDS - t0))s)"
unset SPITS_JOBDIR SPITS_MODULE SPITS_ARGS

# ---- spits-alloc -------------------------------------------------------------
ALLOC=$top_builddir/tools/spits-alloc
[ -x "$ALLOC" ] || fail "not built: $ALLOC"
# alloc DIR [OPTIONS...] [-- SBATCH...]: spits-alloc with short intervals
# and small limits, in place of the (sub)shell that runs it, so that its
# pid is $! when it runs in the background.
alloc() {
    local dir=$1
    shift
    exec "$ALLOC" -v --jobdir "$dir" --script "$SCRIPTS/spits-tm.sbatch" --interval 2 \
        --max-queued 2 --max-jobs 4 --max-total 8 --time 5 --min-time 2 "$@"
}
# start_jm NAME ARGS...: a JM on this machine (not a Slurm job), no TM
start_jm() {
    local name=$1 d=$T/run/$1
    shift
    "$T/bin/spits-jm" --jobdir "$d" --bind tcp://127.0.0.1:0 "$MODS/bench.so" "$@" \
        >"$d.out" 2>"$T/$name.jm.log" &
    JM_PID=$!
    BG_PIDS="$BG_PIDS $JM_PID"
    for _ in $(seq 100); do [ -e "$d/jm.json" ] && return 0; sleep 0.1; done
    fail "the JM of $name did not start: $(tail -n 3 "$T/$name.jm.log")"
}
# ours DIR [SQUEUE ARGS]: the ids of the jobs of DIR's spits-alloc in the
# queue; "squeue-failed" when squeue fails, so no check takes it for none
ours() {
    local out
    out=$(timeout 10 squeue -h -o %i -n "$(json "$1/alloc.json" "d['name']")" "${@:2}") ||
        { echo squeue-failed; return; }
    [ -z "$out" ] || printf '%s\n' "$out" | sort -n
}
# has_jobs DIR [SQUEUE ARGS]: DIR's spits-alloc has such jobs (squeue answered)
has_jobs() {
    case $(ours "$@") in '' | *squeue-failed*) return 1 ;; esac
}
# wait_exit PID SECONDS: its exit status, or fail
wait_exit() {
    local i
    for i in $(seq $(($2 * 10))); do
        kill -0 "$1" 2>/dev/null || { wait "$1"; return; }
        sleep 0.1
    done
    fail "process $1 still running after $2 s"
}

# d. A compute-bound job started with no TM: spits-alloc's TM jobs run it
#    to the exact result; spits-alloc is killed with kill -9 after its
#    first submission and started again: every job of its name Slurm knows
#    is one it recorded (none submitted twice, none lost); at the end none
#    is queued or running, and it exits 0.
t0=$SECONDS
D=$T/run/d
n=100
mkdir -p "$D"
start_jm d -n $n -s 200000
jm=$JM_PID
alloc "$D" --target 0.1 -- --cpus-per-task=1 -o "$T/out/%x-%j.out" >"$T/d.alloc1.log" 2>&1 &
a1=$!
BG_PIDS="$BG_PIDS $a1"
for i in $(seq 300); do grep -q "submitted job" "$T/d.alloc1.log" && break; sleep 0.1; done
grep -q "submitted job" "$T/d.alloc1.log" || fail "d: spits-alloc submitted nothing: $(cat "$T/d.alloc1.log")"
kill -9 $a1
wait $a1 2>/dev/null
# As if the kill had come between sbatch and the record's update: the
# newest job is in the queue, not in alloc.json; the restart adopts it.
lastid=$(json "$D/alloc.json" "d['jobs'][-1]['id']")
"$PY" - "$D/alloc.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d['jobs'].pop(); d['submitted'] -= 1
json.dump(d, open(sys.argv[1], 'w'))
PY
alloc "$D" --target 0.1 -- --cpus-per-task=1 -o "$T/out/%x-%j.out" >"$T/d.alloc2.log" 2>&1 &
a2=$!
BG_PIDS="$BG_PIDS $a2"
wait_exit $jm 120 || fail "d: the JM exited $?: $(tail -n 3 "$T/d.jm.log")"
want=$(top_builddir=$top_builddir top_srcdir=$top_srcdir bash -c ". '$here/lib.sh'; bench_checksum $n")
grep -qx "$want" "$D.out" || fail "d: no exact checksum in the JM's output"
wait_exit $a2 30 || fail "d: the restarted spits-alloc exited $?: $(tail -n 3 "$T/d.alloc2.log")"
grep -q "the job is over" "$T/d.alloc2.log" || fail "d: spits-alloc did not see the job end"
grep -q "found job $lastid of ours in the queue, not in .*: adopted it" "$T/d.alloc2.log" ||
    fail "d: the restart did not adopt job $lastid: $(cat "$T/d.alloc2.log")"
for i in $(seq 120); do [ -z "$(ours "$D")" ] && break; sleep 0.5; done
[ -z "$(ours "$D")" ] || fail "d: jobs of spits-alloc still in the queue: $(ours "$D" -o '%i %T')"
known=$(ours "$D" -t all | tr '\n' ' ')
recorded=$(json "$D/alloc.json" "' '.join(str(j['id']) for j in sorted(d['jobs'], key=lambda j: j['id']))")
[ "${known% }" = "$recorded" ] || fail "d: Slurm knows jobs '$known', spits-alloc recorded '$recorded'"
dsub=$(json "$D/alloc.json" "d['submitted']")
[ "$dsub" = "$(echo $recorded | wc -w)" ] && [ "$dsub" -le 8 ] || fail "d: submitted $dsub for jobs '$recorded'"
[ "$(json "$D/alloc.json" "d['done']")" = True ] || fail "d: alloc.json does not say done"
[ "$(json "$D/report.json" "d['counters']['tm_joins']")" -ge 1 ] || fail "d: no TM joined"
grep -q "bound by the target\|held back by" "$T/d.alloc2.log" "$T/d.alloc1.log" ||
    fail "d: no decision from the task time: $(cat "$T/d.alloc2.log")"
echo "d: no TM, spits-alloc (kill -9, restarted) submitted $dsub job(s): exact, none left ($((SECONDS - t0))s)"

# e. A bandwidth-bound job (4 MB each way, 10 ms of work a task): the
#    model caps the workers at what the JM's bandwidth feeds, so it gets
#    fewer jobs than d. The work makes the target alone want several
#    workers (R*T/target); with none, T was 1 ms, the job ended before
#    that passed one worker, and the target, not the bandwidth, bound it.
t0=$SECONDS
D=$T/run/e
n=300
mkdir -p "$D"
start_jm e -n $n -t 4000000 -r 4000000 -s 10000
jm=$JM_PID
alloc "$D" --target 0.1 -- --cpus-per-task=1 -o "$T/out/%x-%j.out" >"$T/e.alloc.log" 2>&1 &
a=$!
BG_PIDS="$BG_PIDS $a"
wait_exit $jm 120 || fail "e: the JM exited $?: $(tail -n 3 "$T/e.jm.log")"
want=$(top_builddir=$top_builddir top_srcdir=$top_srcdir bash -c ". '$here/lib.sh'; bench_checksum $n")
grep -qx "$want" "$D.out" || fail "e: no exact checksum in the JM's output"
wait_exit $a 30 || fail "e: spits-alloc exited $?"
esub=$(json "$D/alloc.json" "d['submitted']")
grep -q "bound by the JM's bandwidth" "$T/e.alloc.log" ||
    fail "e: the model never bound the workers by bandwidth: $(cat "$T/e.alloc.log")"
[ "$esub" -lt "$dsub" ] || fail "e: the bandwidth-bound job got $esub job(s), the compute-bound one $dsub"
for i in $(seq 120); do [ -z "$(ours "$D")" ] && break; sleep 0.5; done
[ -z "$(ours "$D")" ] || fail "e: jobs of spits-alloc still in the queue"
echo "e: bandwidth-bound: $esub job(s), compute-bound: $dsub ($((SECONDS - t0))s)"

# f. sbatch refuses the job (no such partition): one error line, exit 1,
#    nothing submitted, no loop.
D=$T/run/f
mkdir -p "$D"
start_jm f -n 10 -G "$T/f.gate"
jm=$JM_PID
alloc "$D" -- --partition=nosuch >"$T/f.alloc.log" 2>&1 &
a=$!
BG_PIDS="$BG_PIDS $a"
wait_exit $a 60
rc=$?
[ $rc = 1 ] || fail "f: spits-alloc exited $rc: $(cat "$T/f.alloc.log")"
[ "$(grep -c "error:" "$T/f.alloc.log")" = 1 ] && grep "error:" "$T/f.alloc.log" | grep -qi "partition" ||
    fail "f: not one error naming the partition: $(cat "$T/f.alloc.log")"
[ "$(json "$D/alloc.json" "d['submitted']")" = 0 ] && [ -z "$(ours "$D" -t all)" ] ||
    fail "f: something was submitted"
echo "f: a bad partition: one error, exit 1, nothing submitted"

# g. Jobs that cannot start (each wants every CPU of the node) stay
#    queued; a second spits-alloc on the dir is refused; SIGTERM cancels
#    the queued ones, leaves the running one, exits 0.
t0=$SECONDS
touch "$T/f.gate"
D=$T/run/g
mkdir -p "$D"
start_jm g -n 2000 -s 200000
jm2=$JM_PID
alloc "$D" --target 0.1 -- --cpus-per-task="$NCPU" -o "$T/out/%x-%j.out" >"$T/g.alloc.log" 2>&1 &
a=$!
BG_PIDS="$BG_PIDS $a"
for i in $(seq 120); do
    case $(ours "$D" -o %T 2>/dev/null | sort -u | tr '\n' ' ') in *PENDING*RUNNING*) break ;; esac
    sleep 1
done
has_jobs "$D" -t PENDING ||
    fail "g: no queued job: $(cat "$T/g.alloc.log"; tail -n 5 "$T/g.jm.log"; ours "$D" -o '%i %T')"
# spits-status shows what spits-alloc holds, from its record.
st=$("$top_builddir/tools/spits-status" --jobdir "$D" 2>&1)
case $st in *"spits-alloc: "*" queued, "*" running, "*" submitted"*"; last: "*) ;;
    *) fail "g: spits-status does not show spits-alloc: $st" ;; esac
"$top_builddir/tools/spits-status" --jobdir "$D" --json >"$T/g.status" 2>&1 &&
    [ "$(json "$T/g.status" "d['alloc']['submitted'] >= 2 and d['alloc']['queued'] >= 1")" = True ] ||
    fail "g: spits-status --json: $(head -c 300 "$T/g.status")"
out=$(alloc "$D" 2>&1)
rc=$?
[ $rc = 1 ] && case $out in *"already running for $D"*) true ;; *) false ;; esac ||
    fail "g: a second spits-alloc: exit $rc, '$out'"
running=$(ours "$D" -t RUNNING)
case $running in '' | *squeue-failed*) fail "g: no running job of spits-alloc: '$running'" ;; esac
kill -TERM $a
wait_exit $a 30 || fail "g: spits-alloc exited $? on SIGTERM"
grep -q "stopped by SIGTERM" "$T/g.alloc.log" || fail "g: no stop line"
for i in $(seq 60); do [ -z "$(ours "$D" -t PENDING)" ] && break; sleep 0.5; done
[ -z "$(ours "$D" -t PENDING)" ] || fail "g: queued jobs left after SIGTERM: $(ours "$D" -t PENDING)"
[ "$(ours "$D" -t RUNNING)" = "$running" ] || fail "g: the running job $running was touched"
kill -TERM $jm $jm2 2>/dev/null
wait $jm $jm2 2>/dev/null
echo "g: queued jobs cancelled on SIGTERM, the running one left, a second spits-alloc refused ($((SECONDS - t0))s)"

# ---- h. spits-relay.sbatch: one relay per allocation -------------------------
t0=$SECONDS
D=$T/run/h
n=200
want=$(top_builddir=$top_builddir top_srcdir=$top_srcdir bash -c ". '$here/lib.sh'; bench_checksum $n")
# The relay binds loopback only; the TM reaches it by the node's name ($H).
export SPITS_RELAY_BIND=127.0.0.1 SPITS_RELAY_OPTS="--wait 60 --reconnect-timeout 60"
jm=$(SPITS_BIN=$T/bin submit spits-jm "$SCRIPTS/spits-jm.sbatch" "$D" "$MODS/bench.so" -n $n -s 20000)
for i in $(seq 100); do [ -e "$D/jm.json" ] && break; sleep 0.2; done
[ -e "$D/jm.json" ] || fail "h: the JM job wrote no jm.json"
relay=$(SPITS_BIN=$T/bin submit spits-relay --nodes=1 "$SCRIPTS/spits-relay.sbatch" "$D")
wait_gone 60 "$jm" "$relay"
job_ok "$jm"
job_ok "$relay"
grep -qx "$want" "$(out_of "$jm" spits-jm)" || fail "h: no exact checksum ('$want') in the JM job's output"
r=$D/report.json
[ "$(json "$r" "d['status'], d['counters']['committed']")" = "ok $n" ] || fail "h: report.json: $(json "$r" "d['status'], d['counters']")"
[ "$(json "$r" "[(t.get('relay', False), t['done'], t['behind']['joins']) for t in d['tms']]")" = "[(True, $n, 1)]" ] ||
    fail "h: report.json's TMs are not one relay that did $n tasks with one TM behind it: $(json "$r" "d['tms']")"
port=$((20000 + relay % 12000))
f=$(out_of "$relay" spits-relay)
grep -q "relay: serving task managers at tcp://127.0.0.1:$port\$" "$f" ||
    fail "h: the relay does not serve on port $port: $(grep -m1 "relay:" "$f")"
grep -q "relay: TM $H:[0-9]* joined with 1 worker" "$f" || fail "h: no TM joined behind the relay"
grep -q "spits-tm: joined job .* at tcp://$H:$port (relay)" "$f" || fail "h: the TM did not join through tcp://$H:$port"
echo "h: spits-jm.sbatch + spits-relay.sbatch: exact, the JM saw one relay with its TM behind it ($((SECONDS - t0))s)"

# The relay's port taken (by a listener that never answers): the relay
# exits 1 at once; the TM leaves the silent port for the JM after 3 s.
t0=$SECONDS
D=$T/run/hb
n=100
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True); time.sleep(120)' >"$T/hb.port" &
taker=$!
BG_PIDS="$BG_PIDS $taker"
for i in $(seq 50); do [ -s "$T/hb.port" ] && break; sleep 0.1; done
port=$(cat "$T/hb.port")
[ -n "$port" ] || fail "hb: no port taken"
start_jm hb -n $n -s 20000
jm=$JM_PID
relay=$(SPITS_BIN=$T/bin SPITS_RELAY_PORT=$port submit spits-relay --nodes=1 "$SCRIPTS/spits-relay.sbatch" "$D")
wait_exit $jm 60 || fail "hb: the JM exited $?: $(tail -n 3 "$T/hb.jm.log")"
want=$(top_builddir=$top_builddir top_srcdir=$top_srcdir bash -c ". '$here/lib.sh'; bench_checksum $n")
grep -qx "$want" "$D.out" || fail "hb: no exact checksum in the JM's output"
wait_gone 30 "$relay"
info=$(timeout 5 scontrol show job "$relay" 2>&1)
case $info in *JobState=FAILED*ExitCode=1:0*) ;;
    *) fail "hb: the relay's job: $(printf '%s\n' "$info" | grep -oE '(JobState|ExitCode)=[^ ]*' | tr '\n' ' ')" ;; esac
f=$(out_of "$relay" spits-relay)
[ "$(grep -c "spits-tm: error: relay: cannot bind" "$f")" = 1 ] || fail "hb: not one bind error: $(cat "$f")"
grep -q "trying the job manager" "$f" || fail "hb: the TM did not go to the JM"
[ "$(json "$D/report.json" "[t.get('relay', False) for t in d['tms']]")" = "[False]" ] ||
    fail "hb: report.json's TMs: $(json "$D/report.json" "d['tms']")"
kill $taker
wait $taker 2>/dev/null
unset SPITS_RELAY_BIND SPITS_RELAY_OPTS
echo "h: the relay's port taken: the relay exited 1, its TM finished the job on the JM, exact; job FAILED 1 ($((SECONDS - t0))s)"

# ---- i. spits-parallel --jobdir, TMs from spits-tm.sbatch --------------------
t0=$SECONDS
D=$T/run/i
SP=$top_builddir/tools/spits-parallel
sweep=(-k 'echo {1} x {2} = $(( {1} * {2} ))' ::: $(seq 1 40) ::: 3 7)
timeout 120 "$SP" -j 2 "${sweep[@]}" >"$T/i.local" 2>"$T/i.local.err" ||
    fail "i: the local sweep exited $?: $(tail -n 3 "$T/i.local.err")"
[ "$(wc -l <"$T/i.local")" = 80 ] && [ "$(sed -n 4p "$T/i.local")" = "2 x 7 = 14" ] ||
    fail "i: the local sweep printed: $(head -5 "$T/i.local")"
timeout 180 "$SP" --jobdir "$D" "${sweep[@]}" >"$T/i.out" 2>"$T/i.err" &
sp=$!
BG_PIDS="$BG_PIDS $sp"
for i in $(seq 300); do [ -s "$D/jm.json" ] && break; sleep 0.1; done
[ -s "$D/jm.json" ] || fail "i: spits-parallel --jobdir wrote no jm.json: $(cat "$T/i.err")"
tms=
for i in 1 2; do
    tms="$tms $(PATH=$top_builddir/taskmanager:$PATH SPITS_JOBDIR=$D \
        submit spits-tm --cpus-per-task=1 "$SCRIPTS/spits-tm.sbatch")"
done
wait_exit $sp 150 || fail "i: spits-parallel --jobdir exited $?: $(tail -n 3 "$T/i.err")"
wait_gone 120 $tms
for j in $tms; do job_ok "$j"; done
cmp -s "$T/i.local" "$T/i.out" ||
    fail "i: the Slurm sweep's output differs from the local one: $(diff "$T/i.local" "$T/i.out" | head -5)"
echo "i: spits-parallel --jobdir with 2 spits-tm.sbatch jobs: the local run's 80 lines ($((SECONDS - t0))s)"
# ---- j. a job's request per task: what Slurm gives, what the TM runs ---------
TMODS=$top_builddir/tests/modules/.libs
[ -e "$TMODS/restrace.so" ] || make -s -C "$top_builddir/tests/modules" restrace.la >/dev/null 2>&1 ||
    fail "j: cannot build the restrace test module"
# restrace_jm NAME JM_OPTIONS... TASKS MS: a JM on this machine whose
# tasks record their variables and affinity in $T/NAME.trace; JM_PID,
# once its jm.json is there
restrace_jm() {
    local name=$1 d=$T/run/$1
    shift
    mkdir -p "$d"
    "$T/bin/spits-jm" --jobdir "$d" --bind tcp://127.0.0.1:0 "${@:1:$#-2}" "$TMODS/restrace.so" \
        "${@:$#-1}" "$T/$name.trace" >"$d.out" 2>"$T/$name.jm.log" &
    JM_PID=$!
    BG_PIDS="$BG_PIDS $JM_PID"
    for _ in $(seq 100); do [ -e "$d/jm.json" ] && return 0; sleep 0.1; done
    fail "$name: the JM did not start: $(tail -n 3 "$T/$name.jm.log")"
}
# alloc_one NAME WANT ALLOC_OPTIONS...: spits-alloc submits one TM job
# for NAME's job, whose submission line must show WANT; both end. The
# job's id in ID, its output file in OUTF, Slurm's view of it in INFO.
alloc_one() {
    local name=$1 want=$2 d=$T/run/$1 a
    shift 2
    SPITS_BIN=$T/bin alloc "$d" --max-total 1 "$@" -- -o "$T/out/%x-%j.out" >"$T/$name.alloc.log" 2>&1 &
    a=$!
    BG_PIDS="$BG_PIDS $a"
    wait_exit $JM_PID 60 || fail "$name: the JM exited $?: $(tail -n 3 "$T/$name.jm.log")"
    wait_exit $a 30 || fail "$name: spits-alloc exited $?: $(tail -n 3 "$T/$name.alloc.log")"
    ID=$(json "$d/alloc.json" "d['jobs'][0]['id']")
    grep -q "submitted job $ID ($want --time=" "$T/$name.alloc.log" ||
        fail "$name: spits-alloc's submission: $(grep submit "$T/$name.alloc.log")"
    wait_gone 30 "$ID"
    job_ok "$ID"
    OUTF=$(out_of "$ID" "$(json "$d/alloc.json" "d['name']")")
    INFO=$(timeout 5 scontrol show job "$ID" 2>&1)
}

t0=$SECONDS
D=$T/run/j
restrace_jm j --cpus-per-task 2 4 100
opts=$("$ALLOC" --jobdir "$D" --sbatch-options 2>&1)
[ "$opts" = "--cpus-per-task=2" ] || fail "j: spits-alloc --sbatch-options: '$opts'"
# A TM job of 1 CPU (sbatch by hand, without the options) cannot run a
# task: its TM finds 1 core in the affinity mask Slurm set, says so and
# exits 1. (With task/none no mask is set: it would see every core.)
affinity=
if grep -q "^TaskPlugin=task/affinity" "$T/slurm.conf"; then
    affinity=1
    one=$(PATH=$top_builddir/taskmanager:$PATH SPITS_JOBDIR=$D submit spits-tm --cpus-per-task=1 "$SCRIPTS/spits-tm.sbatch")
    wait_gone 30 "$one"
    info=$(timeout 5 scontrol show job "$one" 2>&1)
    case $info in *JobState=FAILED*ExitCode=1:0*) ;;
        *) fail "j: the 1-CPU TM job: $(printf '%s\n' "$info" | grep -oE '(JobState|ExitCode)=[^ ]*' | tr '\n' ' ')" ;; esac
    grep -q "cannot run a task of job .* (--cpus-per-task 2): 0 workers: 1 core at 2 per task" "$(out_of "$one" spits-tm)" ||
        fail "j: the 1-CPU TM job's TM: $(cat "$(out_of "$one" spits-tm)")"
fi
# spits-alloc asks Slurm for the request it reads from jm.json: a job of
# 2 CPUs, whose TM runs 1 worker on both cores, OMP_NUM_THREADS=2.
alloc_one j "--cpus-per-task=2"
case $INFO in *" NumCPUs=2 "*"CPUs/Task=2 "*) ;;
    *) fail "j: Slurm gave job $ID: $(printf '%s\n' "$INFO" | grep -oE '(NumCPUs|CPUs/Task)=[^ ]*' | tr '\n' ' ')" ;; esac
# per task, its cores and OMP_NUM_THREADS; then how many core sets in all
got=$("$PY" - "$T/j.trace" <<'PY'
import sys
t = [dict(x.split('=', 1) for x in l.split()[3:]) for l in open(sys.argv[1])]
print(len(t), {len(x['CPUS'].split(',')) for x in t}, {x['OMP'] for x in t}, len({x['CPUS'] for x in t}))
PY
)
# (with task/none a TM sees every core of the node, and may run 2 workers)
[ "${got% *}" = "4 {2} {'2'}" ] && { [ -z "$affinity" ] || [ "${got##* }" = 1 ]; } ||
    fail "j: the tasks did not all run on one set of 2 cores with OMP_NUM_THREADS=2 ($got): $(cat "$T/j.trace")"
if [ -n "$affinity" ]; then
    grep -q "spits-tm: 1 worker: 2 cores at 2 per task .*(--cpus-per-task 2)$" "$OUTF" ||
        fail "j: the TM's plan: $(grep -m3 spits-tm "$OUTF")"
fi
[ "$(json "$D/report.json" "d['status'], d['resources']")" = "ok {'cpus_per_task': 2}" ] ||
    fail "j: report.json: $(json "$D/report.json" "d['status'], d.get('resources')")"
echo "j: --cpus-per-task 2: ${affinity:+a 1-CPU TM job refused it; }spits-alloc asked Slurm for it (NumCPUs=2 CPUs/Task=2), 1 worker on 2 cores ($((SECONDS - t0))s)"

# ---- k. a GPU job: spits-alloc asks for Slurm's GPUs, the TM's workers share them
if [ -n "$GRES" ]; then
    t0=$SECONDS
    restrace_jm k --gpus-per-task 1 6 300
    alloc_one k "--cpus-per-task=2 --gres=gpu:2" --workers-per-job 2
    case $INFO in *" NumCPUs=2 "*"TresPerNode=gres:gpu:2"*) ;;
        *) fail "k: Slurm gave job $ID: $(printf '%s\n' "$INFO" | grep -oE '(NumCPUs|TresPerNode)=[^ ]*' | tr '\n' ' ')" ;; esac
    grep -q "spits-tm: 2 workers: 2 GPUs at 1 per task" "$OUTF" || fail "k: the TM's plan: $(grep -m3 spits-tm "$OUTF")"
    # each task saw one of the two, in both variables; both were used;
    # tasks at the same time had different ones
    got=$("$PY" - "$T/k.trace" <<'PY'
import sys
t = []
for l in open(sys.argv[1]):
    f = l.split()
    t.append((int(f[1]), int(f[2]), dict(x.split('=', 1) for x in f[3:])))
overlap = lambda a, b: a[0] < b[1] and b[0] < a[1]
print(len(t), sorted({x[2]['CUDA'] for x in t}), all(x[2]['CUDA'] == x[2]['GPUS'] for x in t),
      any(overlap(a, b) and a[2]['CUDA'] == b[2]['CUDA'] for a in t for b in t if a is not b))
PY
)
    [ "$got" = "6 ['0', '1'] True False" ] || fail "k: the tasks' GPUs ($got): $(cat "$T/k.trace")"
    echo "k: --gpus-per-task 1: spits-alloc asked for --gres=gpu:2, the TM ran 2 workers on Slurm's GPUs 0 and 1 ($((SECONDS - t0))s)"
else
    echo "k: skipped: no stand-in GPUs (mknod failed, or the cluster came up without them)"
fi
echo ok
