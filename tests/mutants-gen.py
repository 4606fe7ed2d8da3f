#!/usr/bin/python3
"""mutants-gen.py - mutants of serving/ derived from the code, not picked.

For each file named (default: the list in tests/mutants-gen.files), every
site outside its SPITS_SELFTEST section, comments, strings, asserts,
logging calls and preprocessor lines yields mutants:

  - a relational operator swapped (< <=, > >=, == !=, each way);
  - an arithmetic operator swapped (+ -, * /, % *, ++ --, += -=);
  - an integer or floating constant off by one (n+1, n-1);
  - an assignment or call statement deleted.

Each mutant is the file with that one change, compiled with -DSPITS_SELFTEST,
linked with a driver that runs only that file's self-test (the function
named *_selftest in its section) against every other file of serving/ and
the build's libspits, and run under a time-out. A mutant whose self-test
fails, crashes or times out is killed; one that does not compile is
stillborn (left out of the rate). tests/mutants.equiv names the mutants
with no behaviour to catch, each keyed by file, function, operator and the
mutated line's text, with a one-line reason; they are not run, and an
entry that matches no mutant is an error, so the list cannot rot.

  mutants-gen.py [--all | --sample N] [--jobs J] [--list] [FILE...]

A line of tests/mutants-gen.files may name a second file after the first:
the one whose self-test covers it (a file with no self-test of its own).

--all runs every mutant; --sample N every Nth of the sorted list (a fixed
stride, so the same mutants while the code is the same). --list prints
the mutants' keys and runs none. The exit status is non-zero if the kill
rate over the mutants run (equivalent ones aside) is under 90 %, or if
the equivalent list does not match the code.
"""

import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_SRC = os.environ.get("top_srcdir", os.path.dirname(HERE))
TOP_BUILD = os.environ.get("top_builddir", TOP_SRC)
FILES_LIST = os.path.join(TOP_SRC, "tests", "mutants-gen.files")
EQUIV = os.path.join(TOP_SRC, "tests", "mutants.equiv")
MIN_RATE = 90.0
# glibc's checking malloc, where it has one: a write past a block (a
# capacity mutant) aborts at its free or realloc instead of passing.
MALLOC_DEBUG = [os.path.join(d, "libc_malloc_debug.so.0") for d in
                ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib")]
MALLOC_DEBUG = [x for x in MALLOC_DEBUG if os.path.exists(x)][:1]
MALLOC_CHECK = (["LD_PRELOAD=" + MALLOC_DEBUG[0], "MALLOC_CHECK_=3"] if MALLOC_DEBUG
                else []) + ["MALLOC_PERTURB_=165"]

# Calls whose deletion or change only alters a log line.
LOG_CALL = re.compile(r"^\s*(spits_(warn|info|debug|error|log|trace)\w*|"
                      r"fprintf|printf|perror|assert)\s*\(")
KEYWORDS = {
    "if", "else", "for", "while", "do", "switch", "case", "default",
    "return", "break", "continue", "goto", "sizeof", "typedef", "struct",
    "union", "enum", "static", "const", "volatile", "extern", "inline",
    "unsigned", "signed", "int", "long", "short", "char", "void", "float",
    "double", "_Bool", "register", "restrict", "_Atomic",
}
TYPE_WORDS = {"int", "long", "short", "char", "void", "float", "double",
              "unsigned", "signed", "const", "volatile", "_Bool", "struct",
              "union", "enum", "static", "register", "_Atomic", "restrict"}
SWAP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
        "+": "-", "-": "+", "*": "/", "/": "*", "%": "*",
        "++": "--", "--": "++", "+=": "-=", "-=": "+="}
TOKEN = re.compile(r"""
    (?P<num>(?:0[xX][0-9a-fA-F]+|\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)
            [uUlLfF]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\|=|\^=|
           [-+*/%<>=!&|^~?:;,.(){}\[\]])
  | (?P<ws>\s+)
  | (?P<other>.)
""", re.X | re.S)


