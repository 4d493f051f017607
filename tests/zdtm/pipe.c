/*
 * Blocked in read on a pipe (standard input). After the restore the
 * restorer's standard input is ours: the driver writes a line into it,
 * and the interrupted read must return exactly that line.
 */
#include <errno.h>

#include "zdtm.h"

int
main(void)
{
	char	buf[256];
	ssize_t	n;

	zdtm_ready();
	n = read(0, buf, sizeof buf - 1);
	if (n < 0)
		zdtm_fail("read: %s", strerror(errno));
	buf[n] = '\0';
	if (strcmp(buf, "restored line\n") != 0)
		zdtm_fail("read returned \"%s\"", buf);
	zdtm_pass();
}
