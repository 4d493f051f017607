/*
 * check_lib's tests of the log limits (lib/log.c, log_limited_*): a flood
 * from one key leaves LOG_LIMIT_BURST lines and one count; other keys are
 * still heard; any number of keys leaves a bounded number of lines.
 * Logging goes to stderr (log_init(1)), which each test reads back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "check_lib.h"

static FILE	*captured;

/* From now on our log lands in a file the test reads. */
static void
capture(void)
{
	ck_assert_ptr_nonnull(captured = tmpfile());
	ck_assert_int_eq(dup2(fileno(captured), 2), 2);
	log_init(1, "t");
}

static int
lines(const char *has)
{
	char	buf[512];
	int	n = 0;

	fflush(stderr);
	rewind(captured);
	while (fgets(buf, sizeof buf, captured) != NULL)
		n += has == NULL || strstr(buf, has) != NULL;
	return n;
}

/* The window ends (a short one, for the test) and the timer flushes. */
static void
window_ends(const struct log_limit *l)
{
	usleep((l->window_ms + 20) * 1000);
	log_limit_flush();
}

START_TEST(test_log_limit_flood)
{
	/* Long enough for the whole flood on a loaded machine, under 1 s. */
	static struct log_limit	 l = { .window_ms = 900 };
	int			 i;

	capture();
	for (i = 0; i < 124981; i++)
		log_limited_warnx(&l, 3, "offer from node 3 refused: %d", i);
	ck_assert_int_eq(lines(NULL), LOG_LIMIT_BURST);
	window_ends(&l);
	ck_assert_int_eq(lines(NULL), LOG_LIMIT_BURST + 1);
	/* 1 s, or 2 if the loop took more than the 80 ms left over */
	ck_assert_int_eq(lines("t: offer from node 3 refused: 124980 ... and "
	    "124,976 more in the last "), 1);
	/* a new window: heard again; nothing held, nothing more said */
	log_limited_warnx(&l, 3, "offer from node 3 refused: again");
	window_ends(&l);
	ck_assert_int_eq(lines(NULL), LOG_LIMIT_BURST + 2);
}
END_TEST

/* One key's flood hides no other's line. */
START_TEST(test_log_limit_keys)
{
	static struct log_limit	 l = { .window_ms = 50 };
	int			 i;

	capture();
	for (i = 0; i < 1000; i++)
		log_limited_info(&l, 3, "from node 3");
	log_limited_info(&l, 2, "from node 2");
	for (i = 0; i < 1000; i++)
		log_limited_info(&l, 3, "from node 3");
	ck_assert_int_eq(lines("from node 2"), 1);
	window_ends(&l);
	ck_assert_int_eq(lines("and 1,995 more"), 1);
	ck_assert_int_eq(lines(NULL), LOG_LIMIT_BURST + 2);
}
END_TEST

/* Many keys at once share the last slot: the lines stay bounded. */
START_TEST(test_log_limit_many_keys)
{
	static struct log_limit	 l = { .window_ms = 200 };
	int			 i, k, n;

	capture();
	for (k = 0; k < 1000; k++)
		for (i = 0; i < 10; i++)
			log_limited_warnx(&l, 1000 + k, "uid %d", 1000 + k);
	n = lines(NULL);
	ck_assert_int_eq(n, LOG_LIMIT_KEYS * LOG_LIMIT_BURST);
	window_ends(&l);
	/* one count each for the keys that had slots, and the others' */
	ck_assert_int_eq(lines(NULL), n + LOG_LIMIT_KEYS);
	ck_assert_int_eq(lines("uid 1999 ... and 9,925 more"), 1);
}
END_TEST

void
check_lib_log(Suite *s)
{
	TCase	*tc = tcase_create("log");

	tcase_add_test(tc, test_log_limit_flood);
	tcase_add_test(tc, test_log_limit_keys);
	tcase_add_test(tc, test_log_limit_many_keys);
	suite_add_tcase(s, tc);
}
