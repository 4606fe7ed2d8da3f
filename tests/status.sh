#!/bin/bash
# Watching a job: spits-status asks the live JM over its CURVE socket (table
# and --json), falls back to report.json once the job is over, and fails
# clearly when there is no job or no answer; the JM prints progress lines;
# spits-plot draws the finished job from its report.json.
. "$(dirname "$0")/lib.sh"

ST=$top_builddir/tools/spits-status
n=3000
# (-G: the job's last task waits for the gate, opened after the live checks.)
start_jm job --progress-interval 0.3 "$MODS/bench.so" -n $n -s 2000 -G "$T/gate"
jm=$JM_PID
start_tm job tm -n 2; tm=$TM_PID
wait_for "grep -q joined $T/job.jm.log" 30 "the TM to join"
# Every task but the gated last one committed: from here the live view
# holds still until the gate opens, so each figure is exact.
wait_for "[ \"\$(committed job)\" = $((n - 1)) ]" 60 "all but the gated task to commit"
# The TM's STATS say where the gated task is: a STATS sent before a
# worker took it says it queued, the next (within a second) running.
wait_for "[ \"\$(live job \"d['tasks']['running']\")\" = 1 ]" 30 "the gated task to show as running"
kill -0 $jm 2>/dev/null || fail "the job ended too soon"
"$ST" --jobdir "$T/job" >"$T/table" || fail "spits-status exited $?"
grep -q "^job [0-9a-f]*, phase 1, running for " "$T/table" || fail "table: $(cat "$T/table")"
grep -q " of $n committed (" "$T/table" || fail "no committed line: $(cat "$T/table")"
grep -Eq "^  [^ ]+ +$tm +2 " "$T/table" || fail "no row for the TM: $(cat "$T/table")"
grep -qx "  task managers: 1 alive, 1 joined, 0 re-attach(es), 0 loss(es), 0 lost now" "$T/table" \
    || fail "no task managers line: $(cat "$T/table")"
"$ST" --jobdir "$T/job" --json >"$T/live.json" || fail "spits-status --json exited $?"
[ "$(json "$T/live.json" "(d['state'], d['phase'], d['tasks']['total'], d['tasks']['generation_done'])")" = \
    "('running', 1, $n, True)" ] || fail "live json: $(cat "$T/live.json")"
[ "$(json "$T/live.json" "[(t['pid'], t['workers']) for t in d['tms']]")" = "[($tm, 2)]" ] \
    || fail "live json tms: $(json "$T/live.json" "d['tms']")"
[ "$(json "$T/live.json" "sorted(d['tm_counts'].items())")" = \
    "[('joins', 1), ('leaves', 0), ('losses', 0), ('lost_now', 0), ('reattaches', 0)]" ] \
    || fail "live json tm_counts: $(json "$T/live.json" "d['tm_counts']")"
[ "$(json "$T/live.json" "[d['tasks'][k] for k in ('committed', 'running', 'sent', 'resent', 'duplicates', 'failed', 'generated')]")" = \
    "[$((n - 1)), 1, $n, 0, 0, 0, $n]" ] || fail "live json counters: $(json "$T/live.json" "d['tasks']")"
[ "$(json "$T/live.json" "[(t['done'], t['held'], t['busy']) for t in d['tms']]")" = "[($((n - 1)), 1, 1)]" ] \
    || fail "live json TM row: $(json "$T/live.json" "d['tms']")"
[ "$(json "$T/live.json" "0 < d['jm']['rss_bytes'] <= d['jm']['max_rss_bytes']")" = True ] \
    || fail "live json memory: $(json "$T/live.json" "d['jm']")"
touch "$T/gate"
wait $jm || fail "the job exited $?"
wait $tm
grep -q "progress: phase 1 \[[#.]*\] [0-9]*/$n " "$T/job.jm.log" || fail "no progress line"
# Over: the report.
"$ST" --jobdir "$T/job" --json >"$T/over.json" || fail "spits-status on a finished job exited $?"
[ "$(json "$T/over.json" "(d['status'], d['counters']['committed'])")" = "('ok', $n)" ] \
    || fail "finished json: $(cat "$T/over.json")"
