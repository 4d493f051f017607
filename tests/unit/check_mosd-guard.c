/*
 * check_mosd's tests of mosd/guard.c, through guard.h alone: nothing is
 * done while memory lasts; a node below its reserve, or falling towards
 * it fast enough, names the guest that grows most (the largest if none
 * grows); one at a time, another only once memory still falls; a node
 * without a known size does nothing.
 */
#include <check.h>
#include <string.h>

#include "mosd/guard.h"

#define MB	(1ULL << 20)

START_TEST(test_guard_reserve)
{
	ck_assert_uint_eq(guard_reserve(256 * MB), GUARD_RESERVE_MIN);
	ck_assert_uint_eq(guard_reserve(1024 * MB), 1024 * MB / 10);
	ck_assert_uint_eq(guard_reserve(64 * 1024 * MB), GUARD_RESERVE_MAX);
}
END_TEST

START_TEST(test_guard_plenty)
{
	struct guard		g;
	struct guard_guest	gg[2] = { { 100 * MB, 0, 0 }, { 50 * MB, 0, 0 } };
	uint64_t		t;

	memset(&g, 0, sizeof g);
	for (t = 1000; t < 3000; t += GUARD_INTERVAL_MS)
		ck_assert_int_eq(guard_sample(&g, t, 1024 * MB, 600 * MB, gg,
		    2), -1);
	/* short, but no limit known: nothing to go by */
	ck_assert_int_eq(guard_sample(&g, t, 0, 1 * MB, gg, 2), -1);
}
END_TEST

START_TEST(test_guard_short)
{
	struct guard		g;
	struct guard_guest	gg[3] = {
		{ 100 * MB, 0, 0 }, { 150 * MB, 0, 0 }, { 20 * MB, 0, 0 } };

	memset(&g, 0, sizeof g);
	/* below the reserve: none grows, the largest goes */
	ck_assert_int_eq(guard_sample(&g, 1000, 256 * MB, 20 * MB, gg, 3), 1);
	gg[1].sent = 1;
	/* it is told and still here, memory steady: nobody else */
	ck_assert_int_eq(guard_sample(&g, 1100, 256 * MB, 20 * MB, gg, 3), -1);
	ck_assert_int_eq(guard_sample(&g, 1200, 256 * MB, 20 * MB, gg, 3), -1);
	/* memory still runs out, by a quarter of the reserve: the next */
	ck_assert_int_eq(guard_sample(&g, 1300, 256 * MB, 8 * MB, gg, 3), 0);
}
END_TEST

START_TEST(test_guard_growth)
{
	struct guard		g;
	struct guard_guest	gg[2] = {
		{ 120 * MB, 0, 0 }, { 60 * MB, 0, 0 } };
	uint64_t		t, free = 200 * MB;
	ssize_t			k = -1;

	memset(&g, 0, sizeof g);
	/*
	 * Far above the reserve, but falling at 200 MiB/s, grown by the
	 * smaller one: it is named before memory is short.
	 */
	for (t = 1000; t < 2000 && k == -1; t += GUARD_INTERVAL_MS) {
		k = guard_sample(&g, t, 256 * MB, free, gg, 2);
		if (k == -1)
			ck_assert_uint_ge(free, 100 * MB);
		free -= 20 * MB;
		gg[1].rss += 20 * MB;
		gg[1].grown = 20 * MB;
	}
	ck_assert_int_eq(k, 1);
	ck_assert_uint_gt(free, guard_reserve(256 * MB));
}
END_TEST

START_TEST(test_guard_spacing)
{
	struct guard		g;
	struct guard_guest	gg[2] = { { 100 * MB, 0, 0 }, { 90 * MB, 0, 0 } };

	memset(&g, 0, sizeof g);
	ck_assert_int_eq(guard_sample(&g, 1000, 256 * MB, 10 * MB, gg, 2), 0);
	/* it left (not listed); its memory shows free a moment later */
	ck_assert_int_eq(guard_sample(&g, 1100, 256 * MB, 10 * MB, gg + 1, 1),
	    -1);
	ck_assert_int_eq(guard_sample(&g, 1000 + GUARD_SPACING_MS, 256 * MB,
	    10 * MB, gg + 1, 1), 0);
	/* none left to send */
	gg[1].sent = 1;
	ck_assert_int_eq(guard_sample(&g, 5000, 256 * MB, 1 * MB, gg + 1, 1),
	    -1);
}
END_TEST

void	 check_mosd_guard(Suite *s);

void
check_mosd_guard(Suite *s)
{
	TCase	*tc = tcase_create("guard");

	tcase_add_test(tc, test_guard_reserve);
	tcase_add_test(tc, test_guard_plenty);
	tcase_add_test(tc, test_guard_short);
	tcase_add_test(tc, test_guard_growth);
	tcase_add_test(tc, test_guard_spacing);
	suite_add_tcase(s, tc);
}
