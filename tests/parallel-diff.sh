#!/bin/bash
# spits-parallel against GNU parallel: the same command lines give
# byte-identical stdout and the same exit status, and the joblogs agree
# in every column but the times (the Host is ':' for both).
. "$(dirname "$0")/lib.sh"

command -v parallel >/dev/null ||
    { echo "SKIP: GNU parallel is not installed (Debian package parallel)"; exit 77; }
# (Option parsing and output, one process at a time: the plain build and
# ASan check it; the feed thread's races are parallel-stream.sh's and
# parallel-fault.sh's under ThreadSanitizer, where this takes minutes.)
tsanitized && { echo "SKIP: ThreadSanitizer (parallel-stream.sh and parallel-fault.sh run there)"; exit 77; }
SP=$top_builddir/tools/spits-parallel
export SPITS_CMD_MODULE=$MODS/cmd.so
unset PARALLEL_SHELL PARALLEL
cd "$T" || fail "no $T"

printf 'x.tar.gz\n/a/b.c/d\nfoo\n/r.x\n./q.c\nsp ace.txt\n' >paths
printf 'one\n\nthree\n' >lines
printf 'p\nq\n' >two
printf 'a,b,c\nd,e\n ,f , \n' >csv
printf 'x\ty\n1\t2\n3\t4 5\n' >tsv
printf 'a b\0c\nd\0e' >nul
cases=0

# same NAME STDIN ARGS...: both programs with ARGS, STDIN on their stdin
same() {
    local name=$1 in=$2 prc src
    shift 2
    timeout 120 parallel --will-cite -j 2 "$@" <"$in" >"$name.p" 2>"$name.p.err"
    prc=$?
    timeout 120 "$SP" -j 2 "$@" <"$in" >"$name.s" 2>"$name.s.err"
    src=$?
    cmp -s "$name.p" "$name.s" ||
        fail "$name: stdout differs: $(diff "$name.p" "$name.s" | head -5)"
    [ "$prc" = "$src" ] || fail "$name: exit status $src, GNU parallel's $prc ($(cat "$name.s.err"))"
    cases=$((cases + 1))
}

