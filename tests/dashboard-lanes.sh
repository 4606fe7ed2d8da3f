#!/bin/bash
# The dashboard keeps the lane of a TM that is gone, as report.html does:
# a TM killed with -9 still has its lane, which ends with the lost mark,
# and the live status lists it in tms_gone as "lost".
. "$(dirname "$0")/lib.sh"

start_jm a --tm-timeout 2 "$MODS/bench.so" -n 200000 -s 2000
start_tm a tm1 -n 2
tm1=$TM_PID
start_tm a tm2 -n 2
wait_for "[ \"\$(live a 'len(d[\"tms\"])')\" = 2 ]" 30 "both TMs to join"
wait_for "[ \"\$(tm_done a $tm1)\" -ge 1 ] 2>/dev/null" 30 "TM 1 to commit"
kill -9 $tm1
wait_for "grep -q ':$tm1 lost' $T/a.jm.log" 30 "the JM to lose TM 1"
# (asked again for up to 10 s: the status a JM serves is its view as of
# its last tick, and spits-status may get no answer on a loaded machine)
for i in $(seq 1 50); do
    gone=$(live a "[(t['pid'], t['gone']) for t in d['tms_gone']]")
    [ "$gone" = "[($tm1, 'lost')]" ] && break
    sleep 0.2
done
[ "$gone" = "[($tm1, 'lost')]" ] || fail "tms_gone: '$gone'; now: $(live a "d.get('tms_gone')")"
start_serve a
curl -s --max-time 10 -o "$T/live.html" "${BASE}live?token=$TOKEN" || fail "no live part"
grep -q ">[^<]*:$tm1</text>" "$T/live.html" || fail "the lost TM has no lane"
grep -q 'class="lostmark"' "$T/live.html" || fail "the lost TM's lane has no lost mark"
grep -q "busy [0-9.]* s ([0-9]*%), lost</text>" "$T/live.html" || fail "the lane does not say lost"
echo ok
