/*
 * Session benchmark: what lib/session.c costs a message, by size, without
 * the network: one thread sends a message on one end of a Unix socketpair
 * (session_send: framing, sealing, the write) and takes it from the other
 * (session_recv: the read, opening, checking), as the deputy and the guest
 * agent do for each forwarded call and each frame of an image. Prints a
 * Markdown table: microseconds per message and megabytes per second.
 *
 * usage: session [ITERATIONS]
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"

static void
die(const char *what, char *cause)
{
	fprintf(stderr, "session: %s: %s\n", what, cause);
	exit(1);
}

/* Microseconds per message of len bytes, over n messages. */
static double
measure(size_t len, int n)
{
	static const struct cluster_key	ck = { .bytes = "bench cluster key "
					    "0123456789abcd", .len = 32 };
	uint8_t				nh[SESSION_NONCE_LEN],
					nr[SESSION_NONCE_LEN], key[SESSION_KEY_LEN];
	struct session			home, away;
	const uint8_t			*body;
	uint8_t				*msg;
	uint16_t			 kind;
	size_t				 blen;
	char				*cause = NULL;
	int				 sv[2], i, bufsize = 4 << 20;
	uint64_t			 t0;

	memset(nh, 'h', sizeof nh);
	memset(nr, 'r', sizeof nr);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		die("socketpair", strerror(errno));
	/* Room for the largest message: one thread writes, then reads. */
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof bufsize);
	session_derive(&ck, nh, nr, 1, 2, SESSION_HOME, key);
	session_init(&home, sv[0], key, len);
	session_derive(&ck, nh, nr, 1, 2, SESSION_REMOTE, key);
	session_init(&away, sv[1], key, len);
	msg = xcalloc(1, len + 1);
	t0 = now_us();
	for (i = 0; i < n; i++) {
		if (session_send(&home, 1, msg, len, &cause) == -1)
			die("send", cause);
		if (session_recv(&away, &kind, &body, &blen, &cause) == -1)
			die("receive", cause);
	}
	t0 = now_us() - t0;
	free(msg);
	session_free(&home);
	session_free(&away);
	close(sv[0]);
	close(sv[1]);
	return (double)t0 / n;
}

int
main(int argc, char **argv)
{
	static const size_t	 sizes[] = { 8, 200, 4200, 65600, 1 << 20 };
	time_t			 now = time(NULL);
	uint64_t		 v;
	char			 date[32];
	size_t			 i;
	double			 us;
	int			 n = 20000;

	if (argc > 1) {
		if (argc > 2 || parse_uint(argv[1], 10, 10000000, &v) == -1) {
			fprintf(stderr, "usage: session [iterations]\n");
			return 2;
		}
		n = v;
	}
	strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
	printf("Measured %s with `build/bench/session %d` (1 MiB: a tenth "
	    "as many).\n\n", date, n);
	printf("| message | per message | throughput |\n");
	printf("|---:|---:|---:|\n");
	for (i = 0; i < nitems(sizes); i++) {
		us = measure(sizes[i], sizes[i] >= (1 << 20) ? n / 10 : n);
		printf("| %zu bytes | %.2f us | %.0f MB/s |\n", sizes[i], us,
		    sizes[i] / us);
		fflush(stdout);
	}
	return 0;
}
