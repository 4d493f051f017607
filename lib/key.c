/*
 * The cluster key: a text file holding 32 to 128 hex digits (16 to 64
 * bytes), readable by its owner only.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "osm.h"

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
key_load(const char *path, struct cluster_key *key, char **cause)
{
	struct stat	 st;
	char		 buf[2 * KEY_MAX + 8];
	size_t		 len, i;
	int		 fd = -1, hi, lo;
	ssize_t		 n;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (st.st_mode & 077) {
		xasprintf(cause, "%s: key file is accessible by others "
		    "(mode %04o); it must be mode 0600", path,
		    (unsigned)st.st_mode & 07777);
		goto fail;
	}
	n = read(fd, buf, sizeof buf - 1);
	if (n < 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	if (buf[len] != '\0' && buf[len + strspn(buf + len, "\r\n")] != '\0') {
		xasprintf(cause, "%s: expected one line of hex digits", path);
		goto fail;
	}
	if (len % 2 != 0 || len < 2 * KEY_MIN || len > 2 * KEY_MAX) {
		xasprintf(cause, "%s: expected %d to %d hex digits, found %zu "
		    "characters", path, 2 * KEY_MIN, 2 * KEY_MAX, len);
		goto fail;
	}
	for (i = 0; i < len / 2; i++) {
		hi = hexval((unsigned char)buf[2 * i]);
		lo = hexval((unsigned char)buf[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			xasprintf(cause, "%s: character %zu is not a hex digit",
			    path, 2 * i + (hi < 0 ? 1 : 2));
			goto fail;
		}
		key->bytes[i] = hi << 4 | lo;
	}
	key->len = len / 2;
	close(fd);
	explicit_bzero(buf, sizeof buf);
	return 0;

fail:
	if (fd != -1)
		close(fd);
	explicit_bzero(buf, sizeof buf);
	return -1;
}

/* Write a fresh random 32-byte key; refuses to overwrite an existing file. */
int
key_generate(const char *path, char **cause)
{
	uint8_t	 raw[32];
	char	 hex[2 * sizeof raw + 2];
	size_t	 i;
	int	 fd;

	if (getrandom(raw, sizeof raw, 0) != sizeof raw) {
		xasprintf(cause, "getrandom: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof raw; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	hex[2 * sizeof raw] = '\n';
	hex[2 * sizeof raw + 1] = '\0';
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (write_all(fd, hex, strlen(hex)) == -1 || close(fd) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	explicit_bzero(raw, sizeof raw);
	explicit_bzero(hex, sizeof hex);
	return 0;
}
