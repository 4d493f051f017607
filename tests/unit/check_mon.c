/*
 * Check suite for mon/: sample conversion, the -b text, paging and keys,
 * the ncurses view read back from a virtual terminal, and sampling over a
 * real unix socket from a stand-in for mosd.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "mon/mon.h"
#include "proto/ctl.pb-c.h"

#define ABSENT	(-1)

/* A reply node; ABSENT leaves an optional figure out. */
static Osm__CtlNode *
mk_node(uint32_t id, int up, int known, int load, int cpus, int speed,
    int mem_total, int mem_free)
{
	Osm__CtlNode	*n = xmalloc(sizeof *n);

	osm__ctl_node__init(n);
	n->node = id;
	xasprintf(&n->address, "10.0.0.%u", id);
	n->up = up;
	n->known = known;
#define SET(f) do { if (f != ABSENT) { n->has_##f = 1; n->f = f; } } while (0)
	SET(load);
	SET(cpus);
	SET(speed);
	SET(mem_total);
	SET(mem_free);
#undef SET
	return n;
}

static void
reply_init(Osm__CtlReply *r, uint32_t self, Osm__CtlNode **nodes, size_t n)
{
	osm__ctl_reply__init(r);
	r->ok = 1;
	r->has_self = self != 0;
	r->self = self;
	r->nodes = nodes;
	r->n_nodes = n;
}

static void
reply_nodes_free(Osm__CtlNode **nodes, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(nodes[i]->address);
		free(nodes[i]);
	}
}

/* A node's guests, swap and flags, which mosd sends with the rest. */
static void
mk_extra(Osm__CtlNode *n, int guests, int swap_total, int swap_free,
    uint32_t flags)
{
	n->has_guests = n->has_swap_total = n->has_swap_free = 1;
	n->has_flags = 1;
	n->guests = guests;
	n->swap_total = swap_total;
	n->swap_free = swap_free;
	n->flags = flags;
}

/*
 * Five nodes, out of order: 3 up and blocked, with 2 guests; 1 up, loaded
 * past capacity, swapping; 2 down with stale figures; 4 up with no memory
 * figures; 5 never heard of.
 */
static void
mk_cluster(Osm__CtlNode *nodes[5])
{
	nodes[0] = mk_node(3, 1, 1, 52, 100, 1000, 1024, 812);
	mk_extra(nodes[0], 2, 0, 0, OSM__NODE_FLAG__NODE_BLOCK);
	nodes[1] = mk_node(1, 1, 1, 250, 200, 1500, 2048, 100);
	mk_extra(nodes[1], 0, 4096, 1024, 0);
	nodes[2] = mk_node(2, 0, 1, 75, 100, 1000, 1024, 500);
	mk_extra(nodes[2], 1, 100, 50, OSM__NODE_FLAG__NODE_STAY);
	nodes[3] = mk_node(4, 1, 1, 0, 400, 2000, ABSENT, ABSENT);
	nodes[4] = mk_node(5, 0, 0, ABSENT, ABSENT, ABSENT, ABSENT, ABSENT);
}

static void
sample_cluster(struct mon_sample *s)
{
	Osm__CtlNode	*nodes[5];
	Osm__CtlReply	 r;
	char		*cause = NULL;

	mk_cluster(nodes);
	reply_init(&r, 3, nodes, 5);
	memset(s, 0, sizeof *s);
	ck_assert_int_eq(sample_convert(&r, s, &cause), 0);
	reply_nodes_free(nodes, 5);
}

