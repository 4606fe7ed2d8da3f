// cxxbad.cc - a C++ module whose spits_* functions lack extern "C", as
// when a module does not include spits.h (whose declarations would give
// them C linkage): their names are mangled and the runtime must say so.
// Built with -DCXXBAD_PARTIAL (cxxpart.so) only spits_worker_run lacks
// it, as when one declaration is forgotten. Neither ever runs.
#include <cstddef>

typedef long long spitssize_t;
typedef const void *spitsctx_t;
typedef void (*spitspush_t)(const void *, spitssize_t, spitsctx_t);

#ifdef CXXBAD_PARTIAL
#define C_LINKAGE extern "C"
#else
#define C_LINKAGE
#endif

C_LINKAGE void *spits_job_manager_new(int, const char *[], const void *, spitssize_t) { return NULL; }
C_LINKAGE int spits_job_manager_next_task(void *, spitspush_t, spitsctx_t) { return 0; }
C_LINKAGE void *spits_worker_new(int, const char *[]) { return NULL; }
int spits_worker_run(void *, const void *, spitssize_t, spitspush_t, spitsctx_t) { return 0; }
C_LINKAGE void *spits_committer_new(int, const char *[], const void *, spitssize_t) { return NULL; }
C_LINKAGE int spits_committer_commit_pit(void *, const void *, spitssize_t) { return 0; }
C_LINKAGE int spits_committer_commit_job(void *, spitspush_t, spitsctx_t) { return 0; }
