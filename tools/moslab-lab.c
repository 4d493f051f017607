/*
 * The lab as a whole: its name and state directory, the lock that keeps
 * two moslab commands from changing it at once, node numbers and pid files,
 * and tearing everything down.
 *
 * A lab named NAME keeps its state in MOSLAB_DIR/NAME (cluster.conf,
 * cluster.key, nodeK/{init.pid,mosd.pid,mosd.log}); its kernel objects are
 * named after it (netns NAME-nK, links NAME-br and NAME-vK, cgroups
 * osmosis-NAME/nodeK), so that down can find them all even when up died
 * halfway and the state directory says nothing.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

static int
lab_name_ok(const char *name)
{
	size_t	len = strlen(name);

	if (len == 0 || len > LAB_NAME_MAX)
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789") == len;
}

int
lab_init(struct lab *lab, const char *name, char **cause)
{
	const char	*env;
	char		 exe[PATH_MAX], *p;

	memset(lab, 0, sizeof *lab);
	lab->lockfd = -1;
	if (name == NULL && (name = getenv("MOSLAB_NAME")) == NULL)
		name = "osm";
	if (!lab_name_ok(name)) {
		xasprintf(cause, "bad lab name '%s': expected 1 to %d of "
		    "a-z and 0-9", name, LAB_NAME_MAX);
		return -1;
	}
	strcpy(lab->name, name);

	if ((env = getenv("MOSLAB_DIR")) == NULL || *env == '\0')
		env = LAB_BASE_DIR;
	if (env[0] != '/') {
		xasprintf(cause, "MOSLAB_DIR must be an absolute path, not "
		    "'%s'", env);
		return -1;
	}
	xasprintf(&lab->dir, "%s/%s", env, lab->name);
	xasprintf(&lab->conf, "%s/cluster.conf", lab->dir);

	/* The tree's bin/ is where this binary lives. */
	if (realpath("/proc/self/exe", exe) == NULL) {
		xasprintf(cause, "/proc/self/exe: %s", strerror(errno));
		return -1;
	}
	lab->bindir = xstrdup(dirname(exe));

	/* Nodes start in /, so a relative MOSLAB_MOSD is resolved here. */
	if ((env = getenv("MOSLAB_MOSD")) != NULL && *env != '\0') {
		if ((p = realpath(env, NULL)) != NULL) {
			lab->mosd = xstrdup(p);
			free(p);
		} else
			lab->mosd = xstrdup(env);
	} else {
		/* In the tree mosd is beside moslab; installed, in ../sbin. */
		xasprintf(&lab->mosd, "%s/mosd", lab->bindir);
		xasprintf(&p, "%s/../sbin/mosd", lab->bindir);
		if (access(lab->mosd, X_OK) == -1 && access(p, X_OK) == 0) {
			free(lab->mosd);
			lab->mosd = realpath(p, NULL);
		}
		free(p);
	}
	lab->sockpath = xstrdup(OSM_SOCKET_PATH);
	return 0;
}

void
lab_free(struct lab *lab)
{
	if (lab->lockfd != -1)
		close(lab->lockfd);
	free(lab->dir);
	free(lab->bindir);
	free(lab->conf);
	free(lab->mosd);
	free(lab->sockpath);
	conf_free(lab->cc);
}

/*
 * Commands that change a lab hold one lock for the whole machine: labs
 * share the host's namespace of link and cgroup names, whatever MOSLAB_DIR.
 */
