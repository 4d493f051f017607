/*
 * Where a move's stream spends its time: each step an image's bytes take
 * from the process at home to the process away, timed alone on 1 MiB
 * batches over MiB of touched memory, as the agents do them (docs/
 * PERFORMANCE.md, "Live moves"). The sending side reads the process's
 * memory (process_vm_readv), checksums it (CRC-32C), seals it
 * (AES-256-GCM) and writes it into a socket; the receiving side reads
 * the socket, opens the frame, checksums it and writes it into fresh
 * memory of the new process (process_vm_writev). A plain TCP stream
 * does only the two socket copies. Prints GB/s per step and the time per
 * GiB of each side, CPU time of the measuring thread (less moved by the
 * machine's other load than wall time), wall time beside it.
 *
 * usage: stream-steps [MiB]
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/internal.h"

#define BATCH	(1UL << 20)

static size_t	 size;

static double
clk(clockid_t id)
{
	struct timespec	ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct span {
	double	cpu, wall;
};

static void
span_start(struct span *s)
{
	s->cpu = clk(CLOCK_THREAD_CPUTIME_ID);
	s->wall = clk(CLOCK_MONOTONIC);
}

static void
span_end(struct span *s)
{
	s->cpu = clk(CLOCK_THREAD_CPUTIME_ID) - s->cpu;
	s->wall = clk(CLOCK_MONOTONIC) - s->wall;
}

static void
row(const char *step, const struct span *s, double *side)
{
	printf("| %s | %.2f GB/s | %.0f ms | %.2f GB/s |\n", step,
	    size / s->cpu / 1e9, s->cpu * 1e3 * (1UL << 30) / size,
	    size / s->wall / 1e9);
	*side += s->cpu * (1UL << 30) / size;
}

/* A child holding size bytes of anonymous memory, touched or not. */
static pid_t
holder(uint8_t **addr, int touch)
{
	uint8_t	*m;
	pid_t	 pid;

	m = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	if (touch)
		for (size_t i = 0; i < size; i += 4096)
			m[i] = (uint8_t)(i >> 12) | 1;
	if ((pid = fork()) == 0) {
		pause();
		_exit(0);
	}
	munmap(m, size);
	*addr = m;
	return pid;
}

static void
reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

struct drain {
	int	fd;
};

static void *
drain_run(void *arg)
{
	struct drain	*d = arg;
	uint8_t		*buf = xmalloc(BATCH);

	while (read(d->fd, buf, BATCH) > 0)
		;
	free(buf);
	return NULL;
}

/* A TCP connection over the loopback: *w to write, *r to read. */
static void
tcp_pair(int *w, int *r)
{
	struct sockaddr_in	sa = { .sin_family = AF_INET };
	socklen_t		len = sizeof sa;
	int			l, one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((l = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(l, (struct sockaddr *)&sa, sizeof sa) == -1 ||
	    listen(l, 1) == -1 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) == -1 ||
	    (*w = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(*w, (struct sockaddr *)&sa, sizeof sa) == -1 ||
	    (*r = accept(l, NULL, NULL)) == -1) {
		perror("tcp");
		exit(1);
	}
	setsockopt(*w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	close(l);
}

int
main(int argc, char **argv)
{
	static uint8_t		 key[CRYPTO_KEY_LEN], iv[CRYPTO_IV_LEN];
	struct crypto_aead	*seal, *open;
	struct span		 s;
	struct drain		 d;
	pthread_t		 th;
	uint8_t			*addr, *buf, *out, tag[CRYPTO_TAG_LEN];
	double			 send = 0, recv = 0, tcp = 0;
	uint32_t		 crc = 0;
	size_t			 o;
	pid_t			 pid;
	int			 w, r;

	size = (argc > 1 ? strtoul(argv[1], NULL, 10) : 1024) << 20;
	buf = xmalloc(BATCH + CRYPTO_TAG_LEN);
	out = xmalloc(BATCH + CRYPTO_TAG_LEN);
	memset(buf, 0x5a, BATCH);
	seal = crypto_aead_new(key, 1);
	open = crypto_aead_new(key, 0);

	printf("| step | rate (CPU) | CPU per GiB | rate (wall) |\n"
	    "|---|---:|---:|---:|\n");
	pid = holder(&addr, 1);
	span_start(&s);
	for (o = 0; o < size; o += BATCH) {
		struct iovec	l = { buf, BATCH }, rm = { addr + o, BATCH };

		if (process_vm_readv(pid, &l, 1, &rm, 1, 0) != (ssize_t)BATCH) {
			perror("process_vm_readv");
			return 1;
		}
	}
	span_end(&s);
	reap(pid);
	row("send: process_vm_readv from the process", &s, &send);

	span_start(&s);
	for (o = 0; o < size; o += BATCH)
		crc = crc32c(crc, buf, BATCH);
	span_end(&s);
	row("send and receive: CRC-32C (each side)", &s, &send);
	recv += s.cpu * (1UL << 30) / size;

	span_start(&s);
	for (o = 0; o < size; o += BATCH)
		crypto_seal(seal, iv, "hdr", 3, buf, BATCH, out,
		    out + BATCH);
	span_end(&s);
	row("send: AES-256-GCM seal", &s, &send);

	memcpy(tag, out + BATCH, sizeof tag);
	span_start(&s);
	for (o = 0; o < size; o += BATCH)
		if (crypto_open(open, iv, "hdr", 3, out, BATCH, buf,
		    tag) == -1) {
			fprintf(stderr, "open failed\n");
			return 1;
		}
	span_end(&s);
	row("receive: AES-256-GCM open", &s, &recv);

	/* the socket: the writer's copy, the reader's in a second thread */
	tcp_pair(&w, &r);
	d.fd = r;
	pthread_create(&th, NULL, drain_run, &d);
	span_start(&s);
	for (o = 0; o < size; o += BATCH)
		if (write_all(w, out, BATCH) == -1) {
			perror("write");
			return 1;
		}
	span_end(&s);
	close(w);
	pthread_join(th, NULL);
	close(r);
	row("send: TCP write over the loopback", &s, &send);
	tcp += s.cpu * (1UL << 30) / size;

	tcp_pair(&w, &r);
	if (fork() == 0) {
		close(r);
		for (o = 0; o < size; o += BATCH)
			write_all(w, out, BATCH);
		_exit(0);
	}
	close(w);
	span_start(&s);
	for (o = 0; o < size; ) {
		ssize_t	n = read(r, buf, BATCH);

		if (n <= 0)
			break;
		o += n;
	}
	span_end(&s);
	wait(NULL);
	close(r);
	row("receive: TCP read", &s, &recv);
	tcp += s.cpu * (1UL << 30) / size;

	pid = holder(&addr, 0);
	span_start(&s);
	for (o = 0; o < size; o += BATCH) {
		struct iovec	l = { buf, BATCH }, rm = { addr + o, BATCH };

		if (process_vm_writev(pid, &l, 1, &rm, 1, 0) !=
		    (ssize_t)BATCH) {
			perror("process_vm_writev");
			return 1;
		}
	}
	span_end(&s);
	reap(pid);
	row("receive: process_vm_writev into fresh memory", &s, &recv);

	printf("\nCPU per GiB: sending %.0f ms, receiving %.0f ms, a plain "
	    "TCP stream %.0f ms on each side (%.0f in all); crc %08x\n",
	    send * 1e3, recv * 1e3, tcp * 1e3 / 2, tcp * 1e3, crc);
	crypto_aead_free(seal);
	crypto_aead_free(open);
	free(buf);
	free(out);
	return 0;
}