START_TEST(test_sample_convert)
{
	struct mon_sample	 s;
	Osm__CtlNode		*nodes[5];
	Osm__CtlReply		 r;
	char			*cause = NULL;
	size_t			 i;

	sample_cluster(&s);
	ck_assert_uint_eq(s.nnodes, 5);
	ck_assert_uint_eq(s.self, 3);
	for (i = 0; i < 5; i++)
		ck_assert_uint_eq(s.nodes[i].id, i + 1);
	ck_assert(s.nodes[0].up);
	ck_assert_double_eq_tol(s.nodes[0].load, 2.5, 1e-9);
	ck_assert_double_eq_tol(s.nodes[0].cpus, 2.0, 1e-9);
	ck_assert_double_eq_tol(s.nodes[0].speed, 1500, 1e-9);
	ck_assert_double_eq_tol(s.nodes[0].mem_total, 2048, 1e-9);
	ck_assert_double_eq_tol(s.nodes[0].mem_free, 100, 1e-9);
	ck_assert_double_eq_tol(s.nodes[0].swap_total, 4096, 1e-9);
	ck_assert_double_eq_tol(s.nodes[0].swap_free, 1024, 1e-9);
	ck_assert_double_eq_tol(s.nodes[2].load, 0.52, 1e-9);
	ck_assert_double_eq_tol(s.nodes[2].guests, 2, 1e-9);
	ck_assert_uint_eq(s.nodes[2].flags, OSM__NODE_FLAG__NODE_BLOCK);
	ck_assert_uint_eq(s.active, 3);
	/* a down node's figures are stale and dropped, its flags too */
	ck_assert(!s.nodes[1].up);
	ck_assert_int_eq(s.nodes[1].state, CTL_NODE_DOWN);
	ck_assert(isnan(s.nodes[1].load) && isnan(s.nodes[1].cpus) &&
	    isnan(s.nodes[1].speed) && isnan(s.nodes[1].mem_free) &&
	    isnan(s.nodes[1].mem_total) && isnan(s.nodes[1].guests) &&
	    isnan(s.nodes[1].swap_total));
	ck_assert_uint_eq(s.nodes[1].flags, 0);
	/* never heard of is not down */
	ck_assert_int_eq(s.nodes[4].state, CTL_NODE_UNKNOWN);
	/* figures mosd left out are not known; zero is a figure */
	ck_assert_double_eq(s.nodes[3].load, 0);
	ck_assert(isnan(s.nodes[3].mem_total) && isnan(s.nodes[3].mem_free));
	ck_assert(!s.nodes[4].up && isnan(s.nodes[4].load));
	ck_assert_uint_eq(sample_visible(&s, 0), 5);
	ck_assert_uint_eq(sample_visible(&s, 1), 3);

	/* a refusal: the error is mosd's, the old sample stays */
	osm__ctl_reply__init(&r);
	r.ok = 0;
	r.error = "unknown request";
	ck_assert_int_eq(sample_convert(&r, &s, &cause), -1);
	ck_assert_str_eq(cause, "mosd: unknown request");
	free(cause);
	ck_assert_uint_eq(s.nnodes, 5);
	r.error = NULL;
	ck_assert_int_eq(sample_convert(&r, &s, &cause), -1);
	ck_assert_str_eq(cause, "mosd refused the status request");
	free(cause);

	/* the same node twice is a broken reply */
	nodes[0] = mk_node(7, 1, 1, 10, 100, 1000, 10, 5);
	nodes[1] = mk_node(7, 1, 1, 20, 100, 1000, 10, 5);
	reply_init(&r, 0, nodes, 2);
	ck_assert_int_eq(sample_convert(&r, &s, &cause), -1);
	ck_assert_str_eq(cause, "mosd sent node 7 twice");
	free(cause);
	ck_assert_uint_eq(s.nnodes, 5);
	reply_nodes_free(nodes, 2);

	/* an empty cluster; no self */
	reply_init(&r, 0, NULL, 0);
	ck_assert_int_eq(sample_convert(&r, &s, &cause), 0);
	ck_assert_uint_eq(s.nnodes, 0);
	ck_assert_uint_eq(s.self, 0);
	sample_clear(&s);
	ck_assert_ptr_null(s.nodes);
}
END_TEST

static char *
batch_text(const struct mon_sample *s, int hide_down)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f;

	ck_assert_ptr_nonnull(f = open_memstream(&buf, &len));
	ck_assert_int_eq(batch_print(f, s, hide_down), 0);
	fclose(f);
	return buf;
}