"$ST" --jobdir "$T/job" | grep -q "is over: ok (exit 0)" || fail "finished table"
# A damaged jm.json does not hide the report: one warning naming the file
# and the problem, then the report, exit 0.
id=$(json "$T/job/report.json" "d['job_id']")
cp -a "$T/job" "$T/dmg" && printf '{"version": 1, "job_id": "%s' "$id" >"$T/dmg/jm.json"
for mode in table json; do
    "$ST" --jobdir "$T/dmg" $([ $mode = json ] && echo --json) >"$T/dmg.$mode" 2>"$T/dmg.err" \
        || fail "damaged jm.json ($mode): exit $?: $(cat "$T/dmg.err")"
    [ "$(wc -l <"$T/dmg.err")" = 1 ] && grep -Eq "^spits-status: warning: $T/dmg/jm.json: .+ \(line 1\); showing $T/dmg/report.json instead \(job $id is over\)\$" \
        "$T/dmg.err" || fail "damaged jm.json ($mode) said: $(cat "$T/dmg.err")"
done
[ "$(head -1 "$T/dmg.table" | sed 's/ after .*//')" = "job $id is over: ok (exit 0)" ] &&
    sed -n 2p "$T/dmg.table" | grep -q "^  $n committed, 0 commit error(s), 0 failed, 0 re-sent, 0 duplicates, 1 task manager(s) (0 re-attach(es), 0 loss(es), 0 lost for good); details in $T/dmg/report.json\$" \
    || fail "damaged jm.json table: $(cat "$T/dmg.table")"
[ "$(json "$T/dmg.json" "(d['job_id'], d['status'], d['counters']['committed'])")" = "('$id', 'ok', $n)" ] \
    || fail "damaged jm.json json: $(head -5 "$T/dmg.json")"
# A truncated report.json of a job whose JM has exited: one error line
# naming both, at once (no --timeout wait), exit 1.
cp -a "$T/job" "$T/trunc" && head -c 100 "$T/job/report.json" >"$T/trunc/report.json"
out=$("$ST" --jobdir "$T/trunc" 2>&1); rc=$?
[ $rc = 1 ] && [ "$(echo "$out" | wc -l)" = 1 ] && case $out in
    "spits-status: error: job $id: its job manager (spits-jm pid $(json "$T/job/jm.json" "d['pid']") on $(json "$T/job/jm.json" "d['host']")) has exited, and $T/trunc/report.json is damaged: "*" (line "*")") true ;;
    *) false ;; esac || fail "truncated report.json: $rc $out"
# The TM's runs (its last STATS, sent before its BYE, count), its busy
# time and the performance model: every run sleeps
# 2 ms, so busy time is at least 2 ms a run, and the model's terms agree.
r=$T/job/report.json
[ "$(json $r "[(t['pid'], t['runs'], t['busy_s'] >= 0.002 * t['runs']) for t in d['tms']]")" = \
    "[($tm, $n, True)]" ] || fail "TM busy time: $(json $r "d['tms']")"
[ "$(json $r "(lambda m: (m['tasks'], m['workers'], m['task_s'] >= 0.002,
    abs(m['worker_bound_s'] - m['tasks'] * m['task_s'] / m['workers']) < 1e-6,
    abs(m['bandwidth_bound_s'] - m['tasks'] * m['bytes_per_task'] / (m['bandwidth_mb_s'] * 1e6)) < 1e-6,
    m['predicted_s'] == max(m['worker_bound_s'], m['bandwidth_bound_s']),
    m['bound'] == ('workers' if m['worker_bound_s'] >= m['bandwidth_bound_s'] else 'bandwidth'),
    m['measured_s'] > 0))(d['model'])")" = "($n, 2, True, True, True, True, True, True)" ] \
    || fail "model: $(json $r "d['model']")"
grep -Eq "model: max\(N\*T/W, N\*S/BW\) = max\([0-9.e+-]+, [0-9.e+-]+\) s = [0-9.e+-]+ s \((worker|bandwidth)-bound\); measured [0-9.e+-]+ s" \
    "$T/job.jm.log" || fail "no model line: $(tail -3 "$T/job.jm.log")"
