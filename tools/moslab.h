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
	int		 (*exec)(struct lab *, int, char **);
};

extern const struct lab_cmd cmd_up, cmd_down, cmd_exec, cmd_start, cmd_stop,
	    cmd_kill, cmd_status;

/* moslab.c */
void	 lab_usage_cmd(const struct lab_cmd *);
int	 lab_fail(char *);
void	 lab_set_title(const char *);

/* moslab-lab.c */
int	 lab_init(struct lab *, const char *, char **);
void	 lab_free(struct lab *);
int	 lab_lock(struct lab *, char **);
int	 lab_load(struct lab *, char **);
int	 lab_node_arg(struct lab *, const char *, unsigned *);
char	*lab_node_path(struct lab *, unsigned, const char *);
int	 lab_pid_read(struct lab *, unsigned, const char *, pid_t *);
int	 lab_pid_write(struct lab *, unsigned, const char *, pid_t, char **);
void	 lab_pid_remove(struct lab *, unsigned, const char *);
int	 lab_leftovers(struct lab *, char **);
int	 lab_destroy(struct lab *);
int	 lab_same_file(const char *, const char *);
int	 lab_pidfd_wait(int, unsigned);

/* moslab-net.c */
int	 net_bridge_create(struct lab *, char **);
int	 net_node_create(struct lab *, unsigned, char **);
char	*net_netns_path(struct lab *, unsigned);
int	 net_find(struct lab *, char **);
int	 net_destroy(struct lab *);

/* moslab-cgroup.c */
int	 cgroup_init(char **);
int	 cgroup_create(struct lab *, unsigned, uint64_t, uint64_t, char **);
int	 cgroup_join(struct lab *, unsigned);
void	 cgroup_limits(struct lab *, unsigned, uint64_t *, uint64_t *);
int	 cgroup_kill(struct lab *, unsigned, unsigned);
int	 cgroup_find(struct lab *, char **);
int	 cgroup_destroy(struct lab *);

/* moslab-node.c */
char	*node_private_top(const char *);
int	 node_boot(struct lab *, unsigned, char **);
int	 node_pidfd(struct lab *, unsigned, pid_t *);
int	 node_enter(struct lab *, unsigned, char **);
void	 node_setenv(struct lab *, unsigned);
int	 node_kill(struct lab *, unsigned, char **);

/* moslab-mosd.c */
int	 mosd_check(struct lab *, char **);
int	 mosd_spawn(struct lab *, unsigned, char **);
int	 mosd_wait_ready(struct lab *, unsigned, char **);
int	 mosd_pidfd(struct lab *, unsigned, pid_t *);
int	 mosd_stop(struct lab *, unsigned, char **);

#endif
