/*
 * The home side of a forwarded call, as pure code: the deputy executes
 * the call in the home process P by injection, and this file does the
 * rest.
 *
 *   home_check	  unpack a RemoteCall and refuse anything but a forwardable
 *		  call with bounded, consistent regions and relocations;
 *		  says how much scratch memory the call needs
 *   home_layout  the memory image to write into P's scratch area at base
 *		  and the six register values
 *   home_readback how much of the scratch area to read back after the call
 *   home_reply	  the RemoteReply, from the return value and that memory
 *
 * The deputy needs no knowledge of system calls beyond this. A hostile or
 * broken guest can make P execute only what the table calls forwardable,
 * with pointers only into the scratch area (every pointer argument is
 * relocated, NULL or RMT_FAULT_ADDR): at worst it spoils the scratch area.
 *
 * Signals: kill, tkill, tgkill and rt_sigqueueinfo aimed at the process
 * itself are forwarded like any other call and reach P; the deputy
 * catches the signal in P as it catches any signal sent to P and passes
 * it on to R, before it sends the call's reply, so that R handles it on
 * returning from the call as it would have natively.
 */
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

#define HOME_NULL	"/dev/null"
/* The calls of an open made where R runs, in P (home_open_at_next). */
#define HOME_OA_OPEN	0	/* the open itself */
#define HOME_OA_DUP	1	/* a dup3 to the number, then a close */
#define HOME_OA_NULL	2	/* /dev/null's open, the file gone */
#define HOME_OA_CLOSE	3	/* the close of another number */
#define ALIGN_UP(x)	(((x) + RMT_ALIGN - 1) & ~(uint64_t)(RMT_ALIGN - 1))

/* What the return value lets trimmed out regions carry, in all. */
uint64_t
home_budget(int64_t ret, uint32_t unit)
{
	if (ret <= 0)
		return 0;
	if ((uint64_t)ret > UINT64_MAX / unit)
		return UINT64_MAX;
	return (uint64_t)ret * unit;
}

/*
 * The rule of outputs: a reply carries every in-out region whole, and,
 * unless the return value is an error, every out region, whole or, if
 * trimmed, cut to what remains of the budget. Returns the length region
 * carries, or -1 if none.
 */
int64_t
home_output(int dir, uint64_t size, int trim, int64_t ret, uint64_t *budget)
{
	uint64_t	n;

	if (dir == RMT_INOUT)
		return size;
	if (dir != RMT_OUT || ret < 0)
		return -1;
	if (!trim)
		return size;
	n = size < *budget ? size : *budget;
	*budget -= n;
	return n;
}

