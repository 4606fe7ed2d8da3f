#!/bin/bash
# A JM from a "batch script", three TMs from "queue jobs", a fourth that
# joins late, and one started before the JM: exact result, every TM exits
# 0, and jm.json/report.json hold what they promise.
. "$(dirname "$0")/lib.sh"

n=800
start_tm job tm0 -n 2         # before the JM exists
sleep 0.3
start_jm job "$MODS/bench.so" -n $n -s 25000
wait_for "[ -f $T/job/jm.json ]" 30 "jm.json"
tms="$TM_PID"
for i in 1 2 3; do start_tm job tm$i -n 2; tms="$tms $TM_PID"; done
wait_for "[ \$(grep -c joined $T/job.jm.log) -ge 4 ]" 30 "4 TMs"
sleep 0.5
start_tm job tm4 -n 2; tms="$tms $TM_PID"
for a in endpoint pid module job_id started; do
    [ "$(json "$T/job/jm.json" "'$a' in d")" = True ] || fail "jm.json has no $a"
done
[ "$(json "$T/job/jm.json" "d['module']")" = "$(readlink -f "$MODS/bench.so")" ] || fail "jm.json module"
wait $JM_PID || fail "spits-jm exited $?"
[ "$(cat "$T/job.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/job.out")'"
for p in $tms; do wait "$p" || fail "a TM exited $? instead of 0"; done
[ "$(json "$T/job/report.json" "d['counters']['committed']")" = $n ] || fail "report committed"
[ "$(json "$T/job/report.json" "d['status']")" = ok ] || fail "report status"
[ "$(json "$T/job/report.json" "len(d['tms'])")" = 5 ] || fail "report lists $(json "$T/job/report.json" "len(d['tms'])") TMs, not 5"
grep -q "spits-jm: job .* ok: 1 phase(s), $n task(s) committed" "$T/job.jm.log" || fail "no summary line"
echo ok