#define BATCH_HEAD	"NODE STATE LOAD CPUS SPEED MEMFREE MEMTOTAL GUESTS " \
			"SWAPFREE SWAPTOTAL FLAGS\n"

START_TEST(test_batch)
{
	struct mon_sample	 s;
	char			*text;
	FILE			*f;

	sample_cluster(&s);
	text = batch_text(&s, 0);
	ck_assert_str_eq(text, BATCH_HEAD
	    "1 up 2.50 2.00 1500 100 2048 0 1024 4096 -\n"
	    "2 down - - - - - - - - -\n"
	    "3 up 0.52 1.00 1000 812 1024 2 0 0 block\n"
	    "4 up 0.00 4.00 2000 - - - - - -\n"
	    "5 unknown - - - - - - - - -\n");
	free(text);
	text = batch_text(&s, 1);
	ck_assert_str_eq(text, BATCH_HEAD
	    "1 up 2.50 2.00 1500 100 2048 0 1024 4096 -\n"
	    "3 up 0.52 1.00 1000 812 1024 2 0 0 block\n"
	    "4 up 0.00 4.00 2000 - - - - - -\n");
	free(text);
	sample_clear(&s);
	text = batch_text(&s, 0);
	ck_assert_str_eq(text, BATCH_HEAD);
	free(text);

	/* a write error is reported */
	ck_assert_ptr_nonnull(f = fopen("/dev/full", "w"));
	sample_cluster(&s);
	ck_assert_int_eq(batch_print(f, &s, 0), -1);
	fclose(f);
	sample_clear(&s);
}
END_TEST

/* n nodes 1..n, every down'th one down (0: none), load i/100. */
static void
sample_many(struct mon_sample *s, size_t n, size_t down)
{
	size_t	i;

	memset(s, 0, sizeof *s);
	s->nodes = xcalloc(n, sizeof *s->nodes);
	s->nnodes = n;
	s->self = 1;
	s->when = 1700000000;
	for (i = 0; i < n; i++) {
		s->nodes[i].id = i + 1;
		s->nodes[i].up = down == 0 || (i + 1) % down != 0;
		s->nodes[i].state = s->nodes[i].up ? CTL_NODE_UP :
		    CTL_NODE_DOWN;
		s->nodes[i].load = s->nodes[i].up ? (i + 1) / 100.0 : NAN;
		s->nodes[i].cpus = 1;
		s->nodes[i].speed = 1000;
		s->nodes[i].mem_total = 1024;
		s->nodes[i].mem_free = 512;
	}
}

