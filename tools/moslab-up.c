/*
 * moslab up N [--cpus Q[,Q...]] [--mem MB[,MB...]] [--policy FILE]
 * [--web PORT] [--wait SECONDS]: make N nodes, write the lab's
 * cluster.conf, key and policy (and with --web the web monitor's line and
 * token), start mosd in every node, and return once every node sees every
 * other one up. A failure removes whatever was made.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

#define UP_CPUS_DEFAULT	100		/* hundredths of a CPU */
#define UP_CPUS_MAX	102400
#define UP_MEM_DEFAULT	1024		/* MiB */
#define UP_MEM_MIN	16
#define UP_POLICY_MAX	(1U << 20)	/* bytes of policy.conf */

/* --policy's file, read before anything is made. */
struct up_policy {
	char		*path;		/* the lab's copy; NULL: none given */
	char		*data;
	size_t		 len;
};

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

/*
 * Read the whole of --policy's file now, so that a missing or unreadable
 * one stops up before anything is made. mosd checks what it says.
 */
static int
up_read_policy(const char *path, struct up_policy *pol, char **cause)
{
	struct stat	 st;
	ssize_t		 n;
	size_t		 size = 4096;
	int		 fd, rc = -1;

	pol->data = NULL;
	pol->len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "--policy %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		xasprintf(cause, "--policy %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		xasprintf(cause, "--policy %s: not a regular file", path);
		goto out;
	}
	pol->data = xmalloc(size);
	for (;;) {
		if (pol->len == size) {
			if (size >= UP_POLICY_MAX) {
				xasprintf(cause, "--policy %s: larger than "
				    "%u bytes", path, UP_POLICY_MAX);
				goto out;
			}
			size *= 2;
			pol->data = xreallocarray(pol->data, size, 1);
		}
		n = read(fd, pol->data + pol->len, size - pol->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			xasprintf(cause, "--policy %s: %s", path,
			    strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		pol->len += n;
	}
	rc = 0;
out:
	close(fd);
	if (rc == -1) {
		free(pol->data);
		pol->data = NULL;
	}
	return rc;
}

/* Every node reads the same copy, beside cluster.conf. */
static int
up_write_policy(const struct up_policy *pol, char **cause)
{
	int	fd, rc = -1;

	fd = open(pol->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd == -1 || write_all(fd, pol->data, pol->len) == -1)
		xasprintf(cause, "%s: %s", pol->path, strerror(errno));
	else
		rc = 0;
	if (fd != -1 && close(fd) == -1 && rc == 0) {
		xasprintf(cause, "%s: %s", pol->path, strerror(errno));
		rc = -1;
	}
	return rc;
}

static int
up_write_conf(struct lab *lab, const struct up_policy *pol, unsigned web,
    char **cause)
{
	FILE	*f;

	if ((f = fopen(lab->conf, "we")) == NULL) {
		xasprintf(cause, "%s: %s", lab->conf, strerror(errno));
		return -1;
	}
	fprintf(f, "# lab '%s', written by moslab up\n"
	    "node 1 " LAB_SUBNET "1 %u\n"
	    "key cluster.key\n", lab->name, lab->nnodes);
	if (pol->path != NULL)
		fprintf(f, "policy %s\n", pol->path);
	/* every node on its own loopback; the token beside this file */
	if (web != 0)
		fprintf(f, "web 127.0.0.1 %u\nweb-token web.token\n", web);
	if (fclose(f) == EOF) {
		xasprintf(cause, "%s: %s", lab->conf, strerror(errno));
		return -1;
	}
	return 0;
}

/* Everything but mosd: state, network, cgroups, node inits. */
static int
up_build(struct lab *lab, uint64_t *cpus, uint64_t *mem,
    const struct up_policy *pol, unsigned web, char **cause)
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
	if (web != 0) {
		xasprintf(&dir, "%s/web.token", lab->dir);
		if (key_generate(dir, cause) == -1) {
			free(dir);
			return -1;
		}
		free(dir);
	}
	if ((pol->path != NULL && up_write_policy(pol, cause) == -1) ||
	    up_write_conf(lab, pol, web, cause) == -1 ||
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

/* Build the lab, start mosd in every node, wait (wait_ms) for gossip. */
static int
up_start(struct lab *lab, uint64_t *cpus, uint64_t *mem,
    const struct up_policy *pol, unsigned web, uint64_t wait_ms,
    char **cause)
{
	unsigned	k;

	if (up_build(lab, cpus, mem, pol, web, cause) == -1)
		return -1;
	for (k = 1; k <= lab->nnodes; k++)
		if (mosd_spawn(lab, k, cause) == -1)
			return -1;
	for (k = 1; k <= lab->nnodes; k++)
		if (mosd_wait_ready(lab, k, cause) == -1)
			return -1;
	if (wait_ms > 0 && mosd_wait_cluster(lab, wait_ms, cause) == -1)
		return -1;
	return 0;
}

static int
cmd_up_exec(struct lab *lab, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "mem", required_argument, NULL, 'm' },
		{ "policy", required_argument, NULL, 'p' },
		{ "wait", required_argument, NULL, 'w' },
		{ "web", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*cpus_arg = NULL, *mem_arg = NULL, *policy_arg = NULL;
	struct up_policy pol = { NULL, NULL, 0 };
	uint64_t	 n, cpus[LAB_NODES_MAX], mem[LAB_NODES_MAX];
	uint64_t	 wait_ms = LAB_READY_MS, web = 0;
	char		*cause;
	unsigned	 k;
	int		 ch, rc = 1;

	optind = 0;	/* glibc: start afresh, permuting again */
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			cpus_arg = optarg;
			break;
		case 'm':
			mem_arg = optarg;
			break;
		case 'p':
			policy_arg = optarg;
			break;
		case 'w':
			if (parse_uint(optarg, 0, 3600, &wait_ms) == -1) {
				fprintf(stderr, "moslab: --wait: expected "
				    "seconds from 0 to 3600, found '%s'\n",
				    optarg);
				return 2;
			}
			wait_ms *= 1000;
			break;
		case 'W':
			if (parse_uint(optarg, 1, 65535, &web) == -1) {
				fprintf(stderr, "moslab: --web: expected a port "
				    "from 1 to 65535, found '%s'\n", optarg);
				return 2;
			}
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
	if (policy_arg != NULL) {
		if (up_read_policy(policy_arg, &pol, &cause) == -1)
			return lab_fail(cause);
		xasprintf(&pol.path, "%s/policy.conf", lab->dir);
	}

	if (lab_load(lab, &cause) == -1 ||
	    lab_leftovers(lab, node_any_alive(lab), &cause) ||
	    mosd_check(lab, &cause) == -1) {
		rc = lab_fail(cause);
		goto out;
	}

	lab->nnodes = n;
	if (up_start(lab, cpus, mem, &pol, web, wait_ms, &cause) == -1) {
		fprintf(stderr, "moslab: %s\n", cause);
		free(cause);
		fprintf(stderr, "moslab: removing what was made of lab '%s'\n",
		    lab->name);
		lab_destroy(lab);
		goto out;
	}
	printf("lab '%s' is up: %u node%s, " LAB_SUBNET "1-%u\n", lab->name,
	    lab->nnodes, lab->nnodes == 1 ? "" : "s", lab->nnodes);
	rc = 0;
out:
	free(pol.path);
	free(pol.data);
	return rc;
}

const struct lab_cmd cmd_up = {
	.name = "up",
	.args = "N [--cpus Q[,Q...]] [--mem MB[,MB...]] [--policy FILE] "
	    "[--web PORT] [--wait S]",
	.help = "make N nodes, start mosd in each (default 1 CPU, 1024 MB, "
	    "no policy.conf);\n\treturn once every node sees every other "
	    "one up (--wait: at most S\n\tseconds, default 30; 0: do not "
	    "wait); --web: each node's web monitor on its\n\t127.0.0.1:PORT, "
	    "the token in the lab's web.token",
	.argc_min = 1,
	.argc_max = -1,
	.flags = CMD_LOCK,
	.exec = cmd_up_exec,
};
