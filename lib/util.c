/*
 * Small helpers: clocks, parsing numbers, signals and node lists, whole-file
 * and whole-buffer I/O.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "osm.h"

uint64_t
now_ms(void)
{
	return now_us() / 1000;
}

uint64_t
now_us(void)
{
	struct timespec	ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		fatal("clock_gettime");
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Parse a decimal unsigned integer in [min, max]; the whole string. */
int
parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char			*end;
	unsigned long long	 v;

	if (*s == '\0' || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* "250ms", "1s", "1.5s", "2m"; a bare number is seconds. */
int
parse_duration_ms(const char *s, uint64_t *out)
{
	char	*end;
	double	 v, mult;

	if (*s == '\0' || !(isdigit((unsigned char)*s) || *s == '.'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || v < 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (strcmp(end, "s") == 0 || *end == '\0')
		mult = 1000;
	else if (strcmp(end, "m") == 0)
		mult = 60000;
	else
		return -1;
	v *= mult;
	if (v > 1e12)
		return -1;
	*out = (uint64_t)(v + 0.5);
	return 0;
}

/* "512", "512M", "2G": a size in MiB. */
int
parse_size_mb(const char *s, uint64_t *out)
{
	char		*end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end == 'G' || *end == 'g') {
		if (v > (1ULL << 40))
			return -1;
		v *= 1024;
		end++;
	} else if (*end == 'M' || *end == 'm')
		end++;
	if (*end != '\0' || v == 0 || v > (1ULL << 40))
		return -1;
	*out = v;
	return 0;
}

/* A signal by name (USR1, SIGUSR1) or number, 1 to NSIG - 1. */
int
parse_signal(const char *s, int *out)
{
	const char	*name;
	uint64_t	 v;
	int		 sig;

	if (parse_uint(s, 1, NSIG - 1, &v) == 0) {
		*out = v;
		return 0;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (sig = 1; sig < NSIG; sig++) {
		if ((name = sigabbrev_np(sig)) != NULL &&
		    strcasecmp(name, s) == 0) {
			*out = sig;
			return 0;
		}
	}
	return -1;
}

/*
 * A list of node numbers, "1,3,5-7", each 1 to OSM_MAX_NODES: a malloc'd
 * array in *out, its length in *n.
 */
int
parse_nodes(const char *s, uint32_t **out, size_t *n)
{
	char		*copy, *item, *dash, *next;
	uint64_t	 lo, hi, v;
	uint32_t	*nodes = NULL;
	size_t		 count = 0;

	copy = xstrdup(s);
	for (item = copy; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if ((dash = strchr(item, '-')) != NULL)
			*dash++ = '\0';
		if (parse_uint(item, 1, OSM_MAX_NODES, &lo) == -1 ||
		    parse_uint(dash != NULL ? dash : item, lo, OSM_MAX_NODES,
		    &hi) == -1 || count + (hi - lo) >= OSM_MAX_NODES)
			goto fail;
		for (v = lo; v <= hi; v++) {
			nodes = xreallocarray(nodes, count + 1, sizeof *nodes);
			nodes[count++] = v;
		}
	}
	free(copy);
	*out = nodes;
	*n = count;
	return 0;
fail:
	free(copy);
	free(nodes);
	return -1;
}

/* Read a small file into buf, NUL-terminated, trailing newline removed. */
int
read_file_str(const char *path, char *buf, size_t size)
{
	int	 fd;
	ssize_t	 n;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

int
read_file_u64(const char *path, uint64_t *out)
{
	char	 buf[64], *end;

	if (read_file_str(path, buf, sizeof buf) == -1)
		return -1;
	errno = 0;
	*out = strtoull(buf, &end, 10);
	if (errno != 0 || end == buf)
		return -1;
	return 0;
}

int
write_file_str(const char *path, const char *s)
{
	int	 fd, rc;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	rc = write_all(fd, s, strlen(s));
	if (close(fd) == -1)
		rc = -1;
	return rc;
}

int
mkdir_p(const char *path, mode_t mode)
{
	char	 tmp[PATH_MAX], *p;

	if (strlen(path) >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(tmp, path);
	for (p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

int
write_all(int fd, const void *buf, size_t len)
{
	const uint8_t	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Read exactly len bytes; returns 0, or -1 with errno (0 at end of file). */
int
read_all(int fd, void *buf, size_t len)
{
	uint8_t	*p = buf;
	ssize_t	 n;

	while (len > 0) {
		n = read(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = 0;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Sleep for ms milliseconds, whatever signals come meanwhile. */
void
sleep_ms(unsigned ms)
{
	struct timespec	ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}
