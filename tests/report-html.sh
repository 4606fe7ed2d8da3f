#!/bin/bash
# DIR/report.html as a person opens it: after a job with a failed task,
# headless Chromium loads the page from a file:// URL with the network
# forbidden (a proxy that answers nothing) and its DOM shows
# the job id, the exact committed count, the failed task, the module path
# (markup in it escaped, shown as typed) and an SVG timeline with points.
# The page has no script (it shows everything without one) and refers to
# nothing on the network. A screenshot is kept in
# spits-logs/report.png for a human to look at.
. "$(dirname "$0")/lib.sh"

need_chromium

# A module path with markup in it: the page must show it, not run it.
mdir="$T/a&b<i>\"x"
mkdir -p "$mdir" && cp "$MODS/bench.so" "$mdir/" || fail "cannot copy the module"
start_jm rep "$mdir/bench.so" -n 200 -f 42
start_tm rep tm -n 2
wait $JM_PID; rc=$?
[ $rc = 3 ] || fail "spits-jm exited $rc, not 3"
page=$T/rep/report.html
[ -s "$page" ] || fail "the JM wrote no report.html"
ls "$T/rep" | grep -q 'report.html.tmp' && fail "a temporary file of report.html was left"
job=$(json "$T/rep/report.json" "d['job_id']")
[ -n "$job" ] || fail "report.json has no job id"

# Nothing fetched: no src/href to another host, no CSS import or url().
grep -Eiq "(src|href)[[:space:]]*=[[:space:]]*[\"']?[[:space:]]*(https?:)?//" "$page" &&
    fail "report.html refers to a resource on the network"
grep -Eiq '@import|url\(' "$page" && fail "report.html's CSS loads something"
grep -qi '<script' "$page" && fail "report.html has a script"

chrome --dump-dom "file://$page" >"$T/dom.html" || fail "chromium could not load report.html"
chrome --screenshot="$LOGDIR/report.png" --window-size=1200,900 "file://$page" >/dev/null ||
    fail "chromium could not take a screenshot"
[ "$(head -c 4 "$LOGDIR/report.png" | od -An -c | tr -d ' ')" = '211PNG' ] ||
    fail "no PNG screenshot in $LOGDIR/report.png"

# What the browser built: the text of elements by id, the failed tasks'
# cells, and the timeline's points inside an <svg>.
"$PY" - "$T/dom.html" >"$T/dom.txt" <<'PY' || fail "cannot read the DOM"
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.text = {}; self.cells = []
        self.row = None; self.points = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'tr' and a.get('class') == 'failed-task': self.row = []
        if tag == 'polyline' and a.get('class') == 'timeline' and 'svg' in [t for t, _ in self.stack]:
            self.points = len(a.get('points', '').split())
        if tag not in ('polyline', 'line', 'rect', 'meta'):
            self.stack.append((tag, a.get('id')))
    def handle_endtag(self, tag):
        if tag == 'tr' and self.row is not None: self.cells.append(self.row); self.row = None
        if self.stack and self.stack[-1][0] == tag: self.stack.pop()
    def handle_data(self, d):
        for _, i in self.stack:
            if i: self.text[i] = self.text.get(i, '') + d
        if self.row is not None and self.stack and self.stack[-1][0] == 'td': self.row.append(d)
p = P(); p.feed(open(sys.argv[1]).read())
print('job=' + p.text.get('job-id', ''))
print('committed=' + p.text.get('count-committed', ''))
print('failed=' + p.text.get('count-failed', ''))
print('status=' + p.text.get('status', ''))
print('module=' + p.text.get('module', ''))
print('failed_rows=' + repr(p.cells))
print('points=%d' % p.points)
PY
field() { sed -n "s/^$1=//p" "$T/dom.txt"; }
[ "$(field job)" = "$job" ] || fail "the page shows job '$(field job)', not $job"
[ "$(field committed)" = 199 ] || fail "the page shows '$(field committed)' committed, not 199"
[ "$(field failed)" = 1 ] || fail "the page shows '$(field failed)' failed, not 1"
[ "$(field status)" = failed ] || fail "the page shows status '$(field status)'"
[ "$(field module)" = "$mdir/bench.so" ] || fail "the page shows module '$(field module)'"
[ "$(field failed_rows)" = "[['1', '42', 'failed', '1', 'task 42 fails on purpose (-f)', '$(hostname)']]" ] ||
    fail "the page's failed tasks are $(field failed_rows), not task 42 of phase 1"
[ "$(field points)" -ge 1 ] || fail "the page's timeline has no point"
echo ok
