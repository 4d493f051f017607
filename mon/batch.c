/*
 * mosmon -b: one frame as plain text for scripts. The format is stable:
 * a header, then one line per node in node order, fields split by one
 * space, "-" for a figure that is not known. New fields go last.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/osm.h"
#include "mon/mon.h"

static void
batch_figure(FILE *f, double v, int prec)
{
	if (isnan(v))
		fputs(" -", f);
	else
		fprintf(f, " %.*f", prec, v);
}

/* Print s to f, without down nodes if hide_down; -1 if f failed. */
int
batch_print(FILE *f, const struct mon_sample *s, int hide_down)
{
	const struct mon_node	*n;
	char			*flags;
	size_t			 i;

	fputs("NODE STATE LOAD CPUS SPEED MEMFREE MEMTOTAL GUESTS SWAPFREE "
	    "SWAPTOTAL FLAGS\n", f);
	for (i = 0; i < s->nnodes; i++) {
		n = &s->nodes[i];
		if (hide_down && !n->up)
			continue;
		fprintf(f, "%u %s", n->id, ctl_node_state_name(n->state));
		batch_figure(f, n->load, 2);
		batch_figure(f, n->cpus, 2);
		batch_figure(f, n->speed, 0);
		batch_figure(f, n->mem_free, 0);
		batch_figure(f, n->mem_total, 0);
		batch_figure(f, n->guests, 0);
		batch_figure(f, n->swap_free, 0);
		batch_figure(f, n->swap_total, 0);
		flags = ctl_flags_text(n->flags, ",", "-");
		fprintf(f, " %s\n", flags);
		free(flags);
	}
	if (fflush(f) == EOF || ferror(f))
		return -1;
	return 0;
}
