/*
 * Asleep in nanosleep (argv[1]: "nanosleep" with a rem argument, "sleep"
 * as glibc's sleep(), "abs" an absolute clock_nanosleep). The driver dumps
 * it mid-sleep and times the restored process: it must sleep only what
 * was left. Prints the requested seconds and PASS.
 */
#include <errno.h>
#include <time.h>

#include "zdtm.h"

int
main(int argc, char **argv)
{
	const char	*how = argc > 1 ? argv[1] : "nanosleep";
	int		 secs = argc > 2 ? atoi(argv[2]) : 6;
	struct timespec	 req = { secs, 0 }, rem = { 0, 0 }, t;

	zdtm_ready();
	if (strcmp(how, "sleep") == 0) {
		if (sleep(secs) != 0)
			zdtm_fail("sleep was cut short");
	} else if (strcmp(how, "abs") == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += secs;
		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t,
		    NULL) != 0)
			zdtm_fail("clock_nanosleep was cut short");
	} else if (nanosleep(&req, &rem) != 0)
		zdtm_fail("nanosleep: %s (%ld s left)", strerror(errno),
		    (long)rem.tv_sec);
	if (req.tv_sec != secs)
		zdtm_fail("nanosleep's request was changed");
	zdtm_pass();
}