# A picture of it: valid SVG, the timeline's points, one lane and one
# join mark per TM.
"$top_builddir/tools/spits-plot" --jobdir "$T/job" -o "$T/job.svg" || fail "spits-plot exited $?"
[ "$("$PY" - "$T/job.svg" "$T/job/report.json" <<'PY'
import json, sys, xml.etree.ElementTree as ET
svg = ET.parse(sys.argv[1]).getroot()
rep = json.load(open(sys.argv[2]))
ns = '{http://www.w3.org/2000/svg}'
line = svg.find(ns + 'polyline')
pts = line.get('points').split()
lanes = [r for r in svg.iter(ns + 'rect') if r.get('class') == 'lane']
joins = [l for l in svg.iter(ns + 'line') if l.get('class') == 'join']
busy = [r for r in svg.iter(ns + 'rect') if r.get('class') == 'busy']
share = lambda r: float(r.get('width'))
print(len(pts) == len(rep['timeline']['points']), len(lanes), len(joins), len(busy),
      0 < share(busy[0]) <= share(lanes[0]), rep['timeline']['points'][-1][1])
PY
)" = "True 1 1 1 True $n" ] || fail "the plot does not match the report"
# PNG: the same picture through rsvg-convert, as big as the SVG says; with
# no rsvg-convert on PATH, a clear error and no file.
"$top_builddir/tools/spits-plot" --jobdir "$T/job" -o "$T/job.png" || fail "PNG: spits-plot exited $?"
[ "$("$PY" - "$T/job.png" "$T/job.svg" <<'PY'
import struct, sys, xml.etree.ElementTree as ET
b = open(sys.argv[1], 'rb').read(24)
svg = ET.parse(sys.argv[2]).getroot()
print(b[:8] == b'\x89PNG\r\n\x1a\n' and b[12:16] == b'IHDR',
      struct.unpack('>II', b[16:24]) == (int(svg.get('width')), int(svg.get('height'))))
PY
)" = "True True" ] || fail "job.png is not the plot as PNG"
[ -e "$T/job.png.tmp.svg" ] && fail "the PNG's SVG was left behind"
mkdir "$T/nopath"
out=$(PATH=$T/nopath "$top_builddir/tools/spits-plot" --jobdir "$T/job" -o "$T/none.png" 2>&1); rc=$?
[ $rc = 1 ] && [ ! -e "$T/none.png" ] && case $out in *"a PNG needs rsvg-convert (Debian package librsvg2-bin)"*) true ;;
    *) false ;; esac || fail "PNG without rsvg-convert: $rc $out"
out=$("$top_builddir/tools/spits-plot" --jobdir "$T/job" -o "$T/job.gif" 2>&1); rc=$?
[ $rc = 2 ] && case $out in *"give -o FILE.svg or -o FILE.png, not"*) true ;; *) false ;; esac \
    || fail "gif: $rc $out"
# Huge values (JSON holds no inf or NaN, but 1e308 / 1e-300 makes one)
# still give a valid SVG: every coordinate finite and inside the picture.
# A negative time or count, which no job writes, is refused in one line
# naming the field, and no file is written.
"$PY" - "$T/job/report.json" "$T/huge.json" "$T/neg.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d['seconds'] = 1e-300
d['timeline']['points'] = [[0, 0], [1e308, 1e308], [1e-300, 1e308], [5e307, 1]]
d['timeline']['tm_events'] = [dict(d['timeline']['tm_events'][0], t=1e308)]
d['tms'][0].update(busy_s=1e308, workers=9007199254740993, done=10**18)
json.dump(d, open(sys.argv[2], 'w'))
d['timeline']['points'][2] = [-1e308, 5]
json.dump(d, open(sys.argv[3], 'w'))
PY
"$top_builddir/tools/spits-plot" --report "$T/huge.json" -o "$T/huge.svg" || fail "huge values: spits-plot exited $?"
grep -Eq 'inf|nan' "$T/huge.svg" && fail "huge values: inf or nan in the SVG: $(grep -Eo '.{20}(inf|nan).{20}' "$T/huge.svg" | head -3)"
if command -v xmllint >/dev/null; then
    xmllint --noout "$T/huge.svg" || fail "huge values: xmllint rejects the SVG"
