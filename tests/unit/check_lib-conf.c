/*
 * check_lib's config and policy parsing: the golden files of tests/conf
 * and tests/policy, the policy's questions, the number parsers. Part of
 * the check_lib binary (check_lib.c runs it).
 */
#include <sys/socket.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "check_lib.h"

#define CONF_DIR	"tests/conf"
#define POLICY_DIR	"tests/policy"

/* Render a parsed config the way the golden files spell it. */
static char *
conf_dump(const struct cluster_conf *c)
{
	char	*out, *tmp;
	size_t	 i;

	xasprintf(&out, "port %u\ninterval %llums\ntimeout %llums\n"
	    "window %u\nspeed %u\nself %u\nkey %s\nsocket %s\n"
	    "guests %u-%u\nnet-uid %u\npolicy %s\nweb-token %s\n", c->port,
	    (unsigned long long)c->interval_ms,
	    (unsigned long long)c->timeout_ms, c->window, c->speed, c->self,
	    c->key_path, c->socket_path, (unsigned)c->guest_uid_first,
	    (unsigned)c->guest_uid_last, (unsigned)c->net_uid, c->policy_path,
	    c->web_token_path);
	if (c->web_port == 0)
		xasprintf(&tmp, "%sweb off\n", out);
	else
		xasprintf(&tmp, "%sweb %s %u (family %s)\n", out, c->web_addr,
		    c->web_port, c->web_sa.ss_family == AF_INET6 ? "inet6" :
		    "inet");
	free(out);
	out = tmp;
	xasprintf(&tmp, "%sclients %u\nclients_per_user %u\n"
	    "requests_per_user %u\nagents_per_user %u\n"
	    "client_timeout %llums\nclient_output %llu\n"
	    "user_output %llu\nhandshakes %u\nhandshakes_per_node %u\n"
	    "handshake_rate %u\nhandshake_timeout %llums\n", out, c->clients,
	    c->clients_per_user, c->requests_per_user, c->agents_per_user,
	    (unsigned long long)c->client_timeout_ms,
	    (unsigned long long)c->client_output,
	    (unsigned long long)c->user_output, c->handshakes,
	    c->handshakes_per_node, c->handshake_rate,
	    (unsigned long long)c->handshake_timeout_ms);
	free(out);
	out = tmp;
	for (i = 0; i < c->nnodes; i++) {
		xasprintf(&tmp, "%snode %u %s\n", out, c->nodes[i].id,
		    c->nodes[i].addr);
		free(out);
		out = tmp;
	}
	for (i = 0; i < c->nshared; i++) {
		xasprintf(&tmp, "%sshared %s\n", out, c->shared[i]);
		free(out);
		out = tmp;
	}
	return out;
}

static char *
slurp(const char *path)
{
	FILE	*f = fopen(path, "r");
	char	*buf = xcalloc(1, 65536);

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_msg(fread(buf, 1, 65535, f) > 0 || !ferror(f), "%s: read",
	    path);
	fclose(f);
	return buf;
}

/* Each tests/conf/NAME.conf has NAME.expect: the dump, or the error. */
START_TEST(test_conf_golden)
{
	DIR			*d;
	struct dirent		*de;
	struct cluster_conf	*c;
	char			 path[512], expect[512], *want, *got, *cause;
	size_t			 len;
	int			 n = 0;

	ck_assert_ptr_nonnull(d = opendir(CONF_DIR));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", CONF_DIR, de->d_name);
		snprintf(expect, sizeof expect, "%s/%.*s.expect", CONF_DIR,
		    (int)(len - 5), de->d_name);
		want = slurp(expect);
		cause = NULL;
		c = conf_load(path, &cause);
		if (strncmp(de->d_name, "good-", 5) == 0) {
			ck_assert_msg(c != NULL, "%s: %s", path, cause);
			got = conf_dump(c);
		} else {
			ck_assert_msg(c == NULL, "%s parsed but should not",
			    path);
			xasprintf(&got, "%s\n", cause);
		}
		ck_assert_msg(strcmp(got, want) == 0,
		    "%s:\n--- got\n%s--- expected\n%s", path, got, want);
		free(got);
		free(want);
		free(cause);
		conf_free(c);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 10);
}
END_TEST

