/*
 * The cryptography osmosis uses, from OpenSSL's libcrypto 3: HMAC-SHA256
 * (RFC 2104) for datagrams and handshakes between nodes, HKDF-SHA256
 * (RFC 5869) for session keys, AES-256-GCM for sessions, SHA-256 for the
 * identity of a mapped file's content (filehash.c). This is the only
 * file that calls libcrypto: the rest of the tree sees plain functions.
 *
 * libcrypto fails here only when it cannot allocate or its default
 * provider lacks an algorithm (a broken installation): both are fatal, as
 * running out of memory is everywhere else (lib/xmalloc.c).
 */
#include <sys/uio.h>

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "osm.h"

/*
 * Each algorithm is fetched once, when first used: a fetch builds every
 * method of its kind that the provider has, which costs more than many
 * messages (AES-256-GCM: 0.4 ms here), and an agent needs only the
 * cipher. The system's openssl.cnf is not read: the algorithms are fixed
 * (Debian's file configures nothing for them), and reading it costs every
 * agent another 0.35 ms before its first frame.
 */
static pthread_once_t	 crypto_lib_once = PTHREAD_ONCE_INIT;
static pthread_once_t	 crypto_hmac_once = PTHREAD_ONCE_INIT;
static pthread_once_t	 crypto_hkdf_once = PTHREAD_ONCE_INIT;
static pthread_once_t	 crypto_gcm_once = PTHREAD_ONCE_INIT;
static pthread_once_t	 crypto_sha256_once = PTHREAD_ONCE_INIT;
static EVP_MAC_CTX	*crypto_hmac_proto;	/* HMAC with SHA256 set */
static EVP_KDF		*crypto_hkdf_kdf;
static EVP_CIPHER	*crypto_gcm;
static EVP_MD		*crypto_sha256_md;

struct crypto_hash {
	EVP_MD_CTX	*ctx;
};

struct crypto_aead {
	EVP_CIPHER_CTX	*ctx;
	int		 encrypt;
};

static void
crypto_lib_init(void)
{
	if (OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
		fatalx("libcrypto: cannot initialise");
}

static void
crypto_hmac_init(void)
{
	OSSL_PARAM	 params[2];
	EVP_MAC		*mac;

	pthread_once(&crypto_lib_once, crypto_lib_init);
	if ((mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL)) == NULL ||
	    (crypto_hmac_proto = EVP_MAC_CTX_new(mac)) == NULL)
		fatalx("libcrypto: no HMAC");
	EVP_MAC_free(mac);	/* the context holds its own reference */
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_CTX_set_params(crypto_hmac_proto, params) != 1)
		fatalx("libcrypto: no HMAC-SHA256");
}

static void
crypto_hkdf_init(void)
{
	pthread_once(&crypto_lib_once, crypto_lib_init);
	if ((crypto_hkdf_kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF,
	    NULL)) == NULL)
		fatalx("libcrypto: no HKDF");
}

static void
crypto_gcm_init(void)
{
	pthread_once(&crypto_lib_once, crypto_lib_init);
	if ((crypto_gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL)) == NULL)
		fatalx("libcrypto: no AES-256-GCM");
}

