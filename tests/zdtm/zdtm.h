/*
 * Helpers for the zdtm-style test programs: set up state, say READY on
 * standard output, get dumped, killed and restored by tests/lab/t-zdtm.sh,
 * then verify and print PASS or FAIL. Exit 0 only on success.
 */
#ifndef ZDTM_H
#define ZDTM_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t zdtm_go;

/*
 * Nothing inherited beyond 0-2 (a make jobserver, a runner's pipes),
 * unless the program is about those (ZDTM_KEEP_INHERITED).
 */
#ifndef ZDTM_KEEP_INHERITED
__attribute__((constructor))
static void
zdtm_close_inherited(void)
{
	close_range(3, ~0U, 0);
}
#endif

static inline void
zdtm_on_go(int sig)
{
	(void)sig;
	zdtm_go = 1;
}

/* Catch SIGUSR1, the driver's "you have been restored, check now". */
static inline void
zdtm_init(void)
{
	struct sigaction	sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = zdtm_on_go;
	sigaction(SIGUSR1, &sa, NULL);
}

static inline void
zdtm_ready(void)
{
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
}

/* Sleep in pause() until SIGUSR1: the dump catches us in a system call. */
static inline void
zdtm_wait_go(void)
{
	while (!zdtm_go)
		pause();
}

static inline void __attribute__((noreturn, format(printf, 1, 2)))
zdtm_fail(const char *fmt, ...)
{
	va_list	ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static inline void __attribute__((noreturn))
zdtm_pass(void)
{
	printf("PASS\n");
	fflush(stdout);
	exit(0);
}

#endif