START_TEST(test_paging)
{
	struct mon_view		v = { .mode = MON_LOAD };
	struct mon_sample	s;
	size_t			first, count;

	ck_assert_uint_eq(view_rows(24), 24 - VIEW_CHROME);
	ck_assert_uint_eq(view_rows(VIEW_CHROME), 0);
	ck_assert_uint_eq(view_rows(0), 0);

	/* 1024 nodes, 40 rows: pages at 0, 40, ...; the last kept full */
	view_page(&v, 1024, 40, &first, &count);
	ck_assert_uint_eq(first, 0);
	ck_assert_uint_eq(count, 40);
	v.top = 40;
	view_page(&v, 1024, 40, &first, &count);
	ck_assert_uint_eq(first, 40);
	ck_assert_uint_eq(count, 40);
	v.top = 1020;
	view_page(&v, 1024, 40, &first, &count);
	ck_assert_uint_eq(first, 984);
	ck_assert_uint_eq(count, 40);
	ck_assert_uint_eq(v.top, 984);
	/* fewer nodes than rows: always from the first */
	v.top = 7;
	view_page(&v, 10, 40, &first, &count);
	ck_assert_uint_eq(first, 0);
	ck_assert_uint_eq(count, 10);
	/* no room, or no nodes */
	view_page(&v, 10, 0, &first, &count);
	ck_assert_uint_eq(count, 0);
	view_page(&v, 0, 40, &first, &count);
	ck_assert_uint_eq(first, 0);
	ck_assert_uint_eq(count, 0);

	/* the keys move through the same arithmetic */
	sample_many(&s, 1024, 0);
	v.top = 0;
	ck_assert_int_eq(view_key(&v, KEY_NPAGE, &s, 40), 1);
	ck_assert_uint_eq(v.top, 40);
	view_key(&v, ' ', &s, 40);
	ck_assert_uint_eq(v.top, 80);
	view_key(&v, KEY_DOWN, &s, 40);
	ck_assert_uint_eq(v.top, 81);
	view_key(&v, KEY_UP, &s, 40);
	view_key(&v, KEY_PPAGE, &s, 40);
	ck_assert_uint_eq(v.top, 40);
	view_key(&v, KEY_PPAGE, &s, 40);
	view_key(&v, KEY_PPAGE, &s, 40);
	ck_assert_uint_eq(v.top, 0);
	view_key(&v, KEY_UP, &s, 40);
	ck_assert_uint_eq(v.top, 0);
	view_key(&v, KEY_END, &s, 40);
	ck_assert_uint_eq(v.top, 984);
	view_key(&v, KEY_NPAGE, &s, 40);
	ck_assert_uint_eq(v.top, 984);
	view_key(&v, KEY_HOME, &s, 40);
	ck_assert_uint_eq(v.top, 0);
	ck_assert_int_eq(view_key(&v, 'x', &s, 40), 0);
	ck_assert(!v.quit);
	view_key(&v, 'q', &s, 40);
	ck_assert(v.quit);
	sample_clear(&s);

	/*
	 * Hiding down nodes keeps the node at the top on screen: with every
	 * third node down, node 31 is the 21st up node.
	 */
	sample_many(&s, 1024, 3);
	v.top = 30;
	view_key(&v, 'd', &s, 40);
	ck_assert(v.hide_down);
	ck_assert_uint_eq(v.top, 20);
	view_key(&v, 'd', &s, 40);
	ck_assert(!v.hide_down);
	ck_assert_uint_eq(v.top, 30);
	/* a down node at the top gives way to the next up one */
	v.top = 2;
	view_key(&v, 'd', &s, 40);
	ck_assert_uint_eq(v.top, 2);
	view_key(&v, 'd', &s, 40);
	ck_assert_uint_eq(v.top, 3);
	sample_clear(&s);
}
END_TEST

/* A virtual terminal of lines x cols that writes to /dev/null. */
static SCREEN *
vt_open(int lines, int cols)
{
	SCREEN	*scr;
	FILE	*out, *in;

	ck_assert_ptr_nonnull(out = fopen("/dev/null", "w"));
	ck_assert_ptr_nonnull(in = fopen("/dev/null", "r"));
	ck_assert_ptr_nonnull(scr = newterm("vt100", out, in));
	ck_assert_int_eq(resizeterm(lines, cols), OK);
	draw_init();
	return scr;
}