same quoting /dev/null -k echo {} ::: a 'b c' "d'e" 'x"y' '' "'" '$HOME' '*' 'a\b' '-n'
same repl /dev/null -k echo {} {.} {/} {//} {/.} {#} :::: paths
same sources /dev/null -k echo {2} {1} {} {#} ::: a b ::: 1 2 3
same positional /dev/null -k echo {1.} {1/} {2//} {2/.} ::: a.b/c.d e ::: x/y.z w
same appended /dev/null -k echo ::: a b ::: 'c d' e
same files /dev/null -k echo {1}-{2} :::: lines two
same argfile /dev/null -k -a paths echo X{/}
same stdin lines -k echo n{}
# streamed input: stdin as the first source (read as the job runs) or a
# later one (read first), a last line without its newline, no input
printf 'p\nlast' >nonl
seq 300 >many
same stdin-first two -k echo {1}{2} :::: - ::: x y
same stdin-later two -k echo {1}{2} ::: a b :::: -
same stdin-nonl nonl -k echo
same stdin-many many -k echo
same stdin-none /dev/null -k echo
same tag /dev/null -k --tag echo ::: a 'b c' ::: d
same tagnl /dev/null -k --tag 'printf "x\ny"' ::: a b
same shell /dev/null -k 'echo {} | tr a-z A-Z; echo $((1+2))' ::: abc 'd e'
same failing /dev/null -k 'echo {}; exit {}' ::: 0 1 0 3 2
same signal /dev/null -k 'echo {}; kill -{} $$' ::: 9 15
same notfound /dev/null -k nonexistent-command-x ::: a
same big /dev/null -k 'yes {} | head -c 10000000' ::: a b
same stderr /dev/null -k 'echo out {}; echo err {} >&2' ::: a b
same quote /dev/null -k -q sh -c 'echo "[$1]"' _ ::: 'a b' c
same args-as-commands /dev/null -k ::: 'echo a' 'echo b c'
same dirname /dev/null -k echo {//} {/} ::: dir/ /a/ / a//b// //x a/b/ ./ ../
same empty-source /dev/null -k echo x{}y :::
same empty-sources /dev/null -k echo x{1}-{2}y ::: a b :::
same cwd /dev/null -k 'echo "$(pwd)" {}' ::: a
# --halt's lines on stderr, GNU parallel's under our name
same halt /dev/null -k -j 1 --halt now,fail=1 'echo {}; exit {}' ::: 0 3 0
[ "$(sed 's/^spits-parallel:/parallel:/' halt.s.err)" = "$(cat halt.p.err)" ] ||
    fail "--halt now said: $(cat halt.s.err)"
# soon: how many commands still run (none: no line), as GNU parallel says
same halt-soon /dev/null -k -j 2 --halt soon,fail=1 'sleep 0.{}; exit {}' ::: 3 9
[ "$(sed 's/^spits-parallel:/parallel:/' halt-soon.s.err)" = "$(cat halt-soon.p.err)" ] ||
    fail "--halt soon said: $(cat halt-soon.s.err)"
# stdout closed early: 141 (SIGPIPE), quietly, nothing left in TMPDIR
# (with --line-buffer spits-parallel's own write fails)
mkdir htmp
for prog in parallel "$SP" "$SP --lb"; do
    TMPDIR=$T/htmp $prog -j 3 'sleep {}; echo {}' ::: 0 1 1 2>"head.err" | head -1 >/dev/null
    rc=${PIPESTATUS[0]}
    [ "$rc" = 141 ] && [ ! -s head.err ] || fail "$prog | head -1: exit $rc: $(cat head.err)"
done
[ -z "$(ls htmp)" ] || fail "| head -1 left $(ls htmp)"
# GNU parallel's input options: -N (-n), {N} past the arguments, {0},
# --colsep, -0, linked sources, --header :, stdin twice, --retries, --delay.
same maxargs /dev/null -k -N2 --tag echo {1}-{2} {} {#} ::: a b c d e
same maxargs-cross /dev/null -k -n2 echo {1}-{2}-{3} ::: a b c ::: 1 2
same maxargs0 /dev/null -k -N0 echo x ::: a b
# -N: a word with {} and other text, once for each argument
same maxargs-context /dev/null -k -N2 echo 'x{}-{.}y' '[{}]' {} ::: a.1 'b c' d
same maxargs-context2 /dev/null -k -N1 echo x{}y ::: a b ::: c
same beyond /dev/null -k 'printf "%s-" {3} x{2}y; echo' ::: a b
same beyond-direct /dev/null -k printf '%s-' {3} {1} ::: a b
same zero /dev/null -k echo x{0}y {0.} {00} ::: a.b ::: c
same colsep csv -k --colsep , --tag echo '[{2}]' {1} {4}
same colsep-append csv -k --colsep , echo
same colsep-re tsv -k --colsep '\s+' echo {3}{2}{1}
same colsep-args /dev/null -k --colsep '[,;]' echo {1}/{2} ::: a,b 'c;d' e
same null nul -k -0 echo '[{}]'
same null-file /dev/null -k --null echo :::: nul
same link /dev/null -k echo {1}{2}{3} ::: a b c :::+ 1 2 ::: x y
same link-file /dev/null -k echo {1}{2} :::+ a b c ::::+ two
same header /dev/null -k --header : echo {foo}-{bar} {1} ::: foo a b ::: bar 1 2
same header-tsv /dev/null -k --header : --colsep '\t' --tag echo {y}{x} :::: tsv
same stdin-twice paths -k echo {1}{2}{3} :::: - ::: a :::: -
same retries /dev/null -k --retries 3 'echo try {}; exit {}' ::: 0 1 2
same delay /dev/null -k --delay 0.2 echo ::: a b
same slot /dev/null -k -j1 echo {%} {} ::: a b c
same slot-dry /dev/null -k -j1 --dry-run -q echo {%} {} ::: a 'b c'
# {%}: 1 to -j, and no two running commands share one.
"$SP" -j 3 'mkdir held{%} || echo clash; echo {%}; sleep 0.2; rmdir held{%}' ::: 1 2 3 4 5 6 \
    >slots 2>&1 || fail "{%}: $(cat slots)"
[ "$(sort -u slots | tr '\n' ' ')" = "1 2 3 " ] || fail "{%} gave $(sort slots | tr '\n' ' ')"
same bar /dev/null -k --bar echo ::: a b c
[ "$(cat bar.s.err)" = "100% 3:0=0s" ] || fail "--bar off a terminal wrote: $(cat bar.s.err)"
same eta /dev/null --eta --progress true ::: a b
grep -q '^local: done 2 of 2, 100%' eta.s.err || fail "--progress wrote: $(cat eta.s.err)"
same results-quiet /dev/null -k --results rq 'echo {}; echo e >&2' ::: a
[ -s results-quiet.s.err ] && fail "--results: stderr has $(cat results-quiet.s.err)"
[ "$(wc -c <big.s)" = 20000000 ] || fail "big: $(wc -c <big.s) bytes, not 20000000"
grep -q '^err a$' stderr.s.err || fail "stderr: the commands' stderr is not on stderr"

# --line-buffer: each line as it is written, whole, both streams, each
# line tagged; the commands take turns through files (./after F waits
# for F, 10 s at most), and a line has 0.2 s to be printed before the
# other command's.
printf '#!/bin/sh\nfor i in $(seq 100); do [ -e "$1" ] && exit 0; sleep 0.1; done; exit 1\n' >after
chmod +x after
same lb-j1 /dev/null -j1 --lb 'echo {}; echo e{} >&2; printf x{}' ::: a b
lb_a='echo a1; echo e1 >&2; sleep 0.2; touch f1; ./after f2; echo a2; printf a3; sleep 0.2; touch f3'
lb_b='./after f1; echo b1; echo e2 >&2; sleep 0.2; touch f2; ./after f3; echo b2; rm -f f1 f2 f3'
same lb-tag /dev/null --line-buffer --tag ::: "$lb_a" "$lb_b"
for c in lb-j1 lb-tag; do
    cmp -s "$c.p.err" "$c.s.err" || fail "$c: stderr differs: $(diff "$c.p.err" "$c.s.err")"
done
printf '%s\ta1\n%s\tb1\n%s\ta2\n%s\ta3%s\tb2\n' "$lb_a" "$lb_b" "$lb_a" "$lb_a" "$lb_b" >lb-want
cmp -s lb-tag.s lb-want || fail "--lb --tag printed: $(cat lb-tag.s)"
# -k: the oldest command's lines, then each later one's when it is oldest
same lb-keep /dev/null --lb -k 'sleep 0.{}; echo {}; echo {}{}' ::: 3 1 2
# (--lb --retries: GNU parallel prints a failed run's lines only when it
# read them before the run ended, so its output varies: parallel-stream.sh)

# Joblogs: every column but Starttime, JobRuntime and Host, by Seq.
joblog_cols() { awk -F '\t' 'NR > 1 { print $1 "\t" $5 "\t" $6 "\t" $7 "\t" $8 "\t" $9 }' "$1" | sort -n; }
parallel --will-cite -j 2 --joblog jl.p 'echo {}; exit {}' ::: 0 1 2 300 >/dev/null 2>&1
"$SP" -j 2 --joblog jl.s 'echo {}; exit {}' ::: 0 1 2 300 >/dev/null 2>&1
[ "$(head -1 jl.s)" = "$(head -1 jl.p)" ] || fail "joblog header: $(head -1 jl.s)"
[ "$(joblog_cols jl.s)" = "$(joblog_cols jl.p)" ] ||
    fail "joblogs differ: $(diff <(joblog_cols jl.p) <(joblog_cols jl.s))"
[ "$(joblog_cols jl.s | wc -l)" = 4 ] || fail "joblog has $(joblog_cols jl.s | wc -l) lines"
[ "$(awk -F '\t' 'NR > 1 { print $2 }' jl.s | sort -u)" = : ] ||
    fail "a local run's joblog Host is not GNU parallel's ':': $(sed -n 2p jl.s)"
awk -F '\t' 'NR > 1 && !($3 ~ /^[0-9]+\.[0-9][0-9][0-9]$/ && $4 ~ /^ *[0-9]+\.[0-9][0-9][0-9]$/) { exit 1 }' jl.s ||
    fail "joblog times are not GNU parallel's: $(sed -n 2p jl.s)"
parallel --will-cite --joblog jq.p echo {} ::: "a'b" 'x y' '' plain >/dev/null 2>&1
"$SP" --joblog jq.s echo {} ::: "a'b" 'x y' '' plain >/dev/null 2>&1
[ "$(joblog_cols jq.s)" = "$(joblog_cols jq.p)" ] ||
    fail "quoted joblogs differ: $(diff <(joblog_cols jq.p) <(joblog_cols jq.s))"

# --retries: as many runs, one joblog line each with the last run's.
parallel --will-cite --retries 3 --joblog jr.p 'echo x >>cnt.p; exit {}' ::: 0 1 >/dev/null 2>&1
"$SP" --retries 3 --joblog jr.s 'echo x >>cnt.s; exit {}' ::: 0 1 >/dev/null 2>&1
[ "$(wc -l <cnt.s)" = 4 ] && [ "$(wc -l <cnt.p)" = 4 ] || fail "--retries 3: $(wc -l <cnt.s) runs"
[ "$(joblog_cols jr.s | sed 's/cnt.s/cnt.p/')" = "$(joblog_cols jr.p)" ] ||
    fail "--retries joblogs differ: $(diff <(joblog_cols jr.p) <(joblog_cols jr.s))"

# --results trees: the same files with the same contents.
parallel --will-cite --results rp echo {} ::: 'a/b' 'x y' ::: 1 >/dev/null 2>&1
"$SP" --results rs echo {} ::: 'a/b' 'x y' ::: 1 >/dev/null 2>&1
[ "$(cd rp && find . -type f | sort)" = "$(cd rs && find . -type f | sort)" ] ||
    fail "results trees differ: $(diff <(cd rp && find . | sort) <(cd rs && find . | sort))"
(cd rp && find . -type f \( -name stdout -o -name seq \)) | while IFS= read -r f; do
    cmp -s "rp/$f" "rs/$f" || echo "$f"
done >rdiff
[ -s rdiff ] && fail "results files differ: $(cat rdiff)"
# ... named by --header, by -N's sources and by --colsep's columns.
parallel --will-cite --header : --results rp2 echo ::: h 'a/b' c >/dev/null 2>&1
"$SP" --header : --results rs2 echo ::: h 'a/b' c >/dev/null 2>&1
parallel --will-cite -N2 --colsep , --results rp2 echo ::: a,b c x >/dev/null 2>&1
"$SP" -N2 --colsep , --results rs2 echo ::: a,b c x >/dev/null 2>&1
[ "$(cd rp2 && find . -type f | sort)" = "$(cd rs2 && find . -type f | sort)" ] ||
    fail "results trees differ: $(diff <(cd rp2 && find . | sort) <(cd rs2 && find . | sort))"
[ "$(cat 'rs/1/a\_b/2/1/stdout')" = "a/b 1" ] || fail "results: rs/1/a\_b/2/1/stdout"
echo "ok: $cases cases"
