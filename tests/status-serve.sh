#!/bin/bash
# spits-status --serve as a person uses it: during a job, every request
# without the printed token is refused (403), the page loaded in headless
# Chromium shows the job id, a committed count that grows between two
# loads and the Task Manager's row, and its script refreshes the page in
# place (without a reload). A screenshot goes to spits-logs/status.png.
. "$(dirname "$0")/lib.sh"

need_chromium
command -v curl >/dev/null || fail "curl is not installed"
for bad in localhost:1 127.0.0.1:99999 127.0.0.1; do
    "$top_builddir/tools/spits-status" --jobdir "$T/none" --serve "$bad" >"$T/bad.out" 2>&1
    rc=$?
    [ $rc = 2 ] && [ "$(wc -l <"$T/bad.out")" = 1 ] && grep -q "ADDR:PORT.*'$bad'" "$T/bad.out" ||
        fail "--serve $bad: exit $rc, said: $(cat "$T/bad.out")"
done
start_jm live "$MODS/bench.so" -n 6000 -s 20000
start_tm live tm -n 2
wait_for "[ -n \"\$(committed live)\" ] && [ \"\$(committed live)\" -gt 0 ]" 60 "a first commit"
job=$(json "$T/live.status" "d['job_id']")
"$top_builddir/tools/spits-status" --jobdir "$T/live" --serve 127.0.0.1:0 \
    >"$T/serve.out" 2>"$T/serve.log" &
PIDS="$PIDS $!"
wait_for "grep -q token= '$T/serve.out'" 30 "spits-status --serve to print its URL"
url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/?token=[0-9a-f]*' "$T/serve.out") ||
    fail "no URL on 127.0.0.1 with a token in: $(cat "$T/serve.out")"
base=${url%%\?*}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "$base")" = 403 ] || fail "the page without a token was not refused"
[ "$(code "${base}status.json")" = 403 ] || fail "status.json without a token was not refused"
[ "$(code "${base}?token=00")" = 403 ] || fail "a wrong token was not refused"
[ "$(code -X POST --data x "${base}status.json")" = 403 ] || fail "a POST without a token was not refused"
[ "$(code -X POST --data x "$url")" = 405 ] || fail "a POST was not refused as read-only"
[ "$(code "$url")" = 200 ] || fail "the page with its token was refused"

# The DOM after a load: id -> text, and the TM table's rows.
dom() {
    chrome --dump-dom "$@" >"$T/dom.html" || fail "chromium could not load the page"
    "$PY" - "$T/dom.html" <<'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.ids = []; self.text = {}; self.rows = 0
    def handle_starttag(self, tag, attrs):
        i = dict(attrs).get('id')
        if tag == 'tr' and 'tms' in self.ids: self.rows += 1
        self.ids.append(i)
    def handle_endtag(self, tag):
        if self.ids: self.ids.pop()
    def handle_data(self, d):
        for i in self.ids:
            if i: self.text[i] = self.text.get(i, '') + d
p = P(); p.feed(open(sys.argv[1]).read())
print(p.text.get('job-id', ''), p.text.get('committed', ''), p.rows, p.text.get('updated', ''))
PY
}
read -r id1 c1 rows1 _ < <(dom "$url")
[ "$id1" = "$job" ] || fail "the page shows job '$id1', not $job"
[ "$rows1" = 1 ] || fail "the page shows $rows1 TM row(s), not 1"
wait_for "[ \"\$(committed live)\" -gt $c1 ]" 60 "a commit after the first load"
read -r id2 c2 rows2 _ < <(dom "$url")
[ "$c2" -gt "$c1" ] || fail "committed did not grow between two loads ($c1, then $c2)"
# Timers run: the script fetched status.json and updated the page in place.
read -r _ _ _ updated < <(dom --virtual-time-budget=5000 "$url")
[ -n "$updated" ] && [ "$updated" != now ] || fail "the page's script did not refresh it ('$updated')"
chrome --screenshot="$LOGDIR/status.png" --window-size=1200,700 "$url" >/dev/null ||
    fail "chromium could not take a screenshot"
echo ok
