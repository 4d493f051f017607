/*
 * check_lib: lib/crypto.c against the published vectors (RFC 4231 for
 * HMAC-SHA256, RFC 5869 for HKDF, the GCM specification's AES-256 cases,
 * FIPS 180-2's for SHA-256 through lib/filehash.c),
 * so that a wrong call of libcrypto is caught; and lib/session.c: its
 * keys, its frames byte for byte, and every way a stream can be forged.
 * The expected session bytes were computed apart from this code, with
 * Python's hmac and cryptography modules, from the layout docs/REMOTE.md
 * gives.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "check_lib.h"

static void
hex(const uint8_t *p, size_t n, char *out)
{
	size_t	i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

static size_t
unhex(const char *s, uint8_t *out)
{
	size_t	i, n = strlen(s) / 2;

	for (i = 0; i < n; i++)
		sscanf(s + 2 * i, "%2hhx", &out[i]);
	return n;
}

static void
range(uint8_t *p, int first, int last)
{
	int	i;

	for (i = first; i <= last; i++)
		p[i - first] = i;
}

static void
hmac_is(const uint8_t *key, size_t keylen, const void *data, size_t len,
    const char *want)
{
	uint8_t	mac[CRYPTO_HMAC_LEN];
	char	out[2 * CRYPTO_HMAC_LEN + 1];

	crypto_hmac(key, keylen, data, len, mac);
	hex(mac, sizeof mac, out);
	out[strlen(want)] = '\0';	/* test case 5 is truncated */
	ck_assert_str_eq(out, want);
}