/* What is under a shared path, by its plain spelling only. */
START_TEST(test_conf_is_shared)
{
	char	*sh[] = { "/home", "/scratch/a" };

	ck_assert(conf_is_shared(sh, 2, "/home"));
	ck_assert(conf_is_shared(sh, 2, "/home/u/f.db"));
	ck_assert(conf_is_shared(sh, 2, "/scratch/a/x"));
	ck_assert(!conf_is_shared(sh, 2, "/homes/u"));
	ck_assert(!conf_is_shared(sh, 2, "/scratch/b"));
	ck_assert(!conf_is_shared(sh, 2, "/scratch"));
	ck_assert(!conf_is_shared(sh, 2, "home/u"));
	ck_assert(!conf_is_shared(sh, 2, "/home/../etc/passwd"));
	ck_assert(!conf_is_shared(sh, 2, "/home/./u"));
	ck_assert(!conf_is_shared(sh, 2, "/home//u"));
	ck_assert(!conf_is_shared(sh, 2, "/home/u/.."));
	ck_assert(conf_is_shared(sh, 2, "/home/u/..x"));
	ck_assert(!conf_is_shared(sh, 0, "/home/u"));
}
END_TEST

/* The shared path a path is under: the innermost of those that hold it. */
START_TEST(test_conf_shared_root)
{
	char	*sh[] = { "/scratch/a", "/scratch", "/home" };

	ck_assert_int_eq(conf_shared_root(sh, 3, "/scratch/a/x"), 0);
	ck_assert_int_eq(conf_shared_root(sh, 3, "/scratch/ab"), 1);
	ck_assert_int_eq(conf_shared_root(sh, 3, "/scratch"), 1);
	ck_assert_int_eq(conf_shared_root(sh, 3, "/home/u"), 2);
	ck_assert_int_eq(conf_shared_root(sh, 3, "/homes"), -1);
	ck_assert_int_eq(conf_shared_root(sh, 3, "/scratch/a/../b"), -1);
	ck_assert_int_eq(conf_shared_root(sh, 0, "/home/u"), -1);
}
END_TEST

static void	appendf(char **, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static void
appendf(char **out, const char *fmt, ...)
{
	va_list	 ap;
	char	*add, *tmp;

	va_start(ap, fmt);
	xvasprintf(&add, fmt, ap);
	va_end(ap);
	xasprintf(&tmp, "%s%s", *out == NULL ? "" : *out, add);
	free(*out);
	free(add);
	*out = tmp;
}

static void
policy_dump_nodes(char **out, const struct policy_nodes *n)
{
	size_t	i;

	if (n->all) {
		appendf(out, "all");
		return;
	}
	for (i = 0; i < n->n; i++) {
		appendf(out, "%s%u", i == 0 ? "" : ",", n->r[i].first);
		if (n->r[i].last != n->r[i].first)
			appendf(out, "-%u", n->r[i].last);
	}
}

static void
policy_dump_limit(char **out, const char *key, uint32_t v)
{
	if (v == POLICY_NO_LIMIT)
		appendf(out, " %s unlimited", key);
	else
		appendf(out, " %s %u", key, v);
}

static void
policy_dump_rule(char **out, const char *what, const struct policy_rule *r)
{
	appendf(out, "%s nodes ", what);
	policy_dump_nodes(out, &r->nodes);
	policy_dump_limit(out, "away", r->max_away);
	appendf(out, " auto %s files %s", r->automatic ? "yes" : "no",
	    r->strict_files ? "strict" : "fast");
	/* said only when set: the older files' dumps stay as they were */
	if (r->move != 0)
		appendf(out, " moves %s", r->move == 1 ? "live" :
		    r->move == 2 ? "stop" : "post");
	appendf(out, "\n");
}

static void
policy_dump_who(char **out, const char *key, const struct policy_who *w,
    size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		appendf(out, "%s", i == 0 ? " " : ",");
		if (i == 0)
			appendf(out, "%s ", key);
		if (w[i].kind == POLICY_ANYONE)
			appendf(out, "anyone");
		else
			appendf(out, "%s:%s", w[i].kind == POLICY_USER ?
			    "user" : "group", w[i].name);
	}
}

