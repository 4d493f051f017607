/*
 * moslab — a lab cluster on one machine: every node is a set of namespaces
 * (net, mount, PID, UTS, IPC) plus a cgroup, with mosd running inside.
 */
#ifndef MOSLAB_H
#define MOSLAB_H

#include <sys/types.h>

#include <stdint.h>

#define LAB_NAME_MAX	6		/* keeps "NAME-v254" within IFNAMSIZ */
#define LAB_NODES_MAX	254		/* node K is 10.77.0.K/24 */
#define LAB_SUBNET	"10.77.0."
#define LAB_PREFIXLEN	24
#define LAB_BASE_DIR	"/var/lib/osmosis-lab"
#define LAB_LOCK	"/run/osmosis-lab.lock"
#define LAB_CPU_PERIOD	100000		/* CFS period, µs */
#define LAB_WAIT_MS	5000		/* for mosd, the cgroups, a process */
#define LAB_READY_MS	30000		/* for the nodes to see each other */

struct lab {
	char		 name[LAB_NAME_MAX + 1];
	char		*dir;		/* this lab's state directory */
	char		*bindir;	/* the tree's bin/, moslab's own */
	char		*conf;		/* dir/cluster.conf */
	char		*mosd;		/* the mosd binary */
	char		*sockpath;	/* mosd's control socket in a node */
	struct cluster_conf *cc;	/* the lab's map, once up */
	unsigned	 nnodes;	/* 0: no lab is up */
	int		 lockfd;
};

struct lab_cmd {
	const char	*name;
	const char	*args;
	const char	*help;
	int		 argc_min;	/* arguments after the command name */
	int		 argc_max;	/* -1: any number */
	int		 flags;
#define CMD_LOCK	0x1		/* changes the lab: take the lab lock */
#define CMD_LAB		0x2		/* needs a lab that is up */
	int		 (*exec)(struct lab *lab, int argc, char **argv);
};

extern const struct lab_cmd cmd_up, cmd_down, cmd_exec, cmd_start, cmd_stop,
	    cmd_kill, cmd_status;

/* moslab.c */
void	 lab_usage_cmd(const struct lab_cmd *cmd);
int	 lab_fail(char *cause);
void	 lab_set_title(const char *title);

/* moslab-lab.c */
int	 lab_init(struct lab *lab, const char *name, char **cause);
void	 lab_free(struct lab *lab);
int	 lab_lock(struct lab *lab, char **cause);
int	 lab_load(struct lab *lab, char **cause);
int	 lab_node_arg(struct lab *lab, const char *s, unsigned *k);
char	*lab_node_path(struct lab *lab, unsigned k, const char *file);
int	 lab_pid_read(struct lab *lab, unsigned k, const char *file,
	    pid_t *pid);
int	 lab_pid_write(struct lab *lab, unsigned k, const char *file, pid_t pid,
	    char **cause);
void	 lab_pid_remove(struct lab *lab, unsigned k, const char *file);
int	 lab_leftovers(struct lab *lab, int alive, char **cause);
int	 lab_destroy(struct lab *lab);
int	 lab_same_file(const char *a, const char *b);
int	 lab_pidfd_wait(int fd, unsigned ms);

/* moslab-net.c */
int	 net_bridge_create(struct lab *lab, char **cause);
int	 net_node_create(struct lab *lab, unsigned k, char **cause);
char	*net_netns_path(struct lab *lab, unsigned k);
int	 net_find(struct lab *lab, char **what);
int	 net_destroy(struct lab *lab);

/* moslab-cgroup.c */
int	 cgroup_init(char **cause);
int	 cgroup_create(struct lab *lab, unsigned k, uint64_t quota,
	    uint64_t mem_mb, char **cause);
int	 cgroup_join(struct lab *lab, unsigned k);
void	 cgroup_limits(struct lab *lab, unsigned k, uint64_t *cpus,
	    uint64_t *mem_mb);
int	 cgroup_kill(struct lab *lab, unsigned k, unsigned ms);
int	 cgroup_find(struct lab *lab, char **what);
int	 cgroup_destroy(struct lab *lab);

/* moslab-node.c */
char	*node_private_top(const char *path);
int	 node_boot(struct lab *lab, unsigned k, char **cause);
int	 node_pidfd(struct lab *lab, unsigned k, pid_t *pidp);
int	 node_any_alive(struct lab *lab);
int	 node_enter(struct lab *lab, unsigned k, char **cause);
void	 node_setenv(struct lab *lab, unsigned k);
int	 node_kill(struct lab *lab, unsigned k, char **cause);

/* moslab-mosd.c */
int	 mosd_check(struct lab *lab, char **cause);
int	 mosd_spawn(struct lab *lab, unsigned k, char **cause);
int	 mosd_wait_ready(struct lab *lab, unsigned k, char **cause);
int	 mosd_pidfd(struct lab *lab, unsigned k, pid_t *pidp);
int	 mosd_stop(struct lab *lab, unsigned k, char **cause);
int	 mosd_wait_cluster(struct lab *lab, unsigned ms, char **cause);

/* moslab-ready.c */
int	 ready_node(struct lab *lab, unsigned k, const unsigned *want,
	    size_t n, char **cause);

#endif