static int
home_fail(const struct home_call *hc, char **cause, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
home_fail(const struct home_call *hc, char **cause, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	xasprintf(cause, "%s (seq %llu): %s", hc->name,
	    (unsigned long long)hc->seq, s);
	free(s);
	return -1;
}

static int
home_cmp_slot(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int
home_check_regions(struct home_call *hc, char **cause)
{
	Osm__RemoteCall		*c = hc->call;
	Osm__RemoteRegion	*r;
	uint64_t		 total = 0;
	size_t			 i;

	if (c->n_regions > RMT_REGIONS_MAX)
		return home_fail(hc, cause, "%zu regions", c->n_regions);
	for (i = 0; i < c->n_regions; i++) {
		r = c->regions[i];
		if ((int)r->dir != RMT_IN && (int)r->dir != RMT_OUT &&
		    (int)r->dir != RMT_INOUT)
			return home_fail(hc, cause, "region %zu: bad "
			    "direction %d", i, (int)r->dir);
		if (r->size > RMT_CALL_MAX - total)
			return home_fail(hc, cause, "region %zu: %llu bytes "
			    "is over the limit", i,
			    (unsigned long long)r->size);
		total += r->size;
		if (((int)r->dir == RMT_OUT) == r->has_data)
			return home_fail(hc, cause, "region %zu: data on an "
			    "out region or none on an in region", i);
		if (r->has_data && r->data.len != r->size)
			return home_fail(hc, cause, "region %zu: %zu bytes of "
			    "data for a size of %llu", i, r->data.len,
			    (unsigned long long)r->size);
		if (r->trim && (int)r->dir != RMT_OUT)
			return home_fail(hc, cause, "region %zu: trimmed but "
			    "not out", i);
	}
	return 0;
}

/*
 * A batch of writes (RemoteCall.writes): a write behind of one region,
 * its bytes the writes' lengths added up, none of them empty.
 */
static int
home_check_writes(struct home_call *hc, char **cause)
{
	Osm__RemoteCall	*c = hc->call;
	uint64_t	 total = 0;
	size_t		 i;

	if (c->n_writes == 0)
		return 0;
	if (c->nr != SYS_write || !c->behind || c->n_regions != 1 ||
	    !c->regions[0]->has_data)
		return home_fail(hc, cause, "a batch of writes that is not "
		    "one write behind of one region");
	for (i = 0; i < c->n_writes; i++) {
		if (c->writes[i] == 0)
			return home_fail(hc, cause, "write %zu of a batch is "
			    "empty", i);
		total += c->writes[i];
	}
	if (total != c->regions[0]->size || total != c->args[2])
		return home_fail(hc, cause, "a batch of writes of %llu bytes "
		    "for %llu", (unsigned long long)total,
		    (unsigned long long)c->regions[0]->size);
	return 0;
}

/*
 * An open made where R runs (RemoteCall.open_at): sent behind, an open or
 * an openat of a path, that neither creates nor truncates (that was done
 * where R runs) nor opens anything but a file or a directory by its name.
 */
static int
home_check_open_at(struct home_call *hc, char **cause)
{
	Osm__RemoteCall	*c = hc->call;
	uint64_t	 flags;

	if (!c->has_open_at)
		return 0;
	flags = c->nr == SYS_openat ? c->args[2] : c->args[1];
	if (!c->behind || (c->nr != SYS_open && c->nr != SYS_openat) ||
	    c->want_fd || c->fd_info || !c->has_open_ino || c->open_at < 0 ||
	    (flags & (O_CREAT | O_EXCL | O_TRUNC | O_PATH | O_DIRECTORY)))
		return home_fail(hc, cause, "an open made where the process "
		    "runs that is not one to make here");
	return 0;
}

/*
 * Every region is pointed at exactly once; every pointer is an argument
 * the table calls a pointer, or an aligned 8-byte slot inside an in or
 * in-out region, and no slot or argument holds two pointers.
 */
static int
home_check_relocs(struct home_call *hc, unsigned int pointers, char **cause)
{
	Osm__RemoteCall		*c = hc->call;
	Osm__RemoteReloc	*x;
	Osm__RemoteRegion	*in;
	uint64_t		*slots;
	uint32_t		*targeted;
	unsigned int		 args = 0;
	size_t			 i, nslots = 0;
	int			 rv = -1;

	if (c->n_relocs > RMT_REGIONS_MAX)
		return home_fail(hc, cause, "%zu relocations", c->n_relocs);
	slots = xcalloc(c->n_relocs + 1, sizeof *slots);
	targeted = xcalloc(c->n_regions + 1, sizeof *targeted);
	for (i = 0; i < c->n_relocs; i++) {
		x = c->relocs[i];
		if (x->target >= c->n_regions) {
			home_fail(hc, cause, "relocation %zu: no region %u",
			    i, x->target);
			goto out;
		}
		if (targeted[x->target]++ != 0) {
			home_fail(hc, cause, "region %u pointed at twice",
			    x->target);
			goto out;
		}
		if (x->has_arg == x->has_region) {
			home_fail(hc, cause, "relocation %zu: neither or both "
			    "of argument and region", i);
			goto out;
		}
		if (x->has_arg) {
			if (x->arg >= 6 || !(pointers & (1U << x->arg))) {
				home_fail(hc, cause, "relocation %zu: argument "
				    "%u is not a pointer", i, x->arg);
				goto out;
			}
			if (args & (1U << x->arg)) {
				home_fail(hc, cause, "argument %u relocated "
				    "twice", x->arg);
				goto out;
			}
			args |= 1U << x->arg;
			continue;
		}
		if (x->region >= c->n_regions) {
			home_fail(hc, cause, "relocation %zu: no region %u",
			    i, x->region);
			goto out;
		}
		in = c->regions[x->region];
		if ((int)in->dir == RMT_OUT || x->offset % 8 != 0 ||
		    x->offset > in->size || in->size - x->offset < 8) {
			home_fail(hc, cause, "relocation %zu: offset %llu is "
			    "not a slot of region %u", i,
			    (unsigned long long)x->offset, x->region);
			goto out;
		}
		/* offsets are below RMT_CALL_MAX: region and offset fit */
		slots[nslots++] = (uint64_t)x->region << 32 | x->offset;
	}
	qsort(slots, nslots, sizeof *slots, home_cmp_slot);
	for (i = 1; i < nslots; i++) {
		if (slots[i] == slots[i - 1]) {
			home_fail(hc, cause, "slot %llu of region %u "
			    "relocated twice",
			    (unsigned long long)(slots[i] & 0xffffffff),
			    (unsigned int)(slots[i] >> 32));
			goto out;
		}
	}
	for (i = 0; i < c->n_regions; i++) {
		if (targeted[i] == 0) {
			home_fail(hc, cause, "region %zu is pointed at by "
			    "nothing", i);
			goto out;
		}
	}
	for (i = 0; i < 6; i++) {
		if ((pointers & (1U << i)) && !(args & (1U << i)) &&
		    c->args[i] != 0 && c->args[i] != RMT_FAULT_ADDR) {
			home_fail(hc, cause, "argument %zu is a pointer of "
			    "the remote process (0x%llx)", i,
			    (unsigned long long)c->args[i]);
			goto out;
		}
	}
	rv = 0;
out:
	free(slots);
	free(targeted);
	return rv;
}

/*
 * Places in the scratch area: the regions written before the call first,
 * then the trimmed out regions, whose bytes past what the call returns
 * nobody reads, so that they need not be written (nor zeroed).
 */
static void
home_offsets(struct home_call *hc)
{
	Osm__RemoteCall	*c = hc->call;
	uint64_t	 off = 0;
	size_t		 i;
	int		 pass;

	hc->offsets = xcalloc(c->n_regions + 1, sizeof *hc->offsets);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < c->n_regions; i++) {
			if (c->regions[i]->trim != pass)
				continue;
			hc->offsets[i] = off;
			off = ALIGN_UP(off + c->regions[i]->size);
		}
		if (pass == 0)
			hc->image_len = off;
	}
	/* an open made where R runs may need /dev/null in P, after them */
	if (hc->call->has_open_at) {
		hc->null_off = off;
		hc->image_len = off + sizeof HOME_NULL;
		off = ALIGN_UP(hc->image_len);
	}
	hc->span = off;
}