/* Render a parsed policy as a policy file that says everything. */
static char *
policy_dump(const struct policy *pol)
{
	char	*out = NULL, *what;
	size_t	 i;

	policy_dump_rule(&out, "default", &pol->def);
	for (i = 0; i < pol->nusers; i++) {
		xasprintf(&what, "user %s", pol->users[i].name);
		policy_dump_rule(&out, what, &pol->users[i].rule);
		free(what);
	}
	for (i = 0; i < pol->ngroups; i++) {
		xasprintf(&what, "group %s", pol->groups[i].name);
		policy_dump_rule(&out, what, &pol->groups[i].rule);
		free(what);
	}
	for (i = 0; i < pol->nhosts; i++) {
		appendf(&out, "node ");
		policy_dump_nodes(&out, &pol->hosts[i].nodes);
		policy_dump_who(&out, "accept", pol->hosts[i].accept,
		    pol->hosts[i].naccept);
		policy_dump_who(&out, "refuse", pol->hosts[i].refuse,
		    pol->hosts[i].nrefuse);
		policy_dump_limit(&out, "guests", pol->hosts[i].max_guests);
		appendf(&out, "\n");
	}
	return out;
}

/*
 * Each tests/policy/NAME.policy has NAME.expect: the dump, or the error.
 * A good file's dump must also read back as the same policy.
 */
START_TEST(test_policy_golden)
{
	DIR		*d;
	struct dirent	*de;
	struct policy	*pol, *again;
	char		 path[512], expect[512], *want, *got, *cause, *copy;
	char		*redump;
	size_t		 len;
	int		 good = 0, bad = 0;

	ck_assert_ptr_nonnull(d = opendir(POLICY_DIR));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 8 || strcmp(de->d_name + len - 7, ".policy") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", POLICY_DIR, de->d_name);
		snprintf(expect, sizeof expect, "%s/%.*s.expect", POLICY_DIR,
		    (int)(len - 7), de->d_name);
		want = slurp(expect);
		cause = NULL;
		pol = policy_load(path, &cause);
		if (strncmp(de->d_name, "good-", 5) == 0) {
			ck_assert_msg(pol != NULL, "%s: %s", path, cause);
			ck_assert_str_eq(pol->path, path);
			got = policy_dump(pol);
			copy = tmp_file("again.policy", got, 0644);
			again = policy_load(copy, &cause);
			ck_assert_msg(again != NULL, "%s dumped: %s", path,
			    cause);
			redump = policy_dump(again);
			ck_assert_msg(strcmp(redump, got) == 0,
			    "%s reads back as\n%s", path, redump);
			free(redump);
			free(copy);
			policy_free(again);
			good++;
		} else {
			ck_assert_msg(pol == NULL, "%s parsed but should not",
			    path);
			xasprintf(&got, "%s\n", cause);
			bad++;
		}
		ck_assert_msg(strcmp(got, want) == 0,
		    "%s:\n--- got\n%s--- expected\n%s", path, got, want);
		free(got);
		free(want);
		free(cause);
		policy_free(pol);
	}
	closedir(d);
	ck_assert_int_ge(good, 3);
	ck_assert_int_ge(bad, 20);
}
END_TEST