int
lab_lock(struct lab *lab, char **cause)
{
	lab->lockfd = open(LAB_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lab->lockfd == -1) {
		xasprintf(cause, "%s: %s", LAB_LOCK, strerror(errno));
		return -1;
	}
	if (flock(lab->lockfd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		fprintf(stderr, "moslab: waiting for another moslab command to "
		    "finish\n");
		if (flock(lab->lockfd, LOCK_EX) == 0)
			return 0;
	}
	xasprintf(cause, "lock %s: %s", LAB_LOCK, strerror(errno));
	return -1;
}

/* Read the lab's cluster.conf if there is one; no file means no lab. */
int
lab_load(struct lab *lab, char **cause)
{
	struct cluster_conf	*cc;
	size_t			 i;

	if (access(lab->conf, F_OK) == -1 && errno == ENOENT)
		return 0;
	if ((cc = conf_load(lab->conf, cause)) == NULL)
		return -1;
	for (i = 0; i < cc->nnodes; i++) {
		if (cc->nodes[i].id != i + 1 || i + 1 > LAB_NODES_MAX) {
			xasprintf(cause, "%s: not a lab's map (expected nodes "
			    "1 to N)", lab->conf);
			conf_free(cc);
			return -1;
		}
	}
	lab->cc = cc;
	lab->nnodes = cc->nnodes;
	free(lab->sockpath);
	lab->sockpath = xstrdup(cc->socket_path);
	return 0;
}

/*
 * Parse a node number given on the command line. Returns an exit code: 0,
 * 1 if the lab has no such node, 2 if it is not a number at all.
 */
int
lab_node_arg(struct lab *lab, const char *s, unsigned *k)
{
	uint64_t	v;

	if (parse_uint(s, 1, UINT32_MAX, &v) == -1) {
		fprintf(stderr, "moslab: expected a node number, found '%s'\n",
		    s);
		return 2;
	}
	if (v > lab->nnodes) {
		fprintf(stderr, "moslab: node %llu does not exist (the lab "
		    "has %u node%s)\n", (unsigned long long)v, lab->nnodes,
		    lab->nnodes == 1 ? "" : "s");
		return 1;
	}
	*k = v;
	return 0;
}

char *
lab_node_path(struct lab *lab, unsigned k, const char *file)
{
	char	*path;

	if (file == NULL)
		xasprintf(&path, "%s/node%u", lab->dir, k);
	else
		xasprintf(&path, "%s/node%u/%s", lab->dir, k, file);
	return path;
}

int
lab_pid_read(struct lab *lab, unsigned k, const char *file, pid_t *pid)
{
	char		*path = lab_node_path(lab, k, file);
	uint64_t	 v;
	int		 rc;

	rc = read_file_u64(path, &v);
	free(path);
	if (rc == -1 || v == 0 || v > INT32_MAX)
		return -1;
	*pid = v;
	return 0;
}

int
lab_pid_write(struct lab *lab, unsigned k, const char *file, pid_t pid,
    char **cause)
{
	char	*path = lab_node_path(lab, k, file), buf[32];
	int	 fd, rc = -1;

	snprintf(buf, sizeof buf, "%d\n", (int)pid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd == -1 || write_all(fd, buf, strlen(buf)) == -1)
		xasprintf(cause, "%s: %s", path, strerror(errno));
	else
		rc = 0;
	if (fd != -1)
		close(fd);
	free(path);
	return rc;
}

void
lab_pid_remove(struct lab *lab, unsigned k, const char *file)
{
	char	*path = lab_node_path(lab, k, file);

	unlink(path);
	free(path);
}

/* Do two paths name the same file, such as the same namespace? */
int
lab_same_file(const char *a, const char *b)
{
	struct stat	sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Wait up to ms for the process behind a pidfd to end; 0 if it did. */
int
lab_pidfd_wait(int fd, unsigned ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	uint64_t	end = now_ms() + ms, now;
	int		n;

	while ((now = now_ms()) < end) {
		n = poll(&pfd, 1, end - now);
		if (n == 1)
			return 0;
		if (n == -1 && errno != EINTR)
			return -1;
	}
	return -1;
}

/*
 * Is anything of this lab there already? Fills cause with what and how to
 * get rid of it; alive: whether any of its nodes still runs.
 */
int
lab_leftovers(struct lab *lab, int alive, char **cause)
{
	char		*what = NULL;
	struct stat	 st;

	if (lab->nnodes > 0) {
		xasprintf(cause, "lab '%s' is already %s (%u node%s); run "
		    "'moslab down' first", lab->name, alive ? "up" :
		    "there, every node dead", lab->nnodes,
		    lab->nnodes == 1 ? "" : "s");
		return 1;
	}
	if (stat(lab->dir, &st) == 0)
		what = xstrdup(lab->dir);
	else if (!net_find(lab, &what))
		cgroup_find(lab, &what);
	if (what == NULL)
		return 0;
	xasprintf(cause, "lab '%s' was left half-built (%s exists); run "
	    "'moslab down' first", lab->name, what);
	free(what);
	return 1;
}

static int
lab_remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (remove(path) == -1 && errno != ENOENT)
		log_warn("remove %s", path);
	return 0;
}

/*
 * Remove every trace of the lab, whatever state it is in. Processes go
 * first (with their cgroups), then links and namespaces, then the state.
 */
int
lab_destroy(struct lab *lab)
{
	int	rc = 0;

	if (cgroup_destroy(lab) == -1)
		rc = -1;
	if (net_destroy(lab) == -1)
		rc = -1;
	if (nftw(lab->dir, lab_remove_one, 16, FTW_DEPTH | FTW_PHYS |
	    FTW_MOUNT) == -1 && errno != ENOENT) {
		log_warn("remove %s", lab->dir);
		rc = -1;
	}
	return rc;
}
