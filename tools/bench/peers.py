#!/usr/bin/env python3
"""peers.py - spits next to its peers on the same machine, same workloads.

    peers.py ROOT [--quick]

Runs three workloads with 2 workers each and prints one line per
(workload, runtime) as TAB-separated "workload, runtime, tasks/s, note",
after a warm-up that is not timed:
  empty   tasks that do nothing (Work Queue's unit is a command: `true`)
  10ms    tasks that sleep 10 ms
  1MB     tasks that each carry 1 MB of input
spits runs each twice: with the bench module (C) and as a Python job of
the very functions Dask is given (spits-python).
Peers: Dask distributed (a `dask scheduler` and one `dask worker` process
with 2 threads), Work Queue (`work_queue_worker -c 2` and the python
binding) and GNU parallel (-j2, local only). A peer that is not installed
is reported as such, not skipped silently.
"""
import os
import shutil
import warnings
import subprocess
import sys
import tempfile
import time

ROOT = sys.argv[1]
QUICK = "--quick" in sys.argv
N = {"empty": 2000 if QUICK else 20000, "10ms": 100 if QUICK else 400,
     "1MB": 20 if QUICK else 200}
N_SPITS_EMPTY = 20000 if QUICK else 1000000
MB = 1 << 20


def out(workload, runtime, rate, note=""):
    print("%s\t%s\t%.1f\t%s" % (workload, runtime, rate, note), flush=True)


def spits_job(d, job):
    """spits-jm JOB... in job dir d/job + one spits-tm (2 workers), CURVE
    on: the JM's exit status, its stdout and the seconds from the TM's
    join to the end, and its report."""
    jm = subprocess.Popen([ROOT + "/jobmanager/spits-jm", "-q", "--journal", "off",
                           "--jobdir", d + "/job", "--bind", "tcp://127.0.0.1:0"] + job,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    tm = subprocess.Popen([ROOT + "/taskmanager/spits-tm", "-q", "--jobdir", d + "/job",
                           "-n", "2"])
    o, _ = jm.communicate(timeout=600)
    tm.wait(timeout=60)
    import json
    rep = json.load(open(d + "/job/report.json"))
    joins = [e["t"] for e in rep["timeline"]["tm_events"] if e["event"] == "join"]
    shutil.rmtree(d)
    return jm.returncode, o, rep["seconds"] - (min(joins) if joins else 0), rep


def steady_rate(rep):
    """Tasks/s once tasks flow: from the first timeline point (taken each
    second) with tasks committed to the last."""
    pts = [p for p in rep["timeline"]["points"] if p[1] > 0]
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) if len(pts) > 1 else 0


def spits(workload):
    """The bench module (C)."""
    d = tempfile.mkdtemp(prefix="peers-spits.")
    n = N_SPITS_EMPTY if workload == "empty" else N[workload]
    args = {"empty": [], "10ms": ["-s", "10000"], "1MB": ["-t", str(MB)]}[workload]
    rc, o, secs, _ = spits_job(d, [ROOT + "/modules/.libs/bench.so", "-n", str(n)] + args)
    if rc != 0 or b"checksum" not in o:
        raise RuntimeError("spits job failed")
    out(workload, "spits", n / secs, "%d tasks, from the TM's join" % n)


# The Python functions of each workload: Dask runs them, and the spits
# Python job below is made of the same text.
PY_FUNCS = """
import time
def noop(i):
    return i
def nap(i):
    time.sleep(0.01)
    return i
def size(b):
    return len(b)
FUNCS = {"empty": noop, "10ms": nap, "1MB": size}
"""
PY_JOB = PY_FUNCS + """
import os, sys
N, KIND = int(sys.argv[1]), sys.argv[2]
done = 0
def generate(args):
    for i in range(N):
        yield os.urandom(%d) if KIND == "1MB" else i
execute = FUNCS[KIND]
def commit(result):
    global done
    done += 1
def finish():
    print("committed", done)
""" % MB