START_TEST(test_policy_default)
{
	struct policy	*pol;
	char		*cause = NULL, *path, *want;

	xasprintf(&path, "%s/none.policy", tmpdir);
	ck_assert_ptr_null(policy_load(path, &cause));
	xasprintf(&want, "%s: No such file or directory", path);
	ck_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	pol = policy_default();
	ck_assert_ptr_null(pol->path);
	ck_assert_int_eq(pol->def.nodes.all, 1);
	ck_assert_uint_eq(pol->def.max_away, POLICY_NO_LIMIT);
	ck_assert_int_eq(pol->def.automatic, 1);
	ck_assert_uint_eq(pol->nusers + pol->ngroups + pol->nhosts, 0);
	ck_assert_ptr_eq(policy_rule(pol, "root", NULL, 0), &pol->def);
	ck_assert_int_eq(policy_accepts(pol, 1, "root", NULL, 0,
	    POLICY_NO_LIMIT - 1, NULL), 1);
	policy_free(pol);
	policy_free(NULL);
}
END_TEST

START_TEST(test_policy_has_node)
{
	struct policy_range	r[] = { { 1, 2 }, { 5, 5 },
				    { 4294967290U, 4294967294U } };
	struct policy_nodes	n = { .all = 0, .r = r, .n = nitems(r) };
	struct policy_nodes	all = { .all = 1 };

	ck_assert_int_eq(policy_has_node(&n, 1), 1);
	ck_assert_int_eq(policy_has_node(&n, 2), 1);
	ck_assert_int_eq(policy_has_node(&n, 5), 1);
	ck_assert_int_eq(policy_has_node(&n, 4294967294U), 1);
	ck_assert_int_eq(policy_has_node(&n, 0), 0);
	ck_assert_int_eq(policy_has_node(&n, 3), 0);
	ck_assert_int_eq(policy_has_node(&n, 4), 0);
	ck_assert_int_eq(policy_has_node(&n, 6), 0);
	ck_assert_int_eq(policy_has_node(&n, 4294967289U), 0);
	ck_assert_int_eq(policy_has_node(&all, 77), 1);
	n.n = 0;
	ck_assert_int_eq(policy_has_node(&n, 1), 0);
}
END_TEST

START_TEST(test_policy_rule)
{
	const char *const	 both[] = { "staff", "students" };
	const char *const	 bobs[] = { "users", "staff", "students" };
	const char *const	 other[] = { "users" };
	const struct policy_rule *r;
	struct policy		*pol;
	char			*path, *cause = NULL;

	path = tmp_file("rule.policy",
	    "default nodes 1-4 away 10\n"
	    "group students nodes 5 away 1\n"
	    "group staff nodes 6\n"
	    "user alice nodes 7 auto no\n", 0644);
	pol = policy_load(path, &cause);
	ck_assert_msg(pol != NULL, "%s", cause);

	/* A user line beats any group line. */
	r = policy_rule(pol, "alice", both, nitems(both));
	ck_assert_ptr_eq(r, &pol->users[0].rule);
	ck_assert_int_eq(policy_has_node(&r->nodes, 7), 1);
	ck_assert_int_eq(policy_has_node(&r->nodes, 1), 0);
	ck_assert_uint_eq(r->max_away, 10);
	ck_assert_int_eq(r->automatic, 0);

	/* The first group line in the file, not in the user's list. */
	r = policy_rule(pol, "bob", bobs, nitems(bobs));
	ck_assert_ptr_eq(r, &pol->groups[0].rule);
	ck_assert_uint_eq(r->max_away, 1);
	ck_assert_int_eq(r->automatic, 1);
	r = policy_rule(pol, "bob", bobs + 1, 1);
	ck_assert_ptr_eq(r, &pol->groups[1].rule);
	ck_assert_uint_eq(r->max_away, 10);
	ck_assert_int_eq(policy_has_node(&r->nodes, 6), 1);

	/* Otherwise the default; names match whole. */
	ck_assert_ptr_eq(policy_rule(pol, "carol", other, nitems(other)),
	    &pol->def);
	ck_assert_ptr_eq(policy_rule(pol, "alic", NULL, 0), &pol->def);
	ck_assert_ptr_eq(policy_rule(pol, "alice2", both, 0), &pol->def);
	policy_free(pol);
	free(path);
}
END_TEST

