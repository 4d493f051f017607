/*
 * check_mosd's tests of mosd/hashes.c's keeping: a hash is found only by
 * the whole identity it was kept under (each of device, inode, size,
 * modification and change time told apart), kept once, the oldest given
 * up when full; a file changed less than two seconds ago, or too large,
 * is not to be kept.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mosd/mosd.h"

static struct hash_id
h_id(uint64_t n)
{
	struct hash_id	id = { .dev = 8, .ino = n, .size = 4096,
	    .mtime_ns = 1000, .ctime_ns = 2000 };

	return id;
}

START_TEST(test_hashes_identity)
{
	static struct hashes	h;
	struct hash_id		id = h_id(1), other;
	uint8_t			sha[CRYPTO_HASH_LEN], got[CRYPTO_HASH_LEN];

	memset(&h, 0, sizeof h);
	memset(sha, 0xab, sizeof sha);
	ck_assert_int_eq(hashes_find(&h, &id, got), 0);
	hashes_keep(&h, &id, sha);
	hashes_keep(&h, &id, sha);
	ck_assert_uint_eq(h.n, 1);
	ck_assert_int_eq(hashes_find(&h, &id, got), 1);
	ck_assert_mem_eq(got, sha, sizeof sha);
	other = id; other.dev++;
	ck_assert_int_eq(hashes_find(&h, &other, got), 0);
	other = id; other.ino++;
	ck_assert_int_eq(hashes_find(&h, &other, got), 0);
	other = id; other.size++;
	ck_assert_int_eq(hashes_find(&h, &other, got), 0);
	other = id; other.mtime_ns++;
	ck_assert_int_eq(hashes_find(&h, &other, got), 0);
	other = id; other.ctime_ns++;
	ck_assert_int_eq(hashes_find(&h, &other, got), 0);
}
END_TEST

START_TEST(test_hashes_full)
{
	static struct hashes	h;
	struct hash_id		id;
	uint8_t			sha[CRYPTO_HASH_LEN], got[CRYPTO_HASH_LEN];
	uint64_t		i;

	memset(&h, 0, sizeof h);
	for (i = 0; i < HASHES_KEPT + 1; i++) {
		id = h_id(i);
		memset(sha, (int)i, sizeof sha);
		hashes_keep(&h, &id, sha);
	}
	ck_assert_uint_eq(h.n, HASHES_KEPT);
	id = h_id(0);	/* the oldest, given up */
	ck_assert_int_eq(hashes_find(&h, &id, got), 0);
	id = h_id(HASHES_KEPT);
	ck_assert_int_eq(hashes_find(&h, &id, got), 1);
	ck_assert_uint_eq(got[0], HASHES_KEPT & 0xff);
	id = h_id(1);
	ck_assert_int_eq(hashes_find(&h, &id, got), 1);
}
END_TEST

START_TEST(test_hashes_settled)
{
	struct hash_id	id = h_id(1);
	uint64_t	s = 1000000000ULL;

	id.ctime_ns = 100 * s;
	ck_assert_int_eq(hashes_settled(&id, 100 * s + s), 0);
	ck_assert_int_eq(hashes_settled(&id, 100 * s + 2 * s), 1);
	/* a change time ahead of the clock says nothing */
	ck_assert_int_eq(hashes_settled(&id, 99 * s), 0);
	id.size = 16ULL << 20;
	ck_assert_int_eq(hashes_settled(&id, 200 * s), 0);
}
END_TEST

void	 check_mosd_hashes(Suite *s);

void
check_mosd_hashes(Suite *s)
{
	TCase	*tc = tcase_create("hashes");

	tcase_add_test(tc, test_hashes_identity);
	tcase_add_test(tc, test_hashes_full);
	tcase_add_test(tc, test_hashes_settled);
	suite_add_tcase(s, tc);
}
