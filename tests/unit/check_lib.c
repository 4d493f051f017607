/*
 * Check suite for lib/: hashing, keys, framing, streams, config and policy
 * parsing.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"

#define CONF_DIR	"tests/conf"
#define POLICY_DIR	"tests/policy"

static void
hex(const uint8_t *p, size_t n, char *out)
{
	size_t	i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void
sha_hex(const void *data, size_t len, char *out)
{
	struct sha256	c;
	uint8_t		d[SHA256_LEN];

	sha256_init(&c);
	sha256_update(&c, data, len);
	sha256_final(&c, d);
	hex(d, sizeof d, out);
}

START_TEST(test_sha256_vectors)
{
	char		 out[65];
	struct sha256	 c;
	uint8_t		 d[SHA256_LEN], *big;
	size_t		 i;

	sha_hex("", 0, out);
	ck_assert_str_eq(out, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	sha_hex("abc", 3, out);
	ck_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
	    out);
	ck_assert_str_eq(out, "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1");

	/* A million 'a', fed in odd-sized pieces to cross block edges. */
	big = malloc(1000000);
	memset(big, 'a', 1000000);
	sha256_init(&c);
	for (i = 0; i < 1000000; i += 997)
		sha256_update(&c, big + i, i + 997 > 1000000 ? 1000000 - i :
		    997);
	sha256_final(&c, d);
	hex(d, sizeof d, out);
	ck_assert_str_eq(out, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
	free(big);
}
END_TEST

START_TEST(test_hmac_rfc4231)
{
	uint8_t	key[131], mac[SHA256_LEN];
	char	out[65];

	/* RFC 4231 test case 1 */
	memset(key, 0x0b, 20);
	hmac_sha256(key, 20, "Hi There", 8, mac);
	hex(mac, sizeof mac, out);
	ck_assert_str_eq(out, "b0344c61d8db38535ca8afceaf0bf12b"
	    "881dc200c9833da726e9376c2e32cff7");
	/* test case 2 */
	hmac_sha256((const uint8_t *)"Jefe", 4,
	    "what do ya want for nothing?", 28, mac);
	hex(mac, sizeof mac, out);
	ck_assert_str_eq(out, "5bdcc146bf60754e6a042426089575c7"
	    "5a003f089d2739839dec58b964ec3843");
	/* test case 6: a key longer than the block */
	memset(key, 0xaa, 131);
	hmac_sha256(key, 131, "Test Using Larger Than Block-Size Key - "
	    "Hash Key First", 54, mac);
	hex(mac, sizeof mac, out);
	ck_assert_str_eq(out, "60e431591ee0b67f0d8a26aacbf5b77f"
	    "8e0bc6213728c5140546040f0ee37f54");
}
END_TEST

static char tmpdir[] = "/tmp/check_lib.XXXXXX";

