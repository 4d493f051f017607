/*
 * check_mosd's tests of mosd/quota.c, through quota.h alone: each kind of
 * uid has room of its own, one user cannot take another's, root's or the
 * guests'; registering moves a connection to the agents' count; unread
 * replies are bounded per connection and per uid; every entry goes back.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "mosd/quota.h"

static struct quota
q_new(void)
{
	struct quota	q;

	memset(&q, 0, sizeof q);
	q.lim.clients = 8;
	q.lim.clients_per_user = 3;
	q.lim.agents_per_user = 2;
	q.lim.client_output = 1000;
	q.lim.user_output = 1500;
	q.lim.total = 100;
	q.lim.guest_first = 60000;
	q.lim.guest_last = 60009;
	return q;
}

/* n connections of uid, all taken; their entry. */
static struct quota_user *
take(struct quota *q, uid_t uid, int n)
{
	struct quota_user	*u = NULL;
	char			*why = NULL;
	int			 i;

	for (i = 0; i < n; i++) {
		u = quota_connect(q, uid, &why);
		ck_assert_msg(u != NULL, "uid %u, connection %d: %s",
		    (unsigned)uid, i + 1, why);
	}
	return u;
}

static void
refused(struct quota *q, uid_t uid, const char *want)
{
	char	*why = NULL;

	ck_assert_ptr_null(quota_connect(q, uid, &why));
	ck_assert_msg(why != NULL && strstr(why, want) != NULL,
	    "uid %u refused with '%s', expected '%s'", (unsigned)uid, why,
	    want);
	free(why);
}

/* A user at its limit locks out neither root, nor a guest, nor another. */
START_TEST(test_quota_per_user)
{
	struct quota		 q = q_new();
	struct quota_user	*a, *r, *g;

	a = take(&q, 1000, 3);
	refused(&q, 1000, "too many connections for uid 1000 (3 at most)");
	take(&q, 1001, 3);
	r = take(&q, 0, 8);
	refused(&q, 0, "mosd is busy: root has 8");
	g = take(&q, 60003, QUOTA_GUEST_CLIENTS);
	refused(&q, 60003, "guest uid 60003");
	take(&q, 60004, 1);
	ck_assert_uint_eq(q.user_clients, 6);
	ck_assert_uint_eq(q.root_clients, 8);
	/* one back, one in */
	quota_disconnect(&q, a, 0);
	take(&q, 1000, 1);
	quota_disconnect(&q, r, 0);
	take(&q, 0, 1);
	quota_disconnect(&q, g, 0);
	take(&q, 60003, 1);
	quota_free(&q);
}
END_TEST

/* Users together: clients; then "busy" for users, not for root. */
START_TEST(test_quota_all_users)
{
	struct quota	q = q_new();

	take(&q, 1000, 3);
	take(&q, 1001, 3);
	take(&q, 1002, 2);
	refused(&q, 1003, "mosd is busy: users have 8 connections open");
	take(&q, 0, 1);
	take(&q, 60000, 1);
	quota_free(&q);
}
END_TEST

/* Registered agents leave the tools' count; agents_per_user of them. */
START_TEST(test_quota_agents)
{
	struct quota		 q = q_new();
	struct quota_user	*u, *r;
	char			*why = NULL;
	int			 i;

	u = take(&q, 1000, 3);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(quota_may_register(&q, u, &why), 0);
		quota_registered(&q, u);
	}
	ck_assert_uint_eq(u->clients, 1);
	ck_assert_uint_eq(u->agents, 2);
	ck_assert_uint_eq(q.user_clients, 1);
	/* the agents take no tool's room */
	take(&q, 1000, 2);
	ck_assert_int_eq(quota_may_register(&q, u, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "uid 1000 has 2 processes"));
	free(why);
	/* root's deputies: no such limit */
	r = take(&q, 0, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(quota_may_register(&q, r, NULL), 0);
		quota_registered(&q, r);
	}
	ck_assert_uint_eq(q.root_clients, 0);
	/* all given back: no entry left */
	quota_disconnect(&q, r, 1);
	quota_disconnect(&q, r, 1);
	quota_disconnect(&q, r, 1);
	quota_disconnect(&q, u, 1);
	quota_disconnect(&q, u, 1);
	quota_disconnect(&q, u, 0);
	quota_disconnect(&q, u, 0);
	quota_disconnect(&q, u, 0);
	ck_assert_ptr_null(q.users);
	ck_assert_uint_eq(q.conns, 0);
	ck_assert_uint_eq(q.user_clients, 0);
}
END_TEST

