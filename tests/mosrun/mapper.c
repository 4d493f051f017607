/*
 * A test program for file mappings (tests/lab/t-stayaway.sh). It maps
 * DATA privately, writable, and changes some of its pages (so they are
 * its own from then on), maps SHARED shared and read-only, says "mapped"
 * on its standard output, then every tick for N ticks sums the private
 * mapping and looks at the first bytes of the shared one, writing into
 * OUT (kept open) each time the shared bytes it sees change, and at the
 * end the sum. A run recovered from a checkpoint rewrites OUT from the
 * checkpoint's offset, so OUT ends as after a run that never stopped.
 *
 *	mapper DATA SHARED OUT N
 *	mapper -w FILE		maps FILE shared and writable, then waits
 *	mapper -l BIG LATE GO	maps BIG privately, says "ready"; once GO.1
 *				exists maps LATE privately, read-only, says
 *				"mapped"; once GO.2 exists prints the sums of
 *				both, taken 20 times over
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEEN	16	/* bytes of the shared file watched */

static void *
map(const char *path, int prot, int flags, size_t *len)
{
	struct stat	 st;
	void		*p;
	int		 fd;

	if ((fd = open(path, (prot & PROT_WRITE) && (flags & MAP_SHARED) ?
	    O_RDWR : O_RDONLY)) == -1 || fstat(fd, &st) == -1) {
		perror(path);
		exit(1);
	}
	*len = st.st_size;
	if ((p = mmap(NULL, *len, prot, flags, fd, 0)) == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	close(fd);
	return p;
}

static void
wait_for(const char *go, int k)
{
	struct timespec	 tick = { 0, 5 * 1000000L };
	char		 path[4096];

	snprintf(path, sizeof path, "%s.%d", go, k);
	while (access(path, F_OK) == -1)
		nanosleep(&tick, NULL);
}

static uint64_t
sum_of(const uint8_t *p, size_t len)
{
	uint64_t	sum = 0;
	size_t		i;

	for (i = 0; i < len; i++)
		sum = sum * 31 + p[i];
	return sum;
}

/* mapper -l: a file mapped late, while the process may be moving. */
static int
late(const char *big, const char *path, const char *go)
{
	uint8_t		*b, *l;
	uint64_t	 sb = 0, sl = 0;
	size_t		 blen, llen;
	int		 k;

	b = map(big, PROT_READ, MAP_PRIVATE, &blen);
	printf("ready\n");
	fflush(stdout);
	wait_for(go, 1);
	l = map(path, PROT_READ, MAP_PRIVATE, &llen);
	printf("mapped\n");
	fflush(stdout);
	wait_for(go, 2);
	for (k = 0; k < 20; k++) {
		sb ^= sum_of(b, blen) + k;
		sl ^= sum_of(l, llen) + k;
	}
	printf("big %016llx late %016llx\n", (unsigned long long)sb,
	    (unsigned long long)sl);
	return 0;
}

int
main(int argc, char **argv)
{
	struct timespec	 tick = { 0, 100 * 1000000L };
	uint8_t		*priv, *shared;
	char		 seen[SEEN + 1] = "", now[SEEN + 1], line[128];
	uint64_t	 sum;
	size_t		 plen, slen, i;
	int		 n, k, out, len;

	close_range(3, ~0U, 0);
	if (argc == 3 && strcmp(argv[1], "-w") == 0) {
		shared = map(argv[2], PROT_READ | PROT_WRITE, MAP_SHARED,
		    &slen);
		shared[0] = 'W';
		printf("mapped\n");
		fflush(stdout);
		pause();
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "-l") == 0)
		return late(argv[2], argv[3], argv[4]);
	if (argc != 5 || (n = atoi(argv[4])) <= 0) {
		fprintf(stderr, "usage: mapper DATA SHARED OUT N\n"
		    "       mapper -w FILE\n"
		    "       mapper -l BIG LATE GO\n");
		return 2;
	}
	if ((out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(argv[3]);
		return 1;
	}
	priv = map(argv[1], PROT_READ | PROT_WRITE, MAP_PRIVATE, &plen);
	shared = map(argv[2], PROT_READ, MAP_SHARED, &slen);
	for (i = 0; i < plen; i += 4 * 4096)
		priv[i] ^= 0x5a;
	printf("mapped\n");
	fflush(stdout);
	for (k = 0; k < n; k++) {
		nanosleep(&tick, NULL);
		memcpy(now, shared, slen < SEEN ? slen : SEEN);
		now[slen < SEEN ? slen : SEEN] = '\0';
		if (strcmp(now, seen) != 0) {
			memcpy(seen, now, sizeof seen);
			len = snprintf(line, sizeof line, "shared: %s\n", seen);
			if (write(out, line, len) != len)
				return 1;
		}
	}
	for (sum = 0, i = 0; i < plen; i++)
		sum = sum * 31 + priv[i];
	len = snprintf(line, sizeof line, "private: %016llx\ndone\n",
	    (unsigned long long)sum);
	if (write(out, line, len) != len)
		return 1;
	return 0;
}
