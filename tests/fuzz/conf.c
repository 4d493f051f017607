/*
 * lib/conf.c: conf_load on any cluster.conf. A file that is taken makes
 * a map mosd can run on; one that is refused is refused with a cause that
 * names the file (and the line, for what a line says).
 *
 * Input: the file. Seeds: the golden files of tests/conf/.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

void
fuzz_init(void)
{
}

static int
cmp_id(const void *a, const void *b)
{
	const struct conf_node	*x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void
check_conf(const struct cluster_conf *c)
{
	struct conf_node	*sorted;
	size_t			 i;

	fuzz_assert(c->nnodes > 0 && c->nnodes <= OSM_MAX_NODES);
	fuzz_assert(c->self == 0 || conf_find(c, c->self) != NULL);
	fuzz_assert(c->timeout_ms > c->interval_ms && c->interval_ms >= 10);
	fuzz_assert(c->port > 0 && c->speed > 0);
	fuzz_assert(c->guest_uid_first <= c->guest_uid_last);
	fuzz_assert(c->key_path != NULL && c->key_path[0] == '/');
	fuzz_assert(c->policy_path != NULL && c->policy_path[0] == '/');
	fuzz_assert(c->socket_path != NULL && c->socket_path[0] == '/');
	sorted = xreallocarray(NULL, c->nnodes, sizeof *sorted);
	memcpy(sorted, c->nodes, c->nnodes * sizeof *sorted);
	qsort(sorted, c->nnodes, sizeof *sorted, cmp_id);
	for (i = 0; i < c->nnodes; i++) {
		fuzz_assert(sorted[i].id >= 1 && sorted[i].id <= OSM_MAX_NODES);
		fuzz_assert(i == 0 || sorted[i].id != sorted[i - 1].id);
		fuzz_assert(sorted[i].salen > 0 &&
		    memchr(sorted[i].addr, '\0', sizeof sorted[i].addr) !=
		    NULL);
	}
	free(sorted);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cluster_conf	*c;
	char			 path[64], *cause = NULL;
	int			 fd, fd0 = fuzz_lowest_fd();

	fd = fuzz_path(data, size, path, sizeof path);
	if ((c = conf_load(path, &cause)) == NULL) {
		fuzz_refused(path, cause);
	} else {
		check_conf(c);
		log_debug("%zu nodes", c->nnodes);
		conf_free(c);
	}
	close(fd);
	fuzz_fd_check(fd0);
	return 0;
}

void
fuzz_seeds(const char *dir)
{
	fuzz_seed_dir(dir, "tests/conf", ".conf");
	fuzz_seed_file(dir, "etc-cluster.conf", "etc/cluster.conf");
}
