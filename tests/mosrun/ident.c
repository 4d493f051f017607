/*
 * ident: the process's identity away stays what it is at home
 * (tests/lab/t-fast.sh). Run as root under mosrun -L -r 2: it compares
 * what getpid, getppid, the uid and gid calls, getgroups, getpgrp, getpgid
 * and getsid say (answered where it runs: through syscall(), which its
 * guest agent answers, and libc's getpid, getppid, getuid, geteuid,
 * getgid and getegid, which the stub in the process answers) with
 * /proc/self/status, which is read at home, the truth; then changes its
 * groups, gids and uids, and
 * its session, and compares again; then says "ready" on stdout and waits
 * for its parent to die, and compares once more. Prints "ok N" (N calls
 * about its identity, and the nanoseconds each took) or what differed,
 * and exits 1.
 */
#include <sys/syscall.h>
#include <sys/types.h>

#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOOPS	1000

static long calls;

static long
sys(long nr, long a, long b, long c)
{
	calls++;
	return syscall(nr, a, b, c);
}

/* Field key of /proc/self/status: its numbers, up to 8. */
static int
status(const char *key, long *v)
{
	char	 line[4096], *p, *end;
	FILE	*f;
	int	 n = 0;

	if ((f = fopen("/proc/self/status", "r")) == NULL) {
		perror("/proc/self/status");
		exit(1);
	}
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, key, strlen(key)) != 0 ||
		    line[strlen(key)] != ':')
			continue;
		for (p = line + strlen(key) + 1; n < 8; p = end) {
			v[n] = strtol(p, &end, 10);
			if (end == p)
				break;
			n++;
		}
		break;
	}
	fclose(f);
	return n;
}

/* libc's own: the stub in the process answers them */
static long
lib(long v)
{
	calls++;
	return v;
}

static void
want(const char *what, long got, long truth)
{
	if (got != truth) {
		printf("%s: %ld, at home %ld\n", what, got, truth);
		exit(1);
	}
}

static void
check(const char *phase)
{
	long		 v[8], g[8], u[3];
	unsigned int	 r[3];
	gid_t		 groups[64];
	int		 n, i, k;

	for (k = 0; k < LOOPS / 10; k++) {
		status("Pid", v);
		want("getpid", sys(SYS_getpid, 0, 0, 0), v[0]);
		want("gettid", sys(SYS_gettid, 0, 0, 0), v[0]);
		want("getpid()", lib(getpid()), v[0]);
		status("PPid", v);
		want("getppid", sys(SYS_getppid, 0, 0, 0), v[0]);
		want("getppid()", lib(getppid()), v[0]);
		status("Uid", v);
		want("getuid", sys(SYS_getuid, 0, 0, 0), v[0]);
		want("geteuid", sys(SYS_geteuid, 0, 0, 0), v[1]);
		want("getuid()", lib(getuid()), v[0]);
		want("geteuid()", lib(geteuid()), v[1]);
		want("getresuid", sys(SYS_getresuid, (long)&r[0], (long)&r[1],
		    (long)&r[2]), 0);
		for (i = 0; i < 3; i++)
			u[i] = r[i];
		want("getresuid real", u[0], v[0]);
		want("getresuid effective", u[1], v[1]);
		want("getresuid saved", u[2], v[2]);
		status("Gid", v);
		want("getgid", sys(SYS_getgid, 0, 0, 0), v[0]);
		want("getegid", sys(SYS_getegid, 0, 0, 0), v[1]);
		want("getgid()", lib(getgid()), v[0]);
		want("getegid()", lib(getegid()), v[1]);
		want("getresgid", sys(SYS_getresgid, (long)&r[0], (long)&r[1],
		    (long)&r[2]), 0);
		want("getresgid saved", r[2], v[2]);
		n = status("Groups", g);
		want("getgroups(0)", sys(SYS_getgroups, 0, 0, 0), n);
		want("getgroups", sys(SYS_getgroups, 64, (long)groups, 0), n);
		for (i = 0; i < n; i++)
			want("a group", groups[i], g[i]);
		status("NSpgid", v);
		want("getpgrp", sys(SYS_getpgrp, 0, 0, 0), v[0]);
		want("getpgid(0)", sys(SYS_getpgid, 0, 0, 0), v[0]);
		status("NSsid", v);
		want("getsid(0)", sys(SYS_getsid, 0, 0, 0), v[0]);
	}
	fprintf(stderr, "ident: %s right\n", phase);
}

int
main(void)
{
	struct timespec	 a, b, c;
	gid_t		 groups[] = { 4321, 8765 };
	long		 ppid, v[8];
	int		 i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	check("at start");
	if (setgroups(2, groups) != 0 || setresgid(100, 200, 300) != 0 ||
	    setresuid(1000, 0, 1002) != 0) {
		perror("set*id");
		return 1;
	}
	check("after setgroups, setresgid, setresuid");
	if (setresuid(-1, 1001, -1) != 0 || setsid() == -1) {
		perror("setresuid, setsid");
		return 1;
	}
	check("after setresuid, setsid");

	ppid = sys(SYS_getppid, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < LOOPS; i++)
		sys(SYS_getpid, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	for (i = 0; i < LOOPS; i++)
		lib(getpid());
	clock_gettime(CLOCK_MONOTONIC, &c);
	printf("ready\n");
	/* libc's: the stub's answer must follow the home's news too */
	for (i = 0; i < 4000 && lib(getppid()) == ppid; i++)
		usleep(5000);
	status("PPid", v);
	if (v[0] == ppid) {
		printf("its parent %ld did not die\n", ppid);
		return 1;
	}
	check("after its parent died");
	printf("ok %ld calls, getpid %lld ns, getpid() %lld ns\n", calls,
	    (long long)((b.tv_sec - a.tv_sec) * 1000000000LL +
	    (b.tv_nsec - a.tv_nsec)) / LOOPS,
	    (long long)((c.tv_sec - b.tv_sec) * 1000000000LL +
	    (c.tv_nsec - b.tv_nsec)) / LOOPS);
	return 0;
}
