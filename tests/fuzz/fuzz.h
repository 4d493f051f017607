/*
 * tests/fuzz/ — libFuzzer targets for every decoder of input that osmosis
 * does not trust: datagrams, handshakes and sessions between nodes,
 * requests on the control socket, forwarded calls and their replies,
 * checkpoint images, and the two configuration files.
 *
 * Each target is one file NAME.c, built into build/fuzz/NAME (make fuzz),
 * that defines fuzz_init(), LLVMFuzzerTestOneInput() and fuzz_seeds().
 * Run with OSM_FUZZ_SEEDS=DIR, a target writes its seed corpus into DIR
 * and exits (make fuzz-seeds fills tests/fuzz/corpus/NAME/ that way).
 *
 * Many inputs are a series of records, each an op byte, a u16 length in
 * network order and that many bytes. What an op means is the target's;
 * most use its low bit to ask the harness to sign or frame the bytes with
 * the key, so that the fuzzer reaches past the MAC to what it protects.
 *
 * Everything a target allocates it frees: LeakSanitizer runs after each
 * input, and fuzz_fd_check() finds leaked descriptors.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "lib/osm.h"

/* The input, consumed from the front; short reads give zeroes. */
struct fuzz_in {
	const uint8_t	*p;
	size_t		 n;
};
uint8_t	 fuzz_u8(struct fuzz_in *in);
uint16_t fuzz_u16(struct fuzz_in *in);
uint64_t fuzz_u64(struct fuzz_in *in);
size_t	 fuzz_take(struct fuzz_in *in, size_t len, const uint8_t **p);
int	 fuzz_record(struct fuzz_in *in, uint8_t *op, const uint8_t **p,
	    size_t *len);

/* Seeds: built in memory, then written into the seed directory. */
struct fuzz_out {
	uint8_t		*p;
	size_t		 n;
	size_t		 size;
};
void	 fuzz_put(struct fuzz_out *o, const void *p, size_t len);
void	 fuzz_put_u8(struct fuzz_out *o, uint8_t v);
void	 fuzz_put_u64(struct fuzz_out *o, uint64_t v);
void	 fuzz_put_record(struct fuzz_out *o, uint8_t op, const void *p,
	    size_t len);
void	 fuzz_put_msg(struct fuzz_out *o, uint8_t op,
	    const ProtobufCMessage *m);
void	 fuzz_put_packed(struct fuzz_out *o, const ProtobufCMessage *m);
void	 fuzz_seed(const char *dir, const char *name, struct fuzz_out *o);
void	 fuzz_seed_file(const char *dir, const char *name, const char *path);
void	 fuzz_seed_dir(const char *dir, const char *src, const char *suffix);

/* The cluster key every target's nodes share. */
const struct cluster_key *fuzz_key(void);

int	 fuzz_memfd(const void *p, size_t len);
int	 fuzz_path(const void *p, size_t len, char *path, size_t size);
void	 fuzz_refused(const char *path, char *cause);
struct cluster_conf *fuzz_conf(const char *text);
int	 fuzz_lowest_fd(void);
void	 fuzz_fd_check(int before);
void	 fuzz_assert_fail(const char *what, const char *file, int line)
	    __attribute__((noreturn));
#define fuzz_assert(e)	((e) ? (void)0 : \
			    fuzz_assert_fail(#e, __FILE__, __LINE__))

/* Each target's. */
void	 fuzz_init(void);
void	 fuzz_seeds(const char *dir);
int	 LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
