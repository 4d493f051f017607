/*
 * The ncurses view: one row per node with a horizontal bar, a status line
 * on top (the nodes shown, how many are active) and the keys (or the last
 * error) at the bottom. A row starts with the node's number, '*' for this
 * node and a mark for its flags (B blocked, S stay, L lstay), then the
 * bar and its figures, or why there are none (down, unknown). Draws into
 * any WINDOW and never refreshes, so tests can read the result back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/osm.h"
#include "mon/mon.h"
#include "proto/ctl.pb-c.h"

/* Node number, the '*' that marks this node, the flag mark, a space. */
#define DRAW_ID_WIDTH	9
/* Below this the rows would not hold a number, a bar and the figures. */
#define DRAW_MIN_COLS	40
#define DRAW_MIN_LINES	(VIEW_CHROME + 1)

enum {
	PAIR_LOW = 1,		/* load within capacity, free memory */
	PAIR_HIGH,		/* load beyond capacity */
	PAIR_USED,		/* used memory */
	PAIR_SPEED,
	PAIR_DOWN
};

/* A figure printed right of the bar. */
struct draw_col {
	const char	*head;
	int		 width;
	int		 prec;
};
static const struct draw_mode {
	const char	*label;		/* heads the bars */
	int		 prec;		/* of the scale in the label */
	struct draw_col	 cols[2];
} draw_modes[] = {
	[MON_LOAD] = { "load:", 2, { { "LOAD", 7, 2 }, { "GUESTS", 7, 0 } } },
	[MON_SPEED] = { "speed:", 0, { { "SPEED", 7, 0 }, { "CPUS", 7, 2 } } },
	[MON_MEM] = { "MiB: # used . free,", 0,
	    { { "USED", 8, 0 }, { "FREE", 8, 0 } } },
	[MON_SWAP] = { "swap MiB: # used . free,", 0,
	    { { "USED", 8, 0 }, { "FREE", 8, 0 } } },
};

static int	draw_colors;

/* Colours if the terminal has them; without, the bars are plain '#'. */
void
draw_init(void)
{
	if (!has_colors() || start_color() == ERR)
		return;
	use_default_colors();
	init_pair(PAIR_LOW, COLOR_GREEN, -1);
	init_pair(PAIR_HIGH, COLOR_RED, -1);
	init_pair(PAIR_USED, COLOR_YELLOW, -1);
	init_pair(PAIR_SPEED, COLOR_CYAN, -1);
	init_pair(PAIR_DOWN, COLOR_RED, -1);
	draw_colors = 1;
}

static attr_t
draw_pair(int pair)
{
	return draw_colors ? COLOR_PAIR(pair) : A_NORMAL;
}

/* The figures of a node in this mode: load; speed, CPUs; used, free. */
static void
draw_values(enum mon_mode mode, const struct mon_node *n, double v[2])
{
	switch (mode) {
	case MON_LOAD:
		v[0] = n->load;
		v[1] = n->guests;
		break;
	case MON_SPEED:
		v[0] = n->speed;
		v[1] = n->cpus;
		break;
	case MON_MEM:
		v[0] = n->mem_total - n->mem_free;	/* NAN if either is */
		v[1] = n->mem_free;
		break;
	case MON_SWAP:
		v[0] = n->swap_total - n->swap_free;
		v[1] = n->swap_free;
		break;
	}
}

/* Width of the figures right of the bar, their padding included. */
static int
draw_cols_width(enum mon_mode mode)
{
	return draw_modes[mode].cols[0].width + draw_modes[mode].cols[1].width;
}

/* What a whole bar of a node stands for: load, speed, total memory. */
static double
draw_extent(enum mon_mode mode, const struct mon_node *n)
{
	switch (mode) {
	case MON_LOAD:
		return n->load;
	case MON_SPEED:
		return n->speed;
	case MON_MEM:
		return n->mem_total;
	case MON_SWAP:
		return n->swap_total;
	}
	return NAN;
}