static void
check_accepts(const struct policy *pol, uint32_t self, const char *user,
    const char *group, uint32_t guests_now, const char *want)
{
	const char *const	 groups[] = { "users", group };
	char			*why = (char *)"untouched";
	int			 ok;

	ok = policy_accepts(pol, self, user, groups, group == NULL ? 1 : 2,
	    guests_now, &why);
	if (want == NULL) {
		ck_assert_msg(ok == 1, "node %u refused %s: %s", self, user,
		    why);
		ck_assert_ptr_null(why);
	} else {
		ck_assert_msg(ok == 0, "node %u took %s", self, user);
		ck_assert_str_eq(why, want);
		free(why);
	}
	/* Without a place for the reason, the same answer. */
	ck_assert_int_eq(policy_accepts(pol, self, user, groups,
	    group == NULL ? 1 : 2, guests_now, NULL), ok);
}

START_TEST(test_policy_accepts)
{
	struct policy	*pol;
	char		*path, *cause = NULL;

	path = tmp_file("accepts.policy",
	    "node 3 accept user:alice,group:staff refuse group:students "
	    "guests 8\n"
	    "node 3-5 refuse anyone\n"
	    "node 4 guests 1	# never used: the line above comes first\n"
	    "node 6 guests 1\n"
	    "node 7 accept anyone refuse user:mallory\n", 0644);
	pol = policy_load(path, &cause);
	ck_assert_msg(pol != NULL, "%s", cause);

	/* A refusal beats an acceptance. */
	check_accepts(pol, 3, "alice", "students", 0,
	    "node 3 refuses group students");
	check_accepts(pol, 3, "eve", "students", 0,
	    "node 3 refuses group students");
	check_accepts(pol, 3, "alice", NULL, 0, NULL);
	check_accepts(pol, 3, "bob", "staff", 0, NULL);
	check_accepts(pol, 3, "bob", NULL, 0,
	    "node 3 accepts only listed users and groups");
	check_accepts(pol, 3, "bob", "staf", 0,
	    "node 3 accepts only listed users and groups");

	/* The guest limit counts guests already there. */
	check_accepts(pol, 3, "alice", NULL, 7, NULL);
	check_accepts(pol, 3, "alice", NULL, 8,
	    "node 3 takes at most 8 guests");
	check_accepts(pol, 6, "bob", NULL, 0, NULL);
	check_accepts(pol, 6, "bob", NULL, 1, "node 6 takes at most 1 guest");

	/* The first line about a node decides for it. */
	check_accepts(pol, 4, "alice", "staff", 0, "node 4 refuses anyone");
	check_accepts(pol, 5, "bob", NULL, 0, "node 5 refuses anyone");

	check_accepts(pol, 7, "mallory", "staff", 0,
	    "node 7 refuses user mallory");
	check_accepts(pol, 7, "eve", NULL, 1000, NULL);

	/* No line about a node: it takes anyone, any number. */
	check_accepts(pol, 8, "mallory", "students", POLICY_NO_LIMIT - 1,
	    NULL);
	check_accepts(pol, 2, "mallory", NULL, 0, NULL);
	policy_free(pol);
	free(path);
}
END_TEST