/*
 * Unpack and check a RemoteCall. self is the home process's pid, which
 * names its own CPU clocks (those the guest must answer itself).
 */
struct home_call *
home_check(const uint8_t *msg, size_t len, pid_t self, char **cause)
{
	struct home_call	*hc;
	struct table_call	 tc;
	Osm__RemoteCall		*c;

	if (len > RMT_MSG_MAX) {
		xasprintf(cause, "call of %zu bytes is over the limit", len);
		return NULL;
	}
	if ((c = osm__remote_call__unpack(NULL, len, msg)) == NULL) {
		xasprintf(cause, "malformed call");
		return NULL;
	}
	hc = xcalloc(1, sizeof *hc);
	hc->call = c;
	hc->seq = c->seq;
	hc->tid = c->has_tid ? (pid_t)c->tid : 0;
	hc->nr = c->nr;
	hc->behind = c->behind;
	hc->fs_free = -1;
	hc->name = "unknown";
	if (c->n_args != 6) {
		home_fail(hc, cause, "%zu arguments", c->n_args);
		goto fail;
	}
	table_resolve(c->nr < TABLE_NR_MAX ? (int)c->nr : -1, c->args, self,
	    &tc);
	hc->name = tc.name;
	if (tc.class != RMT_FORWARD) {
		home_fail(hc, cause, "system call %u is not forwardable "
		    "(%s)", c->nr, table_class_name(tc.class));
		goto fail;
	}
	if (c->trim_unit == 0 || c->trim_unit > 4096) {
		home_fail(hc, cause, "trim unit %u", c->trim_unit);
		goto fail;
	}
	if (home_check_regions(hc, cause) != 0 ||
	    home_check_writes(hc, cause) != 0 ||
	    home_check_open_at(hc, cause) != 0 ||
	    home_check_relocs(hc, table_pointers(&tc), cause) != 0)
		goto fail;
	hc->self = self;
	home_offsets(hc);
	return hc;

fail:
	home_free(hc);
	return NULL;
}

