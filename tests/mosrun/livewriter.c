/*
 * A test program for live moves: it holds MiB of memory in a known
 * pattern and keeps rewriting it at RATE MiB/s while it is moved, and
 * measures its own stalls: it works in ticks of 1 ms and notes the
 * longest gap between two ticks. Every page carries its number and a
 * generation, which a table elsewhere in its memory also holds, so that
 * a page that comes back stale, from another place or zero, is caught.
 *
 *	livewriter MIB RATE [churn|threads]
 *
 * It prints "ready" once its memory is filled. On SIGUSR1 it checks all
 * of its memory and prints "check ok" or "check BAD ..." and the longest
 * stall since the last report, "stall N us". SIGUSR2 stops or starts
 * the writing, and says "paused gen N" or "writing gen N": N counts
 * every page written since the start, a state a checkpoint must bring
 * back exactly (the check says it too). "churn" also changes its
 * address space on every tick: areas unmapped and mapped anew, moved and
 * grown by mremap, dropped by madvise(MADV_DONTNEED), the break moved up
 * and down, each with a pattern of its own that the check checks too.
 * "threads" also starts three threads that read all of its memory over
 * and over, each from its own place, so that a page still to come is
 * touched by any thread (post-copy: faults from every thread).
 */
#include <sys/mman.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE		4096UL
#define WORDS		(PAGE / 8)
#define NCHURN		16
#define CHURN_MAX	(64 * PAGE)

static volatile sig_atomic_t usr1, usr2;

struct churn {
	uint8_t		*addr;
	size_t		 len;
	uint64_t	 seed;
	int		 zero;		/* dropped: reads as zeros */
};

static uint8_t		*mem;
static uint32_t		*gen;
static size_t		 npages;
static struct churn	 ch[NCHURN];
static uint8_t		*brk0;
static size_t		 brk_len;
static uint64_t		 brk_seed;
static char		 outbuf[4096];
static struct churn	 flip;		/* filled 50 ticks, dropped 50 */

static void
on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
}

static void
on_usr2(int sig)
{
	(void)sig;
	usr2 = 1;
}

static unsigned long long
gens(void)
{
	unsigned long long	n = 0;
	size_t			i;

	for (i = 0; i < npages; i++)
		n += gen[i];
	return n;
}

static uint64_t
now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