/* A full bar stands for the largest figure on screen, load at least 1.00. */
static double
draw_scale(enum mon_mode mode, const struct mon_node **page, size_t count)
{
	double	scale, v;
	size_t	i;

	scale = mode == MON_LOAD ? 1.0 : 0;
	for (i = 0; i < count; i++) {
		v = draw_extent(mode, page[i]);
		if (v > scale)		/* false for NAN */
			scale = v;
	}
	return scale;
}

/* Cells for v on a bar of width cells full at scale; a trace shows. */
static int
draw_cells(double v, double scale, int width)
{
	int	cells;

	if (!(v > 0) || !(scale > 0))
		return 0;
	cells = (int)lround(v / scale * width);
	if (cells < 1)
		cells = 1;
	return cells > width ? width : cells;
}

static void
draw_run(WINDOW *w, int ch, int cells, attr_t attr)
{
	wattron(w, attr);
	while (cells-- > 0)
		waddch(w, ch);
	wattroff(w, attr);
}

static void
draw_bar(WINDOW *w, enum mon_mode mode, const struct mon_node *n,
    double scale, int width)
{
	int	used, all;

	all = draw_cells(draw_extent(mode, n), scale, width);
	switch (mode) {
	case MON_LOAD:
		draw_run(w, '#', all,
		    draw_pair(n->load > 1.0 ? PAIR_HIGH : PAIR_LOW));
		break;
	case MON_SPEED:
		draw_run(w, '#', all, draw_pair(PAIR_SPEED));
		break;
	case MON_MEM:
	case MON_SWAP:
		used = mode == MON_MEM ?
		    draw_cells(n->mem_total - n->mem_free, scale, width) :
		    draw_cells(n->swap_total - n->swap_free, scale, width);
		if (used > all)
			used = all;
		draw_run(w, '#', used, draw_pair(PAIR_USED));
		draw_run(w, '.', all - used, draw_pair(PAIR_LOW));
		break;
	}
}

/* Width of the bar on a row of cols columns. */
static int
draw_bar_width(enum mon_mode mode, int cols)
{
	return cols - DRAW_ID_WIDTH - draw_cols_width(mode) - 1;
}

/* One letter for a node's flags, the one that matters most to a guest. */
static int
draw_mark(uint32_t flags)
{
	if (flags & OSM__NODE_FLAG__NODE_BLOCK)
		return 'B';
	if (flags & OSM__NODE_FLAG__NODE_STAY)
		return 'S';
	if (flags & OSM__NODE_FLAG__NODE_LSTAY)
		return 'L';
	return ' ';
}

static void
draw_node(WINDOW *w, int y, const struct mon_view *v,
    const struct mon_sample *s, const struct mon_node *n, double scale)
{
	const struct draw_col	*col = draw_modes[v->mode].cols;
	double			 val[2];
	int			 i, bar;

	bar = draw_bar_width(v->mode, getmaxx(w));
	mvwprintw(w, y, 0, "%6u%c%c ", n->id, n->id == s->self ? '*' : ' ',
	    draw_mark(n->flags));
	if (!n->up) {
		/* never heard of is not down: it may be starting */
		wattron(w, A_BOLD | draw_pair(n->state == CTL_NODE_DOWN ?
		    PAIR_DOWN : PAIR_USED));
		waddstr(w, ctl_node_state_name(n->state));
		wattroff(w, A_BOLD | draw_pair(n->state == CTL_NODE_DOWN ?
		    PAIR_DOWN : PAIR_USED));
		return;
	}
	draw_bar(w, v->mode, n, scale, bar);
	draw_values(v->mode, n, val);
	wmove(w, y, DRAW_ID_WIDTH + bar + 1);
	for (i = 0; i < 2 && col[i].head != NULL; i++) {
		if (isnan(val[i]))
			wprintw(w, "%*s", col[i].width, "-");
		else
			wprintw(w, "%*.*f", col[i].width, col[i].prec, val[i]);
	}
}

