/*
 * A test program for memory pressure: ticks WAIT times without growing
 * (time for the test to move it), then grows by STEP MiB a tick, STEPS
 * times, each step filled with a pattern of its own; then checks every
 * byte and says "verified N MiB" and "done". A line a tick on its standard
 * output, so that a run recovered from a checkpoint can be compared with
 * one that never stopped. With "populate" each step is faulted in by the
 * kernel inside its mmap (MAP_POPULATE), faster than any watcher can
 * freeze it: a step larger than its node's memory is the OOM killer's.
 * Descriptors it inherits it keeps.
 *
 *	grow WAIT STEP STEPS TICK_MS [populate]
 */
#include <sys/mman.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB	(1UL << 20)

static uint64_t
pattern(size_t step, size_t word)
{
	return (step + 1) * 0x9e3779b97f4a7c15ULL ^ word;
}

int
main(int argc, char **argv)
{
	struct timespec	 tick = { 0, 0 };
	uint64_t	**mem, *w;
	size_t		 wait, step, steps, i, j, words;
	int		 flags = MAP_PRIVATE | MAP_ANONYMOUS;

	if (argc < 5) {
		fprintf(stderr, "usage: grow WAIT STEP STEPS TICK_MS "
		    "[populate]\n");
		return 2;
	}
	wait = strtoul(argv[1], NULL, 10);
	step = strtoul(argv[2], NULL, 10) * MIB;
	steps = strtoul(argv[3], NULL, 10);
	tick.tv_sec = atol(argv[4]) / 1000;
	tick.tv_nsec = atol(argv[4]) % 1000 * 1000000L;
	if (argc > 5 && strcmp(argv[5], "populate") == 0)
		flags |= MAP_POPULATE;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < wait; i++) {
		printf("tick %zu\n", i);
		nanosleep(&tick, NULL);
	}
	if ((mem = calloc(steps, sizeof *mem)) == NULL)
		return 1;
	words = step / sizeof **mem;
	for (i = 0; i < steps; i++) {
		mem[i] = mmap(NULL, step, PROT_READ | PROT_WRITE, flags, -1, 0);
		if (mem[i] == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		for (j = 0, w = mem[i]; j < words; j++)
			w[j] = pattern(i, j);
		printf("grown %zu MiB\n", (i + 1) * step / MIB);
		nanosleep(&tick, NULL);
	}
	for (i = 0; i < steps; i++) {
		for (j = 0, w = mem[i]; j < words; j++) {
			if (w[j] != pattern(i, j)) {
				printf("wrong at step %zu word %zu\n", i, j);
				return 1;
			}
		}
	}
	printf("verified %zu MiB\ndone\n", steps * step / MIB);
	return 0;
}
