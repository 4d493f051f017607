/*
 * The lab's network: a bridge NAME-br in the host's namespace with no
 * address (so host traffic never enters the lab), and for node K a named
 * network namespace NAME-nK holding eth0 = 10.77.0.K/24, the peer of
 * NAME-vK on the bridge. Taking NAME-vK down cuts node K off.
 *
 * The work is done by iproute2's ip(8), run without a shell.
 */
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

#define NET_NETNS_DIR	"/run/netns"
#define NET_SYS_DIR	"/sys/class/net"
#define NET_MAX_ARGS	16

static const char *net_ip_paths[] = {
	"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"
};

/* Run ip with the given NULL-terminated arguments; its error goes in cause. */
static int
net_ip(char **cause, ...)
{
	const char	*argv[NET_MAX_ARGS + 2], *ip = NULL;
	char		 err[512], *nl, *cmd, *tmp;
	va_list		 ap;
	size_t		 i, n = 0, len = 0;
	ssize_t		 r;
	pid_t		 pid;
	int		 p[2], status, null;

	for (i = 0; i < nitems(net_ip_paths) && ip == NULL; i++)
		if (access(net_ip_paths[i], X_OK) == 0)
			ip = net_ip_paths[i];
	if (ip == NULL) {
		xasprintf(cause, "ip(8) not found: install iproute2");
		return -1;
	}
	argv[n++] = "ip";
	va_start(ap, cause);
	while ((argv[n] = va_arg(ap, const char *)) != NULL)
		if (++n > NET_MAX_ARGS)
			fatalx("net_ip: too many arguments");
	va_end(ap);

	if (pipe2(p, O_CLOEXEC) == -1)
		fatal("pipe");
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		if ((null = open("/dev/null", O_RDWR)) != -1)
			dup2(null, STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		execv(ip, (char **)argv);
		dprintf(STDERR_FILENO, "%s: %s", ip, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	while (len < sizeof err - 1 &&
	    (r = read(p[0], err + len, sizeof err - 1 - len)) != 0) {
		if (r == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += r;
	}
	err[len] = '\0';
	close(p[0]);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			fatal("waitpid");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;

	if ((nl = strchr(err, '\n')) != NULL)
		*nl = '\0';
	cmd = xstrdup("ip");
	for (i = 1; i < n; i++) {
		xasprintf(&tmp, "%s %s", cmd, argv[i]);
		free(cmd);
		cmd = tmp;
	}
	xasprintf(cause, "%s: %s", cmd, *err != '\0' ? err : "failed");
	free(cmd);
	return -1;
}

/* Interface names: NAME-br, NAME-vK; and the netns NAME-nK. */
static void
net_name(struct lab *lab, char kind, unsigned k, char *buf)
{
	if (kind == 'b')
		snprintf(buf, IFNAMSIZ, "%s-br", lab->name);
	else
		snprintf(buf, IFNAMSIZ, "%s-%c%u", lab->name, kind, k);
}

char *
net_netns_path(struct lab *lab, unsigned k)
{
	char	 ns[IFNAMSIZ], *path;

	net_name(lab, 'n', k, ns);
	xasprintf(&path, NET_NETNS_DIR "/%s", ns);
	return path;
}

/* IPv6 would give the host an address on the lab's links: keep it off. */
static void
net_no_ipv6(const char *ifname)
{
	char	*path;

	xasprintf(&path, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	if (write_file_str(path, "1") == -1 && errno != ENOENT)
		log_warn("%s", path);
	free(path);
}

int
net_bridge_create(struct lab *lab, char **cause)
{
	char	br[IFNAMSIZ];

	net_name(lab, 'b', 0, br);
	if (net_ip(cause, "link", "add", br, "type", "bridge", NULL) == -1)
		return -1;
	net_no_ipv6(br);
	return net_ip(cause, "link", "set", br, "up", NULL);
}

int
net_node_create(struct lab *lab, unsigned k, char **cause)
{
	char	br[IFNAMSIZ], veth[IFNAMSIZ], ns[IFNAMSIZ], addr[32];

	net_name(lab, 'b', 0, br);
	net_name(lab, 'v', k, veth);
	net_name(lab, 'n', k, ns);
	snprintf(addr, sizeof addr, LAB_SUBNET "%u/%d", k, LAB_PREFIXLEN);

	if (net_ip(cause, "netns", "add", ns, NULL) == -1 ||
	    net_ip(cause, "link", "add", veth, "type", "veth", "peer", "name",
	    "eth0", "netns", ns, NULL) == -1)
		return -1;
	net_no_ipv6(veth);
	if (net_ip(cause, "link", "set", veth, "master", br, "up",
	    NULL) == -1 ||
	    net_ip(cause, "-n", ns, "addr", "add", addr, "dev", "eth0",
	    NULL) == -1 ||
	    net_ip(cause, "-n", ns, "link", "set", "eth0", "up", NULL) == -1 ||
	    net_ip(cause, "-n", ns, "link", "set", "lo", "up", NULL) == -1)
		return -1;
	return 0;
}

/* Is name this lab's object of the given kind (NAME-br, NAME-vK, NAME-nK)? */
static int
net_ours(struct lab *lab, const char *name, char kind)
{
	size_t	len = strlen(lab->name);

	if (strncmp(name, lab->name, len) != 0 || name[len] != '-')
		return 0;
	name += len + 1;
	if (kind == 'b')
		return strcmp(name, "br") == 0;
	if (name[0] != kind || name[1] == '\0')
		return 0;
	return strspn(name + 1, "0123456789") == strlen(name + 1);
}

/*
 * Call fn on every entry of dir that is this lab's object of the given
 * kind; stops at the first fn that returns nonzero and returns that.
 */
static int
net_scan(struct lab *lab, const char *dir, char kind,
    int (*fn)(const char *, void *), void *arg)
{
	DIR		*d;
	struct dirent	*de;
	int		 rc = 0;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (net_ours(lab, de->d_name, kind))
			rc = fn(de->d_name, arg);
	closedir(d);
	return rc;
}

static int
net_found(const char *name, void *arg)
{
	*(char **)arg = xstrdup(name);
	return 1;
}

/* Does any link or netns of this lab exist? Returns 1 and names it. */
int
net_find(struct lab *lab, char **what)
{
	return net_scan(lab, NET_NETNS_DIR, 'n', net_found, what) ||
	    net_scan(lab, NET_SYS_DIR, 'v', net_found, what) ||
	    net_scan(lab, NET_SYS_DIR, 'b', net_found, what);
}

static int
net_del_link(const char *name, void *arg)
{
	char	*cause;

	if (net_ip(&cause, "link", "del", name, NULL) == -1) {
		log_warnx("%s", cause);
		free(cause);
		*(int *)arg = -1;
	}
	return 0;
}

static int
net_del_netns(const char *name, void *arg)
{
	char	*cause;

	if (net_ip(&cause, "netns", "del", name, NULL) == -1) {
		log_warnx("%s", cause);
		free(cause);
		*(int *)arg = -1;
	}
	return 0;
}

/*
 * Delete the veths (each takes its peer eth0 with it at once, where the
 * namespace's own teardown is asynchronous), the bridge, the namespaces.
 */
int
net_destroy(struct lab *lab)
{
	int	rc = 0;

	net_scan(lab, NET_SYS_DIR, 'v', net_del_link, &rc);
	net_scan(lab, NET_SYS_DIR, 'b', net_del_link, &rc);
	net_scan(lab, NET_NETNS_DIR, 'n', net_del_netns, &rc);
	return rc;
}
