#!/bin/bash
# spits-status --serve as a person uses it: during a job, every request
# without the printed token is refused (403), the page loaded in headless
# Chromium shows the job id, the Task Managers' rows (sorted as asked),
# the failed task, the model line, and a committed count and a timeline
# that grow between two loads; its script refreshes the page in place
# (without a reload). A screenshot goes to spits-logs/status.png.
. "$(dirname "$0")/lib.sh"

need_chromium
command -v curl >/dev/null || fail "curl is not installed"
for bad in localhost:1 127.0.0.1:99999 127.0.0.1; do
    "$top_builddir/tools/spits-status" --jobdir "$T/none" --serve "$bad" >"$T/bad.out" 2>&1
    rc=$?
    [ $rc = 2 ] && [ "$(wc -l <"$T/bad.out")" = 1 ] && grep -q "ADDR:PORT.*'$bad'" "$T/bad.out" ||
        fail "--serve $bad: exit $rc, said: $(cat "$T/bad.out")"
done
# Task 3 fails on every run: a poison task the page must name while the
# job still runs; the last task waits for a file no one makes, so the job
# outlasts the test. Two TMs, so the table has rows to sort.
start_jm live "$MODS/bench.so" -n 6000 -s 20000 -f 3 -G "$T/gate"
start_tm live tm -n 2
tm1=$TM_PID
start_tm live tm2 -n 2
tm2=$TM_PID
ready() {
    [ "$(live live 'len(d.get("failed_tasks", [])) > 0 and len(d.get("tms", [])) == 2 and d["model"]["predicted_s"] is not None')" = True ]
}
wait_for ready 90 "the failed task, both TMs and a model figure in the live status"
job=$(json "$T/live.status" "d['job_id']")
start_serve live
base=$BASE token=$TOKEN url=$URL
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "$base")" = 403 ] || fail "the page without a token was not refused"
[ "$(code "${base}status.json")" = 403 ] || fail "status.json without a token was not refused"
[ "$(code "${base}live")" = 403 ] || fail "the live part without a token was not refused"
[ "$(code "${base}?token=00")" = 403 ] || fail "a wrong token was not refused"
[ "$(code -X POST --data x "${base}status.json")" = 403 ] || fail "a POST without a token was not refused"
[ "$(code -X POST --data x "$url")" = 405 ] || fail "a POST was not refused as read-only"
[ "$(code "$url")" = 200 ] || fail "the page with its token was refused"
[ "$(code "${base}live?token=$token&sort=%3Cx%3E&page=-7")" = 200 ] ||
    fail "a bad sort or page was not taken as the default view"
# A page past the last shows the last one: both TMs, by pid.
rows=$(curl -s "${base}live?token=$token&sort=pid&page=9" | grep -c '<tr class="tm">')
[ "$rows" = 2 ] || fail "page 9 of a 1-page table shows $rows TM row(s), not 2"

# The DOM after a load, as one JSON object: id -> text, the TM rows'
# cells, the failed tasks' cells, the timeline's point count.
dom() {
    chrome --dump-dom "$@" >"$T/dom.html" || fail "chromium could not load the page"
    "$PY" - "$T/dom.html" >"$T/dom.json" <<'PY'
import json, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.text = {}; self.rows = {}; self.points = 0
        self.sorted = False; self.sorted_by = ''
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'tr' and a.get('class') in ('tm', 'failed-task'):
            self.rows.setdefault(a['class'], []).append([])
        if tag == 'th' and a.get('class') == 'sorted':
            self.sorted = True
        if tag == 'polyline' and a.get('class') == 'timeline':
            self.points = len(a.get('points', '').split())
        if tag not in ('br', 'line', 'rect', 'polyline', 'meta'):
            self.stack.append((tag, a.get('id'), a.get('class')))
    def handle_endtag(self, tag):
        if tag not in ('br', 'line', 'rect', 'polyline', 'meta') and self.stack:
            self.stack.pop()
    def handle_data(self, d):
        if self.sorted and any(t == 'th' and c == 'sorted' for t, i, c in self.stack):
            self.sorted_by += d
        for tag, i, c in self.stack:
            if i: self.text[i] = self.text.get(i, '') + d
        if self.stack and self.stack[-1][0] == 'td':
            for tag, i, c in reversed(self.stack):
                if tag == 'tr' and c in self.rows:
                    self.rows[c][-1].append(d); break
p = P(); p.feed(open(sys.argv[1]).read())
print(json.dumps({'text': p.text, 'tms': p.rows.get('tm', []), 'sorted_by': p.sorted_by,
                  'failed': p.rows.get('failed-task', []), 'points': p.points}))
PY
}
q() { json "$T/dom.json" "$1"; }
dom "$url"
[ "$(q "d['text']['job-id']")" = "$job" ] || fail "the page shows job '$(q "d['text'].get('job-id')")', not $job"
[ "$(q "len(d['tms'])")" = 2 ] || fail "the page shows $(q "len(d['tms'])") TM row(s), not 2"
# host, pid, workers, busy now, queued (prefetched), done, failed, busy s, last heard
[ "$(q "[len(r) for r in d['tms']]")" = "[9, 9]" ] && [ "$(q "all(r[4].isdigit() for r in d['tms'])")" = True ] ||
    fail "the TM rows are not host..queued..last heard: $(q "d['tms']")"
