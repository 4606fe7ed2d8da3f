/*
 * svgplot.h - a finished job drawn as SVG from its report.json document:
 * the commit timeline with the TMs' joins and leaves, one lane per TM
 * and one per GPU its workers owned (svgplot.c). spits-plot writes it to a file; the JM inlines it into
 * DIR/report.html.
 */
#ifndef SPITS_SVGPLOT_H
#define SPITS_SVGPLOT_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

/* Finds a value no job writes: a negative time or count. Returns 0, or
 * -1 with what naming the field and its value. */
int spits_svgplot_check(const json_t *rep, char *what, size_t len);

/* Writes rep as one <svg> element to f, a lane for each entry of rep's
 * "tms" (the caller bounds that list), and under them a lane for each
 * GPU their workers owned (a tms entry's "worker_res": report.json), at
 * most SPITS_SVG_GPU_LANES. 0, or -1 when rep has no timeline to draw
 * (no points, or no length). */
#define SPITS_SVG_GPU_LANES 64
#define SPITS_SVG_GPU_ID 100   /* a GPU id drawn, cut to this with its NUL */
int spits_svgplot_write(const json_t *rep, FILE *f);

/* Writes s to f with & < > " ' escaped, safe in XML/HTML text and in a
 * quoted attribute. A NULL s writes nothing. */
void spits_xml_escape(FILE *f, const char *s);

#ifdef SPITS_SELFTEST
int spits_svgplot_selftest(void);
#endif

#endif