def mask(text):
    """text with comments, string and char literals blanked (same
    offsets, newlines kept; a literal keeps its quotes)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            a, j = i, text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith("//", i):
            a, j = i, text.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            a, j = i + 1, min(j, n)     # (blank between the quotes)
        else:
            i += 1
            continue
        for k in range(a, j):
            if out[k] != "\n":
                out[k] = " "
        i = j + 1 if c in "\"'" else j
    return "".join(out)


def code_lines(masked):
    """The set of line numbers (0-based) that are code to mutate: not in a
    SPITS_SELFTEST section, not a preprocessor line."""
    keep = set()
    depth = 0           # of #if nesting inside the self-test section
    lines = masked.split("\n")
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if depth:
            if re.match(r"#\s*if", s):
                depth += 1
            elif re.match(r"#\s*endif", s):
                depth -= 1
        elif re.match(r"#\s*if(def)?\s+SPITS_SELFTEST\b", s) or \
                re.match(r"#\s*if\s+defined\s*\(?\s*SPITS_SELFTEST", s):
            depth = 1
        elif s.startswith("#"):
            while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
        else:
            keep.add(i)
        i += 1
    return keep


class Tok:
    __slots__ = ("kind", "text", "pos", "line")

    def __init__(self, kind, text, pos, line):
        self.kind, self.text, self.pos, self.line = kind, text, pos, line


def tokens(masked, keep):
    toks = []
    line = 0
    for m in TOKEN.finditer(masked):
        kind = m.lastgroup
        if kind == "ws":
            line += m.group().count("\n")
            continue
        if line in keep:
            toks.append(Tok(kind, m.group(), m.start(), line))
    return toks


def is_type(tok):
    return tok.kind == "id" and (tok.text in TYPE_WORDS or tok.text.endswith("_t"))


class Site:
    """One mutant: replace text[start:end] by new."""
    __slots__ = ("start", "end", "new", "op", "line", "func", "key")

    def __init__(self, start, end, new, op, line, func):
        self.start, self.end, self.new, self.op = start, end, new, op
        self.line, self.func, self.key = line, func, None


def sites(path, text):
    masked = mask(text)
    keep = code_lines(masked)
    toks = tokens(masked, keep)
    lines = text.split("\n")

    # Statements to leave alone: asserts and logging calls, whole.
    quiet = set()
    # Function of each token, and statement starts at brace depth >= 1.
    func = [None] * len(toks)
    brace = 0
    cur = "(file scope)"
    paren = 0
    header = []         # paren depths at which an if/for/while header opened
    starts = []         # indices of statement-start tokens
    at_start = True
    pending_ctrl = False
    for i, t in enumerate(toks):
        if t.text == "{" and paren == 0:
            if brace == 0:
                # The function's name: the first identifier before "(" since
                # the last top-level ";" or "}".
                j = i - 1
                while j >= 0 and not (toks[j].text in ";}" and func[j] == "(file scope)"):
                    j -= 1
                name = None
                for k in range(j + 1, i):
                    if toks[k].kind == "id" and k + 1 < i and toks[k + 1].text == "(":
                        name = toks[k].text
                        break
                cur = name or "(file scope)"
            brace += 1
            func[i] = cur
            at_start = True
            continue
        if t.text == "}" and paren == 0:
            brace -= 1
            func[i] = cur if brace else "(file scope)"
            if brace == 0:
                cur = "(file scope)"
            at_start = True
            continue
        func[i] = cur
        if at_start and brace >= 1 and paren == 0:
            starts.append(i)
            at_start = False
        if t.text == "(":
            if i > 0 and toks[i - 1].text in ("if", "for", "while", "switch"):
                header.append(paren)
            paren += 1
        elif t.text == ")":
            paren -= 1
            if header and header[-1] == paren:
                header.pop()
                at_start = True         # the header's body follows
        elif paren == 0 and (t.text == ";" or t.text == "else" or t.text == "do"):
            at_start = True
        elif paren == 0 and t.text == ":" and i > 0 and (
                toks[i - 1].text == "default" or
                (i > 1 and toks[i - 2].text == "case") or
                (i > 1 and toks[i - 2].text in ";{}" and toks[i - 1].kind == "id")):
            at_start = True

    # Each statement: its tokens up to ";" at its own depth.
    stmts = []
    for s in starts:
        if toks[s].text in KEYWORDS or toks[s].text in "{};":
            continue
        p = 0
        b = 0
        e = s
        while e < len(toks):
            x = toks[e].text
            if x in "([":
                p += 1
            elif x in ")]":
                p -= 1
            elif x == "{":
                b += 1
            elif x == "}":
                b -= 1
                if b < 0:
                    break
            elif x == ";" and p == 0 and b == 0:
                break
            e += 1
        if e >= len(toks) or toks[e].text != ";":
            continue
        stmts.append((s, e))
    for s, e in stmts:
        first = lines[toks[s].line]
        if LOG_CALL.match(masked[toks[s].pos:toks[e].pos + 1]) or \
                re.match(r"\s*(assert|spits_(warn|info|debug|error|log))", first[len(first) - len(first.lstrip()):]):
            for k in range(s, e + 1):
                quiet.add(k)

    out = []

    def add(i, new, op, start=None, end=None):
        t = toks[i]
        out.append(Site(t.pos if start is None else start,
                        t.pos + len(t.text) if end is None else end,
                        new, op, t.line, func[i]))

    # Statement deletions: calls and assignments, not declarations.
    for s, e in stmts:
        if s in quiet:
            continue
        body = toks[s:e]
        if is_type(body[0]):
            continue
        if len(body) > 2 and body[0].kind == "id" and (
                body[1].kind == "id" or
                (body[1].text == "*" and body[2].kind == "id" and
                 (len(body) == 3 or body[3].text in ("=", ";", ",", "[")))):
            continue            # a declaration
        depth = 0
        kind = None
        for k, t in enumerate(body):
            if t.text in "([":
                depth += 1
            elif t.text in ")]":
                depth -= 1
            elif depth == 0 and t.text in ("=", "+=", "-=", "*=", "/=", "%=",
                                           "&=", "|=", "^=", "<<=", ">>=",
                                           "++", "--"):
                kind = "assignment"
                break
        if kind is None and body[0].kind == "id" and len(body) > 1 and body[1].text == "(":
            kind = "call"
        if kind is None and body[0].text == "(" and len(body) > 1 and body[1].text == "void":
            continue            # (void)x; does nothing to delete
        if kind is None:
            continue
        start = toks[s].pos
        end = toks[e].pos + 1
        span = text[start:end]
        add(s, ";" + "\n" * span.count("\n"), "delete " + kind, start, end)

    # Operators and constants.
    for i, t in enumerate(toks):
        if i in quiet:
            continue
        prev = toks[i - 1] if i else None
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if t.kind == "num":
            m = re.match(r"(0[xX][0-9a-fA-F]+|[\d.eE+-]+?)([uUlLfF]*)$", t.text)
            lit, suf = m.group(1), m.group(2)
            if prev is not None and prev.text == "[" and nxt is not None and nxt.text == "]" \
                    and i > 1 and is_type(toks[i - 2]):
                continue        # an array's size in a declaration
            isfloat = not lit.lower().startswith("0x") and re.search(r"[.eE]", lit)
            if isfloat:
                v = float(lit)
                ups = [repr(v + 1), repr(v - 1)]
            else:
                v = int(lit, 0)
                ups = [str(v + 1)] + ([str(v - 1)] if v > 0 else ["(-1)"])
            for new, d in zip(ups, ("+1", "-1")):
                add(i, new + suf, "%s %s" % (t.text, d))
            continue
        if t.kind != "op" or t.text not in SWAP:
            continue
        binary = prev is not None and (
            (prev.kind == "id" and prev.text not in KEYWORDS) or
            prev.kind == "num" or prev.text in (")", "]"))
        if t.text in ("+", "-", "*", "/", "%"):
            if not binary:
                continue
            if t.text == "*" and (is_type(prev) or (prev.text == ")" and nxt is not None and nxt.text in (")", ","))):
                continue        # a pointer type, not a product
            if t.text == "*" and prev.kind == "id" and i > 1 and toks[i - 2].text in ("(", ",", ";", "{", "}") \
                    and nxt is not None and nxt.kind == "id" and i + 2 < len(toks) and \
                    toks[i + 2].text in ("=", ";", ",", ")", "["):
                continue        # "type *name" with a type not named *_t
        if t.text in ("<", ">") and prev is not None and prev.text == "#":
            continue
        add(i, SWAP[t.text], "%s to %s" % (t.text, SWAP[t.text]))

    # Keys: file, function, operator, the line's text; #N among equals.
    seen = {}
    for st in sorted(out, key=lambda x: (x.start, x.op)):
        base = "%s | %s | %s | %s" % (path, st.func, st.op, lines[st.line].strip())
        seen[base] = seen.get(base, 0) + 1
        st.key = base if seen[base] == 1 else base.replace(
            " | " + lines[st.line].strip(), " #%d | %s" % (seen[base], lines[st.line].strip()), 1)
    return sorted(out, key=lambda x: (x.start, x.op))


def read_equiv(path):
    """{key: reason} from the equivalent list: a key line, then its reason
    on an indented line."""
    equiv = {}
    if not os.path.exists(path):
        return equiv, []
    errors = []
    key = None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            if line[0] in " \t":
                if key is None:
                    errors.append("%s:%d: a reason with no mutant before it" % (path, n))
                    continue
                equiv[key] = line.strip()
                key = None
                continue
            if key is not None:
                errors.append("%s:%d: %s has no reason" % (path, n - 1, key))
            key = line.strip()
            if key in equiv:
                errors.append("%s:%d: %s is listed twice" % (path, n, key))
            equiv[key] = None
    if key is not None:
        errors.append("%s: %s has no reason" % (path, key))
    return equiv, errors


def selftest_name(text, path):
    m = re.search(r"^int\s+(\w+_selftest)\s*\(\s*void\s*\)", text, re.M)
    if not m:
        raise SystemExit("mutants-gen: %s has no int *_selftest(void)" % path)
    return m.group(1)


def run(cmd, log, timeout=None):
    try:
        with open(log, "w") as f:
            return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return 124


def main():
    ap = argparse.ArgumentParser(description="Generated mutants of serving/.")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--all", action="store_true", help="run every mutant (the default)")
    g.add_argument("--sample", type=int, metavar="N", help="run every Nth mutant")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--list", action="store_true", help="print the mutants' keys, run none")
    ap.add_argument("--survivors", action="store_true",
                    help="also print each survivor's diff")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per mutant (default: 10x the unmutated run, at least 5)")
    ap.add_argument("--keep", help="build in this directory and keep it")
    ap.add_argument("--only", metavar="KEYS", help="run only the mutants whose keys are "
                    "lines of this file (as --list or a run prints them)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()

    tests_in = {}       # file: the file whose self-test runs its mutants
    with open(FILES_LIST) as f:
        for l in f:
            w = l.split("#")[0].split()
            if w:
                tests_in[w[0]] = w[1] if len(w) > 1 else w[0]
    files = a.files or list(tests_in)
    equiv, errors = read_equiv(EQUIV)

    muts = []           # (path, text, site)
    fns = {}
    for path in files:
        with open(os.path.join(TOP_SRC, path)) as f:
            text = f.read()
        tpath = tests_in.get(path, path)
        if tpath == path:
            fns[path] = selftest_name(text, path)
        else:
            with open(os.path.join(TOP_SRC, tpath)) as f:
                fns[path] = selftest_name(f.read(), tpath)
        for st in sites(path, text):
            muts.append((path, text, st))
    keys = {}
    for m in muts:
        if m[2].key in keys:
            errors.append("two mutants share the key %s" % m[2].key)
        keys[m[2].key] = m
    for k in equiv:
        if k not in keys and k.split(" | ")[0] in files:
            errors.append("%s: no such mutant: %s" % (EQUIV, k))
    for e in errors:
        print("mutants-gen: " + e, file=sys.stderr)
    if a.list:
        for m in muts:
            print(("= " if m[2].key in equiv else "") + m[2].key)
        return 1 if errors else 0
    if errors:
        return 1

    todo = [m for m in muts if m[2].key not in equiv]
    if a.sample:
        todo = todo[::a.sample]
    if a.only:
        with open(a.only) as f:
            want = {re.sub(r"^(SURVIVED|stillborn): ", "", l.strip()) for l in f}
        todo = [m for m in todo if m[2].key in want]
    cc = shlex.split(os.environ.get("MUT_CC", "cc"))
    xflags = shlex.split(os.environ.get("MUT_CFLAGS", ""))
    libs = shlex.split(os.environ.get("MUT_LIBS", "-lzmq -ljansson -lsodium -lm"))
    flags = ["-O0", "-w", "-pthread", "-I" + os.path.join(TOP_SRC, "serving"),
             "-I" + os.path.join(TOP_SRC, "libspits")] + xflags + ["-DSPITS_SELFTEST"]
    libspits = os.path.join(TOP_BUILD, "libspits", ".libs", "libspits-test.a")
    if not os.path.exists(libspits):
        print("mutants-gen: no %s: build the tree first (make)" % libspits, file=sys.stderr)
        return 1
    work = a.keep or tempfile.mkdtemp(prefix="spits-mutants.")
    os.makedirs(work, exist_ok=True)
    t0 = time.time()

    # Every file of serving/ compiled once; per file mutated, an archive of
    # the others and a driver that runs its self-test.
    deps = os.path.join(work, "deps")
    os.makedirs(deps, exist_ok=True)
    srcs = sorted(x for x in os.listdir(os.path.join(TOP_SRC, "serving")) if x.endswith(".c"))

    def compile_dep(c):
        o = os.path.join(deps, c[:-2] + ".o")
        rc = run(cc + flags + ["-c", "-o", o, os.path.join(TOP_SRC, "serving", c)], o + ".log")
        return c, rc

    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for c, rc in ex.map(compile_dep, srcs):
            if rc:
                print("mutants-gen: cannot build serving/%s" % c, file=sys.stderr)
                return 1
    base_time = {}
    for path in files:
        u = os.path.basename(path)[:-2]
        others = [os.path.join(deps, c[:-2] + ".o") for c in srcs if c[:-2] != u]
        arch = os.path.join(work, "deps-%s.a" % u)
        if os.path.exists(arch):
            os.unlink(arch)
        subprocess.run(["ar", "rcs", arch] + others, check=True)
        drv = os.path.join(work, "driver-%s.c" % u)
        with open(drv, "w") as f:
            f.write("int %s(void);\nint main(void) { return %s() == 0 ? 0 : 1; }\n"
                    % (fns[path], fns[path]))
        subprocess.run(cc + flags + ["-c", "-o", drv[:-2] + ".o", drv], check=True)
        d = os.path.join(work, "orig-" + u)
        os.makedirs(d, exist_ok=True)
        exe = os.path.join(d, "selftest")
        if run(cc + flags + ["-o", exe, drv[:-2] + ".o", os.path.join(deps, u + ".o"),
                             arch, libspits] + libs, exe + ".log"):
            print("mutants-gen: the unmutated %s does not link" % path, file=sys.stderr)
            return 1
        s = time.time()
        if run([exe], exe + ".run.log", timeout=120):
            print("mutants-gen: the unmutated %s fails %s" % (path, fns[path]), file=sys.stderr)
            return 1
        base_time[path] = time.time() - s

    def one(idx_m):
        idx, (path, text, st) = idx_m
        u = os.path.basename(path)[:-2]
        d = os.path.join(work, "m%05d" % idx)
        os.makedirs(d, exist_ok=True)
        src = os.path.join(d, os.path.basename(path))
        with open(src, "w") as f:
            f.write(text[:st.start] + st.new + text[st.end:])
        o = src[:-2] + ".o"
        exe = os.path.join(d, "selftest")
        if run(cc + ["-I" + os.path.dirname(os.path.join(TOP_SRC, path))] + flags +
               ["-c", "-o", o, src], os.path.join(d, "build.log")):
            return st, "stillborn", ""
        if run(cc + flags + ["-o", exe, os.path.join(work, "driver-%s.o" % u), o,
                             os.path.join(work, "deps-%s.a" % u), libspits] + libs,
               os.path.join(d, "build.log")):
            return st, "stillborn", ""
        tmo = a.timeout or max(5.0, 10 * base_time[path])
        rc = run(["timeout", "-s", "KILL", str(tmo), "env"] + MALLOC_CHECK + [exe],
                 os.path.join(d, "run.log"))
        how = ""
        if rc:
            with open(os.path.join(d, "run.log"), errors="replace") as f:
                for l in f:
                    if re.search(r"\.[ch]:\d+: ", l):
                        how = re.sub(r".*\.[ch]:\d+: ", "", l.strip())[:90]
                        break
            if rc in (124, 137):
                how = "timed out after %gs" % tmo
            elif rc > 128 or rc < 0:
                how = how or "signal %d" % (rc - 128 if rc > 0 else -rc)
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)
        return st, "killed" if rc else "SURVIVED", how

    counts = {"killed": 0, "SURVIVED": 0, "stillborn": 0}
    survivors = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for st, res, how in ex.map(one, enumerate(todo)):
            counts[res] += 1
            if res != "killed":
                print("%s: %s" % (res, st.key))
                if res == "SURVIVED":
                    survivors.append(st)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    took = time.time() - t0
    live = counts["killed"] + counts["SURVIVED"]
    rate = 100.0 * counts["killed"] / live if live else 100.0
    print("mutants: %d generated in %s, %d equivalent (not run), %d run%s: "
          "killed %d, survived %d, stillborn %d; kill rate %.1f %% over %d; %.0f s on %d jobs"
          % (len(muts), " ".join(files), sum(1 for m in muts if m[2].key in equiv),
             len(todo), " (every %dth)" % a.sample if a.sample else "",
             counts["killed"], counts["SURVIVED"], counts["stillborn"], rate, live,
             took, a.jobs))
    if a.survivors:
        for st in survivors:
            print("  %s\n    -> %r" % (st.key, st.new))
    if rate < MIN_RATE:
        print("mutants-gen: kill rate %.1f %% is under %.0f %%" % (rate, MIN_RATE), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
