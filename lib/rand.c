/*
 * A small random generator for choices that need no secrecy: which peer to
 * gossip to, in what order the balancer weighs processes, how it breaks a
 * tie. Each user keeps its own state, so that one's draws never shift
 * another's (and a seeded simulation repeats exactly).
 */
#include "osm.h"

/* splitmix64: small, fast, and every seed gives a good stream. */
uint64_t
rand_next(uint64_t *state)
{
	uint64_t	z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * A number below n (n > 0). The modulo's bias is below n / 2^64: nothing
 * next to picking among the few thousand nodes of a cluster.
 */
uint64_t
rand_below(uint64_t *state, uint64_t n)
{
	return rand_next(state) % n;
}