/*
 * Lay the call out for a scratch area of size bytes at base in P: the
 * image to write at base (in and in-out data, out regions zeroed, slots
 * patched to their regions' addresses) and the registers.
 */
int
home_layout(struct home_call *hc, uint64_t base, size_t size, char **cause)
{
	Osm__RemoteCall		*c = hc->call;
	Osm__RemoteRegion	*r;
	Osm__RemoteReloc	*x;
	uint64_t		 ptr;
	size_t			 i;

	if (base % RMT_ALIGN != 0 || base + size < base)
		return home_fail(hc, cause, "bad scratch area at 0x%llx",
		    (unsigned long long)base);
	if (hc->span > size)
		return home_fail(hc, cause, "needs %zu bytes of scratch, "
		    "has %zu", hc->span, size);
	free(hc->image);
	hc->image = xcalloc(1, hc->image_len + 1);
	for (i = 0; i < c->n_regions; i++) {
		r = c->regions[i];
		if (r->has_data && r->size != 0)
			memcpy(hc->image + hc->offsets[i], r->data.data,
			    r->size);
	}
	if (c->has_open_at)
		memcpy(hc->image + hc->null_off, HOME_NULL, sizeof HOME_NULL);
	hc->base = base;
	memcpy(hc->args, c->args, sizeof hc->args);
	for (i = 0; i < c->n_relocs; i++) {
		x = c->relocs[i];
		ptr = base + hc->offsets[x->target];
		if (x->has_arg)
			hc->args[x->arg] = ptr;
		else
			memcpy(hc->image + hc->offsets[x->region] + x->offset,
			    &ptr, 8);
	}
	return 0;
}

/* Bytes from base that home_reply needs after the call returned ret. */
size_t
home_readback(const struct home_call *hc, long ret)
{
	Osm__RemoteCall	*c = hc->call;
	uint64_t	 budget = home_budget(ret, c->trim_unit), end = 0;
	int64_t		 n;
	size_t		 i;

	for (i = 0; i < c->n_regions; i++) {
		n = home_output(c->regions[i]->dir, c->regions[i]->size,
		    c->regions[i]->trim, ret, &budget);
		if (n > 0 && hc->offsets[i] + n > end)
			end = hc->offsets[i] + n;
	}
	return end;
}

/*
 * The reply for return value ret, given the scratch area's memory after
 * the call (at least home_readback bytes of it), packed into a fresh
 * buffer.
 */