static const char *
vt_row(int y)
{
	static char	buf[512];
	int		n;

	n = mvwinnstr(stdscr, y, 0, buf, sizeof buf - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

static int
vt_count(int y, char c)
{
	const char	*p;
	int		 n = 0;

	for (p = vt_row(y); *p != '\0'; p++)
		n += *p == c;
	return n;
}

static int
vt_find(const char *what)
{
	int	y;

	for (y = 0; y < LINES; y++) {
		if (strstr(vt_row(y), what) != NULL)
			return y;
	}
	return -1;
}

START_TEST(test_draw)
{
	struct mon_view		 v = { .mode = MON_LOAD };
	struct mon_sample	 s;
	SCREEN			*scr;
	int			 rows = 24 - VIEW_CHROME, bar = 80 - 9 - 14 - 1;

	scr = vt_open(24, 80);
	sample_cluster(&s);
	s.when = 1700000000;
	draw_frame(stdscr, &s, NULL, &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "load"));
	ck_assert_ptr_nonnull(strstr(vt_row(0), "nodes 1-5 of 5, 3 active"));
	ck_assert_ptr_nonnull(strstr(vt_row(0), "self 3"));
	ck_assert_ptr_nonnull(strstr(vt_row(1), "bar full at 2.50"));
	ck_assert_ptr_nonnull(strstr(vt_row(1), "LOAD GUESTS"));
	/* node 1 at 2.50 fills the bar; node 3 (this one, blocked) at 0.52 */
	ck_assert(strncmp(vt_row(2), "     1   ", 9) == 0);
	ck_assert_int_eq(vt_count(2, '#'), bar);
	ck_assert_ptr_nonnull(strstr(vt_row(2), "2.50      0"));
	ck_assert(strncmp(vt_row(3), "     2   down", 13) == 0);
	ck_assert_int_eq(vt_count(3, '#'), 0);
	ck_assert(strncmp(vt_row(4), "     3*B ", 9) == 0);
	ck_assert_int_eq(vt_count(4, '#'), (int)lround(0.52 / 2.5 * bar));
	ck_assert_ptr_nonnull(strstr(vt_row(4), "0.52      2"));
	ck_assert_int_eq(vt_count(5, '#'), 0);		/* idle */
	ck_assert(strncmp(vt_row(6), "     5   unknown", 16) == 0);
	ck_assert_int_eq(vt_find("q quit"), 23);

	/* memory: used '#' and free '.' against the largest total, 2048 */
	ck_assert_int_eq(view_key(&v, 'm', &s, rows), 1);
	draw_frame(stdscr, &s, NULL, &v);
	bar = 80 - 9 - 16 - 1;
	ck_assert_ptr_nonnull(strstr(vt_row(0), "memory"));
	ck_assert_ptr_nonnull(strstr(vt_row(1), "USED"));
	ck_assert_ptr_nonnull(strstr(vt_row(1), "FREE"));
	ck_assert_int_eq(vt_count(2, '#'), (int)lround(1948.0 / 2048 * bar));
	ck_assert_int_eq(vt_count(2, '#') + vt_count(2, '.'), bar);
	ck_assert_int_eq(vt_count(4, '#'), (int)lround(212.0 / 2048 * bar));
	ck_assert_int_eq(vt_count(4, '#') + vt_count(4, '.'),
	    (int)lround(1024.0 / 2048 * bar));
	ck_assert_ptr_nonnull(strstr(vt_row(4), "212     812"));
	/* node 4 did not say: no bar, "-" */
	ck_assert_int_eq(vt_count(5, '#') + vt_count(5, '.'), 0);
	ck_assert_ptr_nonnull(strstr(vt_row(5), "-       -"));

	/* speed and CPUs: a bar of speed against the fastest, 2000 */
	view_key(&v, 's', &s, rows);
	draw_frame(stdscr, &s, NULL, &v);
	bar = 80 - 9 - 14 - 1;
	ck_assert_ptr_nonnull(strstr(vt_row(0), "speed"));
	ck_assert_ptr_nonnull(strstr(vt_row(1), "CPUS"));
	ck_assert_int_eq(vt_count(5, '#'), bar);
	ck_assert_int_eq(vt_count(2, '#'), (int)lround(1500.0 / 2000 * bar));
	ck_assert_ptr_nonnull(strstr(vt_row(2), "1500   2.00"));

	/* swap: node 1 uses 3072 of 4096 MiB; node 3 has none */
	view_key(&v, 'w', &s, rows);
	draw_frame(stdscr, &s, NULL, &v);
	bar = 80 - 9 - 16 - 1;
	ck_assert_ptr_nonnull(strstr(vt_row(0), "swap"));
	ck_assert_ptr_nonnull(strstr(vt_row(1), "swap MiB"));
	ck_assert_int_eq(vt_count(2, '#'), (int)lround(3072.0 / 4096 * bar));
	ck_assert_int_eq(vt_count(2, '#') + vt_count(2, '.'), bar);
	ck_assert_ptr_nonnull(strstr(vt_row(2), "3072    1024"));
	ck_assert_int_eq(vt_count(4, '#') + vt_count(4, '.'), 0);
	ck_assert_ptr_nonnull(strstr(vt_row(4), "0       0"));

	/* hiding the down nodes */
	view_key(&v, 'd', &s, rows);
	view_key(&v, 'l', &s, rows);
	draw_frame(stdscr, &s, NULL, &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "nodes 1-3 of 3 "
	    "(2 down hidden), 3 active"));
	ck_assert_int_eq(vt_find("  down"), -1);
	ck_assert_int_eq(vt_find("unknown"), -1);
	ck_assert(strncmp(vt_row(3), "     3*B ", 9) == 0);
	ck_assert(strncmp(vt_row(4), "     4   ", 9) == 0);

	/* an error replaces the key help; the last sample stays */
	draw_frame(stdscr, &s, "cannot reach mosd", &v);
	ck_assert(strncmp(vt_row(23), "error: cannot reach mosd (retrying)",
	    35) == 0);
	ck_assert(strncmp(vt_row(2), "     1   ", 9) == 0);
	sample_clear(&s);

	/* nothing sampled yet */
	draw_frame(stdscr, &s, "cannot reach mosd", &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "no sample yet"));
	endwin();
	delscreen(scr);
}
END_TEST

