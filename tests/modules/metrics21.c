/*
 * metrics21.c - a SPITS 2.0 variant module with the current (2021)
 * metrics-reading interface: spits_get_metrics_list returns a struct
 * buffer_infos, spits_get_metrics_history a struct buffer_metrics per
 * name, each freed by its own function (no spits_get_metrics_last_values,
 * no spits_free_ptr). Prints "metrics21: sum=S" for S = 1 + ... + N.
 *
 * Every metrics object holds: buffer_size (int: the size it was made
 * with), step (int: 1, 2, 3, so the last is 3), results (int: 1 to 100,
 * set as a committer counts its results), ratio (float: 0.5 then 0.25),
 * variant (string "metrics21"), blob (3 bytes) and idle (an int with no
 * value yet). Each metric is a ring of buffer_size values, as in the
 * SPITS 2.0 HEAD metrics.hpp: a value set when it is full pops the
 * oldest, and spits_get_metrics_history gives up to sizes[i] values
 * from the OLDEST end, each with its sequence number (the count of
 * values set before it). So with buffer_size 10 results holds 91..100.
 * It aborts on any misuse: an object it did not make, a name it did not
 * list, a free with the wrong count or of something it did not return.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The 2021 structures, as the ABI doc gives them. */
enum DataType { TYPE_INT = 0, TYPE_FLOAT = 1, TYPE_STRING = 2, TYPE_BYTES = 3 };
struct buffer_info { char *name; enum DataType type; unsigned capacity; };
struct buffer_infos { unsigned quantity; struct buffer_info *infos; };
struct metric_info {
    union { unsigned char *c_data; int i_data; float f_data; };
    unsigned data_size;
    unsigned long seconds, nano_seconds;
    unsigned sequence_no;
};
struct buffer_metrics {
    char *name;
    unsigned type;
    unsigned num_metrics;
    struct metric_info *metrics;
};

#define MAGIC 0x5350495453323155ULL
#define NMET 7
typedef struct { uint64_t magic; unsigned size; } metrics_t;

/* Each metric's values in the order set: n of them; value j of an int
 * is j + 1 (buffer_size's is the object's). */
static const struct {
    const char *name;
    enum DataType type;
    unsigned n;
    float f[2];
    const char *data;
    unsigned size;
} met[NMET] = {
    {"buffer_size", TYPE_INT, 1, {0}, NULL, 0},
    {"step", TYPE_INT, 3, {0}, NULL, 0},
    {"results", TYPE_INT, 100, {0}, NULL, 0},
    {"ratio", TYPE_FLOAT, 2, {0.5f, 0.25f}, NULL, 0},
    {"variant", TYPE_STRING, 1, {0}, "metrics21", sizeof "metrics21"},
    {"blob", TYPE_BYTES, 1, {0}, "\1\2\3", 3},
    {"idle", TYPE_INT, 0, {0}, NULL, 0},
};

/* What the list and history calls return, with a header to check. */
typedef struct {
    uint64_t magic;
    struct buffer_infos l;
    struct buffer_info e[NMET];
} list_t;
typedef struct {
    uint64_t magic;
    unsigned n;
    struct buffer_metrics b[];
} history_t;

static metrics_t *check(const void *p)
{
    metrics_t *m = (metrics_t *)p;
    if (!m || m->magic != MAGIC || m->size == 0)
        abort();                 /* not ours, or deleted */
    return m;
}

void *spits_metrics_new(unsigned buffer_size)
{
    metrics_t *m = malloc(sizeof *m);
    m->magic = MAGIC;
    m->size = buffer_size;
    return m;
}

void spits_metrics_delete(void *p)
{
    check(p)->magic = 0;
    free(p);
}

struct buffer_infos *spits_get_metrics_list(void *metrics)
{
    list_t *l = calloc(1, sizeof *l);
    check(metrics);
    l->magic = MAGIC;
    l->l.quantity = NMET;
    l->l.infos = l->e;
    for (int i = 0; i < NMET; i++) {
        l->e[i].name = strdup(met[i].name);
        l->e[i].type = met[i].type;
        l->e[i].capacity = ((metrics_t *)metrics)->size;
    }
    return &l->l;
}

void spits_free_metric_list(struct buffer_infos *p)
{
    list_t *l = (list_t *)((char *)p - offsetof(list_t, l));
    if (l->magic != MAGIC || p->infos != l->e)
        abort();
    for (int i = 0; i < NMET; i++)
        free(l->e[i].name);
    l->magic = 0;
    free(l);
}

/* Value j (0: the first set) of metric k into v. */
static void value(const metrics_t *m, int k, unsigned j, struct metric_info *v)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v->seconds = (unsigned long)ts.tv_sec;
    v->nano_seconds = (unsigned long)ts.tv_nsec;
    v->sequence_no = j;
    if (met[k].type == TYPE_INT) {
        v->i_data = k == 0 ? (int)m->size : (int)j + 1;
        v->data_size = sizeof(int);
    } else if (met[k].type == TYPE_FLOAT) {
        v->f_data = met[k].f[j];
        v->data_size = sizeof(float);
    } else {
        v->c_data = malloc(met[k].size);
        memcpy(v->c_data, met[k].data, met[k].size);
        v->data_size = met[k].size;
    }
}

/* Up to sizes[i] values of each names[i] from the oldest end of its
 * ring, oldest first (HEAD's retrieve_multiple). */
struct buffer_metrics *spits_get_metrics_history(void *metrics, unsigned n,
                                                 const char **names,
                                                 unsigned *sizes)
{
    metrics_t *m = check(metrics);
    history_t *h = calloc(1, sizeof *h + n * sizeof *h->b);
    h->magic = MAGIC;
    h->n = n;
    for (unsigned i = 0; i < n; i++) {
        int k = 0;
        while (k < NMET && strcmp(names[i], met[k].name) != 0)
            k++;
        if (k == NMET)
            abort();             /* asked for a metric it never listed */
        unsigned held = met[k].n < m->size ? met[k].n : m->size;
        unsigned take = sizes[i] < held ? sizes[i] : held;
        h->b[i].name = strdup(met[k].name);
        h->b[i].type = met[k].type;
        h->b[i].num_metrics = take;
        h->b[i].metrics = calloc(take ? take : 1, sizeof *h->b[i].metrics);
        for (unsigned j = 0; j < take; j++)
            value(m, k, met[k].n - held + j, &h->b[i].metrics[j]);
    }
    return h->b;
}

void spits_free_metrics_history(struct buffer_metrics *p, unsigned n)
{
    history_t *h = (history_t *)((char *)p - offsetof(history_t, b));
    if (h->magic != MAGIC || h->n != n)
        abort();
    for (unsigned i = 0; i < n; i++) {
        for (unsigned j = 0; j < h->b[i].num_metrics; j++)
            if (h->b[i].type == TYPE_STRING || h->b[i].type == TYPE_BYTES)
                free(h->b[i].metrics[j].c_data);
        free(h->b[i].metrics);
        free(h->b[i].name);
    }
    h->magic = 0;
    free(h);
}

#define SPITS_METRICS_VARIANT
#define METRICS_PARAM , const void *metrics
#define METRICS_CHECK(m) check(m)
#define SUM_F(op, i) ((void)(op), (i))
#define SUM_MAIN "metrics21"
#include "common.h"