static void
draw_heads(WINDOW *w, int y, const struct mon_view *v, double scale)
{
	const struct draw_mode	*m = &draw_modes[v->mode];
	const struct draw_col	*col = m->cols;
	char			 label[64];
	int			 i;

	snprintf(label, sizeof label, "%s bar full at %.*f", m->label,
	    m->prec, scale);
	wattron(w, A_BOLD);
	mvwaddstr(w, y, 0, "  NODE");
	mvwaddnstr(w, y, DRAW_ID_WIDTH, label,
	    draw_bar_width(v->mode, getmaxx(w)));
	wmove(w, y, getmaxx(w) - draw_cols_width(v->mode));
	for (i = 0; i < 2 && col[i].head != NULL; i++)
		wprintw(w, "%*s", col[i].width, col[i].head);
	wattroff(w, A_BOLD);
}

static void
draw_status(WINDOW *w, const struct mon_sample *s, const struct mon_view *v,
    size_t first, size_t count, size_t shown)
{
	char		 line[256], when[16];	/* line needs about 100 */
	size_t		 off;
	struct tm	 tm;

	off = (size_t)snprintf(line, sizeof line, " mosmon  %s  ",
	    view_mode_name(v->mode));
	if (s->when == 0)
		snprintf(line + off, sizeof line - off, "no sample yet");
	else {
		localtime_r(&s->when, &tm);
		strftime(when, sizeof when, "%H:%M:%S", &tm);
		if (count == 0)
			off += snprintf(line + off, sizeof line - off,
			    "nodes 0 of %zu", shown);
		else
			off += snprintf(line + off, sizeof line - off,
			    "nodes %zu-%zu of %zu", first + 1, first + count,
			    shown);
		if (shown < s->nnodes)
			off += snprintf(line + off, sizeof line - off,
			    " (%zu down hidden)", s->nnodes - shown);
		off += snprintf(line + off, sizeof line - off, ", %zu active",
		    s->active);
		off += snprintf(line + off, sizeof line - off, "  at %s",
		    when);
		if (s->self != 0)
			snprintf(line + off, sizeof line - off, "  self %u",
			    s->self);
	}
	wattron(w, A_REVERSE);
	mvwhline(w, 0, 0, ' ', getmaxx(w));
	mvwaddnstr(w, 0, 0, line, getmaxx(w));
	wattroff(w, A_REVERSE);
}

/*
 * Draw sample s as view v (clamping its page to the window) with error, if
 * not NULL, in place of the key help.
 */
void
draw_frame(WINDOW *w, const struct mon_sample *s, const char *error,
    struct mon_view *v)
{
	const struct mon_node	**page;
	size_t			  shown, first, count, i, seen, k;
	int			  lines, cols;
	double			  scale;

	getmaxyx(w, lines, cols);
	werase(w);
	if (lines < DRAW_MIN_LINES || cols < DRAW_MIN_COLS) {
		mvwaddnstr(w, 0, 0, "mosmon: window too small", cols);
		return;
	}
	shown = sample_visible(s, v->hide_down);
	view_page(v, shown, view_rows(lines), &first, &count);

	page = xcalloc(count > 0 ? count : 1, sizeof *page);
	for (i = seen = k = 0; i < s->nnodes && k < count; i++) {
		if (v->hide_down && !s->nodes[i].up)
			continue;
		if (seen++ >= first)
			page[k++] = &s->nodes[i];
	}
	scale = draw_scale(v->mode, page, count);

	draw_status(w, s, v, first, count, shown);
	draw_heads(w, 1, v, scale);
	for (k = 0; k < count; k++)
		draw_node(w, 2 + k, v, s, page[k], scale);
	free(page);

	/* The last column stays empty: writing there would scroll. */
	if (error != NULL) {
		wattron(w, A_BOLD | draw_pair(PAIR_DOWN));
		mvwaddnstr(w, lines - 1, 0, "error: ", cols - 1);
		waddnstr(w, error, cols - 1 - getcurx(w));
		waddnstr(w, " (retrying)", cols - 1 - getcurx(w));
		wattroff(w, A_BOLD | draw_pair(PAIR_DOWN));
	} else
		mvwaddnstr(w, lines - 1, 0, "l load  s speed  m memory  "
		    "w swap  d down  arrows PgUp PgDn space  q quit",
		    cols - 1);
}