[ "$(q "d['failed']")" = "[['1', '3', 'failed', '1', 'task 3 fails on purpose (-f)', '$(hostname)']]" ] ||
    fail "the failed tasks read $(q "d['failed']"), not task 3 of phase 1"
q "d['text']['model']" | grep -Eq '^so far, model: max\(N\*T/W, N\*S/BW\) = max\(' ||
    fail "no model line: '$(q "d['text'].get('model')")'"
c1=$(q "int(d['text']['committed'])")
p1=$(q "d['points']")
# The timeline's caption counts the same commits as the page's count.
cap=$(grep -o 'The job committed [0-9]* task' "$T/dom.html" | grep -o '[0-9][0-9]*')
[ "$cap" = "$c1" ] || fail "the timeline's caption says '$cap' committed, the page $c1"
[ "$p1" -ge 2 ] || fail "the timeline has $p1 point(s)"
# Sorted by pid, the smaller pid comes first; by done, the larger count.
lo=$(( tm1 < tm2 ? tm1 : tm2 ))
[ "$(q "d['sorted_by']")" = done ] || fail "the default order is by '$(q "d['sorted_by']")', not done"
dom "$url&sort=pid"
[ "$(q "d['sorted_by']")" = pid ] || fail "sort=pid sorted by '$(q "d['sorted_by']")'"
[ "$(q "d['tms'][0][1]")" = "$lo" ] || fail "sorted by pid, the first row is $(q "d['tms'][0]")"
dom "$url&sort=host"
[ "$(q "d['sorted_by']")" = host ] || fail "sort=host sorted by '$(q "d['sorted_by']")'"
# (one host: the tie goes by pid)
[ "$(q "d['tms'][0][1]")" = "$lo" ] || fail "sorted by host, then pid, the first row is $(q "d['tms'][0]")"
grown() {
    [ "$(live live "len(d['timeline']['points']) > $p1 and d['tasks']['committed'] > $c1")" = True ]
}
wait_for grown 60 "a new timeline point and a commit after the first load"
dom "$url"
[ "$(q "int(d['text']['committed'])")" -gt "$c1" ] || fail "committed did not grow between two loads"
[ "$(q "d['points']")" -gt "$p1" ] || fail "the timeline did not grow between two loads ($p1 points, then $(q "d['points']"))"
# Timers run: the script fetched the live part and swapped it in place.
dom --virtual-time-budget=5000 "$url"
updated=$(q "d['text']['updated']")
[ -n "$updated" ] && [ "$updated" != now ] && [ "$updated" != "no answer" ] ||
    fail "the page's script did not refresh it ('$updated')"
[ "$(q "len(d['tms'])")" = 2 ] || fail "after a refresh the page shows $(q "len(d['tms'])") TM row(s)"
chrome --screenshot="$LOGDIR/status.png" --window-size=1200,1400 "$url" >/dev/null ||
    fail "chromium could not take a screenshot"
echo ok
