/*
 * What every fuzz target shares: reading the input, writing seeds, the
 * key, descriptor checks. lib/log.c logs nothing (LOG_QUIET: formatted,
 * dropped) unless OSM_FUZZ_LOG is set, and fatal() aborts: a daemon must
 * not exit on input.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

int	LLVMFuzzerInitialize(int *, char ***);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*dir;

	/* Quiet but for a fatal error's last word, unless asked. */
	log_init(getenv("OSM_FUZZ_LOG") != NULL ? 1 : LOG_QUIET, "fuzz");
	log_setverbose(1);	/* debug messages too see hostile strings */
	/* Peers hang up on us: a write then fails, as in the daemons. */
	signal(SIGPIPE, SIG_IGN);
	fuzz_init();
	if ((dir = getenv("OSM_FUZZ_SEEDS")) != NULL) {
		if (mkdir_p(dir, 0755) == -1) {
			fprintf(stderr, "%s: %s\n", dir, strerror(errno));
			exit(1);
		}
		fuzz_seeds(dir);
		exit(0);
	}
	return 0;
}

/* --- input ------------------------------------------------------------- */

uint8_t
fuzz_u8(struct fuzz_in *in)
{
	uint8_t	v = 0;

	if (in->n > 0) {
		v = in->p[0];
		in->p++;
		in->n--;
	}
	return v;
}

uint16_t
fuzz_u16(struct fuzz_in *in)
{
	uint16_t v = fuzz_u8(in);

	return v << 8 | fuzz_u8(in);
}

uint64_t
fuzz_u64(struct fuzz_in *in)
{
	uint64_t	v = 0;
	int		i;

	for (i = 0; i < 8; i++)
		v = v << 8 | fuzz_u8(in);
	return v;
}

/* Up to len bytes: how many there were, at *p. */
size_t
fuzz_take(struct fuzz_in *in, size_t len, const uint8_t **p)
{
	if (len > in->n)
		len = in->n;
	*p = in->p;
	in->p += len;
	in->n -= len;
	return len;
}

/* The next record: 1, or 0 at the end of the input. */
int
fuzz_record(struct fuzz_in *in, uint8_t *op, const uint8_t **p,
    size_t *len)
{
	if (in->n == 0)
		return 0;
	*op = fuzz_u8(in);
	*len = fuzz_take(in, fuzz_u16(in), p);
	return 1;
}

/* --- seeds ------------------------------------------------------------- */

void
fuzz_put(struct fuzz_out *o, const void *p, size_t len)
{
	if (o->n + len > o->size) {
		o->size = 2 * (o->n + len) + 64;
		o->p = xreallocarray(o->p, o->size, 1);
	}
	if (len > 0)
		memcpy(o->p + o->n, p, len);
	o->n += len;
}

void
fuzz_put_u8(struct fuzz_out *o, uint8_t v)
{
	fuzz_put(o, &v, 1);
}

void
fuzz_put_u64(struct fuzz_out *o, uint64_t v)
{
	int	i;

	for (i = 7; i >= 0; i--)
		fuzz_put_u8(o, v >> (8 * i));
}

void
fuzz_put_record(struct fuzz_out *o, uint8_t op, const void *p, size_t len)
{
	uint16_t	n = htons(len);

	if (len > UINT16_MAX)
		fatalx("%s: record of %zu bytes", __func__, len);
	fuzz_put_u8(o, op);
	fuzz_put(o, &n, 2);
	fuzz_put(o, p, len);
}

void
fuzz_put_packed(struct fuzz_out *o, const ProtobufCMessage *m)
{
	size_t	 len = protobuf_c_message_get_packed_size(m);
	uint8_t	*buf = xmalloc(len + 1);

	protobuf_c_message_pack(m, buf);
	fuzz_put(o, buf, len);
	free(buf);
}