def spits_py(workload):
    """The same Python functions as Dask's, as a spits Python job (its
    worker processes: --isolate, as for every .py job)."""
    d = tempfile.mkdtemp(prefix="peers-spitspy.")
    n = N[workload] * (10 if workload == "empty" else 1)
    with open(d + "/job.py", "w") as f:
        f.write(PY_JOB)
    rc, o, secs, rep = spits_job(d, [d + "/job.py", str(n), workload])
    if rc != 0 or o.split() != [b"committed", str(n).encode()]:
        raise RuntimeError("spits Python job failed: %r" % o)
    note = "%d tasks, from the TM's join; the Python functions Dask runs" % n
    if workload == "10ms":
        steady = steady_rate(rep)
        note += "; %.1f%% of ideal (2 workers / 10 ms)" % (100 * n / secs / 200)
        note += ("; %.1f%% once tasks flow (worker processes started)" % (100 * steady / 200)
                 if steady else "; too short to tell the rate once tasks flow")
        # time.sleep(0.01) itself overshoots (timer slack, wake-up): the
        # rate no runtime can pass is 2 workers over what one call takes.
        ns = {}
        exec(PY_FUNCS, ns)
        t0 = time.perf_counter()
        for i in range(100):
            ns["nap"](i)
        bare = (time.perf_counter() - t0) / 100
        note += "; one nap() call takes %.2f ms here: %.1f%% of 2 / that" % (
            bare * 1e3, 100 * n / secs * bare / 2)
    out(workload, "spits-python", n / secs, note)


def dask_peer():
    warnings.filterwarnings("ignore")
    try:
        from distributed import Client
    except ImportError:
        for w in N:
            out(w, "dask", 0, "not installed (python3-distributed)")
        return
    port = 28786
    sch = subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                            "--no-dashboard"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    wrk = subprocess.Popen(["dask", "worker", "tcp://127.0.0.1:%d" % port, "--nworkers", "1",
                            "--nthreads", "2", "--no-dashboard"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = Client("tcp://127.0.0.1:%d" % port, timeout=60)
        c.wait_for_workers(1, timeout=60)

        funcs = {}
        exec(PY_FUNCS, funcs)
        for workload in N:
            n = N[workload]
            fn = funcs["FUNCS"][workload]
            data = [os.urandom(MB) for _ in range(n)] if workload == "1MB" else list(range(n))
            c.gather(c.map(fn, data[:10], pure=False))          # warm-up
            t = time.time()
            c.gather(c.map(fn, data, pure=False))
            out(workload, "dask", n / (time.time() - t), "%d tasks" % n)
        c.close()
    finally:
        wrk.terminate()
        sch.terminate()
        wrk.wait()
        sch.wait()


def wq_peer():
    try:
        import work_queue as wq
    except ImportError:
        for w in N:
            out(w, "workqueue", 0, "not installed (python3-workqueue)")
        return
    q = wq.WorkQueue(port=0)
    wrk = subprocess.Popen(["work_queue_worker", "--cores", "2", "--single-shot", "127.0.0.1",
                            str(q.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = tempfile.mkdtemp(prefix="peers-wq.")
    blob = d + "/blob"
    with open(blob, "wb") as f:
        f.write(os.urandom(MB))
    try:
        for workload in N:
            n = min(N[workload], 2000)          # commands: a few per ms at best

            def task():
                cmd = {"empty": "true", "10ms": "sleep 0.01", "1MB": "wc -c < blob"}[workload]
                t = wq.Task(cmd)
                t.specify_cores(1)
                if workload == "1MB":
                    t.specify_input_file(blob, "blob", cache=False)
                return t
            for _ in range(4):                                  # warm-up
                q.submit(task())
            while not q.empty():
                q.wait(5)
            t0 = time.time()
            for _ in range(n):
                q.submit(task())
            while not q.empty():
                q.wait(5)
            out(workload, "workqueue", n / (time.time() - t0), "%d commands" % n)
    finally:
        wrk.terminate()
        wrk.wait()
        shutil.rmtree(d)


def parallel_peer():
    if not shutil.which("parallel"):
        for w in N:
            out(w, "parallel", 0, "not installed (parallel)")
        return
    d = tempfile.mkdtemp(prefix="peers-par.")
    with open(d + "/blob", "wb") as f:
        f.write(os.urandom(MB))
    for workload in N:
        n = min(N[workload], 2000)
        cmd = {"empty": "true", "10ms": "sleep 0.01", "1MB": "wc -c < %s/blob >/dev/null" % d}[workload]
        t = time.time()
        subprocess.run("seq %d | parallel -j2 -N0 '%s'" % (n, cmd), shell=True, check=True,
                       stdout=subprocess.DEVNULL)
        out(workload, "parallel", n / (time.time() - t), "%d commands, local only" % n)
    shutil.rmtree(d)


for w in N:
    spits(w)
for w in N:
    spits_py(w)
dask_peer()
wq_peer()
parallel_peer()
