/*
 * moslab up N [--cpus Q[,Q...]] [--mem MB[,MB...]]: make N nodes, write the
 * lab's cluster.conf and key, start mosd in every node. A failure removes
 * whatever was made.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "moslab.h"

#define UP_CPUS_DEFAULT	100		/* hundredths of a CPU */
#define UP_CPUS_MAX	102400
#define UP_MEM_DEFAULT	1024		/* MiB */
#define UP_MEM_MIN	16

/* "0.5" → 50: a CPU count with at most two decimals, in hundredths. */
static int
up_parse_cpus(const char *s, uint64_t *out)
{
	char	*end;
	double	 v;

	if (!isdigit((unsigned char)*s) && *s != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || v * 100 < 1 ||
	    v * 100 > UP_CPUS_MAX)
		return -1;
	*out = (uint64_t)(v * 100 + 0.5);
	return 0;
}

static int
up_parse_mem(const char *s, uint64_t *out)
{
	return parse_size_mb(s, out) == -1 || *out < UP_MEM_MIN ? -1 : 0;
}

/*
 * Fill val[0..n) from "V" (every node) or "V1,...,Vn" (one per node).
 * Prints the problem and returns -1 on bad input.
 */
static int
up_parse_list(const char *opt, const char *what, const char *s, unsigned n,
    int (*parse)(const char *, uint64_t *), uint64_t *val)
{
	char		*copy, *w, *next;
	unsigned	 i = 0;
	int		 rc = -1;

	copy = xstrdup(s);
	for (w = copy; w != NULL; w = next) {
		if ((next = strchr(w, ',')) != NULL)
			*next++ = '\0';
		if (i == n) {
			fprintf(stderr, "moslab: %s has more values than the "
			    "%u nodes\n", opt, n);
			goto out;
		}
		if (parse(w, &val[i++]) == -1) {
			fprintf(stderr, "moslab: %s: expected %s, found "
			    "'%s'\n", opt, what, w);
			goto out;
		}
	}
	if (i == 1) {
		while (i < n)
			val[i++] = val[0];
	} else if (i != n) {
		fprintf(stderr, "moslab: %s has %u values for %u nodes (give "
		    "one, or one per node)\n", opt, i, n);
		goto out;
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

static int
up_write_conf(struct lab *lab, char **cause)
{
	FILE	*f;

	if ((f = fopen(lab->conf, "we")) == NULL) {
		xasprintf(cause, "%s: %s", lab->conf, strerror(errno));
		return -1;
	}
	fprintf(f, "# lab '%s', written by moslab up\n"
	    "node 1 " LAB_SUBNET "1 %u\n"
	    "key cluster.key\n", lab->name, lab->nnodes);
	if (fclose(f) == EOF) {
		xasprintf(cause, "%s: %s", lab->conf, strerror(errno));
		return -1;
	}
	return 0;
}

/* Everything but mosd: state, network, cgroups, node inits. */
static int
up_build(struct lab *lab, uint64_t *cpus, uint64_t *mem, char **cause)
{
	char		*dir;
	unsigned	 k;

	if (mkdir_p(lab->dir, 0755) == -1) {
		xasprintf(cause, "%s: %s", lab->dir, strerror(errno));
		return -1;
	}
	xasprintf(&dir, "%s/cluster.key", lab->dir);
	if (key_generate(dir, cause) == -1) {
		free(dir);
		return -1;
	}
	free(dir);
	if (up_write_conf(lab, cause) == -1 ||
	    net_bridge_create(lab, cause) == -1)
		return -1;
	for (k = 1; k <= lab->nnodes; k++) {
		dir = lab_node_path(lab, k, NULL);
		if (mkdir(dir, 0755) == -1) {
			xasprintf(cause, "%s: %s", dir, strerror(errno));
			free(dir);
			return -1;
		}
		free(dir);
		if (net_node_create(lab, k, cause) == -1 ||
		    cgroup_create(lab, k, cpus[k - 1] * LAB_CPU_PERIOD / 100,
		    mem[k - 1], cause) == -1 ||
		    node_boot(lab, k, cause) == -1)
			return -1;
	}
	return 0;
}

static int
cmd_up_exec(struct lab *lab, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "mem", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*cpus_arg = NULL, *mem_arg = NULL;
	uint64_t	 n, cpus[LAB_NODES_MAX], mem[LAB_NODES_MAX];
	char		*cause;
	unsigned	 k;
	int		 ch;

	optind = 0;	/* glibc: start afresh, permuting again */
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			cpus_arg = optarg;
			break;
		case 'm':
			mem_arg = optarg;
			break;
		case 'h':
			lab_usage_cmd(&cmd_up);
			return 0;
		default:
			lab_usage_cmd(&cmd_up);
			return 2;
		}
	}
	if (argc - optind != 1) {
		lab_usage_cmd(&cmd_up);
		return 2;
	}
	if (parse_uint(argv[optind], 1, LAB_NODES_MAX, &n) == -1) {
		fprintf(stderr, "moslab: expected a number of nodes from 1 to "
		    "%d, found '%s'\n", LAB_NODES_MAX, argv[optind]);
		return 2;
	}
	for (k = 0; k < n; k++) {
		cpus[k] = UP_CPUS_DEFAULT;
		mem[k] = UP_MEM_DEFAULT;
	}
	if (cpus_arg != NULL && up_parse_list("--cpus", "a number of CPUs "
	    "from 0.01 (like 0.5 or 2)", cpus_arg, n, up_parse_cpus,
	    cpus) == -1)
		return 2;
	if (mem_arg != NULL && up_parse_list("--mem", "a memory size of at "
	    "least 16 MB (like 256, 512M or 2G)", mem_arg, n, up_parse_mem,
	    mem) == -1)
		return 2;

	if (lab_load(lab, &cause) == -1 || lab_leftovers(lab, &cause))
		return lab_fail(cause);
	if (mosd_check(lab, &cause) == -1)
		return lab_fail(cause);

	lab->nnodes = n;
	if (up_build(lab, cpus, mem, &cause) == -1)
		goto fail;
	for (k = 1; k <= n; k++)
		if (mosd_spawn(lab, k, &cause) == -1)
			goto fail;
	for (k = 1; k <= n; k++)
		if (mosd_wait_ready(lab, k, &cause) == -1)
			goto fail;
	printf("lab '%s' is up: %u node%s, " LAB_SUBNET "1-%u\n", lab->name,
	    lab->nnodes, lab->nnodes == 1 ? "" : "s", lab->nnodes);
	return 0;

fail:
	fprintf(stderr, "moslab: %s\n", cause);
	free(cause);
	fprintf(stderr, "moslab: removing what was made of lab '%s'\n",
	    lab->name);
	lab_destroy(lab);
	return 1;
}

const struct lab_cmd cmd_up = {
	.name = "up",
	.args = "N [--cpus Q[,Q...]] [--mem MB[,MB...]]",
	.help = "make N nodes and start mosd in each (1 CPU and 1024 MB each "
	    "unless given)",
	.argc_min = 1,
	.argc_max = -1,
	.flags = CMD_LOCK,
	.exec = cmd_up_exec,
};
