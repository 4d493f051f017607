/*
 * A process the dump must refuse, per argv[1]: "sysv" (SysV shared
 * memory), "child" (a child process), "timer" (a POSIX timer),
 * "threadcred" (a thread with a user id of its own: a raw setresuid). And
 * two it once refused and now records, restored with a warning: "socket"
 * (a socket beyond 0-2, /dev/null elsewhere), "lock" (a file lock, argv[2]
 * the directory, not taken again elsewhere).
 */
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>

#include "zdtm.h"

static volatile int	changed;

/* Not glibc's setresuid, which would change every thread. */
static void *
own_uid(void *arg)
{
	if (syscall(SYS_setresuid, 65534, 65534, 65534) == -1)
		zdtm_fail("setresuid");
	changed = 1;
	for (;;)
		pause();
	return arg;
}

int
main(int argc, char **argv)
{
	const char	*what = argc > 1 ? argv[1] : "";
	char		 path[PATH_MAX];
	timer_t		 tm;
	pthread_t	 t;
	int		 id, fd;

	if (strcmp(what, "sysv") == 0) {
		if ((id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600)) == -1 ||
		    shmat(id, NULL, 0) == (void *)-1)
			zdtm_fail("shm");
		shmctl(id, IPC_RMID, NULL);	/* gone once we are */
	} else if (strcmp(what, "child") == 0) {
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
	} else if (strcmp(what, "socket") == 0) {
		if (socket(AF_UNIX, SOCK_STREAM, 0) == -1)
			zdtm_fail("socket");
	} else if (strcmp(what, "lock") == 0 && argc > 2) {
		snprintf(path, sizeof path, "%s/zdtm-lock", argv[2]);
		if ((fd = open(path, O_RDWR | O_CREAT, 0600)) == -1 ||
		    flock(fd, LOCK_EX) == -1)
			zdtm_fail("lock");
	} else if (strcmp(what, "timer") == 0) {
		if (timer_create(CLOCK_MONOTONIC, NULL, &tm) == -1)
			zdtm_fail("timer_create");
	} else if (strcmp(what, "threadcred") == 0) {
		pthread_create(&t, NULL, own_uid, NULL);
		while (!changed)
			usleep(1000);
	} else
		zdtm_fail("usage: refuse sysv|child|socket|lock DIR|timer|"
		    "threadcred");
	zdtm_ready();
	for (;;)
		pause();
}
