#!/bin/bash
# spits-alloc's bad input, with no Slurm: sbatch options it must not pass
# on (in every form sbatch reads them), no squeue or sbatch, a controller
# that cannot be found, a job dir whose job is over, a dry run with no
# queue, the count of tasks left while the module still generates, and
# the job's request per task in sbatch's options.
# Slurm's commands are absent (PATH is a directory without them) or
# stand-in scripts that record their arguments.
. "$(dirname "$0")/lib.sh"
ALLOC=$top_builddir/tools/spits-alloc

mkdir -p "$T/none" "$T/quiet" "$T/lost" "$T/fake"
# quiet: a queue with nothing in it; lost: squeue as it is when no
# controller can be found; fake: that empty queue, an sbatch that records
# its arguments and answers a job id, a scancel that records its own.
printf '#!/bin/bash\nexit 0\n' >"$T/quiet/squeue"
printf '#!/bin/bash\necho "squeue: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host" >&2\necho "squeue: error: Unable to contact slurm controller (connect failure)" >&2\nexit 1\n' >"$T/lost/squeue"
cp "$T/quiet/squeue" "$T/fake/squeue"
printf '#!/bin/bash\nprintf "%%s\\n" "$@" >>"%s/sbatch.argv"\necho 4242\n' "$T" >"$T/fake/sbatch"
printf '#!/bin/bash\nprintf "%%s\\n" "$@" >>"%s/scancel.argv"\n' "$T" >"$T/fake/scancel"
chmod +x "$T"/quiet/* "$T"/lost/* "$T"/fake/*

# alloc SECONDS BIN ARGS...: spits-alloc with PATH=BIN, killed (TERM)
# after SECONDS; its stdout and stderr in $T/out, its status in rc
alloc() {
    local secs=$1 bin=$2; shift 2
    # (the source tree's script: an uninstalled build, as in make distcheck,
    # has none in its prefix)
    timeout -s TERM "$secs" env PATH="$bin" "$ALLOC" --script "$top_srcdir/tools/slurm/spits-tm.sbatch" \
        "$@" >"$T/out" 2>&1
    rc=$?
}

# one_error RC PHRASE WHAT: exit status RC and, with --quiet, one line
# that has PHRASE
one_error() {
    [ "$rc" = "$1" ] || fail "$3: exit $rc, not $1: $(cat "$T/out")"
    [ "$(wc -l <"$T/out")" = 1 ] || fail "$3: $(wc -l <"$T/out") lines: $(cat "$T/out")"
    grep -qF -- "$2" "$T/out" || fail "$3: said '$(cat "$T/out")', not '$2'"
}

# --- 1. sbatch options: every form sbatch reads is refused, with why ----
# refused PHRASE ARGS...: "-- ARGS" is a usage error (2) naming PHRASE
refused() {
    local phrase=$1; shift
    alloc 5 "$T/none" --jobdir "$T/opts" --dry-run -i 2 -- "$@"
    one_error 2 "$phrase" "-- $*"
}
single="spits-alloc submits single jobs"
refused "sbatch may read it as --array (it takes abbreviations), and $single" --arr=1-4
refused "sbatch may read it as --array" --a 1-4
refused "drop '--array=1-4' after --: $single" --array=1-4
refused "drop '-a' after --: $single" -a 1-4
refused "sbatch reads -a (--array) in it, and $single" -a1-4
refused "sbatch reads -a (--array) in it" -Ha1-4
refused "sbatch may read it as --clusters" --clu=c2
refused "sbatch may read it as --clusters" --cluster c2
refused "squeue and scancel see this cluster only" --clusters=c2
refused "sbatch reads -M (--clusters) in it" -Mc2
refused "sbatch may read it as --job-name" --job=x
refused "names its jobs itself" -J x
refused "sbatch reads -J (--job-name) in it" -vHJx
refused "sbatch may read it as --time" --tim=5
refused "sets each job's time itself: give spits-alloc --time MIN" --time 5
refused "sbatch reads -t (--time) in it" -t5
refused "drop '--parsable' after --: spits-alloc gives sbatch --parsable itself, to read the job id" --parsable
refused "sbatch may read it as --parsable" --pars
refused "sbatch would not return until the job ends" -W
refused "sbatch would submit nothing" --test-o
refused "sbatch would print its help" --he
# a value is a value, and the word after a flag is the job script
refused "'job.sh' is no sbatch option: sbatch would take it for the job script" -p cpu -H job.sh
refused "drop the second '--'" -p cpu -- x
alloc 5 "$T/none" --jobdir "$T/opts" --dry-run --gres "gpu 2"
one_error 2 "--gres wants a generic resource name such as gpu or gpu:a100, not 'gpu 2'" "--gres 'gpu 2'"
echo "1: forbidden sbatch options refused in every form, each with its reason"

# --- 2. a job dir whose job is over: exit 0 at once -------------------------
start_jm over "$MODS/bench.so" -n 20
start_tm over over.tm
wait_for "[ -s $T/over/report.json ] && ! kill -0 $JM_PID 2>/dev/null" 60 "the small job to end"
touch -d '1 hour ago' "$T/over/report.json"     # it ended a while ago
# Legitimate sbatch options, full names next to refused ones, pass.
alloc 10 "$T/none" --jobdir "$T/over" -i 2 -- --time-min=5 --account=proj \
    --acctg-freq=task=10 -p cpu --partition cpu --cluster-constraint=x --use-min-nodes \
    --wait-all-nodes=1 --verbose -o "$T/%j.out" --hold -c 2
[ $rc = 0 ] || fail "2: spits-alloc on a finished job exited $rc: $(cat "$T/out")"
grep -q "job [0-9a-f]* in $T/over is over (report.json): nothing to submit" "$T/out" ||
    fail "2: no word that the job is over: $(cat "$T/out")"
[ ! -e "$T/over/alloc.json" ] || fail "2: it wrote alloc.json for a job that was over"
# An earlier spits-alloc's record (killed with a job queued): that job goes.
now=$(date +%s)
echo "{\"version\": 1, \"created\": $now, \"job_id\": \"\", \"submitted\": 1, \"cancelled\": 0, \"jobs\": [{\"id\": 77, \"state\": \"queued\", \"submitted\": $now, \"time_min\": 60}], \"done\": false}" >"$T/over/alloc.json"
printf '#!/bin/bash\necho "77 PENDING"\n' >"$T/fake/squeue"
alloc 20 "$T/fake" --jobdir "$T/over" -i 2
[ $rc = 0 ] || fail "2: exited $rc: $(cat "$T/out")"
grep -qx 77 "$T/scancel.argv" || fail "2: the queued job 77 was not cancelled: $(cat "$T/out")"
[ "$(json "$T/over/alloc.json" "d['done']")" = True ] || fail "2: alloc.json is not done"
cp "$T/quiet/squeue" "$T/fake/squeue"
echo "2: a finished job: exit 0 at once; an earlier run's queued job cancelled"

# --- 3. no squeue, no controller, no sbatch: one error, exit 1 ---------------
# A job with no TM: its JM answers, and one job is wanted to start with.
start_jm live "$MODS/bench.so" -n 1000000 -s 20000
wait_for "[ -s $T/live/jm.json ]" 30 "the JM to announce itself"
alloc 30 "$T/none" --jobdir "$T/live" -i 2 --quiet
one_error 1 "squeue: not found on PATH, or it cannot run: spits-alloc watches the queue with Slurm's squeue" "no squeue"
t0=$SECONDS
alloc 60 "$T/lost" --jobdir "$T/live" -i 2 --quiet
one_error 1 "res_nsearch error: Unknown host (3 tries, no answer yet): no Slurm controller can be reached from here" "no controller"
echo "3: no squeue: exit 1 at once; no controller: exit 1 after 3 tries ($((SECONDS - t0)) s)"
alloc 30 "$T/quiet" --jobdir "$T/live" -i 2 --quiet
one_error 1 "sbatch: not found on PATH, or it cannot run: spits-alloc submits with Slurm's sbatch" "no sbatch"
echo "3: no sbatch: exit 1"

# --- 4. a dry run decides without a queue ---------------------------------
alloc 8 "$T/none" --jobdir "$T/live" -i 2 --dry-run
grep -q "(dry run) would submit: sbatch --parsable --job-name=spits-tm-[0-9a-f]* --time=60 $top_srcdir/tools/slurm/spits-tm.sbatch $T/live\$" "$T/out" ||
    fail "4: the dry run with no squeue decided nothing: $(cat "$T/out")"
grep -q "(dry run) squeue: not found on PATH.*deciding as if no job of ours were queued" "$T/out" ||
    fail "4: the dry run did not say it has no queue: $(cat "$T/out")"
echo "4: a dry run with no squeue decides"

# --- 5. tasks left while the module generates: a floor --------------------
start_tm live live.tm -n 1
timeout -s TERM 60 env PATH="$T/fake" "$ALLOC" --script "$top_srcdir/tools/slurm/spits-tm.sbatch" \
    --jobdir "$T/live" -i 2 --target 1 \
    --max-total 1 -- --time-min=5 -p cpu >"$T/out" 2>&1 &
apid=$!
PIDS="$PIDS $apid"
wait_for "grep -q 'task(s) of' $T/out" 50 "a decision from the task time"
[ "$(live live "d['tasks']['generation_done']")" = False ] || fail "5: generation is done"
# (the decision is logged before its sbatch runs: wait for that too)
wait_for "[ -s $T/sbatch.argv ]" 30 "the first sbatch"
kill -TERM $apid
wait $apid
line=$(grep -m1 'task(s) of' "$T/out")
grep -Eq "at least [0-9]+ task\(s\) of" <<<"$line" || fail "5: not a floor: $line"
grep -qx -- "--time-min=5" "$T/sbatch.argv" && grep -qx -- "--job-name=spits-tm-[0-9a-f]*" "$T/sbatch.argv" ||
    fail "5: sbatch did not get the options: $(cat "$T/sbatch.argv" 2>/dev/null)"
echo "5: $line"

# --- 6. the job's request per task goes to sbatch -------------------------
# Each TM job asks for --workers-per-job tasks' worth of it, before the
# options after --, which may override it (-p is no resource).
start_jm req --cpus-per-task 2 --gpus-per-task 1 --mem-per-task 100M "$MODS/bench.so" -n 1000000 -s 20000
wait_for "[ -s $T/req/jm.json ]" 30 "the JM to announce itself"
rm -f "$T/sbatch.argv"
timeout -s TERM 60 env PATH="$T/fake" "$ALLOC" --script "$top_srcdir/tools/slurm/spits-tm.sbatch" \
    --jobdir "$T/req" -i 2 --max-total 1 --workers-per-job 2 -- -p cpu >"$T/out" 2>&1 &
apid=$!
PIDS="$PIDS $apid"
wait_for "grep -q 'submitted job 4242' $T/out" 30 "the first sbatch"
kill -TERM $apid
wait $apid
[ "$(head -n 6 "$T/sbatch.argv" | tr '\n' ' ')" = "--parsable --cpus-per-task=4 --gres=gpu:2 --mem=200M -p cpu " ] &&
    sed -n 7p "$T/sbatch.argv" | grep -q -- "^--job-name=spits-tm-" ||
    fail "6: sbatch's arguments for a job of 2 cores, a GPU and 100M a task: $(cat "$T/sbatch.argv")"
grep -q "submitted job 4242 (--cpus-per-task=4 --gres=gpu:2 --mem=200M --time=60)" "$T/out" ||
    fail "6: the submission line: $(cat "$T/out")"
echo "6: a job of 2 cores, a GPU and 100M a task: sbatch $(head -n 4 "$T/sbatch.argv" | tr '\n' ' ')..."
# --sbatch-options prints them, for sbatch by hand; -c after -- is the user's.
[ "$("$ALLOC" --jobdir "$T/req" --sbatch-options)" = "--cpus-per-task=2 --gres=gpu:1 --mem=100M" ] &&
    [ "$("$ALLOC" --jobdir "$T/req" --sbatch-options --gres gpu:a100 -- -c 8)" = "--gres=gpu:a100:1 --mem=100M" ] ||
    fail "6: --sbatch-options: $("$ALLOC" --jobdir "$T/req" --sbatch-options 2>&1)"
"$ALLOC" --jobdir "$T/none" --sbatch-options >"$T/out" 2>&1
rc=$?
one_error 1 "no job in $T/none yet (no jm.json): its spits-jm says what its tasks need, start it first" "--sbatch-options, no job"
echo "6: --sbatch-options: $("$ALLOC" --jobdir "$T/req" --sbatch-options)"