/* Unread replies: one always, then client_output, user_output per uid. */
START_TEST(test_quota_output)
{
	struct quota		 q = q_new();
	struct quota_user	*u, *r;
	char			*why = NULL;

	u = take(&q, 1000, 2);
	/* a first reply goes, however large: a tool waits for it */
	ck_assert_int_eq(quota_charge(&q, u, 0, 5000, &why), 0);
	quota_uncharge(&q, u, 5000);
	ck_assert_int_eq(quota_charge(&q, u, 0, 600, &why), 0);
	ck_assert_int_eq(quota_charge(&q, u, 600, 300, &why), 0);
	ck_assert_int_eq(quota_charge(&q, u, 900, 200, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "not reading"));
	free(why);
	/* the uid's second connection: the uid's unread replies count */
	ck_assert_int_eq(quota_charge(&q, u, 0, 500, &why), 0);
	ck_assert_int_eq(quota_charge(&q, u, 0, 200, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "uid 1000 leaves 1400 bytes"));
	free(why);
	quota_uncharge(&q, u, 1400);
	ck_assert_uint_eq(u->output, 0);
	/* root: no limit */
	r = take(&q, 0, 1);
	ck_assert_int_eq(quota_charge(&q, r, 0, 5000, NULL), 0);
	ck_assert_int_eq(quota_charge(&q, r, 5000, 5000, NULL), 0);
	quota_free(&q);
}
END_TEST

/* Every connection counts against total; root alone takes the spare. */
START_TEST(test_quota_total)
{
	struct quota	q = q_new();
	uid_t		uid;

	q.lim.clients = 1000;
	q.lim.total = QUOTA_ROOT_SPARE + 10;
	for (uid = 1000; uid < 1010; uid++)
		take(&q, uid, 1);
	refused(&q, 2000, "mosd is busy: 10 connections open");
	refused(&q, 60001, "mosd is busy");
	take(&q, 0, QUOTA_ROOT_SPARE);
	refused(&q, 0, "mosd is busy");
	quota_free(&q);
}
END_TEST

/*
 * An ordinary uid's tools ask at most requests_per_user times a second,
 * a quarter second's in a burst, each of its tools sharing it; root and
 * the guests are not counted, nor another uid.
 */
START_TEST(test_quota_requests)
{
	struct quota		 q = q_new();
	struct quota_user	*u, *v, *r, *g;
	uint64_t		 wait = 0, t = 5000;
	int			 i, n;

	q.lim.requests_per_user = 400;		/* a burst of 100 */
	u = take(&q, 1000, 2);
	v = take(&q, 1001, 1);
	r = take(&q, 0, 1);
	g = take(&q, 60001, 1);
	for (n = 0; quota_request(&q, u, t, &wait); n++)
		;
	ck_assert_int_eq(n, 100);
	ck_assert_uint_eq(wait, 3);		/* 1000/400 ms, rounded up */
	/* another uid, root and a guest are not held back by it */
	ck_assert_int_eq(quota_request(&q, v, t, &wait), 1);
	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(quota_request(&q, r, t, &wait), 1);
		ck_assert_int_eq(quota_request(&q, g, t, &wait), 1);
	}
	/* a second later: 400 more, a burst at most */
	for (n = 0; quota_request(&q, u, t + 1000, &wait); n++)
		;
	ck_assert_int_eq(n, 100);
	/* steady: 2 every 5 ms */
	for (i = 1, n = 0; i <= 200; i++)
		while (quota_request(&q, u, t + 1000 + 5 * i, &wait))
			n++;
	ck_assert_int_eq(n, 400);
	quota_disconnect(&q, u, 0);
	quota_disconnect(&q, u, 0);
	quota_disconnect(&q, v, 0);
	quota_disconnect(&q, r, 0);
	quota_disconnect(&q, g, 0);
	ck_assert_ptr_null(q.users);
}
END_TEST

void	 check_mosd_quota(Suite *s);

void
check_mosd_quota(Suite *s)
{
	TCase	*tc = tcase_create("quota");

	tcase_add_test(tc, test_quota_per_user);
	tcase_add_test(tc, test_quota_all_users);
	tcase_add_test(tc, test_quota_agents);
	tcase_add_test(tc, test_quota_output);
	tcase_add_test(tc, test_quota_total);
	tcase_add_test(tc, test_quota_requests);
	suite_add_tcase(s, tc);
}
