// cxxmod.cc - a v2 module written in C++: sums the squares of 1..N and
// prints "cxxmod: sum=S".
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "spits.h"

namespace {
struct Job { std::int64_t n = 100, next = 0; };
struct Committer { std::vector<std::int64_t> parts; };
}

extern "C" {
void *spits_job_manager_new(int argc, const char *argv[], const void *, spitssize_t)
{
    Job *j = new Job;
    if (argc > 1)
        j->n = std::stoll(std::string(argv[1]));
    return j;
}
int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    Job *j = static_cast<Job *>(jm);
    if (j->next >= j->n)
        return 0;
    std::int64_t i = ++j->next;
    push(&i, sizeof i, ctx);
    return 1;
}
void spits_job_manager_finalize(void *jm) { delete static_cast<Job *>(jm); }
void *spits_worker_new(int, const char *[]) { return new std::string("worker"); }
int spits_worker_run(void *, const void *task, spitssize_t sz, spitspush_t push, spitsctx_t ctx)
{
    std::int64_t i;
    if (sz != sizeof i)
        return 1;
    std::memcpy(&i, task, sizeof i);
    std::int64_t v = i * i;
    push(&v, sizeof v, ctx);
    return 0;
}
void spits_worker_finalize(void *w) { delete static_cast<std::string *>(w); }
void *spits_committer_new(int, const char *[], const void *, spitssize_t) { return new Committer; }
int spits_committer_commit_pit(void *c, const void *r, spitssize_t sz)
{
    std::int64_t v;
    if (sz != sizeof v)
        return 1;
    std::memcpy(&v, r, sizeof v);
    static_cast<Committer *>(c)->parts.push_back(v);
    return 0;
}
int spits_committer_commit_job(void *c, spitspush_t, spitsctx_t)
{
    std::int64_t sum = 0;
    for (std::int64_t v : static_cast<Committer *>(c)->parts)
        sum += v;
    std::printf("cxxmod: sum=%lld\n", static_cast<long long>(sum));
    return 0;
}
void spits_committer_finalize(void *c) { delete static_cast<Committer *>(c); }
}
