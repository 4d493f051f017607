/*
 * Descriptors no path opens again. The driver starts it holding a pipe
 * as descriptor 7 and a dup of it as 8 (as a shell under a CI runner
 * holds its runner's pipes); the dump records them instead of refusing.
 * After the restore (SIGUSR1):
 *	fds null	7 and 8 are /dev/null, one description still
 *	fds file PATH	7 and 8 are PATH (moscr restore --fd 7=PATH), one
 *			description: what 7 reads moves 8's offset too
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/kcmp.h>

#include <errno.h>
#include <limits.h>

#define ZDTM_KEEP_INHERITED
#include "zdtm.h"

static void
link_of(int fd, char *buf, size_t size)
{
	char	path[64];
	ssize_t	n;

	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if ((n = readlink(path, buf, size - 1)) < 0)
		zdtm_fail("descriptor %d: %s", fd, strerror(errno));
	buf[n] = '\0';
}

static int
shared(int a, int b)
{
	pid_t	self = getpid();

	return syscall(SYS_kcmp, self, self, KCMP_FILE, a, b) == 0;
}

int
main(int argc, char **argv)
{
	char	l7[PATH_MAX], l8[PATH_MAX], buf[8];

	if (argc < 2)
		zdtm_fail("usage: fds null | fds file PATH");
	link_of(7, l7, sizeof l7);
	link_of(8, l8, sizeof l8);
	if (strncmp(l7, "pipe:", 5) != 0 || !shared(7, 8))
		zdtm_fail("started without the pipe on 7 and 8: %s %s", l7, l8);
	zdtm_init();
	zdtm_ready();
	zdtm_wait_go();

	link_of(7, l7, sizeof l7);
	link_of(8, l8, sizeof l8);
	if (!shared(7, 8))
		zdtm_fail("7 (%s) and 8 (%s) are no longer one", l7, l8);
	if (strcmp(argv[1], "null") == 0) {
		if (strcmp(l7, "/dev/null") != 0)
			zdtm_fail("7 is %s, not /dev/null", l7);
		if (read(7, buf, sizeof buf) != 0)
			zdtm_fail("7 reads something");
	} else if (strcmp(argv[1], "file") == 0 && argc > 2) {
		if (strcmp(l7, argv[2]) != 0)
			zdtm_fail("7 is %s, not %s", l7, argv[2]);
		if (read(7, buf, 4) != 4 || memcmp(buf, "data", 4) != 0)
			zdtm_fail("7 does not read the file");
		if (lseek(8, 0, SEEK_CUR) != 4)
			zdtm_fail("8 did not move with 7");
	} else
		zdtm_fail("unknown mode %s", argv[1]);
	zdtm_pass();
}
