/*
 * lib/policy.c: policy_load on any policy.conf, then the questions mosd
 * asks of the policy it got (policy_rule, policy_has_node,
 * policy_accepts). A file that is refused is refused with a cause that
 * names the file.
 *
 * Input: the file. Seeds: the golden files of tests/policy/.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static const char *const groups[] = { "users", "wheel", "staff" };
static const char *const users[] = { "alice", "bob", "root", NULL };
static const uint32_t	 nodes[] = { 1, 2, 3, 7, 100, 65535, UINT32_MAX - 1 };

void
fuzz_init(void)
{
}

static void
check_nodes(const struct policy_nodes *n)
{
	size_t	i;

	fuzz_assert(n->all || n->n == 0 || n->r != NULL);
	for (i = 0; !n->all && i < n->n; i++)
		fuzz_assert(n->r[i].first >= 1 &&
		    n->r[i].first <= n->r[i].last);
}

static void
check_policy(const struct policy *pol)
{
	const struct policy_rule	*r;
	size_t				 i, u, k, g;
	char				*why;
	int				 ok;

	check_nodes(&pol->def.nodes);
	for (i = 0; i < pol->nusers; i++)
		check_nodes(&pol->users[i].rule.nodes);
	for (i = 0; i < pol->ngroups; i++)
		check_nodes(&pol->groups[i].rule.nodes);
	for (i = 0; i < pol->nhosts; i++)
		check_nodes(&pol->hosts[i].nodes);
	for (u = 0; u < nitems(users); u++) {
		for (g = 0; g <= nitems(groups); g++) {
			r = policy_rule(pol, users[u], groups, g);
			fuzz_assert(r != NULL);
			for (k = 0; k < nitems(nodes); k++) {
				policy_has_node(&r->nodes, nodes[k]);
				ok = policy_accepts(pol, nodes[k], users[u],
				    groups, g, k, &why);
				fuzz_assert(ok == 0 || ok == 1);
				fuzz_assert((ok == 0) == (why != NULL));
				free(why);
				policy_accepts(pol, nodes[k], users[u], groups,
				    g, 0, NULL);
			}
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy	*pol;
	char		 path[64], *cause = NULL;
	int		 fd, fd0 = fuzz_lowest_fd();

	fd = fuzz_path(data, size, path, sizeof path);
	if ((pol = policy_load(path, &cause)) == NULL) {
		fuzz_refused(path, cause);
	} else {
		check_policy(pol);
		policy_free(pol);
	}
	close(fd);
	fuzz_fd_check(fd0);
	return 0;
}

void
fuzz_seeds(const char *dir)
{
	fuzz_seed_dir(dir, "tests/policy", ".policy");
	fuzz_seed_file(dir, "etc-policy.conf", "etc/policy.conf");
}
