/*
 * What the user looks at: the mode, whether down nodes are hidden, and
 * which of the visible nodes are on screen. No drawing here, so the paging
 * arithmetic and the keys can be tested without a terminal.
 */
#include "lib/osm.h"
#include "mon/mon.h"

const char *
view_mode_name(enum mon_mode mode)
{
	switch (mode) {
	case MON_LOAD:
		return "load";
	case MON_SPEED:
		return "speed";
	case MON_MEM:
		return "memory";
	case MON_SWAP:
		return "swap";
	}
	fatalx("%s: bad mode %d", __func__, mode);
}

/* Node rows on a screen of the given height. */
size_t
view_rows(int lines)
{
	return lines > VIEW_CHROME ? (size_t)(lines - VIEW_CHROME) : 0;
}

/*
 * Clamp the view to n visible nodes and a screen of rows node rows, and
 * say which are shown: [*first, *first + *count). The last page is kept
 * full rather than showing a lone node at the top.
 */
void
view_page(struct mon_view *v, size_t n, size_t rows, size_t *first,
    size_t *count)
{
	if (n <= rows)
		v->top = 0;
	else if (v->top > n - rows)
		v->top = n - rows;
	*first = v->top;
	*count = n - v->top < rows ? n - v->top : rows;
}

/* Where the node at the top of the screen goes when down nodes show or hide. */
static size_t
view_retop(const struct mon_view *v, const struct mon_sample *s)
{
	size_t	i, seen = 0, before = 0;

	for (i = 0; i < s->nnodes; i++) {
		if (s->nodes[i].up || !v->hide_down) {
			if (seen++ == v->top)
				break;
		}
		if (s->nodes[i].up || v->hide_down)
			before++;
	}
	return before;
}

static size_t
view_sub(size_t a, size_t b)
{
	return a > b ? a - b : 0;
}

/*
 * Act on one key; the main loop and the tests both come through here.
 * Returns 1 if the screen must be redrawn, 0 for a key that means nothing.
 */
int
view_key(struct mon_view *v, int key, const struct mon_sample *s, size_t rows)
{
	size_t	first, count, step = rows > 1 ? rows : 1;

	switch (key) {
	case 'q':
	case 'Q':
		v->quit = 1;
		return 1;
	case 'l':
		v->mode = MON_LOAD;
		break;
	case 's':
		v->mode = MON_SPEED;
		break;
	case 'm':
		v->mode = MON_MEM;
		break;
	case 'w':
		v->mode = MON_SWAP;
		break;
	case 'd':
		v->top = view_retop(v, s);
		v->hide_down = !v->hide_down;
		break;
	case KEY_UP:
	case 'k':
		v->top = view_sub(v->top, 1);
		break;
	case KEY_DOWN:
	case 'j':
		v->top++;
		break;
	case KEY_PPAGE:
	case 'b':
		v->top = view_sub(v->top, step);
		break;
	case KEY_NPAGE:
	case ' ':
		v->top += step;
		break;
	case KEY_HOME:
	case 'g':
		v->top = 0;
		break;
	case KEY_END:
	case 'G':
		v->top = s->nnodes;
		break;
	case KEY_RESIZE:
	case VIEW_REPAINT:
		break;
	default:
		return 0;
	}
	view_page(v, sample_visible(s, v->hide_down), rows, &first, &count);
	return 1;
}
