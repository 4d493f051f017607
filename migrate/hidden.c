/*
 * Code an agent put into a task for its own ends (struct mig_hidden):
 * what dumps of the task leave out, and the program's bytes it patched,
 * put back in every page a dump reads.
 */
#include <string.h>

#include "internal.h"

/*
 * Dumps of t from now on leave out the code h describes, which is the
 * caller's, not the program's; h must outlive t's dumps.
 */
void
mig_hide(struct mig_task *t, const struct mig_hidden *h)
{
	t->hidden = h;
}

/*
 * The len bytes read at addr into buf as the program had them: what the
 * hidden code of h (and those after it) patched is put back.
 */
void
mig_hidden_pages(const struct mig_hidden *h, uint64_t addr, uint8_t *buf,
    size_t len)
{
	uint64_t	lo, hi;

	for (; h != NULL; h = h->next) {
		if (h->orig_len == 0)
			continue;
		lo = h->patched > addr ? h->patched : addr;
		hi = h->patched + h->orig_len < addr + len ?
		    h->patched + h->orig_len : addr + len;
		if (lo < hi)
			memcpy(buf + (lo - addr), h->orig + (lo - h->patched),
			    hi - lo);
	}
}

/* Is [s, e) an area of hidden code (h or one after it)? */
int
hidden_area(const struct mig_hidden *h, uint64_t s, uint64_t e)
{
	for (; h != NULL; h = h->next) {
		if (h->start != h->end && s >= h->start && e <= h->end)
			return 1;
	}
	return 0;
}