fi
[ "$("$PY" - "$T/huge.svg" <<'PY'
import math, re, sys, xml.etree.ElementTree as ET
svg = ET.parse(sys.argv[1]).getroot()
w, h = float(svg.get('width')), float(svg.get('height'))
nums = []
for e in svg.iter():
    for k in ('x', 'y', 'x1', 'y1', 'x2', 'y2', 'width', 'height'):
        v = e.get(k)
        if v is not None and not v.endswith('%'):
            nums.append((float(v), w if k[0] in 'xw' else h))
    for p in (e.get('points') or '').split():
        x, y = p.split(',')
        nums += [(float(x), w), (float(y), h)]
print(len(nums) > 20, all(math.isfinite(v) and 0 <= v <= lim for v, lim in nums))
PY
)" = "True True" ] || fail "huge values: a coordinate outside the picture"
out=$("$top_builddir/tools/spits-plot" --report "$T/neg.json" -o "$T/neg.svg" 2>&1); rc=$?
[ $rc = 1 ] && [ ! -e "$T/neg.svg" ] && [ "$out" = \
    "spits-plot: error: $T/neg.json: timeline.points[2] is at -1e+308 s with 5 task(s): not a time and count of the job (a damaged report?)" ] \
    || fail "a negative time: $rc $out"
# No job; a JM that does not answer.
out=$("$ST" --jobdir "$T/nothing" 2>&1); rc=$?
[ $rc = 1 ] && [ "$out" = "spits-status: error: no job in $T/nothing (no jm.json)" ] || fail "no job: $rc $out"
start_jm dead "$MODS/bench.so" -n 100
wait_for "[ -s $T/dead/jm.json ]" 30 "jm.json"
kill -STOP "$(json "$T/dead/jm.json" "d['pid']")"
out=$("$ST" --jobdir "$T/dead" --timeout 1 2>&1); rc=$?
# ... and with a report.json that is not a report: both in one line.
echo '{"version": 1}' >"$T/dead/report.json"
out2=$("$ST" --jobdir "$T/dead" --timeout 1 2>&1); rc2=$?
rm "$T/dead/report.json"
kill -CONT "$(json "$T/dead/jm.json" "d['pid']")"
[ $rc = 1 ] && case $out in *"did not answer within 1 s"*) true ;; *) false ;; esac \
    || fail "a stopped JM: $rc $out"
[ $rc2 = 1 ] && [ "$out2" = "spits-status: error: the job manager at $(json "$T/dead/jm.json" "d['endpoint']") did not answer within 1 s, and $T/dead/report.json is damaged: it has no job_id or status" ] \
    || fail "a stopped JM and a damaged report.json: $rc2 $out2"
out=$("$ST" --watch=0 2>&1); rc=$?
[ $rc = 2 ] && case $out in *"--watch wants seconds (at least 0.1), not '0'"*) true ;; *) false ;; esac \
    || fail "--watch=0: $rc $out"
# --watch's seconds in each form its man page shows, or none (2 s): on a
# job that is over, each shows the report once and exits 0; a value too
# small is named, in each form, so it was taken as the seconds.
for w in "--watch 5" "-w 5" "--watch=5" "-w5" "--watch" "-w"; do
    out=$("$ST" --jobdir "$T/job" $w --json 2>&1); rc=$?
    [ $rc = 0 ] && [ "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = ok ] \
        || fail "$w on a finished job: $rc $out"
done
for w in "--watch 0.05" "-w 0.05" "-w0.05"; do
    out=$("$ST" --jobdir "$T/job" $w 2>&1); rc=$?
    [ $rc = 2 ] && [ "$out" = "spits-status: error: --watch wants seconds (at least 0.1), not '0.05' (see spits-status --help)" ] \
        || fail "$w: $rc $out"
done
echo ok
