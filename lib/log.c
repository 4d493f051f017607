/*
 * Logging: stderr with -d, syslog otherwise. LOG_QUIET is for the fuzz
 * targets: hostile input must not flood syslog, so messages are formatted
 * (the formats see hostile strings) and dropped, but for a fatal error's,
 * which goes to stderr before an abort (a daemon must not exit on input:
 * the harness takes that for a crash).
 *
 * A line that a peer or a client can cause goes through log_limited: a
 * few a window for each key (a node, a uid), then the rest are counted,
 * and the count is said once the window ends (log_limit_flush), so that
 * no one can fill the disk nor hide an event in the flood.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "osm.h"

static int	 log_debugging;	/* 1: log_fd, 0: syslog, LOG_QUIET */
static int	 log_fd = 2;	/* stderr, unless log_setfd says */
static int	 log_verbose;
static const char *log_ident = "osmosis";
static struct log_limit *log_limits;	/* every limit used so far */

void
log_init(int debugging, const char *ident)
{
	log_debugging = debugging;
	log_ident = ident;
	if (debugging == 0)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/* With debugging, lines go to fd rather than stderr (a file of its own). */
void
log_setfd(int fd)
{
	log_fd = fd;
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
	int	 fd;

	if (xvasprintf(&msg, fmt, ap) == -1)
		return;
	if (log_debugging > 0 ||
	    (log_debugging == LOG_QUIET && pri == LOG_CRIT)) {
		fd = log_debugging > 0 ? log_fd : 2;
		if (err != NULL)
			dprintf(fd, "%s: %s: %s\n", log_ident, msg, err);
		else
			dprintf(fd, "%s: %s\n", log_ident, msg);
	} else if (log_debugging == 0 && err != NULL)
		syslog(pri, "%s: %s", msg, err);
	else if (log_debugging == 0)
		syslog(pri, "%s", msg);
	free(msg);
}

static void
log_write(int pri, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite(pri, fmt, ap, NULL);
	va_end(ap);
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

/* The monotonic clock, as util.c's now_ms (which logs: no circle). */
static uint64_t
log_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* n with thousands separated: 124,976. */
static void
log_count(char *buf, size_t size, uint64_t n)
{
	char	digits[32];
	size_t	len, i, o = 0;

	len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
	for (i = 0; i < len && o + 2 < size; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

static uint64_t
log_limit_window(const struct log_limit *l)
{
	return l->window_ms != 0 ? l->window_ms : LOG_LIMIT_WINDOW_MS;
}

/* Say what a slot held back, if anything, and free it. */
static void
log_limit_end(struct log_limit_slot *s, uint64_t now)
{
	char	n[32];

	if (s->held > 0) {
		log_count(n, sizeof n, s->held);
		log_write(s->pri, "%s ... and %s more in the last %llu s",
		    s->last, n, (unsigned long long)
		    ((now - s->start_ms + 999) / 1000));
	}
	s->used = 0;
}

/*
 * The slot of key: its own, a free one, or once every slot is taken by a
 * window still open, the one that all other keys share.
 */
static struct log_limit_slot *
log_limit_slot(struct log_limit *l, uint64_t key, uint64_t now)
{
	struct log_limit_slot	*s, *free_slot = NULL;
	size_t			 i;

	for (i = 0; i < LOG_LIMIT_KEYS; i++) {
		s = &l->slot[i];
		if (s->used && now - s->start_ms >= log_limit_window(l))
			log_limit_end(s, now);
		if (s->used && s->key == key)
			return s;
		if (!s->used && free_slot == NULL && (i < LOG_LIMIT_KEYS - 1 ||
		    key == LOG_LIMIT_OTHERS))
			free_slot = s;
	}
	if (free_slot == NULL) {
		/* The last slot is the others'. */
		key = LOG_LIMIT_OTHERS;
		s = &l->slot[LOG_LIMIT_KEYS - 1];
		if (s->used)
			return s;
		free_slot = s;
	}
	memset(free_slot, 0, sizeof *free_slot);
	free_slot->used = 1;
	free_slot->key = key;
	free_slot->start_ms = now;
	return free_slot;
}

static void
log_vlimited(struct log_limit *l, uint64_t key, int pri, const char *fmt,
    va_list ap)
{
	struct log_limit_slot	*s;
	uint64_t		 now = log_now_ms();
	char			*msg;

	if (!l->listed) {
		l->listed = 1;
		l->next = log_limits;
		log_limits = l;
	}
	s = log_limit_slot(l, key, now);
	if (xvasprintf(&msg, fmt, ap) == -1)
		return;
	s->pri = pri;
	if (s->logged < LOG_LIMIT_BURST) {
		s->logged++;
		log_write(pri, "%s", msg);
	} else {
		s->held++;
		snprintf(s->last, sizeof s->last, "%s", msg);
	}
	free(msg);
}

void
log_limited_warnx(struct log_limit *l, uint64_t key, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vlimited(l, key, LOG_WARNING, fmt, ap);
	va_end(ap);
}

void
log_limited_info(struct log_limit *l, uint64_t key, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vlimited(l, key, LOG_INFO, fmt, ap);
	va_end(ap);
}

/* Say what every window that has ended held back (a daemon's timer). */
void
log_limit_flush(void)
{
	struct log_limit	*l;
	uint64_t		 now = log_now_ms();
	size_t			 i;

	for (l = log_limits; l != NULL; l = l->next)
		for (i = 0; i < LOG_LIMIT_KEYS; i++)
			if (l->slot[i].used &&
			    now - l->slot[i].start_ms >= log_limit_window(l))
				log_limit_end(&l->slot[i], now);
}
