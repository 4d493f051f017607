/*
 * For the programs the loopback harness runs (tests/remote/): checks that
 * print what failed, and the verdict line check_forward looks for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rt_failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		int rt_errno = errno;					\
		rt_failures++;						\
		printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		printf(__VA_ARGS__);					\
		printf(" (errno %s)\n", strerror(rt_errno));		\
	}								\
} while (0)

/* The loopback's home is the harness: identity calls answer for it. */
static inline long
rt_home_pid(void)
{
	const char	*s = getenv("LOOPBACK_HOME_PID");

	return s != NULL ? atol(s) : -1;
}

static inline int
rt_verdict(const char *name)
{
	printf("%s %s\n", rt_failures ? "FAIL" : "PASS", name);
	fflush(stdout);
	return rt_failures != 0;
}
