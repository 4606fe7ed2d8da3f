#!/bin/bash
# docs.sh - the documentation says what the code does:
#   - README is at most 300 lines;
#   - every relative link in README and docs/*.md ([text](path) and
#     ![alt](path)) names a file of the source tree, and a #anchor into a
#     .md file names one of its headings;
#   - every ```c block of README and docs/module-guide.md is a complete
#     module, "/* NAME.c ..." on its first line, that compiles against
#     libspits/spits.h as a user builds one (cc -O2 -Wall -Werror -fPIC
#     -shared); a block meant as a fragment says ```c fragment and is
#     skipped; a ```cpp block, "// NAME.cc ..." on its first line, is one
#     in C++ (c++, the same flags);
#   - README and docs/ hold no option list (4 lines in a row starting
#     with an option): the man pages are the one option reference;
#   - every ```python block, "# NAME.py" on its first line, parses and is
#     extracted as NAME.py (a run needing modules/python.so is skipped in
#     a build without it);
#   - every ```sh run block is run, line by line as the text shows it, in
#     a directory holding the extracted NAME.c files and links to the
#     tree's libspits/ and tools/, and its stdout must equal the ```text
#     block that follows it, exactly.
# Plain ```sh blocks are shown to the reader, not run.
. "$(dirname "$0")/lib.sh"

readme=$top_srcdir/README
[ -f "$readme" ] && [ -f "$top_srcdir/docs/module-guide.md" ] || fail "no README or docs/module-guide.md in $top_srcdir"
n=$(wc -l <"$readme")
[ "$n" -le 300 ] || fail "README has $n lines, more than 300"

# The man pages are the one option reference: README and docs/ mention
# options in prose, never as a list (4 or more lines in a row, list items
# or table rows, that each start with an option).
"$PY" - "$top_srcdir" >"$T/optlists.out" 2>&1 <<'PY' || fail "option lists outside the man pages: $(cat "$T/optlists.out")"
import os, re, sys
top = sys.argv[1]
files = ['README'] + sorted('docs/' + f for f in os.listdir(os.path.join(top, 'docs')) if f.endswith('.md'))
opt = re.compile(r'^\s*(?:[-*|]\s*)?(?:\*\*)?`?--?[a-zA-Z][a-zA-Z0-9-]*')
bad = []
for f in files:
    run = []
    for n, line in enumerate(open(os.path.join(top, f), encoding='utf-8').read().split('\n') + [''], 1):
        if opt.match(line):
            run.append(n)
            continue
        if len(run) >= 4:
            bad.append('%s:%d: %d lines in a row start with an option' % (f, run[0], len(run)))
        run = []
if bad:
    print('\n'.join(bad))
    sys.exit(1)
PY

# Links, checked in Python: one line per broken link.
"$PY" - "$top_srcdir" >"$T/links.out" 2>&1 <<'PY' || fail "broken links: $(cat "$T/links.out")"
import os, re, sys
top = sys.argv[1]
files = ['README'] + sorted('docs/' + f for f in os.listdir(os.path.join(top, 'docs')) if f.endswith('.md'))

def slug(heading):
    s = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return s.replace(' ', '-')

def anchors(path):
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    return {slug(h) for h in re.findall(r'^#+ (.*)$', text, flags=re.M)}

bad, seen = [], 0
for f in files:
    text = open(os.path.join(top, f), encoding='utf-8').read()
    # links in code blocks are examples, not links
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', target):
            continue
        seen += 1
        path, _, anchor = target.partition('#')
        full = os.path.normpath(os.path.join(top, os.path.dirname(f), path)) if path else os.path.join(top, f)
        if not os.path.exists(full):
            bad.append('%s: %s: no such file' % (f, target))
        elif anchor and full.endswith('.md') and anchor not in anchors(full):
            bad.append('%s: %s: no heading #%s there' % (f, target, anchor))
if bad:
    print('\n'.join(bad))
    sys.exit(1)
if seen < 20:
    print('only %d relative links found: is the parser broken?' % seen)
    sys.exit(1)
PY

# The examples: NAME.c and NAME.py files, run scripts and their expected output, one
# directory per document. The manifest says what was found.
"$PY" - "$T/ex" "$top_srcdir" README docs/module-guide.md >"$T/manifest" 2>"$T/extract.err" <<'PY' ||
import os, re, sys
out, top, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
# a complete module: its manifest kind, its first line, its file's ending
SOURCES = {'c': ('C', r'^/\* (\w+)\.c ', '.c'), 'cpp': ('CXX', r'^// (\w+)\.cc ', '.cc'),
           'python': ('PY', r'^# (\w+)\.py', '.py')}