static void
tmp_setup(void)
{
	strcpy(tmpdir, "/tmp/check_lib.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
tmp_teardown(void)
{
	char	cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *
tmp_file(const char *name, const char *content, mode_t mode)
{
	char	*path;
	int	 fd;

	xasprintf(&path, "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, content, strlen(content)), 0);
	fchmod(fd, mode);
	close(fd);
	return path;
}

START_TEST(test_key_load)
{
	struct cluster_key	 k;
	char			*cause = NULL, *path;

	path = tmp_file("good.key", "000102030405060708090a0b0c0d0e0f"
	    "A0B1C2D3\n", 0600);
	ck_assert_int_eq(key_load(path, &k, &cause), 0);
	ck_assert_uint_eq(k.len, 20);
	ck_assert_uint_eq(k.bytes[0], 0);
	ck_assert_uint_eq(k.bytes[16], 0xa0);
	ck_assert_uint_eq(k.bytes[19], 0xd3);
	free(path);

	path = tmp_file("open.key", "000102030405060708090a0b0c0d0e0f\n",
	    0644);
	ck_assert_int_eq(key_load(path, &k, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "accessible by others"));
	free(cause);
	free(path);

	path = tmp_file("short.key", "0001020304\n", 0600);
	ck_assert_int_eq(key_load(path, &k, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "expected 32 to 128 hex digits"));
	free(cause);
	free(path);

	path = tmp_file("bad.key", "000102030405060708090a0b0c0d0eXX\n",
	    0600);
	ck_assert_int_eq(key_load(path, &k, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "not a hex digit"));
	free(cause);
	free(path);

	path = tmp_file("two.key", "000102030405060708090a0b0c0d0e0f\n"
	    "000102030405060708090a0b0c0d0e0f\n", 0600);
	ck_assert_int_eq(key_load(path, &k, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "one line"));
	free(cause);
	free(path);
}
END_TEST

START_TEST(test_key_generate)
{
	struct cluster_key	 a, b;
	char			*cause = NULL, *p1, *p2;
	struct stat		 st;

	xasprintf(&p1, "%s/k1", tmpdir);
	xasprintf(&p2, "%s/k2", tmpdir);
	ck_assert_int_eq(key_generate(p1, &cause), 0);
	ck_assert_int_eq(key_generate(p2, &cause), 0);
	ck_assert_int_eq(stat(p1, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(key_load(p1, &a, &cause), 0);
	ck_assert_int_eq(key_load(p2, &b, &cause), 0);
	ck_assert_uint_eq(a.len, 32);
	ck_assert_int_ne(memcmp(a.bytes, b.bytes, 32), 0);
	/* never overwrites */
	ck_assert_int_eq(key_generate(p1, &cause), -1);
	free(cause);
	free(p1);
	free(p2);
}
END_TEST

static const struct cluster_key test_key = { .bytes = "0123456789abcdef",
    .len = 16 };

START_TEST(test_frame_roundtrip)
{
	uint8_t		 buf[256];
	const uint8_t	*body;
	size_t		 n, len;
	uint16_t	 kind;

	n = frame_pack(7, "hello", 5, &test_key, buf, sizeof buf);
	ck_assert_uint_eq(n, FRAME_OVERHEAD + 5);
	ck_assert_int_eq(frame_unpack(buf, n, 256, &test_key, &kind, &body, &len),
	    FRAME_OK);
	ck_assert_uint_eq(kind, 7);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(memcmp(body, "hello", 5), 0);

	/* an empty body is legal */
	n = frame_pack(1, "", 0, &test_key, buf, sizeof buf);
	ck_assert_int_eq(frame_unpack(buf, n, 256, &test_key, &kind, &body, &len),
	    FRAME_OK);
	ck_assert_uint_eq(len, 0);

	/* does not fit */
	ck_assert_uint_eq(frame_pack(1, buf, 250, &test_key, buf, sizeof buf),
	    0);
}
END_TEST

START_TEST(test_frame_hostile)
{
	uint8_t			 buf[256], copy[256];
	const uint8_t		*body;
	size_t			 n, len, i;
	uint16_t		 kind;
	struct cluster_key	 other = test_key;
	uint8_t			 big[300];

	n = frame_pack(7, "some body", 9, &test_key, buf, sizeof buf);

	/* every truncation is refused */
	for (i = 0; i < n; i++)
		ck_assert_int_ne(frame_unpack(buf, i, 256, &test_key, &kind, &body,
		    &len), FRAME_OK);
	ck_assert_int_eq(frame_unpack(buf, 10, 256, &test_key, &kind, &body, &len),
	    FRAME_SHORT);

	/* every single flipped bit is refused */
	for (i = 0; i < n * 8; i++) {
		memcpy(copy, buf, n);
		copy[i / 8] ^= 1 << (i % 8);
		ck_assert_int_ne(frame_unpack(copy, n, 256, &test_key, &kind, &body,
		    &len), FRAME_OK);
	}
	memcpy(copy, buf, n);
	copy[0] ^= 1;
	ck_assert_int_eq(frame_unpack(copy, n, 256, &test_key, &kind, &body, &len),
	    FRAME_MAGIC_BAD);
	memcpy(copy, buf, n);
	copy[5] = 99;
	ck_assert_int_eq(frame_unpack(copy, n, 256, &test_key, &kind, &body, &len),
	    FRAME_VERSION_BAD);
	memcpy(copy, buf, n);
	copy[FRAME_HDR] ^= 1;
	ck_assert_int_eq(frame_unpack(copy, n, 256, &test_key, &kind, &body, &len),
	    FRAME_MAC_BAD);

	/* trailing garbage */
	memcpy(copy, buf, n);
	copy[n] = 0;
	ck_assert_int_eq(frame_unpack(copy, n + 1, 256, &test_key, &kind, &body,
	    &len), FRAME_LENGTH_BAD);

	/* forged: right layout, wrong key */
	other.bytes[3] ^= 0x40;
	ck_assert_int_eq(frame_unpack(buf, n, 256, &other, &kind, &body, &len),
	    FRAME_MAC_BAD);

	/* oversized */
	memset(big, 0, sizeof big);
	ck_assert_int_eq(frame_unpack(big, sizeof big, 256, &test_key, &kind,
	    &body, &len), FRAME_LONG);

	/* garbage of every length */
	for (i = 0; i < sizeof copy; i++) {
		copy[i] = (uint8_t)(i * 131 + 17);
		ck_assert_int_ne(frame_unpack(copy, i + 1, 256, &test_key, &kind,
		    &body, &len), FRAME_OK);
	}
}
END_TEST

START_TEST(test_stream)
{
	int	 p[2];
	uint8_t	*buf, raw[8];
	size_t	 len;
	char	*cause;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(stream_write(p[1], "record", 6), 0);
	ck_assert_int_eq(stream_read(p[0], &buf, &len, 100, &cause), 0);
	ck_assert_uint_eq(len, 6);
	ck_assert_int_eq(memcmp(buf, "record", 6), 0);
	free(buf);

	/* over the caller's limit */
	ck_assert_int_eq(stream_write(p[1], "record", 6), 0);
	ck_assert_int_eq(stream_read(p[0], &buf, &len, 5, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "exceeds the limit"));
	free(cause);
	close(p[0]);
	close(p[1]);

	/* truncated body */
	ck_assert_int_eq(pipe(p), 0);
	raw[0] = 0; raw[1] = 0; raw[2] = 0; raw[3] = 10;
	memcpy(raw + 4, "abcd", 4);
	ck_assert_int_eq(write_all(p[1], raw, 8), 0);
	close(p[1]);
	ck_assert_int_eq(stream_read(p[0], &buf, &len, 100, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "truncated"));
	free(cause);
	/* clean end of stream */
	ck_assert_int_eq(stream_read(p[0], &buf, &len, 100, &cause), -1);
	ck_assert_ptr_null(cause);
	close(p[0]);
}
END_TEST

static const uint8_t skey[SESSION_KEY_LEN] = "0123456789abcdef0123456789abcdef";

START_TEST(test_session_roundtrip)
{
	struct session	 a, b;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	char		*cause = NULL, big[100000];
	int		 sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	session_init(&a, sv[0], skey, sizeof big);
	session_init(&b, sv[1], skey, sizeof big);
	ck_assert_int_eq(session_send(&a, 3, "one", 3, &cause), 0);
	ck_assert_int_eq(session_send(&a, 4, "", 0, &cause), 0);
	memset(big, 'x', sizeof big);
	if (fork() == 0) {	/* a big one, bigger than the socket buffer */
		session_send(&a, 5, big, sizeof big, &cause);
		_exit(0);
	}
	ck_assert_int_eq(session_recv(&b, &kind, &body, &len, &cause), 0);
	ck_assert_uint_eq(kind, 3);
	ck_assert_uint_eq(len, 3);
	ck_assert_int_eq(memcmp(body, "one", 3), 0);
	ck_assert_int_eq(session_recv(&b, &kind, &body, &len, &cause), 0);
	ck_assert_uint_eq(kind, 4);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(session_recv(&b, &kind, &body, &len, &cause), 0);
	ck_assert_uint_eq(kind, 5);
	ck_assert_uint_eq(len, sizeof big);
	ck_assert_int_eq(memcmp(body, big, sizeof big), 0);
	wait(NULL);
	/* over the limit: refused at the sender */
	ck_assert_int_eq(session_send(&a, 5, big, sizeof big + 1, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "over the limit"));
	free(cause);
	/* the peer closing between messages */
	close(sv[0]);
	cause = NULL;
	ck_assert_int_eq(session_recv(&b, &kind, &body, &len, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "closed"));
	free(cause);
	session_free(&a);
	session_free(&b);
	close(sv[1]);
}
END_TEST

/* Capture what a sender writes, to replay, reorder or corrupt it. */
static size_t
session_capture(const uint8_t *key, int n, uint8_t *out, size_t *ends)
{
	struct session	 a;
	char		*cause, msg[16];
	int		 p[2], i;
	size_t		 len = 0;
	ssize_t		 r;

	ck_assert_int_eq(pipe(p), 0);
	session_init(&a, p[1], key, 1024);
	for (i = 0; i < n; i++) {
		snprintf(msg, sizeof msg, "msg%d", i);
		ck_assert_int_eq(session_send(&a, 1, msg, strlen(msg), &cause),
		    0);
		r = read(p[0], out + len, 4096);
		ck_assert_int_gt(r, 0);
		len += r;
		ends[i] = len;
	}
	session_free(&a);
	close(p[0]);
	close(p[1]);
	return len;
}

static int
session_feed(const uint8_t *buf, size_t len, const uint8_t *key, int *got,
    char **cause)
{
	struct session	 b;
	const uint8_t	*body;
	size_t		 blen, i;
	uint16_t	 kind;
	int		 p[2], rc = 0;

	*got = 0;
	*cause = NULL;
	ck_assert_int_eq(pipe(p), 0);
	session_init(&b, p[0], key, 1024);
	/* one byte at a time: framing must not depend on read sizes */
	for (i = 0; i < len && rc == 0; i++) {
		ck_assert_int_eq(write(p[1], buf + i, 1), 1);
		ck_assert_int_eq(session_fill(&b, cause), 1);
		while ((rc = session_next(&b, &kind, &body, &blen,
		    cause)) == 1)
			(*got)++;
	}
	session_free(&b);
	close(p[0]);
	close(p[1]);
	return rc;
}

START_TEST(test_session_hostile)
{
	uint8_t	 buf[4096], bad[4096], other[SESSION_KEY_LEN];
	size_t	 ends[3], len, first;
	char	*cause;
	int	 got;

	len = session_capture(skey, 3, buf, ends);
	ck_assert_int_eq(session_feed(buf, len, skey, &got, &cause), 0);
	ck_assert_int_eq(got, 3);

	/* replayed: message 1 twice */
	first = ends[0];
	memcpy(bad, buf, first);
	memcpy(bad + first, buf, first);
	ck_assert_int_eq(session_feed(bad, 2 * first, skey, &got, &cause), -1);
	ck_assert_int_eq(got, 1);
	ck_assert_ptr_nonnull(strstr(cause, "out of order"));
	free(cause);

	/* dropped: message 2 missing */
	memcpy(bad, buf, first);
	memcpy(bad + first, buf + ends[1], len - ends[1]);
	ck_assert_int_eq(session_feed(bad, first + len - ends[1], skey, &got,
	    &cause), -1);
	ck_assert_int_eq(got, 1);
	free(cause);

	/* a flipped bit in the body */
	memcpy(bad, buf, len);
	bad[ends[1] - FRAME_MAC - 1] ^= 4;
	ck_assert_int_eq(session_feed(bad, len, skey, &got, &cause), -1);
	ck_assert_int_eq(got, 1);
	ck_assert_ptr_nonnull(strstr(cause, "bad MAC"));
	free(cause);

	/* another session's key */
	memcpy(other, skey, sizeof other);
	other[0] ^= 1;
	ck_assert_int_eq(session_feed(buf, len, other, &got, &cause), -1);
	ck_assert_int_eq(got, 0);
	free(cause);

	/* a length far over the limit is refused before it is buffered */
	memcpy(bad, buf, len);
	bad[8] = 0x7f;
	ck_assert_int_eq(session_feed(bad, len, skey, &got, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "over the limit"));
	free(cause);
}
END_TEST

START_TEST(test_session_derive)
{
	struct cluster_key	ck = { .bytes = "cluster key 0123", .len = 16 };
	uint8_t			nh[SESSION_NONCE_LEN] = "home nonce 01234";
	uint8_t			nr[SESSION_NONCE_LEN] = "remote nonce 012";
	uint8_t			k1[SESSION_KEY_LEN], k2[SESSION_KEY_LEN];

	session_derive(&ck, nh, nr, 1, 2, k1);
	session_derive(&ck, nh, nr, 1, 2, k2);
	ck_assert_int_eq(memcmp(k1, k2, sizeof k1), 0);
	session_derive(&ck, nh, nr, 2, 1, k2);
	ck_assert_int_ne(memcmp(k1, k2, sizeof k1), 0);
	nr[0] ^= 1;
	session_derive(&ck, nh, nr, 1, 2, k2);
	ck_assert_int_ne(memcmp(k1, k2, sizeof k1), 0);
	ck.bytes[0] ^= 1;
	nr[0] ^= 1;
	session_derive(&ck, nh, nr, 1, 2, k2);
	ck_assert_int_ne(memcmp(k1, k2, sizeof k1), 0);
}
END_TEST

/* Render a parsed config the way the golden files spell it. */
static char *
conf_dump(const struct cluster_conf *c)
{
	char	*out, *tmp;
	size_t	 i;

	xasprintf(&out, "port %u\ninterval %llums\ntimeout %llums\n"
	    "window %u\nspeed %u\nself %u\nkey %s\nsocket %s\n"
	    "guests %u-%u\npolicy %s\n", c->port,
	    (unsigned long long)c->interval_ms,
	    (unsigned long long)c->timeout_ms, c->window, c->speed, c->self,
	    c->key_path, c->socket_path, (unsigned)c->guest_uid_first,
	    (unsigned)c->guest_uid_last, c->policy_path);
	for (i = 0; i < c->nnodes; i++) {
		xasprintf(&tmp, "%snode %u %s\n", out, c->nodes[i].id,
		    c->nodes[i].addr);
		free(out);
		out = tmp;
	}
	return out;
}

static char *
slurp(const char *path)
{
	FILE	*f = fopen(path, "r");
	char	*buf = xcalloc(1, 65536);

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fread(buf, 1, 65535, f);
	fclose(f);
	return buf;
}

/* Each tests/conf/NAME.conf has NAME.expect: the dump, or the error. */
START_TEST(test_conf_golden)
{
	DIR			*d;
	struct dirent		*de;
	struct cluster_conf	*c;
	char			 path[512], expect[512], *want, *got, *cause;
	size_t			 len;
	int			 n = 0;

	ck_assert_ptr_nonnull(d = opendir(CONF_DIR));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", CONF_DIR, de->d_name);
		snprintf(expect, sizeof expect, "%s/%.*s.expect", CONF_DIR,
		    (int)(len - 5), de->d_name);
		want = slurp(expect);
		cause = NULL;
		c = conf_load(path, &cause);
		if (strncmp(de->d_name, "good-", 5) == 0) {
			ck_assert_msg(c != NULL, "%s: %s", path, cause);
			got = conf_dump(c);
		} else {
			ck_assert_msg(c == NULL, "%s parsed but should not",
			    path);
			xasprintf(&got, "%s\n", cause);
		}
		ck_assert_msg(strcmp(got, want) == 0,
		    "%s:\n--- got\n%s--- expected\n%s", path, got, want);
		free(got);
		free(want);
		free(cause);
		conf_free(c);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 10);
}
END_TEST

static void	appendf(char **, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static void
appendf(char **out, const char *fmt, ...)
{
	va_list	 ap;
	char	*add, *tmp;

	va_start(ap, fmt);
	xvasprintf(&add, fmt, ap);
	va_end(ap);
	xasprintf(&tmp, "%s%s", *out == NULL ? "" : *out, add);
	free(*out);
	free(add);
	*out = tmp;
}

static void
policy_dump_nodes(char **out, const struct policy_nodes *n)
{
	size_t	i;

	if (n->all) {
		appendf(out, "all");
		return;
	}
	for (i = 0; i < n->n; i++) {
		appendf(out, "%s%u", i == 0 ? "" : ",", n->r[i].first);
		if (n->r[i].last != n->r[i].first)
			appendf(out, "-%u", n->r[i].last);
	}
}

static void
policy_dump_limit(char **out, const char *key, uint32_t v)
{
	if (v == POLICY_NO_LIMIT)
		appendf(out, " %s unlimited", key);
	else
		appendf(out, " %s %u", key, v);
}

static void
policy_dump_rule(char **out, const char *what, const struct policy_rule *r)
{
	appendf(out, "%s nodes ", what);
	policy_dump_nodes(out, &r->nodes);
	policy_dump_limit(out, "away", r->max_away);
	appendf(out, " auto %s\n", r->automatic ? "yes" : "no");
}

static void
policy_dump_who(char **out, const char *key, const struct policy_who *w,
    size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		appendf(out, "%s", i == 0 ? " " : ",");
		if (i == 0)
			appendf(out, "%s ", key);
		if (w[i].kind == POLICY_ANYONE)
			appendf(out, "anyone");
		else
			appendf(out, "%s:%s", w[i].kind == POLICY_USER ?
			    "user" : "group", w[i].name);
	}
}

/* Render a parsed policy as a policy file that says everything. */
static char *
policy_dump(const struct policy *pol)
{
	char	*out = NULL, *what;
	size_t	 i;

	policy_dump_rule(&out, "default", &pol->def);
	for (i = 0; i < pol->nusers; i++) {
		xasprintf(&what, "user %s", pol->users[i].name);
		policy_dump_rule(&out, what, &pol->users[i].rule);
		free(what);
	}
	for (i = 0; i < pol->ngroups; i++) {
		xasprintf(&what, "group %s", pol->groups[i].name);
		policy_dump_rule(&out, what, &pol->groups[i].rule);
		free(what);
	}
	for (i = 0; i < pol->nhosts; i++) {
		appendf(&out, "node ");
		policy_dump_nodes(&out, &pol->hosts[i].nodes);
		policy_dump_who(&out, "accept", pol->hosts[i].accept,
		    pol->hosts[i].naccept);
		policy_dump_who(&out, "refuse", pol->hosts[i].refuse,
		    pol->hosts[i].nrefuse);
		policy_dump_limit(&out, "guests", pol->hosts[i].max_guests);
		appendf(&out, "\n");
	}
	return out;
}

/*
 * Each tests/policy/NAME.policy has NAME.expect: the dump, or the error.
 * A good file's dump must also read back as the same policy.
 */
START_TEST(test_policy_golden)
{
	DIR		*d;
	struct dirent	*de;
	struct policy	*pol, *again;
	char		 path[512], expect[512], *want, *got, *cause, *copy;
	char		*redump;
	size_t		 len;
	int		 good = 0, bad = 0;

	ck_assert_ptr_nonnull(d = opendir(POLICY_DIR));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 8 || strcmp(de->d_name + len - 7, ".policy") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", POLICY_DIR, de->d_name);
		snprintf(expect, sizeof expect, "%s/%.*s.expect", POLICY_DIR,
		    (int)(len - 7), de->d_name);
		want = slurp(expect);
		cause = NULL;
		pol = policy_load(path, &cause);
		if (strncmp(de->d_name, "good-", 5) == 0) {
			ck_assert_msg(pol != NULL, "%s: %s", path, cause);
			ck_assert_str_eq(pol->path, path);
			got = policy_dump(pol);
			copy = tmp_file("again.policy", got, 0644);
			again = policy_load(copy, &cause);
			ck_assert_msg(again != NULL, "%s dumped: %s", path,
			    cause);
			redump = policy_dump(again);
			ck_assert_msg(strcmp(redump, got) == 0,
			    "%s reads back as\n%s", path, redump);
			free(redump);
			free(copy);
			policy_free(again);
			good++;
		} else {
			ck_assert_msg(pol == NULL, "%s parsed but should not",
			    path);
			xasprintf(&got, "%s\n", cause);
			bad++;
		}
		ck_assert_msg(strcmp(got, want) == 0,
		    "%s:\n--- got\n%s--- expected\n%s", path, got, want);
		free(got);
		free(want);
		free(cause);
		policy_free(pol);
	}
	closedir(d);
	ck_assert_int_ge(good, 3);
	ck_assert_int_ge(bad, 20);
}
END_TEST

START_TEST(test_policy_default)
{
	struct policy	*pol;
	char		*cause = NULL, *path, *want;

	xasprintf(&path, "%s/none.policy", tmpdir);
	ck_assert_ptr_null(policy_load(path, &cause));
	xasprintf(&want, "%s: No such file or directory", path);
	ck_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	pol = policy_default();
	ck_assert_ptr_null(pol->path);
	ck_assert_int_eq(pol->def.nodes.all, 1);
	ck_assert_uint_eq(pol->def.max_away, POLICY_NO_LIMIT);
	ck_assert_int_eq(pol->def.automatic, 1);
	ck_assert_uint_eq(pol->nusers + pol->ngroups + pol->nhosts, 0);
	ck_assert_ptr_eq(policy_rule(pol, "root", NULL, 0), &pol->def);
	ck_assert_int_eq(policy_accepts(pol, 1, "root", NULL, 0,
	    POLICY_NO_LIMIT - 1, NULL), 1);
	policy_free(pol);
	policy_free(NULL);
}
END_TEST

START_TEST(test_policy_has_node)
{
	struct policy_range	r[] = { { 1, 2 }, { 5, 5 },
				    { 4294967290U, 4294967294U } };
	struct policy_nodes	n = { .all = 0, .r = r, .n = nitems(r) };
	struct policy_nodes	all = { .all = 1 };

	ck_assert_int_eq(policy_has_node(&n, 1), 1);
	ck_assert_int_eq(policy_has_node(&n, 2), 1);
	ck_assert_int_eq(policy_has_node(&n, 5), 1);
	ck_assert_int_eq(policy_has_node(&n, 4294967294U), 1);
	ck_assert_int_eq(policy_has_node(&n, 0), 0);
	ck_assert_int_eq(policy_has_node(&n, 3), 0);
	ck_assert_int_eq(policy_has_node(&n, 4), 0);
	ck_assert_int_eq(policy_has_node(&n, 6), 0);
	ck_assert_int_eq(policy_has_node(&n, 4294967289U), 0);
	ck_assert_int_eq(policy_has_node(&all, 77), 1);
	n.n = 0;
	ck_assert_int_eq(policy_has_node(&n, 1), 0);
}
END_TEST

START_TEST(test_policy_rule)
{
	const char *const	 both[] = { "staff", "students" };
	const char *const	 bobs[] = { "users", "staff", "students" };
	const char *const	 other[] = { "users" };
	const struct policy_rule *r;
	struct policy		*pol;
	char			*path, *cause = NULL;

	path = tmp_file("rule.policy",
	    "default nodes 1-4 away 10\n"
	    "group students nodes 5 away 1\n"
	    "group staff nodes 6\n"
	    "user alice nodes 7 auto no\n", 0644);
	pol = policy_load(path, &cause);
	ck_assert_msg(pol != NULL, "%s", cause);

	/* A user line beats any group line. */
	r = policy_rule(pol, "alice", both, nitems(both));
	ck_assert_ptr_eq(r, &pol->users[0].rule);
	ck_assert_int_eq(policy_has_node(&r->nodes, 7), 1);
	ck_assert_int_eq(policy_has_node(&r->nodes, 1), 0);
	ck_assert_uint_eq(r->max_away, 10);
	ck_assert_int_eq(r->automatic, 0);

	/* The first group line in the file, not in the user's list. */
	r = policy_rule(pol, "bob", bobs, nitems(bobs));
	ck_assert_ptr_eq(r, &pol->groups[0].rule);
	ck_assert_uint_eq(r->max_away, 1);
	ck_assert_int_eq(r->automatic, 1);
	r = policy_rule(pol, "bob", bobs + 1, 1);
	ck_assert_ptr_eq(r, &pol->groups[1].rule);
	ck_assert_uint_eq(r->max_away, 10);
	ck_assert_int_eq(policy_has_node(&r->nodes, 6), 1);

	/* Otherwise the default; names match whole. */
	ck_assert_ptr_eq(policy_rule(pol, "carol", other, nitems(other)),
	    &pol->def);
	ck_assert_ptr_eq(policy_rule(pol, "alic", NULL, 0), &pol->def);
	ck_assert_ptr_eq(policy_rule(pol, "alice2", both, 0), &pol->def);
	policy_free(pol);
	free(path);
}
END_TEST

static void
check_accepts(const struct policy *pol, uint32_t self, const char *user,
    const char *group, uint32_t guests_now, const char *want)
{
	const char *const	 groups[] = { "users", group };
	char			*why = (char *)"untouched";
	int			 ok;

	ok = policy_accepts(pol, self, user, groups, group == NULL ? 1 : 2,
	    guests_now, &why);
	if (want == NULL) {
		ck_assert_msg(ok == 1, "node %u refused %s: %s", self, user,
		    why);
		ck_assert_ptr_null(why);
	} else {
		ck_assert_msg(ok == 0, "node %u took %s", self, user);
		ck_assert_str_eq(why, want);
		free(why);
	}
	/* Without a place for the reason, the same answer. */
	ck_assert_int_eq(policy_accepts(pol, self, user, groups,
	    group == NULL ? 1 : 2, guests_now, NULL), ok);
}

START_TEST(test_policy_accepts)
{
	struct policy	*pol;
	char		*path, *cause = NULL;

	path = tmp_file("accepts.policy",
	    "node 3 accept user:alice,group:staff refuse group:students "
	    "guests 8\n"
	    "node 3-5 refuse anyone\n"
	    "node 4 guests 1	# never used: the line above comes first\n"
	    "node 6 guests 1\n"
	    "node 7 accept anyone refuse user:mallory\n", 0644);
	pol = policy_load(path, &cause);
	ck_assert_msg(pol != NULL, "%s", cause);

	/* A refusal beats an acceptance. */
	check_accepts(pol, 3, "alice", "students", 0,
	    "node 3 refuses group students");
	check_accepts(pol, 3, "eve", "students", 0,
	    "node 3 refuses group students");
	check_accepts(pol, 3, "alice", NULL, 0, NULL);
	check_accepts(pol, 3, "bob", "staff", 0, NULL);
	check_accepts(pol, 3, "bob", NULL, 0,
	    "node 3 accepts only listed users and groups");
	check_accepts(pol, 3, "bob", "staf", 0,
	    "node 3 accepts only listed users and groups");

	/* The guest limit counts guests already there. */
	check_accepts(pol, 3, "alice", NULL, 7, NULL);
	check_accepts(pol, 3, "alice", NULL, 8,
	    "node 3 takes at most 8 guests");
	check_accepts(pol, 6, "bob", NULL, 0, NULL);
	check_accepts(pol, 6, "bob", NULL, 1, "node 6 takes at most 1 guest");

	/* The first line about a node decides for it. */
	check_accepts(pol, 4, "alice", "staff", 0, "node 4 refuses anyone");
	check_accepts(pol, 5, "bob", NULL, 0, "node 5 refuses anyone");

	check_accepts(pol, 7, "mallory", "staff", 0,
	    "node 7 refuses user mallory");
	check_accepts(pol, 7, "eve", NULL, 1000, NULL);

	/* No line about a node: it takes anyone, any number. */
	check_accepts(pol, 8, "mallory", "students", POLICY_NO_LIMIT - 1,
	    NULL);
	check_accepts(pol, 2, "mallory", NULL, 0, NULL);
	policy_free(pol);
	free(path);
}
END_TEST

START_TEST(test_parse_numbers)
{
	uint64_t	v;

	ck_assert_int_eq(parse_duration_ms("250ms", &v), 0);
	ck_assert_uint_eq(v, 250);
	ck_assert_int_eq(parse_duration_ms("1.5s", &v), 0);
	ck_assert_uint_eq(v, 1500);
	ck_assert_int_eq(parse_duration_ms("2", &v), 0);
	ck_assert_uint_eq(v, 2000);
	ck_assert_int_eq(parse_duration_ms("0.5m", &v), 0);
	ck_assert_uint_eq(v, 30000);
	ck_assert_int_eq(parse_duration_ms("fast", &v), -1);
	ck_assert_int_eq(parse_duration_ms("1h", &v), -1);
	ck_assert_int_eq(parse_duration_ms("-1s", &v), -1);
	ck_assert_int_eq(parse_uint("42", 1, 100, &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(parse_uint("420", 1, 100, &v), -1);
	ck_assert_int_eq(parse_uint("4x", 1, 100, &v), -1);
	ck_assert_int_eq(parse_uint("-4", 0, 100, &v), -1);
	ck_assert_int_eq(parse_uint("", 0, 100, &v), -1);
	ck_assert_int_eq(parse_size_mb("512", &v), 0);
	ck_assert_uint_eq(v, 512);
	ck_assert_int_eq(parse_size_mb("2G", &v), 0);
	ck_assert_uint_eq(v, 2048);
	ck_assert_int_eq(parse_size_mb("0", &v), -1);
	ck_assert_int_eq(parse_size_mb("12T", &v), -1);
}
END_TEST

static Suite *
lib_suite(void)
{
	Suite	*s = suite_create("lib");
	TCase	*tc;

	tc = tcase_create("crypto");
	tcase_add_test(tc, test_sha256_vectors);
	tcase_add_test(tc, test_hmac_rfc4231);
	suite_add_tcase(s, tc);

	tc = tcase_create("key");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_key_load);
	tcase_add_test(tc, test_key_generate);
	suite_add_tcase(s, tc);

	tc = tcase_create("frame");
	tcase_add_test(tc, test_frame_roundtrip);
	tcase_add_test(tc, test_frame_hostile);
	tcase_add_test(tc, test_stream);
	suite_add_tcase(s, tc);

	tc = tcase_create("session");
	tcase_add_test(tc, test_session_roundtrip);
	tcase_add_test(tc, test_session_hostile);
	tcase_add_test(tc, test_session_derive);
	suite_add_tcase(s, tc);

	tc = tcase_create("conf");
	tcase_add_test(tc, test_conf_golden);
	tcase_add_test(tc, test_parse_numbers);
	suite_add_tcase(s, tc);

	tc = tcase_create("policy");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_policy_golden);
	tcase_add_test(tc, test_policy_default);
	tcase_add_test(tc, test_policy_has_node);
	tcase_add_test(tc, test_policy_rule);
	tcase_add_test(tc, test_policy_accepts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(lib_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
