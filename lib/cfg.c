/*
 * The files osmosis reads (cluster.conf, policy.conf): a directive per
 * line, its words separated by blanks, '#' to the end of the line a
 * comment. Errors name the file and the line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osm.h"

int
cfg_open(struct cfg_file *in, const char *path, char **cause)
{
	return cfg_open_fd(in, path, -1, cause);
}

/*
 * The file open on fd (which this takes, also on failure), named path in
 * messages; path itself if fd is -1. mosd's network process reads its
 * files on descriptors its privileged parent opened (mosd/parent.c).
 */
int
cfg_open_fd(struct cfg_file *in, const char *path, int fd, char **cause)
{
	memset(in, 0, sizeof *in);
	in->path = path;
	if (fd == -1)
		in->f = fopen(path, "re");
	else if ((in->f = fdopen(fd, "r")) == NULL)
		close(fd);
	if (in->f == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

void
cfg_close(struct cfg_file *in)
{
	free(in->buf);
	if (in->f != NULL)
		fclose(in->f);
	memset(in, 0, sizeof *in);
}

/* *cause = "PATH:LINE: message"; returns -1. */
int
cfg_verror(const struct cfg_file *in, char **cause, const char *fmt,
    va_list ap)
{
	char	*msg;

	xvasprintf(&msg, fmt, ap);
	xasprintf(cause, "%s:%u: %s", in->path, in->line, msg);
	free(msg);
	return -1;
}

/*
 * The words of the next line that has any, at most max of them, in w
 * (valid until the next call): their number, 0 at the end of the file, or
 * -1 with *cause.
 */
int
cfg_words(struct cfg_file *in, char **w, int max, char **cause)
{
	ssize_t	 n;
	char	*s;
	int	 nw;

	while ((n = getline(&in->buf, &in->size, in->f)) != -1) {
		in->line++;
		if (memchr(in->buf, '\0', n) != NULL)
			return cfg_error(in, cause, "line contains a NUL byte");
		if ((s = strchr(in->buf, '#')) != NULL)
			*s = '\0';
		nw = 0;
		for (s = strtok(in->buf, " \t\r\n"); s != NULL;
		    s = strtok(NULL, " \t\r\n")) {
			if (nw == max)
				return cfg_error(in, cause, "too many words");
			w[nw++] = s;
		}
		if (nw > 0)
			return nw;
	}
	if (ferror(in->f)) {
		xasprintf(cause, "%s: %s", in->path, strerror(errno));
		return -1;
	}
	return 0;
}

int
cfg_error(const struct cfg_file *in, char **cause, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	cfg_verror(in, cause, fmt, ap);
	va_end(ap);
	return -1;
}