START_TEST(test_parse_numbers)
{
	uint64_t	v;

	ck_assert_int_eq(parse_duration_ms("250ms", &v), 0);
	ck_assert_uint_eq(v, 250);
	ck_assert_int_eq(parse_duration_ms("1.5s", &v), 0);
	ck_assert_uint_eq(v, 1500);
	ck_assert_int_eq(parse_duration_ms("2", &v), 0);
	ck_assert_uint_eq(v, 2000);
	ck_assert_int_eq(parse_duration_ms("0.5m", &v), 0);
	ck_assert_uint_eq(v, 30000);
	ck_assert_int_eq(parse_duration_ms("fast", &v), -1);
	ck_assert_int_eq(parse_duration_ms("1h", &v), -1);
	ck_assert_int_eq(parse_duration_ms("-1s", &v), -1);
	ck_assert_int_eq(parse_uint("42", 1, 100, &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(parse_uint("420", 1, 100, &v), -1);
	ck_assert_int_eq(parse_uint("4x", 1, 100, &v), -1);
	ck_assert_int_eq(parse_uint("-4", 0, 100, &v), -1);
	ck_assert_int_eq(parse_uint("", 0, 100, &v), -1);
	ck_assert_int_eq(parse_size_mb("512", &v), 0);
	ck_assert_uint_eq(v, 512);
	ck_assert_int_eq(parse_size_mb("2G", &v), 0);
	ck_assert_uint_eq(v, 2048);
	ck_assert_int_eq(parse_size_mb("0", &v), -1);
	ck_assert_int_eq(parse_size_mb("12T", &v), -1);
}
END_TEST

START_TEST(test_parse_signals_nodes)
{
	uint32_t	*nodes;
	size_t		 n;
	int		 sig;

	ck_assert_int_eq(parse_signal("USR1", &sig), 0);
	ck_assert_int_eq(sig, SIGUSR1);
	ck_assert_int_eq(parse_signal("sigterm", &sig), 0);
	ck_assert_int_eq(sig, SIGTERM);
	ck_assert_int_eq(parse_signal("12", &sig), 0);
	ck_assert_int_eq(sig, 12);
	ck_assert_int_eq(parse_signal("0", &sig), -1);
	ck_assert_int_eq(parse_signal("65", &sig), -1);
	ck_assert_int_eq(parse_signal("SIG", &sig), -1);
	ck_assert_int_eq(parse_signal("USR3", &sig), -1);
	ck_assert_int_eq(parse_signal("", &sig), -1);

	ck_assert_int_eq(parse_nodes("1,3,5-7", &nodes, &n), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(nodes[0], 1);
	ck_assert_uint_eq(nodes[1], 3);
	ck_assert_uint_eq(nodes[2], 5);
	ck_assert_uint_eq(nodes[4], 7);
	free(nodes);
	ck_assert_int_eq(parse_nodes("4", &nodes, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(nodes[0], 4);
	free(nodes);
	ck_assert_int_eq(parse_nodes("", &nodes, &n), -1);
	ck_assert_int_eq(parse_nodes("1,", &nodes, &n), -1);
	ck_assert_int_eq(parse_nodes("1,,2", &nodes, &n), -1);
	ck_assert_int_eq(parse_nodes("0", &nodes, &n), -1);
	ck_assert_int_eq(parse_nodes("7-5", &nodes, &n), -1);
	ck_assert_int_eq(parse_nodes("1-2-3", &nodes, &n), -1);
	ck_assert_int_eq(parse_nodes("65536", &nodes, &n), -1);
	ck_assert_int_eq(parse_nodes("a,b", &nodes, &n), -1);
}
END_TEST

void
check_lib_conf(Suite *s)
{
	TCase	*tc;

	tc = tcase_create("conf");
	tcase_add_test(tc, test_conf_golden);
	tcase_add_test(tc, test_conf_is_shared);
	tcase_add_test(tc, test_conf_shared_root);
	tcase_add_test(tc, test_parse_numbers);
	tcase_add_test(tc, test_parse_signals_nodes);
	suite_add_tcase(s, tc);

	tc = tcase_create("policy");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_policy_golden);
	tcase_add_test(tc, test_policy_default);
	tcase_add_test(tc, test_policy_has_node);
	tcase_add_test(tc, test_policy_rule);
	tcase_add_test(tc, test_policy_accepts);
	suite_add_tcase(s, tc);
}