int
home_reply(const struct home_call *hc, long ret, const void *mem,
    size_t len, uint8_t **out, size_t *outlen, char **cause)
{
	Osm__RemoteCall		 *c = hc->call;
	Osm__RemoteReply	  reply = OSM__REMOTE_REPLY__INIT;
	Osm__RemoteOutput	 *outs, **outp;
	uint64_t		  budget = home_budget(ret, c->trim_unit);
	int64_t			  n;
	size_t			  i, k = 0;

	if (len < home_readback(hc, ret))
		return home_fail(hc, cause, "%zu bytes of memory for a "
		    "reply that needs %zu", len, home_readback(hc, ret));
	outs = xcalloc(c->n_regions + 1, sizeof *outs);
	outp = xcalloc(c->n_regions + 1, sizeof *outp);
	for (i = 0; i < c->n_regions; i++) {
		n = home_output(c->regions[i]->dir, c->regions[i]->size,
		    c->regions[i]->trim, ret, &budget);
		if (n < 0)
			continue;
		osm__remote_output__init(&outs[k]);
		outs[k].region = i;
		outs[k].data.len = n;
		outs[k].data.data = (uint8_t *)mem + hc->offsets[i];
		outp[k] = &outs[k];
		k++;
	}
	reply.seq = hc->seq;
	reply.ret = ret;
	if (hc->fs_free >= 0) {
		reply.has_fs_free = 1;
		reply.fs_free = hc->fs_free;
	}
	reply.n_outputs = k;
	reply.outputs = outp;
	*outlen = osm__remote_reply__get_packed_size(&reply);
	*out = xmalloc(*outlen);
	osm__remote_reply__pack(&reply, *out);
	free(outs);
	free(outp);
	return 0;
}

void
home_free(struct home_call *hc)
{
	if (hc == NULL)
		return;
	if (hc->call != NULL)
		osm__remote_call__free_unpacked(hc->call, NULL);
	free(hc->offsets);
	free(hc->image);
	free(hc);
}

/*
 * Does the call wait with a timeout that making it again would start
 * anew? poll's and epoll_wait's; not select's, pselect6's or ppoll's,
 * whose remaining time the kernel writes back and the reply carries to
 * R, nor recvmmsg's, which counts only once a datagram came. Such a call
 * is not broken off for a checkpoint: it ends by itself.
 */
int
home_timed(const struct home_call *hc)
{
	switch (hc->nr) {
	case SYS_poll:
		return (int)hc->args[2] >= 0;
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
		return (int)hc->args[3] >= 0;
	case SYS_epoll_pwait2:
		return hc->args[3] != 0;
	}
	return 0;
}

/*
 * Broken off by a stop, the call said EINTR, as the waits Linux does not
 * restart after one do (epoll_wait, reads and writes on a socket with a
 * timeout, accept): may it be made again, having done nothing? Not any
 * call: close has let its descriptor go even then.
 */
int
home_again(const struct home_call *hc)
{
	switch (hc->nr) {
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
	case SYS_epoll_pwait2:
	case SYS_read:
	case SYS_readv:
	case SYS_write:
	case SYS_writev:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_sendto:
	case SYS_sendmsg:
	case SYS_accept:
	case SYS_accept4:
		return 1;
	}
	return 0;
}

/*
 * Is hc about the process's identity (a getpid, a setuid...)? Its reply
 * then follows the identity as it is after the call (SES_IDENTITY), which
 * the guest answers such calls from until one may change it again.
 */
int
home_ident(const struct home_call *hc)
{
	const struct table_entry	*e = table_lookup(hc->nr);

	return e != NULL && e->ident != TI_NONE;
}

/*
 * Is hc an open under a shared path? The descriptor it returns is then
 * described to the guest (a RemoteFdInfo of seq 0) before its reply.
 */
int
home_want_fd(const struct home_call *hc)
{
	return hc->call->want_fd;
}

/* An open whose descriptor the guest wants to hear of before its reply. */
int
home_fd_info(const struct home_call *hc)
{
	return hc->call->fd_info;
}

/*
 * A batch of writes (a pipe's or a device's, RemoteCall.writes) runs as
 * R made them: each its own write(2), in order, so that a reader sees
 * the same writes (PIPE_BUF's atomicity, a terminal's or a device's
 * boundaries) as from a process at home. After home_layout: the first
 * one in the registers.
 */
void
home_pieces_start(struct home_call *hc)
{
	if (hc->call->n_writes == 0)
		return;
	hc->piece = 0;
	hc->piece_done = hc->done = 0;
	hc->piece_base = hc->args[1];
	hc->args[2] = hc->call->writes[0];
}

/* The next call in P: nr with args a, b, c. */
static int
home_next(struct home_call *hc, int nr, uint64_t a, uint64_t b, uint64_t c)
{
	memset(hc->args, 0, sizeof hc->args);
	hc->nr = nr;
	hc->args[0] = a;
	hc->args[1] = b;
	hc->args[2] = c;
	return 1;
}