START_TEST(test_draw_pages)
{
	struct mon_view		 v = { .mode = MON_LOAD };
	struct mon_sample	 s;
	SCREEN			*scr;
	size_t			 rows = 24 - VIEW_CHROME;

	scr = vt_open(24, 100);
	sample_many(&s, 1000, 0);
	draw_frame(stdscr, &s, NULL, &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "nodes 1-21 of 1000"));
	ck_assert(strncmp(vt_row(2), "     1* ", 8) == 0);
	ck_assert(strncmp(vt_row(22), "    21  ", 8) == 0);
	view_key(&v, KEY_NPAGE, &s, rows);
	draw_frame(stdscr, &s, NULL, &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "nodes 22-42 of 1000"));
	ck_assert(strncmp(vt_row(2), "    22  ", 8) == 0);
	view_key(&v, KEY_END, &s, rows);
	draw_frame(stdscr, &s, NULL, &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "nodes 980-1000 of 1000"));
	ck_assert(strncmp(vt_row(22), "  1000  ", 8) == 0);
	/* the scale follows the page: 10.00 is the largest load here */
	ck_assert_ptr_nonnull(strstr(vt_row(1), "bar full at 10.00"));

	/* a taller window shows more; the page is clamped to the end */
	ck_assert_int_eq(resizeterm(50, 100), OK);
	draw_frame(stdscr, &s, NULL, &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "nodes 954-1000 of 1000"));
	ck_assert_int_eq(vt_find("q quit"), 49);

	/* too small to be of use */
	ck_assert_int_eq(resizeterm(3, 30), OK);
	draw_frame(stdscr, &s, NULL, &v);
	ck_assert_ptr_nonnull(strstr(vt_row(0), "window too small"));
	sample_clear(&s);
	endwin();
	delscreen(scr);
}
END_TEST

/* A stand-in for mosd: answer one connection with a canned reply. */
struct fake_mosd {
	int		 fd;		/* listening */
	Osm__CtlReply	*reply;		/* NULL: hang up without replying */
	int		 got_version;
	int		 got_type;
};

static void *
fake_mosd_serve(void *arg)
{
	struct fake_mosd	*m = arg;
	Osm__CtlRequest		*req;
	uint8_t			*buf;
	size_t			 len;
	char			*cause;
	int			 fd;

	m->got_version = m->got_type = -1;
	if ((fd = accept(m->fd, NULL, NULL)) == -1)
		return NULL;
	if (stream_read(fd, &buf, &len, CTL_RECORD_MAX, &cause) == 0) {
		if ((req = osm__ctl_request__unpack(NULL, len, buf)) != NULL) {
			m->got_version = req->version;
			m->got_type = req->type;
			osm__ctl_request__free_unpacked(req, NULL);
		}
		free(buf);
	} else
		free(cause);
	if (m->reply != NULL) {
		len = osm__ctl_reply__get_packed_size(m->reply);
		buf = xmalloc(len);
		osm__ctl_reply__pack(m->reply, buf);
		stream_write(fd, buf, len);
		free(buf);
	}
	close(fd);
	return NULL;
}

