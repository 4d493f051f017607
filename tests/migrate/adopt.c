/*
 * adopt IMAGE: restore into a process the caller already controls, as
 * mosd will: start /bin/sleep, stop it under our own PTRACE_SEIZE, hand it
 * to mig_adopt() and restore IMAGE into it. Prints "restored IMAGE as
 * process PID:" on standard error like moscr restore -v, then waits for
 * the process and exits with its status.
 */
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/migrate.h"

int
main(int argc, char **argv)
{
	struct mig_task	*t;
	char		*cause = NULL;
	pid_t		 pid;
	int		 fd, status;

	if (argc != 2) {
		fprintf(stderr, "usage: adopt IMAGE\n");
		return 2;
	}
	if ((fd = open(argv[1], O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "adopt: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if ((pid = fork()) == 0) {
		execl("/bin/sleep", "sleep", "1000", (char *)NULL);
		_exit(127);
	}
	usleep(100000);		/* let it get to its sleep */
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) == -1 ||
	    ptrace(PTRACE_INTERRUPT, pid, 0, 0) == -1 ||
	    waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status)) {
		fprintf(stderr, "adopt: could not stop %d\n", pid);
		kill(pid, SIGKILL);
		return 1;
	}
	if ((t = mig_adopt(pid, &cause)) == NULL ||
	    mig_restore(t, fd, NULL, NULL, &cause) == -1 ||
	    mig_release(t, &cause) == -1) {
		fprintf(stderr, "adopt: %s\n", cause);
		kill(pid, SIGKILL);
		return 1;
	}
	fprintf(stderr, "adopt: restored %s as process %d: done\n", argv[1],
	    pid);
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