static uint64_t
mix(uint64_t a, uint64_t b)
{
	uint64_t	x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

static void
page_fill(size_t i)
{
	uint64_t	*w = (uint64_t *)(mem + i * PAGE);
	size_t		 j;

	w[0] = i;
	w[1] = gen[i];
	for (j = 2; j < WORDS; j++)
		w[j] = mix(i * WORDS + j, gen[i]);
}

static int
page_ok(size_t i)
{
	uint64_t	*w = (uint64_t *)(mem + i * PAGE);
	size_t		 j;

	if (w[0] != i || w[1] != gen[i])
		return 0;
	for (j = 2; j < WORDS; j += 61)
		if (w[j] != mix(i * WORDS + j, gen[i]))
			return 0;
	return w[WORDS - 1] == mix(i * WORDS + WORDS - 1, gen[i]);
}

static void
fill(uint8_t *p, size_t len, uint64_t seed, size_t from)
{
	size_t	o;

	for (o = from; o < len; o += 8)
		*(uint64_t *)(p + o) = mix(seed, o);
}

static int
holds(const uint8_t *p, size_t len, uint64_t seed, int zero)
{
	size_t	o;

	for (o = 0; o < len; o += 512) {
		if (*(const uint64_t *)(p + o) != (zero ? 0 : mix(seed, o)))
			return 0;
	}
	return 1;
}

/* One change to the address space, chosen by the tick. */
static void
churn(uint64_t tick)
{
	if (tick % 100 == 0) {
		flip.seed = mix(tick, 4);
		flip.zero = 0;
		fill(flip.addr, flip.len, flip.seed, 0);
	} else if (tick % 100 == 50) {
		madvise(flip.addr, flip.len, MADV_DONTNEED);
		flip.zero = 1;
	}
	struct churn	*c = &ch[tick % NCHURN];
	size_t		 len;
	void		*p;

	switch ((tick / NCHURN) % 5) {
	case 0:	/* unmapped, and anew */
		munmap(c->addr, c->len);
		c->len = PAGE * (1 + mix(tick, 1) % 32);
		c->addr = mmap(NULL, c->len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		c->seed = mix(tick, 2);
		c->zero = 0;
		fill(c->addr, c->len, c->seed, 0);
		break;
	case 1:	/* moved elsewhere */
		p = mremap(c->addr, c->len, c->len, MREMAP_MAYMOVE |
		    MREMAP_FIXED, mmap(NULL, c->len, PROT_NONE, MAP_PRIVATE |
		    MAP_ANONYMOUS, -1, 0));
		if (p != MAP_FAILED)
			c->addr = p;
		break;
	case 2:	/* grown */
		len = c->len + PAGE * (1 + tick % 4);
		if (c->zero || len > CHURN_MAX)
			break;
		p = mremap(c->addr, c->len, len, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			break;
		c->addr = p;
		fill(c->addr, len, c->seed, c->len);
		c->len = len;
		break;
	case 3:	/* dropped */
		madvise(c->addr, c->len, MADV_DONTNEED);
		c->zero = 1;
		break;
	case 4:	/* the break, up or down */
		len = PAGE * (tick % 7);
		sbrk((intptr_t)len - (intptr_t)brk_len);
		brk_len = len;
		brk_seed = mix(tick, 3);
		fill(brk0, brk_len, brk_seed, 0);
		break;
	}
}

static void
check(uint64_t stall)
{
	size_t	i, bad = 0, first = 0;

	for (i = 0; i < npages; i++) {
		if (!page_ok(i) && bad++ == 0)
			first = i;
	}
	for (i = 0; i < NCHURN; i++) {
		if (ch[i].addr != NULL &&
		    !holds(ch[i].addr, ch[i].len, ch[i].seed, ch[i].zero) &&
		    bad++ == 0)
			first = npages + i;
	}
	if (brk_len > 0 && !holds(brk0, brk_len, brk_seed, 0) && bad++ == 0)
		first = npages + NCHURN;
	if (flip.addr != NULL && !holds(flip.addr, flip.len, flip.seed,
	    flip.zero) && bad++ == 0)
		first = npages + NCHURN + 1;
	if (bad == 0)
		printf("check ok %zu pages gen %llu\n", npages, gens());
	else
		printf("check BAD %zu wrong, first %zu\n", bad, first);
	printf("stall %llu us\n", (unsigned long long)stall);
	fflush(stdout);
}

/* A reader: every page's first word, from page start on, for ever. */
static void *
reader(void *arg)
{
	volatile uint64_t	*w;
	uint64_t		 sum = 0;
	size_t			 i = (uintptr_t)arg;

	for (;;) {
		w = (volatile uint64_t *)(mem + (i % npages) * PAGE);
		sum += *w;
		if (++i % 4096 == 0) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	return (void *)(uintptr_t)sum;
}

int
main(int argc, char **argv)
{
	pthread_t	 th;
	uint64_t	 tick = 0, t, last, stall = 0, per, carry = 0;
	size_t		 cur = 0, i, n;
	double		 rate;
	int		 churning, paused = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: livewriter MIB RATE [churn|threads]"
		    "\n");
		return 2;
	}
	/* No malloc: the churn moves the break under the heap's feet. */
	setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);
	npages = strtoull(argv[1], NULL, 10) * (1024 * 1024 / PAGE);
	rate = strtod(argv[2], NULL);
	churning = argc > 3 && strcmp(argv[3], "churn") == 0;
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	mem = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gen = mmap(NULL, npages * sizeof *gen, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || gen == MAP_FAILED)
		return 1;
	for (i = 0; i < npages; i++)
		page_fill(i);
	brk0 = sbrk(0);
	if (churning) {
		flip.len = 64 * PAGE;
		flip.addr = mmap(NULL, flip.len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	for (i = 0; churning && i < NCHURN; i++)
		churn(i);
	for (i = 0; argc > 3 && strcmp(argv[3], "threads") == 0 && i < 3; i++)
		if (pthread_create(&th, NULL, reader,
		    (void *)(uintptr_t)(npages / 3 * i)) != 0)
			return 1;
	/* pages per tick, in millionths */
	per = (uint64_t)(rate * 1024 * 1024 / PAGE * 1000);
	printf("ready\n");
	last = now_us();
	for (;;) {
		if (usr2) {
			usr2 = 0;
			paused = !paused;
			printf("%s gen %llu\n", paused ? "paused" : "writing",
			    gens());
		}
		carry += paused ? 0 : per;
		for (n = carry / 1000000; n > 0; n--) {
			gen[cur]++;
			page_fill(cur);
			cur = (cur + 1) % npages;
		}
		carry %= 1000000;
		if (churning)
			churn(tick);
		tick++;
		if (usr1) {
			usr1 = 0;
			check(stall);
			stall = 0;
			last = now_us();
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		t = now_us();
		if (t - last > stall)
			stall = t - last;
		last = t;
	}
}
