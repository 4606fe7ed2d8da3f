#!/bin/bash
# spits-parallel against GNU parallel: the same command lines give
# byte-identical stdout and the same exit status, and the joblogs agree
# in every column but the times (the Host is ':' for both).
. "$(dirname "$0")/lib.sh"

command -v parallel >/dev/null ||
    { echo "SKIP: GNU parallel is not installed (Debian package parallel)"; exit 77; }
SP=$top_builddir/tools/spits-parallel
export SPITS_CMD_MODULE=$MODS/cmd.so
unset PARALLEL_SHELL PARALLEL
cd "$T" || fail "no $T"

printf 'x.tar.gz\n/a/b.c/d\nfoo\n/r.x\n./q.c\nsp ace.txt\n' >paths
printf 'one\n\nthree\n' >lines
printf 'p\nq\n' >two
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
# (not under ThreadSanitizer: libzmq hands a received 10 MB result to our
# threads in a way it cannot see, and each such read is a suppressed race
# report that takes it minutes; see big-tasks.sh)
tsanitized || same big /dev/null -k 'yes {} | head -c 10000000' ::: a b
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
# stdout closed early: 141 (SIGPIPE), quietly, nothing left in TMPDIR
mkdir htmp
for prog in parallel "$SP"; do
    TMPDIR=$T/htmp "$prog" -j 3 'sleep {}; echo {}' ::: 0 1 1 2>"head.err" | head -1 >/dev/null
    rc=${PIPESTATUS[0]}
    [ "$rc" = 141 ] && [ ! -s head.err ] || fail "$prog | head -1: exit $rc: $(cat head.err)"
done
[ -z "$(ls htmp)" ] || fail "| head -1 left $(ls htmp)"
tsanitized || [ "$(wc -c <big.s)" = 20000000 ] || fail "big: $(wc -c <big.s) bytes, not 20000000"
grep -q '^err a$' stderr.s.err || fail "stderr: the commands' stderr is not on stderr"

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

# --results trees: the same files with the same contents.
parallel --will-cite --results rp echo {} ::: 'a/b' 'x y' ::: 1 >/dev/null 2>&1
"$SP" --results rs echo {} ::: 'a/b' 'x y' ::: 1 >/dev/null 2>&1
[ "$(cd rp && find . -type f | sort)" = "$(cd rs && find . -type f | sort)" ] ||
    fail "results trees differ: $(diff <(cd rp && find . | sort) <(cd rs && find . | sort))"
(cd rp && find . -type f \( -name stdout -o -name seq \)) | while IFS= read -r f; do
    cmp -s "rp/$f" "rs/$f" || echo "$f"
done >rdiff
[ -s rdiff ] && fail "results files differ: $(cat rdiff)"
[ "$(cat 'rs/1/a\_b/2/1/stdout')" = "a/b 1" ] || fail "results: rs/1/a\_b/2/1/stdout"
echo "ok: $cases cases"
