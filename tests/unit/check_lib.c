/*
 * Check suite for lib/: keys, framing, streams, files written whole;
 * crypto and sessions are in check_lib-crypto.c, config and policy
 * parsing in check_lib-conf.c, the log limits in check_lib-log.c, the
 * JSON documents in check_lib-json.c.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "check_lib.h"

char tmpdir[] = "/tmp/check_lib.XXXXXX";

void
tmp_setup(void)
{
	strcpy(tmpdir, "/tmp/check_lib.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

void
tmp_teardown(void)
{
	char	cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

char *
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

/*
 * The datagram format is the one older nodes speak (computed with
 * Python's hmac module): gossip and handshakes between the two work.
 */
START_TEST(test_frame_format)
{
	uint8_t	buf[256];
	char	out[2 * sizeof buf + 1];
	size_t	n, i;

	n = frame_pack(7, "hello", 5, &test_key, buf, sizeof buf);
	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", buf[i]);
	ck_assert_str_eq(out, "4f534d47000100070000000568656c6c6f"
	    "69281a720fba73375170703adae59144db88d20aad5aefa4f877aab0658f272c");
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

/* --- files written whole (atomic.c) ------------------------------------ */

/* The names in tmpdir, sorted, space-separated: what a test left. */
static char *
tmp_names(void)
{
	struct dirent	**de;
	char		 *out = xstrdup(""), *tmp;
	int		  n, i;

	n = scandir(tmpdir, &de, NULL, alphasort);
	ck_assert_int_ge(n, 0);
	for (i = 0; i < n; i++) {
		if (de[i]->d_name[0] != '.') {
			xasprintf(&tmp, "%s%s%s", out, *out == '\0' ? "" : " ",
			    de[i]->d_name);
			free(out);
			out = tmp;
		}
		free(de[i]);
	}
	free(de);
	return out;
}

static void
tmp_read(const char *path, char *buf, size_t size)
{
	ck_assert_int_eq(read_file_str(path, buf, size), 0);
}

START_TEST(test_atomic_commit)
{
	struct atomic_file	 af;
	char			*path, *cause = NULL, *names, buf[64];
	int			 fd;

	path = tmp_file("image", "old", 0644);
	fd = atomic_create(&af, path, &cause);
	ck_assert_msg(fd >= 0, "%s", cause);
	ck_assert_int_eq(af.fd, fd);
	ck_assert_str_eq(af.path, path);
	ck_assert_int_eq(strncmp(af.tmp, path, strlen(path)), 0);
	ck_assert_int_eq(strncmp(af.tmp + strlen(path), ".tmp.", 5), 0);
	ck_assert_int_eq(write_all(fd, "new", 3), 0);
	/* until the commit, the name holds the old file, whole */
	tmp_read(path, buf, sizeof buf);
	ck_assert_str_eq(buf, "old");
	ck_assert_int_eq(atomic_commit(&af, 1, &cause), 0);
	ck_assert_ptr_null(cause);
	ck_assert_ptr_null(af.path);
	ck_assert_ptr_null(af.tmp);
	ck_assert_int_eq(af.fd, -1);
	tmp_read(path, buf, sizeof buf);
	ck_assert_str_eq(buf, "new");
	ck_assert_str_eq(names = tmp_names(), "image");
	free(names);
	free(path);
}
END_TEST

START_TEST(test_atomic_abort)
{
	struct atomic_file	 af;
	char			*path, *cause = NULL, *names, buf[64];

	/* nothing there before: nothing there after */
	xasprintf(&path, "%s/none", tmpdir);
	ck_assert_int_ge(atomic_create(&af, path, &cause), 0);
	ck_assert_int_eq(write_all(af.fd, "half", 4), 0);
	ck_assert_int_eq(atomic_commit(&af, 0, &cause), -1);
	ck_assert_ptr_null(cause);
	ck_assert_ptr_null(af.path);
	ck_assert_str_eq(names = tmp_names(), "");
	free(names);
	free(path);

	/* the file before stays as it was; the caller's reason too */
	path = tmp_file("image", "old", 0644);
	ck_assert_int_ge(atomic_create(&af, path, &cause), 0);
	ck_assert_int_eq(write_all(af.fd, "half", 4), 0);
	cause = xstrdup("the dump failed");
	ck_assert_int_eq(atomic_commit(&af, 0, &cause), -1);
	ck_assert_str_eq(cause, "the dump failed");
	free(cause);
	tmp_read(path, buf, sizeof buf);
	ck_assert_str_eq(buf, "old");
	ck_assert_str_eq(names = tmp_names(), "image");
	free(names);
	free(path);
}
END_TEST

START_TEST(test_atomic_fail)
{
	struct atomic_file	 af;
	char			*path, *cause = NULL, *names, *want, *tmp;

	/* no directory to put it in: the temporary name is the culprit */
	xasprintf(&path, "%s/missing/image", tmpdir);
	ck_assert_int_eq(atomic_create(&af, path, &cause), -1);
	xasprintf(&want, "%s.tmp.", path);
	ck_assert_msg(strncmp(cause, want, strlen(want)) == 0, "%s", cause);
	ck_assert_ptr_nonnull(strstr(cause, ": No such file or directory"));
	free(want);
	free(cause);
	cause = NULL;
	free(path);

	/* the rename fails: a directory has the name */
	xasprintf(&path, "%s/image", tmpdir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	free(tmp_file("image/x", "", 0644));
	ck_assert_int_ge(atomic_create(&af, path, &cause), 0);
	tmp = xstrdup(af.tmp);
	ck_assert_int_eq(atomic_commit(&af, 1, &cause), -1);
	xasprintf(&want, "rename %s to %s: Is a directory", tmp, path);
	ck_assert_str_eq(cause, want);
	free(want);
	free(tmp);
	free(cause);
	cause = NULL;
	ck_assert_str_eq(names = tmp_names(), "image");
	free(names);
	free(path);

	/* the flush fails (here: its descriptor is gone) */
	xasprintf(&path, "%s/other", tmpdir);
	ck_assert_int_ge(atomic_create(&af, path, &cause), 0);
	close(af.fd);
	ck_assert_int_eq(atomic_commit(&af, 1, &cause), -1);
	xasprintf(&want, "%s: Bad file descriptor", path);
	ck_assert_str_eq(cause, want);
	free(want);
	free(cause);
	ck_assert_str_eq(names = tmp_names(), "image");
	free(names);
	free(path);
}
END_TEST

/* The CPU time /proc says a process used is the time it used. */
START_TEST(test_proc_cpu)
{
	struct timespec	 ts;
	uint64_t	 u, s, ns;
	volatile long	 x = 0;

	do {
		x++;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec < 1 && ts.tv_nsec < 300000000);
	ck_assert_int_eq(proc_cpu_ns(getpid(), &u, &s), 0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	/* to the nanosecond: a clock continued from it never goes back */
	ck_assert_msg(u + s <= ns && u + s + 1000000 >= ns,
	    "/proc says %llu + %llu ns, the clock %llu",
	    (unsigned long long)u, (unsigned long long)s,
	    (unsigned long long)ns);
}
END_TEST

static Suite *
lib_suite(void)
{
	Suite	*s = suite_create("lib");
	TCase	*tc;

	tc = tcase_create("key");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_key_load);
	tcase_add_test(tc, test_key_generate);
	suite_add_tcase(s, tc);

	tc = tcase_create("frame");
	tcase_add_test(tc, test_frame_roundtrip);
	tcase_add_test(tc, test_frame_format);
	tcase_add_test(tc, test_frame_hostile);
	tcase_add_test(tc, test_stream);
	suite_add_tcase(s, tc);

	tc = tcase_create("atomic");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_atomic_commit);
	tcase_add_test(tc, test_atomic_abort);
	tcase_add_test(tc, test_atomic_fail);
	suite_add_tcase(s, tc);

	tc = tcase_create("proc");
	tcase_add_test(tc, test_proc_cpu);
	suite_add_tcase(s, tc);

	check_lib_crypto(s);
	check_lib_conf(s);
	check_lib_json(s);
	check_lib_log(s);
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