for doc in docs:
    lines = open(os.path.join(top, doc), encoding='utf-8').read().split('\n')
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r'^```(.*)$', lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j] != '```':
                j += 1
            if j == len(lines):
                sys.exit('%s:%d: a code block that never ends' % (doc, i + 1))
            blocks.append((m.group(1).strip(), lines[i + 1:j], i + 1))
            i = j
        i += 1
    d = os.path.join(out, os.path.basename(doc).replace('.md', ''))
    os.makedirs(d, exist_ok=True)
    runs = 0
    for k, (info, body, line) in enumerate(blocks):
        if info in SOURCES:
            kind, first, ext = SOURCES[info]
            m = re.match(first, body[0] if body else '')
            if not m:
                sys.exit('%s:%d: a ```%s block must start with a comment naming its NAME%s'
                         ' (or be ```c fragment)' % (doc, line, info, ext))
            open(os.path.join(d, m.group(1) + ext), 'w').write('\n'.join(body) + '\n')
            print('%s %s %s %d' % (kind, d, m.group(1), line))
        elif info.startswith('c') and info != 'c fragment':
            sys.exit('%s:%d: unknown C block "```%s"' % (doc, line, info))
        elif info == 'sh run':
            nxt = blocks[k + 1] if k + 1 < len(blocks) else None
            if not nxt or nxt[0] != 'text':
                sys.exit('%s:%d: a ```sh run block needs a ```text block after it' % (doc, line))
            runs += 1
            base = os.path.join(d, 'run%d' % runs)
            open(base + '.sh', 'w').write('\n'.join(body) + '\n')
            open(base + '.want', 'w').write('\n'.join(nxt[1]) + '\n')
            print('RUN %s %s %d' % (d, base, line))
PY
    fail "cannot extract the examples: $(cat "$T/extract.err")"
grep -q '^C .*/README sumsq ' "$T/manifest" || fail "README's module was not found: $(cat "$T/manifest")"
grep -q '^RUN .*/README ' "$T/manifest" || fail "README's run was not found"
grep -q '^C .*/module-guide spread ' "$T/manifest" || fail "the guide's two-phase module was not found"
grep -q '^RUN .*/module-guide ' "$T/manifest" || fail "the guide's run was not found"
grep -q '^CXX .*/module-guide cubes ' "$T/manifest" || fail "the guide's C++ module was not found"

while read -r kind dir what line; do
    doc=${dir##*/}
    ln -sfn "$top_srcdir/libspits" "$dir/libspits"
    ln -sfn "$top_builddir/tools" "$dir/tools"
    case $kind in
        C | CXX)
            if [ "$kind" = C ]; then src=$what.c compiler=cc; else src=$what.cc compiler=c++; fi
            $compiler -O2 -Wall -Werror -fPIC -shared -I"$top_srcdir/libspits" \
                -o "$dir/$what.check.so" "$dir/$src" >"$T/cc.log" 2>&1 ||
                fail "$doc:$line: $src does not compile: $(cat "$T/cc.log")"
            nm -D --defined-only "$dir/$what.check.so" | grep -q ' T spits_worker_run$' ||
                fail "$doc:$line: $src exports no spits_worker_run (under its C name)"
            ;;
        PY)
            "$PY" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' \
                "$dir/$what.py" >"$T/cc.log" 2>&1 ||
                fail "$doc:$line: $what.py does not parse: $(cat "$T/cc.log")"
            ;;
        RUN)
            if grep -q '[.]py\b' "$what.sh" && [ ! -f "$top_builddir/modules/.libs/python.so" ]; then
                echo "$doc:$line: skipped: modules/python.so not built"
                continue
            fi
            (cd "$dir" && timeout -s KILL 120 bash -e -o pipefail "$what.sh") \
                >"$what.out" 2>"$what.err" ||
                fail "$doc:$line: the example run failed (exit $?): $(tail -5 "$what.err")"
            diff -u "$what.want" "$what.out" >"$T/diff" ||
                fail "$doc:$line: the example printed something else than the text says: $(cat "$T/diff")"
            ;;
    esac
done <"$T/manifest"
echo "ok: README $n lines; $(grep -Ec '^(C|CXX) ' "$T/manifest") module(s) built, $(grep -c '^RUN ' "$T/manifest") run(s) as documented"