/*
 * An open made where R runs (RemoteCall.open_at), its call in P returned
 * *rv: P must hold its number, open_at, for R's table and P's to stay
 * one (docs/REMOTE.md, "Numbers (the rule)"). The file there, if it is the
 * one R opened (its inode); /dev/null if the file went meanwhile. 1 with
 * the next call in P set (a dup3 to the number and the close of what P's
 * kernel gave, if it gave another; the open of /dev/null), 0 when it is
 * over: *rv open_at, or why P holds no such file there (-ESTALE another
 * file of that name, the open's own error, -EBADF P had the number for
 * something else: the guest's numbering was wrong).
 */
static int
home_open_at_next(struct home_call *hc, home_holds holds, long *rv)
{
	const Osm__RemoteCall	*c = hc->call;
	long			 at = c->open_at;
	uint64_t		 ino;
	int			 cloexec;

	cloexec = ((c->nr == SYS_openat ? c->args[2] : c->args[1]) &
	    O_CLOEXEC) ? O_CLOEXEC : 0;
	switch (hc->piece) {
	case HOME_OA_OPEN:
		if (*rv >= 0) {
			holds(hc->self, *rv, &ino);
			hc->oa_final = ino == c->open_ino ? at : -ESTALE;
			if (*rv == at) {
				*rv = hc->oa_final;
				return 0;
			}
			hc->oa_got = *rv;
			if (holds(hc->self, at, &ino)) {
				hc->oa_final = -EBADF;
				hc->piece = HOME_OA_CLOSE;
				return home_next(hc, SYS_close, hc->oa_got, 0,
				    0);
			}
			hc->piece = HOME_OA_DUP;
			return home_next(hc, SYS_dup3, hc->oa_got, at,
			    cloexec);
		}
		hc->oa_final = *rv;
		if (holds(hc->self, at, &ino)) {
			*rv = -EBADF;
			return 0;
		}
		hc->piece = HOME_OA_NULL;
		return home_next(hc, SYS_openat, (uint64_t)AT_FDCWD,
		    hc->base + hc->null_off, O_RDONLY | cloexec);
	case HOME_OA_NULL:
		if (*rv == at || *rv < 0) {
			*rv = hc->oa_final;
			return 0;
		}
		hc->oa_got = *rv;
		hc->piece = HOME_OA_DUP;
		return home_next(hc, SYS_dup3, hc->oa_got, at, cloexec);
	case HOME_OA_DUP:
		if (*rv < 0)
			hc->oa_final = -EBADF;
		hc->piece = HOME_OA_CLOSE;
		return home_next(hc, SYS_close, hc->oa_got, 0, 0);
	default:
		*rv = hc->oa_final;
		return 0;
	}
}

/*
 * The write of a batch that ran returned *rv: 1 with the registers set
 * for what comes next (the rest of a short one, or the next one); 0 when
 * the batch is over (or hc is no batch), *rv its answer: all its bytes,
 * or the error that stopped it.
 */
int
home_pieces_next(struct home_call *hc, home_holds holds, long *rv)
{
	const Osm__RemoteCall	*c = hc->call;

	if (c->has_open_at)
		return home_open_at_next(hc, holds, rv);
	if (c->n_writes == 0 || hc->piece >= c->n_writes)
		return 0;
	if (*rv <= 0) {
		if (*rv == 0)
			*rv = -EIO;	/* a device that takes nothing */
		hc->piece = c->n_writes;
		return 0;
	}
	hc->piece_done += (uint64_t)*rv;
	if (hc->piece_done >= c->writes[hc->piece]) {
		hc->done += c->writes[hc->piece];
		hc->piece_done = 0;
		if (++hc->piece == c->n_writes) {
			*rv = (long)hc->done;
			return 0;
		}
	}
	/* a short write is written on, as a write behind of a file is */
	hc->args[1] = hc->piece_base + hc->done + hc->piece_done;
	hc->args[2] = c->writes[hc->piece] - hc->piece_done;
	return 1;
}
