/* A heap of 1 GiB (or argv[1] MiB) filled with a pattern. */
#include <stdint.h>

#include "zdtm.h"

int
main(int argc, char **argv)
{
	size_t		 mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	size_t		 n = mib << 17, i;	/* 8-byte words */
	uint64_t	*p;

	zdtm_init();
	if ((p = malloc(n * 8)) == NULL)
		zdtm_fail("malloc %zu MiB", mib);
	for (i = 0; i < n; i++)
		p[i] = i * 0x9e3779b97f4a7c15ULL;
	zdtm_ready();
	zdtm_wait_go();
	for (i = 0; i < n; i++)
		if (p[i] != i * 0x9e3779b97f4a7c15ULL)
			zdtm_fail("word %zu differs", i);
	zdtm_pass();
}
