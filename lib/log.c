/*
 * Logging: stderr with -d, syslog otherwise. LOG_QUIET is for the fuzz
 * targets: hostile input must not flood syslog, so messages are formatted
 * (the formats see hostile strings) and dropped, but for a fatal error's,
 * which goes to stderr before an abort (a daemon must not exit on input:
 * the harness takes that for a crash).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "osm.h"

static int	 log_debugging;	/* 1: stderr, 0: syslog, LOG_QUIET */
static int	 log_verbose;
static const char *log_ident = "osmosis";

void
log_init(int debugging, const char *ident)
{
	log_debugging = debugging;
	log_ident = ident;
	if (debugging == 0)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_setverbose(int v)
{
	log_verbose = v;
}

static void
log_vwrite(int pri, const char *fmt, va_list ap, const char *err)
{
	char	*msg;

	if (xvasprintf(&msg, fmt, ap) == -1)
		return;
	if (log_debugging > 0 ||
	    (log_debugging == LOG_QUIET && pri == LOG_CRIT)) {
		if (err != NULL)
			fprintf(stderr, "%s: %s: %s\n", log_ident, msg, err);
		else
			fprintf(stderr, "%s: %s\n", log_ident, msg);
		fflush(stderr);
	} else if (log_debugging == 0 && err != NULL)
		syslog(pri, "%s: %s", msg, err);
	else if (log_debugging == 0)
		syslog(pri, "%s", msg);
	free(msg);
}

void
log_warn(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_WARNING, fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite(LOG_WARNING, fmt, ap, NULL);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite(LOG_INFO, fmt, ap, NULL);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	 ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_vwrite(LOG_DEBUG, fmt, ap, NULL);
	va_end(ap);
}

static void __attribute__((noreturn))
log_exit(void)
{
	if (log_debugging == LOG_QUIET)
		abort();
	exit(1);
}

void
fatal(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, fmt, ap, strerror(saved));
	va_end(ap);
	log_exit();
}

void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, fmt, ap, NULL);
	va_end(ap);
	log_exit();
}
