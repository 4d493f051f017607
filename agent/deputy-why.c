/*
 * Why the process is where it is. The deputy notes every move, every
 * return home and every move that did not happen, with its reason; mosd
 * is told the last one and the recent ones (mosps -v), and counts the
 * returns home by reason (mosctl stats). openMosix kept this in
 * /proc/PID/cantmove: "why won't my process migrate" is what users ask.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Note what happened to the process, and why (a printf format). */
void
deputy_why(struct deputy *d, const char *fmt, ...)
{
	va_list	ap;
	size_t	i;

	if (d->nhistory == DEPUTY_HISTORY) {
		for (i = 1; i < DEPUTY_HISTORY; i++)
			memcpy(d->history[i - 1], d->history[i],
			    sizeof d->history[i]);
		d->nhistory--;
	}
	va_start(ap, fmt);
	vsnprintf(d->history[d->nhistory], sizeof d->history[0], fmt, ap);
	va_end(ap);
	log_info("process %d (%s): %s", (int)d->pid, d->command,
	    d->history[d->nhistory]);
	d->nhistory++;
}

/* The process came home of its own: a call it could make only there. */
void
deputy_why_home(struct deputy *d, const char *reason)
{
	snprintf(d->home_why, sizeof d->home_why, "%s", reason);
	d->homecomings++;
	deputy_why(d, "came home from node %u: %s", d->where, reason);
}

/* The last of it, and the recent ones, for mosd. */
void
deputy_why_describe(struct deputy *d, Osm__CtlAgent *a)
{
	size_t	i;

	if (d->nhistory == 0)
		return;
	a->why = d->history[d->nhistory - 1];
	a->n_history = d->nhistory;
	a->history = d->history_p;
	for (i = 0; i < d->nhistory; i++)
		d->history_p[i] = d->history[i];
	if (d->homecomings > 0) {
		a->has_homecomings = 1;
		a->homecomings = d->homecomings;
		a->home_why = d->home_why;
	}
}