void
fuzz_put_msg(struct fuzz_out *o, uint8_t op, const ProtobufCMessage *m)
{
	struct fuzz_out	body = { 0 };

	fuzz_put_packed(&body, m);
	fuzz_put_record(o, op, body.p, body.n);
	free(body.p);
}

/* Write o as seed dir/name, and empty o for the next one. */
void
fuzz_seed(const char *dir, const char *name, struct fuzz_out *o)
{
	char	*path;
	int	 fd;

	xasprintf(&path, "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1 || write_all(fd, o->p, o->n) == -1)
		fatal("%s", path);
	close(fd);
	free(path);
	free(o->p);
	memset(o, 0, sizeof *o);
}

/* A copy of the file at path, as seed dir/name. */
void
fuzz_seed_file(const char *dir, const char *name, const char *path)
{
	struct fuzz_out	 o = { 0 };
	char		 buf[4096];
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		fatal("%s", path);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		fuzz_put(&o, buf, n);
	if (n == -1)
		fatal("%s", path);
	close(fd);
	fuzz_seed(dir, name, &o);
}

/* Every file of src whose name ends in suffix, as seeds. */
void
fuzz_seed_dir(const char *dir, const char *src, const char *suffix)
{
	struct dirent	*e;
	DIR		*d;
	size_t		 n, s = strlen(suffix);
	char		*path;

	if ((d = opendir(src)) == NULL)
		fatal("%s", src);
	while ((e = readdir(d)) != NULL) {
		n = strlen(e->d_name);
		if (n <= s || strcmp(e->d_name + n - s, suffix) != 0)
			continue;
		xasprintf(&path, "%s/%s", src, e->d_name);
		fuzz_seed_file(dir, e->d_name, path);
		free(path);
	}
	closedir(d);
}

/* --- the rest ---------------------------------------------------------- */

const struct cluster_key *
fuzz_key(void)
{
	static const struct cluster_key	key = {
		.bytes = "osmosis fuzz cluster key 0123456",
		.len = 32,
	};

	return &key;
}

/* The bytes as a file at offset 0, which only we hold. */
int
fuzz_memfd(const void *p, size_t len)
{
	int	fd;

	if ((fd = memfd_create("fuzz", MFD_CLOEXEC)) == -1)
		fatal("memfd_create");
	if (write_all(fd, p, len) == -1 || lseek(fd, 0, SEEK_SET) == -1)
		fatal("memfd");
	return fd;
}

/*
 * The bytes as a file for the loaders that take a path (conf_load,
 * policy_load): its descriptor, to close once loaded; the path in path.
 */
int
fuzz_path(const void *p, size_t len, char *path, size_t size)
{
	int	fd = fuzz_memfd(p, len);

	snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

/* A loader refused the file at path: cause must say why, naming it. */
void
fuzz_refused(const char *path, char *cause)
{
	fuzz_assert(cause != NULL);
	fuzz_assert(strncmp(cause, path, strlen(path)) == 0 &&
	    cause[strlen(path)] == ':');
	log_debug("%s", cause);
	free(cause);
}

/* A cluster.conf of the harness's own, which must load. */
struct cluster_conf *
fuzz_conf(const char *text)
{
	struct cluster_conf	*c;
	char			 path[64], *cause = NULL;
	int			 fd;

	fd = fuzz_path(text, strlen(text), path, sizeof path);
	if ((c = conf_load(path, &cause)) == NULL)
		fatalx("%s", cause);
	close(fd);
	return c;
}

/* The descriptor the next open would get. */
int
fuzz_lowest_fd(void)
{
	int	fd;

	if ((fd = dup(0)) == -1)
		fatal("dup");
	close(fd);
	return fd;
}

/* The lowest free descriptor must be what it was: nothing leaked. */
void
fuzz_fd_check(int before)
{
	int	now = fuzz_lowest_fd();

	if (now != before) {
		fprintf(stderr, "fuzz: descriptor leaked (lowest free %d, was "
		    "%d)\n", now, before);
		abort();
	}
}

void
fuzz_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, what);
	abort();
}
