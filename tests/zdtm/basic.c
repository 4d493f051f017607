/*
 * Memory of every kind a plain program has, built static and dynamic:
 * globals, heap, a big anonymous mapping, the stack, thread-local storage,
 * a private file mapping written to (in $TMPDIR, default /tmp), one of a
 * deleted file, a read-only area; plus the thread id glibc caches.
 * Everything is checked after the restore.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "zdtm.h"

#define BIG	(8 << 20)

static uint64_t		 data_words[1000] = { 1, 2, 3 };
static __thread uint64_t tls_word = 0x1234;

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static void
fill(uint64_t *p, size_t n, uint64_t seed)
{
	size_t	i;

	for (i = 0; i < n; i++)
		p[i] = mix(seed + i);
}

static int
check(const uint64_t *p, size_t n, uint64_t seed)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (p[i] != mix(seed + i))
			return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	uint64_t	 stack_words[512], *heap, *big, *ro;
	char		*fmap, *gone, path[4096], path2[4096];
	const char	*tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") :
			    "/tmp";
	int		 fd;

	zdtm_init();
	snprintf(path, sizeof path, "%s/zdtm-basic.XXXXXX", tmp);
	snprintf(path2, sizeof path2, "%s/zdtm-gone.XXXXXX", tmp);
	fill(data_words, 1000, 1);
	fill(stack_words, 512, 2);
	heap = malloc(100000 * 8);
	fill(heap, 100000, 3);
	big = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	fill(big, 1000, 4);			/* a few pages at each end */
	fill(big + BIG / 8 - 1000, 1000, 5);
	ro = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	fill(ro, 8192, 6);
	mprotect(ro, 65536, PROT_READ);
	tls_word = mix(7);

	/* A private file mapping, partly written: pages from the file and
	 * written pages must both come back. The file is then deleted. */
	if ((fd = mkstemp(path)) == -1)
		zdtm_fail("mkstemp");
	for (int i = 0; i < 16; i++)
		if (write(fd, "0123456789abcdef", 16) != 16)
			zdtm_fail("write");
	fmap = mmap(NULL, 256, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	fmap[100] = 'X';
	close(fd);
	/* One whose file is gone by the dump: its pages must be carried. */
	if ((fd = mkstemp(path2)) == -1 || write(fd, "gone file", 9) != 9)
		zdtm_fail("mkstemp");
	gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	unlink(path2);

	zdtm_ready();
	zdtm_wait_go();

	if (check(data_words, 1000, 1) || check(stack_words, 512, 2) ||
	    check(heap, 100000, 3) || check(big, 1000, 4) ||
	    check(big + BIG / 8 - 1000, 1000, 5) || check(ro, 8192, 6))
		zdtm_fail("memory differs");
	if (tls_word != mix(7))
		zdtm_fail("thread-local storage differs");
	if (fmap[100] != 'X' || fmap[99] != '3' || fmap[101] != '5')
		zdtm_fail("private file mapping differs");
	if (memcmp(gone, "gone file", 9) != 0)
		zdtm_fail("mapping of a deleted file differs");
	/* glibc's cached tid must be the new one: raise() relies on it. */
	if (getpid() != (pid_t)syscall(SYS_gettid))
		zdtm_fail("pid and tid differ");
	signal(SIGUSR2, SIG_IGN);
	if (raise(SIGUSR2) != 0)
		zdtm_fail("raise failed");
	unlink(path);
	if (argc > 1)
		printf("%s\n", argv[1]);
	zdtm_pass();
}