START_TEST(test_hmac_rfc4231)
{
	uint8_t	key[131], data[50];

	memset(key, 0x0b, 20);
	hmac_is(key, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b"
	    "881dc200c9833da726e9376c2e32cff7");
	hmac_is((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
	    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(key, 0xaa, 20);
	memset(data, 0xdd, 50);
	hmac_is(key, 20, data, 50, "773ea91e36800e46854db8ebd09181a7"
	    "2959098b3ef8c122d9635514ced565fe");
	range(key, 1, 25);
	memset(data, 0xcd, 50);
	hmac_is(key, 25, data, 50, "82558a389a443c0ea4cc819899f2083a"
	    "85f0faa3e578f8077a2e3ff46729665b");
	memset(key, 0x0c, 20);
	hmac_is(key, 20, "Test With Truncation", 20,
	    "a3b6167473100ee06e0c796c2955552b");
	/* 6 and 7: a key longer than the block is hashed first */
	memset(key, 0xaa, 131);
	hmac_is(key, 131, "Test Using Larger Than Block-Size Key - Hash Key "
	    "First", 54, "60e431591ee0b67f0d8a26aacbf5b77f"
	    "8e0bc6213728c5140546040f0ee37f54");
	hmac_is(key, 131, "This is a test using a larger than block-size key "
	    "and a larger than block-size data. The key needs to be hashed "
	    "before being used by the HMAC algorithm.", 152,
	    "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}
END_TEST

/* sha256 of size bytes of a file of content, through file_sha256 */
static void
file_hash_is(const void *content, size_t len, uint64_t size,
    const char *want)
{
	FILE	*f = tmpfile();
	uint8_t	 sha[CRYPTO_HASH_LEN];
	char	 out[2 * CRYPTO_HASH_LEN + 1], *cause = NULL;

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(content, 1, len, f), len);
	fflush(f);
	if (want == NULL) {
		ck_assert_int_eq(file_sha256(fileno(f), size, sha, &cause), -1);
		ck_assert_str_eq(cause, "the file shrank");
		free(cause);
	} else {
		ck_assert_int_eq(file_sha256(fileno(f), size, sha, &cause), 0);
		hex(sha, sizeof sha, out);
		ck_assert_str_eq(out, want);
	}
	fclose(f);
}

/*
 * SHA-256 by FIPS 180-2's examples, and a million 'a's read in the chunks
 * of file_sha256 (more than one); a file shorter than it is said to be
 * is an error, not the hash of less.
 */
START_TEST(test_sha256_file)
{
	char	*a = malloc(1000000);

	file_hash_is("", 0, 0, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	file_hash_is("abc", 3, 3, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	file_hash_is("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    56, 56, "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1");
	memset(a, 'a', 1000000);
	file_hash_is(a, 1000000, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
	/* the first 3 bytes only, then a file that shrank */
	file_hash_is("abcdef", 6, 3, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	file_hash_is("abc", 3, 4, NULL);
	free(a);
}
END_TEST

START_TEST(test_hkdf_rfc5869)
{
	uint8_t	ikm[80], salt[80], info[80], okm[82];
	char	out[2 * sizeof okm + 1];

	/* test case 1 */
	memset(ikm, 0x0b, 22);
	range(salt, 0x00, 0x0c);
	range(info, 0xf0, 0xf9);
	crypto_hkdf(salt, 13, ikm, 22, info, 10, okm, 42);
	hex(okm, 42, out);
	ck_assert_str_eq(out, "3cb25f25faacd57a90434f64d0362f2a"
	    "2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
	/* test case 2: longer inputs and output */
	range(ikm, 0x00, 0x4f);
	range(salt, 0x60, 0xaf);
	range(info, 0xb0, 0xff);
	crypto_hkdf(salt, 80, ikm, 80, info, 80, okm, 82);
	hex(okm, 82, out);
	ck_assert_str_eq(out, "b11e398dc80327a1c8e7f78c596a4934"
	    "4f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09"
	    "da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f"
	    "1d87");
	/* test case 3: no salt, no info */
	memset(ikm, 0x0b, 22);
	crypto_hkdf(NULL, 0, ikm, 22, NULL, 0, okm, 42);
	hex(okm, 42, out);
	ck_assert_str_eq(out, "8da4e775a563c18f715f802a063c5a31"
	    "b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
}
END_TEST

/* The GCM specification's test cases 13 to 16 (AES-256, 96-bit IV). */
static const struct {
	const char	*key, *iv, *aad, *plain, *cipher, *tag;
} gcm_cases[] = {
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  "000000000000000000000000", "", "", "",
	  "530f8afbc74536b9a963b4f1c4cb738b" },
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  "000000000000000000000000", "", "00000000000000000000000000000000",
	  "cea7403d4d606b6e074ec5d3baf39d18",
	  "d0d1c8a799996bf0265b98b5d48ab919" },
	{ "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
	  "cafebabefacedbaddecaf888", "",
	  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
	  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
	  "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
	  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
	  "b094dac5d93471bdec1a502270e3cc6c" },
	{ "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
	  "cafebabefacedbaddecaf888",
	  "feedfacedeadbeeffeedfacedeadbeefabaddad2",
	  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
	  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
	  "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
	  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
	  "76fc6ece0f4e1768cddf8853bb2d551b" },
};

START_TEST(test_aes_gcm_vectors)
{
	struct crypto_aead	*seal, *open;
	uint8_t			 key[32], iv[12], aad[20], plain[64], buf[64];
	uint8_t			 tag[16];
	size_t			 alen, plen;
	char			 out[129];
	int			 i = _i;

	unhex(gcm_cases[i].key, key);
	unhex(gcm_cases[i].iv, iv);
	alen = unhex(gcm_cases[i].aad, aad);
	plen = unhex(gcm_cases[i].plain, plain);
	seal = crypto_aead_new(key, 1);
	open = crypto_aead_new(key, 0);
	crypto_seal(seal, iv, aad, alen, plain, plen, buf, tag);
	hex(buf, plen, out);
	ck_assert_str_eq(out, gcm_cases[i].cipher);
	hex(tag, 16, out);
	ck_assert_str_eq(out, gcm_cases[i].tag);
	/* the same context again: the IV is set anew for each message */
	memcpy(buf, plain, plen);
	crypto_seal(seal, iv, aad, alen, buf, plen, buf, tag);
	hex(buf, plen, out);
	ck_assert_str_eq(out, gcm_cases[i].cipher);

	/* opened in place; any change to tag, IV or data refused */
	ck_assert_int_eq(crypto_open(open, iv, aad, alen, buf, plen, buf, tag),
	    0);
	ck_assert_int_eq(memcmp(buf, plain, plen), 0);
	crypto_seal(seal, iv, aad, alen, plain, plen, buf, tag);
	tag[15] ^= 1;
	ck_assert_int_eq(crypto_open(open, iv, aad, alen, buf, plen, plain,
	    tag), -1);
	tag[15] ^= 1;
	iv[11] ^= 1;
	ck_assert_int_eq(crypto_open(open, iv, aad, alen, buf, plen, plain,
	    tag), -1);
	iv[11] ^= 1;
	if (plen > 0) {
		buf[0] ^= 0x80;
		ck_assert_int_eq(crypto_open(open, iv, aad, alen, buf, plen,
		    plain, tag), -1);
		buf[0] ^= 0x80;
	}
	ck_assert_int_eq(crypto_open(open, iv, aad, alen, buf, plen, plain,
	    tag), 0);
	crypto_aead_free(seal);
	crypto_aead_free(open);
}
END_TEST

/* --- sessions ---------------------------------------------------------- */

static const struct cluster_key	 ses_ck = { .bytes = "cluster key 0123",
				    .len = 16 };
static const uint8_t		 ses_nh[SESSION_NONCE_LEN] =
				    "home nonce 01234";
static const uint8_t		 ses_nr[SESSION_NONCE_LEN] =
				    "remote nonce 012";

/* Each end's keys, as the two brokers give them to their agents. */
static void
ses_keys(uint8_t *home, uint8_t *remote)
{
	session_derive(&ses_ck, ses_nh, ses_nr, 1, 2, SESSION_HOME, home);
	session_derive(&ses_ck, ses_nh, ses_nr, 1, 2, SESSION_REMOTE, remote);
}

START_TEST(test_session_derive)
{
	struct cluster_key	ck = ses_ck;
	uint8_t			nr[SESSION_NONCE_LEN];
	uint8_t			h[SESSION_KEY_LEN], r[SESSION_KEY_LEN];
	uint8_t			k[SESSION_KEY_LEN];
	const size_t		half = SESSION_KEY_LEN / 2;
	char			out[2 * CRYPTO_KEY_LEN + 1];

	ses_keys(h, r);
	/* one end's sending key and IV prefix are the other's receiving */
	ck_assert_int_eq(memcmp(h, r + half, half), 0);
	ck_assert_int_eq(memcmp(h + half, r, half), 0);
	ck_assert_int_ne(memcmp(h, h + half, CRYPTO_KEY_LEN), 0);
	ck_assert_int_ne(memcmp(h + CRYPTO_KEY_LEN, h + half + CRYPTO_KEY_LEN,
	    SESSION_DIR_LEN), 0);
	/* HKDF-SHA256 as docs/REMOTE.md says (computed with Python) */
	hex(h, CRYPTO_KEY_LEN, out);
	ck_assert_str_eq(out, "c4a828f8a27baa1c2e06ef386775a3e2"
	    "20df34e09a54e73cd6207efc0bbbf54b");
	hex(r, CRYPTO_KEY_LEN, out);
	ck_assert_str_eq(out, "4c10baf337ea0070ea06d624f1d8384d"
	    "2fd3b645875e82270d5c7ae0939c0560");
	ck_assert_int_eq(memcmp(h + CRYPTO_KEY_LEN, "\0\0\0\1", 4), 0);
	ck_assert_int_eq(memcmp(r + CRYPTO_KEY_LEN, "\0\0\0\2", 4), 0);

	/* anything else different, other keys */
	session_derive(&ck, ses_nh, ses_nr, 2, 1, SESSION_HOME, k);
	ck_assert_int_ne(memcmp(h, k, CRYPTO_KEY_LEN), 0);
	memcpy(nr, ses_nr, sizeof nr);
	nr[0] ^= 1;
	session_derive(&ck, ses_nh, nr, 1, 2, SESSION_HOME, k);
	ck_assert_int_ne(memcmp(h, k, CRYPTO_KEY_LEN), 0);
	ck.bytes[0] ^= 1;
	session_derive(&ck, ses_nh, ses_nr, 1, 2, SESSION_HOME, k);
	ck_assert_int_ne(memcmp(h, k, CRYPTO_KEY_LEN), 0);
}
END_TEST

/* Exactly the frames docs/REMOTE.md describes, and nothing in clear. */
START_TEST(test_session_wire)
{
	struct session	 a;
	uint8_t		 h[SESSION_KEY_LEN], r[SESSION_KEY_LEN], buf[256];
	char		*cause, out[2 * sizeof buf + 1];
	int		 p[2];
	ssize_t		 n;

	ses_keys(h, r);
	ck_assert_int_eq(pipe(p), 0);
	session_init(&a, p[1], h, 1024);
	ck_assert_int_eq(session_send(&a, 3, "one", 3, &cause), 0);
	n = read(p[0], buf, sizeof buf);
	ck_assert_int_eq(n, SESSION_OVERHEAD + 3);
	hex(buf, n, out);
	ck_assert_str_eq(out, "4f534d470003000300000003"	/* header */
	    "faa589"					/* "one" */
	    "7a67acf58d1ff1b06ce3ebb36174a09b");	/* tag */
	ck_assert_int_eq(session_send(&a, 4, "", 0, &cause), 0);
	n = read(p[0], buf, sizeof buf);
	hex(buf, n, out);
	ck_assert_str_eq(out, "4f534d470003000400000000"
	    "c6d99fac2023192520c0f2de9f0ca2f4");
	session_free(&a);
	close(p[0]);
	close(p[1]);
}
END_TEST

START_TEST(test_session_roundtrip)
{
	struct session	 a, b;
	uint8_t		 h[SESSION_KEY_LEN], r[SESSION_KEY_LEN];
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	char		*cause = NULL, *big;
	const size_t	 bigsize = 3 * SESSION_CHUNK + 5;
	int		 sv[2];

	ses_keys(h, r);
	big = xmalloc(bigsize + 1);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	session_init(&a, sv[0], h, bigsize);
	session_init(&b, sv[1], r, bigsize);
	ck_assert_int_eq(session_send(&a, 3, "one", 3, &cause), 0);
	ck_assert_int_eq(session_send(&a, 4, "", 0, &cause), 0);
	memset(big, 'x', bigsize);
	if (fork() == 0) {	/* a big one, bigger than the socket buffer */
		session_send(&a, 5, big, bigsize, &cause);
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
	ck_assert_uint_eq(len, bigsize);
	ck_assert_int_eq(memcmp(body, big, bigsize), 0);
	wait(NULL);
	/* over the limit: refused at the sender, the session goes on */
	ck_assert_int_eq(session_send(&a, 5, big, bigsize + 1, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "over the limit"));
	free(cause);
	a.tx_seq++;	/* the child sent message 3 */
	ck_assert_int_eq(session_send(&a, 6, "two", 3, &cause), 0);
	/* and back the other way, under the other key */
	ck_assert_int_eq(session_recv(&b, &kind, &body, &len, &cause), 0);
	ck_assert_uint_eq(kind, 6);
	ck_assert_int_eq(session_send(&b, 7, "back", 4, &cause), 0);
	ck_assert_int_eq(session_recv(&a, &kind, &body, &len, &cause), 0);
	ck_assert_uint_eq(kind, 7);
	ck_assert_int_eq(memcmp(body, "back", 4), 0);
	/* the peer closing between messages */
	close(sv[0]);
	cause = NULL;
	ck_assert_int_eq(session_recv(&b, &kind, &body, &len, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "closed"));
	free(cause);
	session_free(&a);
	session_free(&b);
	close(sv[1]);
	free(big);
}
END_TEST

/*
 * session_take: a message of the kind taken comes in a buffer of its own
 * (the bytes a window keeps, decrypted there), any other where it lies;
 * one that fails authentication is refused and leaves nothing to free.
 */
START_TEST(test_session_take)
{
	struct session	 a, b;
	uint8_t		 h[SESSION_KEY_LEN], r[SESSION_KEY_LEN], *own;
	uint8_t		 frame[64];
	const uint8_t	*body;
	size_t		 len;
	ssize_t		 n;
	uint16_t	 kind;
	char		*cause = NULL;
	int		 sv[2];

	ses_keys(h, r);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	session_init(&a, sv[0], h, 1024);
	session_init(&b, sv[1], r, 1024);
	ck_assert_int_eq(session_send(&a, 3, "one", 3, &cause), 0);
	ck_assert_int_eq(session_send(&a, 5, "taken", 5, &cause), 0);
	ck_assert_int_eq(session_send(&a, 5, "", 0, &cause), 0);
	ck_assert_int_eq(session_send(&a, 3, "two", 3, &cause), 0);
	ck_assert_int_eq(session_fill(&b, &cause), 1);
	ck_assert_int_eq(session_take(&b, 5, &kind, &own, &body, &len,
	    &cause), 1);
	ck_assert_uint_eq(kind, 3);
	ck_assert_ptr_null(own);
	ck_assert(body == b.in + SESSION_HDR);
	ck_assert_int_eq(memcmp(body, "one", 3), 0);
	ck_assert_int_eq(session_take(&b, 5, &kind, &own, &body, &len,
	    &cause), 1);
	ck_assert_uint_eq(kind, 5);
	ck_assert_ptr_nonnull(own);
	ck_assert(body == own);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(memcmp(own, "taken", 5), 0);
	free(own);
	ck_assert_int_eq(session_take(&b, 5, &kind, &own, &body, &len,
	    &cause), 1);
	ck_assert_uint_eq(len, 0);
	ck_assert_ptr_nonnull(own);
	free(own);
	/* session_next takes none */
	ck_assert_int_eq(session_next(&b, &kind, &body, &len, &cause), 1);
	ck_assert_uint_eq(kind, 3);
	ck_assert_int_eq(memcmp(body, "two", 3), 0);
	/* one altered: refused, nothing handed out */
	ck_assert_int_eq(session_send(&a, 5, "bad", 3, &cause), 0);
	n = read(sv[1], frame, sizeof frame);
	ck_assert_int_eq(n, SESSION_OVERHEAD + 3);
	frame[SESSION_HDR + 1] ^= 1;
	ck_assert_int_eq(write(sv[0], frame, n), n);
	ck_assert_int_eq(session_fill(&b, &cause), 1);
	own = (uint8_t *)"x";
	ck_assert_int_eq(session_take(&b, 5, &kind, &own, &body, &len,
	    &cause), -1);
	ck_assert_ptr_null(own);
	ck_assert_ptr_nonnull(strstr(cause, "authentication"));
	free(cause);
	session_free(&a);
	session_free(&b);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/*
 * Frames sent while held wait, sealed, and none reaches the other end
 * until the next one sent without the hold, which takes them with it in
 * order, or session_flush; a large frame does not wait, but goes after
 * those that did; the other end reads them as any.
 */
START_TEST(test_session_hold)
{
	struct session	 a, b;
	uint8_t		 h[SESSION_KEY_LEN], r[SESSION_KEY_LEN];
	const uint8_t	*body;
	const char	*want[] = { "one", "two", "now", "late", "small" };
	static char	 big[SESSION_HELD_WITH];
	size_t		 len, i;
	uint16_t	 kind;
	char		*cause = NULL, c;
	int		 sv[2];

	ses_keys(h, r);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
	    sv), 0);
	session_init(&a, sv[0], h, 2 * SESSION_HELD_WITH);
	session_init(&b, sv[1], r, 2 * SESSION_HELD_WITH);
	session_hold(&a, 1);
	ck_assert_int_eq(session_send(&a, 3, "one", 3, &cause), 0);
	ck_assert_int_eq(session_send(&a, 3, "two", 3, &cause), 0);
	session_hold(&a, 0);
	ck_assert_uint_eq(session_held(&a), 2);
	ck_assert_int_eq(read(sv[1], &c, 1), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(session_send(&a, 4, "now", 3, &cause), 0);
	ck_assert_uint_eq(session_held(&a), 0);
	session_hold(&a, 1);
	ck_assert_int_eq(session_send(&a, 3, "late", 4, &cause), 0);
	session_hold(&a, 0);
	ck_assert_int_eq(session_flush(&a, &cause), 0);
	ck_assert_int_eq(session_flush(&a, &cause), 0);
	ck_assert_uint_eq(a.nheld, 3);
	/* a large one does not wait, but goes after those that did */
	session_hold(&a, 1);
	ck_assert_int_eq(session_send(&a, 3, "small", 5, &cause), 0);
	ck_assert_int_eq(session_send(&a, 5, big, sizeof big, &cause), 0);
	session_hold(&a, 0);
	ck_assert_uint_eq(session_held(&a), 0);
	for (i = 0; i <= nitems(want); i++) {
		while (session_next(&b, &kind, &body, &len, &cause) == 0)
			ck_assert_int_eq(session_fill(&b, &cause), 1);
		if (i == nitems(want)) {
			ck_assert_uint_eq(kind, 5);
			ck_assert_uint_eq(len, sizeof big);
			break;
		}
		ck_assert_uint_eq(kind, i == 2 ? 4 : 3);
		ck_assert_uint_eq(len, strlen(want[i]));
		ck_assert_int_eq(memcmp(body, want[i], len), 0);
	}
	ck_assert_int_eq(read(sv[1], &c, 1), -1);
	/* what waits is bounded: held frames go once they would pass it */
	session_hold(&a, 1);
	for (i = 0; i < 2 * SESSION_HELD_WITH / 1024; i++)
		ck_assert_int_eq(session_send(&a, 3, big, 1000, &cause), 0);
	session_hold(&a, 0);
	ck_assert_uint_le(a.heldlen, SESSION_HELD_WITH);
	ck_assert_int_eq(read(sv[1], &c, 1), 1);
	session_free(&a);
	session_free(&b);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/*
 * An image straight through a session: each write one frame, or several
 * over the limit; read back across frames; viewed in place only where the
 * bytes are all in the frame opened; the end frame after the image.
 */
START_TEST(test_session_image)
{
	struct session		 a, b;
	struct session_image	 wi = { .s = &a, .kind = 8, .end = 9 };
	struct session_image	 ri = { .s = &b, .kind = 8, .end = 9 };
	uint8_t			 h[SESSION_KEY_LEN], r[SESSION_KEY_LEN];
	uint8_t			 big[3000], got[3000], hdr[4] = "hdr!";
	struct iovec		 iov[2] = { { hdr, 4 }, { big, 2000 } };
	const uint8_t		*v;
	char			*cause = NULL;
	size_t			 i;
	int			 sv[2];

	ses_keys(h, r);
	for (i = 0; i < sizeof big; i++)
		big[i] = i * 7;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	session_init(&a, sv[0], h, 2048);
	session_init(&b, sv[1], r, 2048);
	/* one frame of 2004 bytes, then 3000 bytes over two */
	ck_assert_int_eq(session_image_write(&wi, iov, 2, &cause), 0);
	iov[1].iov_len = sizeof big;
	ck_assert_int_eq(session_image_write(&wi, &iov[1], 1, &cause), 0);
	ck_assert_int_eq(session_image_end(&wi, 1, &cause), 0);

	ck_assert_int_eq(session_image_read(&ri, got, 4, &cause), 0);
	ck_assert_int_eq(memcmp(got, "hdr!", 4), 0);
	ck_assert_ptr_null(session_image_view(&ri, 2001));
	v = session_image_view(&ri, 2000);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(memcmp(v, big, 2000), 0);
	/* the frame is used up: the next bytes are in one not yet read */
	ck_assert_ptr_null(session_image_view(&ri, 1));
	ck_assert_int_eq(session_image_read(&ri, got, 10, &cause), 0);
	ck_assert_int_eq(memcmp(got, big, 10), 0);
	/* the rest of the first half in place, the second across frames */
	v = session_image_view(&ri, 2038);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(memcmp(v, big + 10, 2038), 0);
	ck_assert_int_eq(session_image_read(&ri, got, 952, &cause), 0);
	ck_assert_int_eq(memcmp(got, big + 2048, 952), 0);
	ck_assert_int_eq(session_image_end(&ri, 0, &cause), 0);
	/* after the end, nothing more */
	ck_assert_ptr_null(session_image_view(&ri, 1));
	ck_assert_int_eq(session_image_read(&ri, got, 1, &cause), 1);
	session_free(&a);
	session_free(&b);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* The reader's aside: takes a frame of kind 5, answers it on the session. */
static int
aside_answer(void *arg, uint16_t kind, const uint8_t *body, size_t len,
    char **cause)
{
	struct session	*s = arg;

	if (kind != 5 || len != 3 || memcmp(body, "ask", 3) != 0) {
		*cause = strdup("not the frame sent");
		return -1;
	}
	return session_send(s, 6, "ans", 3, cause);
}

/*
 * A frame of another kind between an image's goes to the reader's aside,
 * which may use the session (it answers, the writer reads the answer
 * before it writes on), and the image reads on across it whole; without
 * an aside it stops the image.
 */
START_TEST(test_session_image_aside)
{
	struct session		 a, b;
	struct session_image	 wi = { .s = &a, .kind = 8, .end = 9 };
	struct session_image	 ri = { .s = &b, .kind = 8, .end = 9,
				    .aside = aside_answer, .aside_arg = &b };
	uint8_t			 h[SESSION_KEY_LEN], r[SESSION_KEY_LEN];
	uint8_t			 data[10] = "0123456789", got[10];
	struct iovec		 iov = { data, 5 };
	const uint8_t		*body;
	char			*cause = NULL;
	size_t			 len;
	uint16_t		 kind;
	int			 sv[2];

	ses_keys(h, r);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	session_init(&a, sv[0], h, 2048);
	session_init(&b, sv[1], r, 2048);
	ck_assert_int_eq(session_image_write(&wi, &iov, 1, &cause), 0);
	ck_assert_int_eq(session_send(&a, 5, "ask", 3, &cause), 0);
	iov.iov_base = data + 5;
	ck_assert_int_eq(session_image_write(&wi, &iov, 1, &cause), 0);
	ck_assert_int_eq(session_image_end(&wi, 1, &cause), 0);
	ck_assert_int_eq(session_image_read(&ri, got, 10, &cause), 0);
	ck_assert_int_eq(memcmp(got, data, 10), 0);
	ck_assert_int_eq(session_image_end(&ri, 0, &cause), 0);
	ck_assert_int_eq(session_recv(&a, &kind, &body, &len, &cause), 0);
	ck_assert_int_eq(kind, 6);
	ck_assert_int_eq(len, 3);
	ck_assert_int_eq(memcmp(body, "ans", 3), 0);

	/* no aside: the image stops at the frame, and says its kind */
	memset(&ri, 0, sizeof ri);
	ri.s = &b;
	ri.kind = 8;
	ri.end = 9;
	ck_assert_int_eq(session_send(&a, 5, "ask", 3, &cause), 0);
	ck_assert_int_eq(session_image_read(&ri, got, 1, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "kind 5"));
	free(cause);
	session_free(&a);
	session_free(&b);
	close(sv[0]);
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

/*
 * Feed buf to a receiver under key: how many messages it took (*got),
 * then 0 if it took all, -1 and why if it refused one. Whatever was
 * refused, it keeps refusing.
 */
static int
session_feed(const uint8_t *buf, size_t len, const uint8_t *key, int *got,
    char **cause)
{
	struct session	 b;
	const uint8_t	*body;
	size_t		 blen, i;
	uint16_t	 kind;
	char		*again = NULL;
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
		    cause)) == 1) {
			ck_assert_int_eq(memcmp(body, "msg", 3), 0);
			(*got)++;
		}
	}
	if (rc == -1) {
		ck_assert_int_eq(session_next(&b, &kind, &body, &blen,
		    &again), -1);
		free(again);
	}
	session_free(&b);
	close(p[0]);
	close(p[1]);
	return rc;
}

static void
refused(const uint8_t *buf, size_t len, const uint8_t *key, int want_got,
    const char *why)
{
	char	*cause;
	int	 got;

	ck_assert_int_eq(session_feed(buf, len, key, &got, &cause), -1);
	ck_assert_int_eq(got, want_got);
	ck_assert_ptr_nonnull(cause);
	if (strstr(cause, why) == NULL)
		ck_abort_msg("refused for \"%s\", not for \"%s\"", cause, why);
	free(cause);
}

START_TEST(test_session_hostile)
{
	uint8_t	 h[SESSION_KEY_LEN], r[SESSION_KEY_LEN], other[SESSION_KEY_LEN];
	uint8_t	 buf[4096], bad[4096];
	size_t	 ends[3], len, first, second, i;
	char	*cause;
	int	 got;

	ses_keys(h, r);
	len = session_capture(h, 3, buf, ends);
	ck_assert_int_eq(session_feed(buf, len, r, &got, &cause), 0);
	ck_assert_int_eq(got, 3);
	first = ends[0];
	second = ends[1] - ends[0];

	/* replayed: message 1 twice */
	memcpy(bad, buf, first);
	memcpy(bad + first, buf, first);
	refused(bad, 2 * first, r, 1, "message 2 refused: it fails "
	    "authentication");

	/* dropped: message 2 missing */
	memcpy(bad, buf, first);
	memcpy(bad + first, buf + ends[1], len - ends[1]);
	refused(bad, first + len - ends[1], r, 1, "authentication");

	/* reordered: message 2 first */
	memcpy(bad, buf + first, second);
	memcpy(bad + second, buf, first);
	refused(bad, first + second, r, 0, "message 1 refused");

	/* one flipped ciphertext byte */
	memcpy(bad, buf, len);
	bad[first + SESSION_HDR] ^= 4;
	refused(bad, len, r, 1, "authentication");

	/*
	 * Every single bit of message 2 flipped (header, body or tag): it is
	 * never taken, nor anything after it. A longer length only waits for
	 * more; any other change is refused.
	 */
	for (i = 0; i < second * 8; i++) {
		memcpy(bad, buf, len);
		bad[first + i / 8] ^= 1 << (i % 8);
		if (session_feed(bad, len, r, &got, &cause) == 0)
			ck_assert_msg(i / 8 >= 8 && i / 8 < SESSION_HDR,
			    "bit %zu of message 2 flipped, not refused", i);
		ck_assert_int_eq(got, 1);
		free(cause);
	}

	/* sent back to its sender: the other direction's key refuses it */
	refused(buf, len, h, 0, "authentication");

	/* another session's keys (another nonce, another cluster key) */
	session_derive(&ses_ck, ses_nr, ses_nh, 1, 2, SESSION_REMOTE, other);
	refused(buf, len, other, 0, "authentication");

	/* a frame of the older format (HMAC, in clear): named as such */
	memcpy(bad, buf, len);
	bad[5] = 1;
	refused(bad, len, r, 0, "version 1, where this osmosis speaks 3");
	memcpy(bad, buf, len);
	bad[0] ^= 1;
	refused(bad, len, r, 0, "bad magic");

	/* a length far over the limit is refused before it is buffered */
	memcpy(bad, buf, len);
	bad[8] = 0x7f;
	refused(bad, SESSION_HDR, r, 0, "over the limit");
}
END_TEST

void
check_lib_crypto(Suite *s)
{
	TCase	*tc;

	tc = tcase_create("crypto");
	tcase_add_test(tc, test_hmac_rfc4231);
	tcase_add_test(tc, test_hkdf_rfc5869);
	tcase_add_test(tc, test_sha256_file);
	tcase_add_loop_test(tc, test_aes_gcm_vectors, 0, nitems(gcm_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("session");
	tcase_add_test(tc, test_session_derive);
	tcase_add_test(tc, test_session_wire);
	tcase_add_test(tc, test_session_roundtrip);
	tcase_add_test(tc, test_session_take);
	tcase_add_test(tc, test_session_hold);
	tcase_add_test(tc, test_session_image);
	tcase_add_test(tc, test_session_image_aside);
	tcase_add_test(tc, test_session_hostile);
	suite_add_tcase(s, tc);
}
