/* Allocation that never returns NULL: running out of memory aborts. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osm.h"

static void __attribute__((noreturn))
xmalloc_fail(size_t size)
{
	fprintf(stderr, "out of memory allocating %zu bytes\n", size);
	abort();
}

void *
xmalloc(size_t size)
{
	void	*p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		xmalloc_fail(size);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		xmalloc_fail(n * size);
	return p;
}

void *
xreallocarray(void *old, size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if (size > SIZE_MAX / n)
		xmalloc_fail(SIZE_MAX);
	if ((p = realloc(old, n * size)) == NULL)
		xmalloc_fail(n * size);
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char	*p;
	size_t	 len = strnlen(s, n);

	p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return n;
}

int
xvasprintf(char **ret, const char *fmt, va_list ap)
{
	int	 n;

	if ((n = vasprintf(ret, fmt, ap)) == -1)
		xmalloc_fail(strlen(fmt));
	return n;
}