static void
crypto_sha256_init(void)
{
	pthread_once(&crypto_lib_once, crypto_lib_init);
	if ((crypto_sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		fatalx("libcrypto: no SHA-256");
}

/* A SHA-256 over what is given to crypto_hash_update, in pieces. */
struct crypto_hash *
crypto_hash_new(void)
{
	struct crypto_hash	*h;

	pthread_once(&crypto_sha256_once, crypto_sha256_init);
	h = xcalloc(1, sizeof *h);
	if ((h->ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex2(h->ctx, crypto_sha256_md, NULL) != 1)
		fatalx("libcrypto: SHA-256 set-up failed");
	return h;
}

void
crypto_hash_update(struct crypto_hash *h, const void *data, size_t len)
{
	if (EVP_DigestUpdate(h->ctx, data, len) != 1)
		fatalx("libcrypto: SHA-256 failed");
}

/* The digest of everything given, into out; frees h. */
void
crypto_hash_final(struct crypto_hash *h, uint8_t out[CRYPTO_HASH_LEN])
{
	unsigned int	outlen;

	if (EVP_DigestFinal_ex(h->ctx, out, &outlen) != 1 ||
	    outlen != CRYPTO_HASH_LEN)
		fatalx("libcrypto: SHA-256 failed");
	crypto_hash_free(h);
}

void
crypto_hash_free(struct crypto_hash *h)
{
	if (h == NULL)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void
crypto_hmac(const uint8_t *key, size_t keylen, const void *data, size_t len,
    uint8_t out[CRYPTO_HMAC_LEN])
{
	EVP_MAC_CTX	*ctx;
	size_t		 outlen;

	pthread_once(&crypto_hmac_once, crypto_hmac_init);
	if ((ctx = EVP_MAC_CTX_dup(crypto_hmac_proto)) == NULL ||
	    EVP_MAC_init(ctx, key, keylen, NULL) != 1 ||
	    EVP_MAC_update(ctx, data, len) != 1 ||
	    EVP_MAC_final(ctx, out, &outlen, CRYPTO_HMAC_LEN) != 1 ||
	    outlen != CRYPTO_HMAC_LEN)
		fatalx("libcrypto: HMAC-SHA256 failed");
	EVP_MAC_CTX_free(ctx);
}

/*
 * HKDF-SHA256, extract then expand: outlen bytes (at most 255 * 32) from
 * the input key material under salt and info. An empty salt is HashLen
 * zeroes, as RFC 5869 says.
 */
void
crypto_hkdf(const uint8_t *salt, size_t saltlen, const uint8_t *ikm,
    size_t ikmlen, const uint8_t *info, size_t infolen, uint8_t *out,
    size_t outlen)
{
	static const uint8_t	 zero[CRYPTO_HMAC_LEN];
	EVP_KDF_CTX		*ctx;
	OSSL_PARAM		 params[5], *p = params;

	pthread_once(&crypto_hkdf_once, crypto_hkdf_init);
	if (saltlen == 0) {
		salt = zero;
		saltlen = sizeof zero;
	}
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	    (void *)ikm, ikmlen);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
	    (void *)salt, saltlen);
	if (infolen > 0)
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
		    (void *)info, infolen);
	*p = OSSL_PARAM_construct_end();
	if ((ctx = EVP_KDF_CTX_new(crypto_hkdf_kdf)) == NULL ||
	    EVP_KDF_derive(ctx, out, outlen, params) != 1)
		fatalx("libcrypto: HKDF-SHA256 failed");
	EVP_KDF_CTX_free(ctx);
}

/* An AES-256-GCM context under key, for sealing or for opening. */
struct crypto_aead *
crypto_aead_new(const uint8_t key[CRYPTO_KEY_LEN], int encrypt)
{
	struct crypto_aead	*a;

	pthread_once(&crypto_gcm_once, crypto_gcm_init);
	a = xcalloc(1, sizeof *a);
	a->encrypt = encrypt;
	/* The IV's length is GCM's default, 96 bits. */
	if ((a->ctx = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_CipherInit_ex2(a->ctx, crypto_gcm, key, NULL, encrypt,
	    NULL) != 1)
		fatalx("libcrypto: AES-256-GCM set-up failed");
	return a;
}

/*
 * Fetch AES-256-GCM now, for a session to come: an agent that waits
 * (a spare guest agent, a deputy while mosd opens its session) has it
 * fetched when the session starts.
 */
void
crypto_aead_prepare(void)
{
	pthread_once(&crypto_gcm_once, crypto_gcm_init);
}

void
crypto_aead_free(struct crypto_aead *a)
{
	if (a == NULL)
		return;
	EVP_CIPHER_CTX_free(a->ctx);	/* clears the key schedule */
	free(a);
}

/* Pieces of at most INT_MAX bytes: EVP_CipherUpdate counts in int. */
static int
crypto_aead_update(struct crypto_aead *a, uint8_t *out, const uint8_t *in,
    size_t len)
{
	size_t	n;
	int	outl;

	while (len > 0) {
		n = len > INT_MAX / 2 ? INT_MAX / 2 : len;
		if (EVP_CipherUpdate(a->ctx, out, &outl, in, (int)n) != 1 ||
		    (size_t)outl != n)
			return -1;
		if (out != NULL)
			out += n;
		in += n;
		len -= n;
	}
	return 0;
}

/*
 * Encrypt len bytes of in into out (which may be in) under the 96-bit
 * iv, authenticating them and aad; the tag goes to tag. The caller makes
 * each iv unique under the key. crypto_sealv seals n pieces as one
 * message, into out (their total length).
 */
void
crypto_sealv(struct crypto_aead *a, const uint8_t iv[CRYPTO_IV_LEN],
    const void *aad, size_t aadlen, const struct iovec *iov, int n,
    uint8_t *out, uint8_t tag[CRYPTO_TAG_LEN])
{
	int	outl, i;

	if (!a->encrypt ||
	    EVP_CipherInit_ex2(a->ctx, NULL, NULL, iv, 1, NULL) != 1 ||
	    crypto_aead_update(a, NULL, aad, aadlen) == -1)
		fatalx("libcrypto: AES-256-GCM sealing failed");
	for (i = 0; i < n; i++) {
		if (crypto_aead_update(a, out, iov[i].iov_base,
		    iov[i].iov_len) == -1)
			fatalx("libcrypto: AES-256-GCM sealing failed");
		out += iov[i].iov_len;
	}
	if (EVP_CipherFinal_ex(a->ctx, out, &outl) != 1 || outl != 0 ||
	    EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_GCM_GET_TAG, CRYPTO_TAG_LEN,
	    tag) != 1)
		fatalx("libcrypto: AES-256-GCM sealing failed");
}

void
crypto_seal(struct crypto_aead *a, const uint8_t iv[CRYPTO_IV_LEN],
    const void *aad, size_t aadlen, const void *in, size_t len,
    uint8_t *out, uint8_t tag[CRYPTO_TAG_LEN])
{
	struct iovec	iov = { (void *)in, len };

	crypto_sealv(a, iv, aad, aadlen, &iov, 1, out, tag);
}

/*
 * Decrypt and check what crypto_seal made: 0 with the plaintext in out
 * (which may be in), -1 if any of it, aad, iv or the key is not what was
 * sealed; out then holds nothing to use.
 */
int
crypto_open(struct crypto_aead *a, const uint8_t iv[CRYPTO_IV_LEN],
    const void *aad, size_t aadlen, const uint8_t *in, size_t len,
    uint8_t *out, const uint8_t tag[CRYPTO_TAG_LEN])
{
	int	outl;

	if (a->encrypt ||
	    EVP_CipherInit_ex2(a->ctx, NULL, NULL, iv, 0, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_GCM_SET_TAG, CRYPTO_TAG_LEN,
	    (void *)tag) != 1)
		fatalx("libcrypto: AES-256-GCM opening failed");
	if (crypto_aead_update(a, NULL, aad, aadlen) == -1 ||
	    crypto_aead_update(a, out, in, len) == -1 ||
	    EVP_CipherFinal_ex(a->ctx, out + len, &outl) != 1)
		return -1;
	return 0;
}

/* Compare without leaking where the first difference is: 0 if equal. */
int
timingsafe_memcmp(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) != 0;
}