static char	sock_dir[] = "/tmp/check_mon.XXXXXX";
static char	sock_path[64];

static void
sock_setup(void)
{
	strcpy(sock_dir, "/tmp/check_mon.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(sock_dir));
	snprintf(sock_path, sizeof sock_path, "%s/mosd.sock", sock_dir);
}

static void
sock_teardown(void)
{
	unlink(sock_path);
	rmdir(sock_dir);
}

/* Fetch a sample from a fake mosd answering reply. */
static int
fetch_from(Osm__CtlReply *reply, struct mon_sample *s, char **cause,
    struct fake_mosd *m)
{
	struct sockaddr_un	 sun;
	pthread_t		 t;
	int			 rc;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, sock_path);
	unlink(sock_path);
	ck_assert_int_ge(m->fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(bind(m->fd, (struct sockaddr *)&sun, sizeof sun), 0);
	ck_assert_int_eq(listen(m->fd, 1), 0);
	m->reply = reply;
	ck_assert_int_eq(pthread_create(&t, NULL, fake_mosd_serve, m), 0);
	rc = sample_fetch(sock_path, s, cause);
	pthread_join(t, NULL);
	close(m->fd);
	return rc;
}

START_TEST(test_fetch_socket)
{
	struct mon_sample	 s = { 0 };
	struct fake_mosd	 m;
	Osm__CtlNode		*nodes[5];
	Osm__CtlReply		 r;
	char			*cause = NULL;
	time_t			 before = time(NULL);

	mk_cluster(nodes);
	reply_init(&r, 3, nodes, 5);
	ck_assert_int_eq(fetch_from(&r, &s, &cause, &m), 0);
	ck_assert_int_eq(m.got_version, CTL_VERSION);
	ck_assert_int_eq(m.got_type, OSM__CTL_TYPE__CTL_STATUS);
	ck_assert_uint_eq(s.nnodes, 5);
	ck_assert_uint_eq(s.self, 3);
	ck_assert_uint_eq(s.nodes[2].id, 3);
	ck_assert_double_eq_tol(s.nodes[2].load, 0.52, 1e-9);
	ck_assert_double_eq_tol(s.nodes[2].mem_free, 812, 1e-9);
	ck_assert(!s.nodes[1].up);
	ck_assert(s.when >= before && s.when <= time(NULL));
	reply_nodes_free(nodes, 5);

	/* mosd says no: its words reach the user, the sample stays */
	osm__ctl_reply__init(&r);
	r.ok = 0;
	r.error = "not ready";
	ck_assert_int_eq(fetch_from(&r, &s, &cause, &m), -1);
	ck_assert_str_eq(cause, "mosd: not ready");
	free(cause);
	ck_assert_uint_eq(s.nnodes, 5);

	/* mosd hangs up */
	ck_assert_int_eq(fetch_from(NULL, &s, &cause, &m), -1);
	ck_assert_ptr_nonnull(strstr(cause, "without replying"));
	free(cause);
	ck_assert_int_eq(m.got_type, OSM__CTL_TYPE__CTL_STATUS);

	/* nobody listening */
	unlink(sock_path);
	ck_assert_int_eq(sample_fetch(sock_path, &s, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "cannot reach mosd"));
	ck_assert_ptr_nonnull(strstr(cause, sock_path));
	free(cause);
	sample_clear(&s);
}
END_TEST

static Suite *
mon_suite(void)
{
	Suite	*s = suite_create("mon");
	TCase	*tc;

	tc = tcase_create("sample");
	tcase_add_test(tc, test_sample_convert);
	tcase_add_test(tc, test_batch);
	suite_add_tcase(s, tc);

	tc = tcase_create("view");
	tcase_add_test(tc, test_paging);
	tcase_add_test(tc, test_draw);
	tcase_add_test(tc, test_draw_pages);
	suite_add_tcase(s, tc);

	tc = tcase_create("socket");
	tcase_add_checked_fixture(tc, sock_setup, sock_teardown);
	tcase_add_test(tc, test_fetch_socket);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(mon_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
