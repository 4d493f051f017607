/*
 * moslab exec K CMD [ARG...]: run a command inside node K — its namespaces
 * and its cgroups — with the tree's bin/ first on PATH and OSM_NODE=K.
 * stdin, stdout and stderr are the caller's; the exit status is the
 * command's, and a command killed by a signal kills moslab the same way.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

/*
 * Wait for the command and leave as it did (proc_wait_as: like system(3),
 * the terminal's INT and QUIT reach the command, what is sent to us goes
 * to it). By _exit: this process's /proc is the node's now while its PID
 * namespace is not, and LeakSanitizer's scan at exit (in ASan builds)
 * hangs on that.
 */
static void __attribute__((noreturn))
exec_wait(pid_t pid)
{
	int	rc;

	if ((rc = proc_wait_as(pid)) == -1) {
		fprintf(stderr, "moslab: waitpid: %s\n", strerror(errno));
		_exit(1);
	}
	_exit(rc);
}

static int
cmd_exec_exec(struct lab *lab, int argc, char **argv)
{
	char		*cause;
	unsigned	 k;
	pid_t		 pid;
	int		 rc;

	if (argc >= 3 && strcmp(argv[2], "--") == 0) {
		argv[2] = argv[1];
		argc--;
		argv++;
	}
	if (argc < 3) {
		lab_usage_cmd(&cmd_exec);
		return 2;
	}
	if ((rc = lab_node_arg(lab, argv[1], &k)) != 0)
		return rc;
	fflush(NULL);
	if (node_enter(lab, k, &cause) == -1)
		return lab_fail(cause);
	node_setenv(lab, k);

	if ((pid = fork()) == -1) {
		/* The namespace's init is gone: nothing can be born there. */
		fprintf(stderr, "moslab: node %u: fork: %s\n", k,
		    strerror(errno));
		_exit(1);
	}
	if (pid == 0) {
		if (cgroup_join(lab, k) == -1) {
			fprintf(stderr, "moslab: node %u: join its cgroup: "
			    "%s\n", k, strerror(errno));
			_exit(126);
		}
		execvp(argv[2], argv + 2);
		fprintf(stderr, "moslab: %s: %s\n", argv[2], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	exec_wait(pid);
}

const struct lab_cmd cmd_exec = {
	.name = "exec",
	.args = "K CMD [ARG...]",
	.help = "run CMD inside node K, with the tree's bin/ first on PATH",
	.argc_min = 2,
	.argc_max = -1,
	.flags = CMD_LAB,
	.exec = cmd_exec_exec,
};
