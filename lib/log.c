/* Logging: stderr with -d, syslog otherwise. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "osm.h"

static int	 log_debugging;	/* log to stderr */
static int	 log_verbose;
static const char *log_ident = "osmosis";

void
log_init(int debugging, const char *ident)
{
	log_debugging = debugging;
	log_ident = ident;
	if (!debugging)
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
	if (log_debugging) {
		if (err != NULL)
			fprintf(stderr, "%s: %s: %s\n", log_ident, msg, err);
		else
			fprintf(stderr, "%s: %s\n", log_ident, msg);
		fflush(stderr);
	} else if (err != NULL)
		syslog(pri, "%s: %s", msg, err);
	else
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

void
fatal(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, fmt, ap, strerror(saved));
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, fmt, ap, NULL);
	va_end(ap);
	exit(1);
}
