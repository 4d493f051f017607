/*
 * Describing a call of R for the home: its arguments, the regions of R's
 * memory it reads or writes (read out of R with process_vm_readv), and the
 * pointers to patch (relocations), following the table's description.
 *
 * A pointer R passed that cannot be read is not an error here: it becomes
 * RMT_FAULT_ADDR, and the home kernel fails the call with EFAULT after the
 * checks it makes first (a bad fd is still EBADF). NULL stays NULL. Reads
 * and writes longer than RMT_IO_MAX are shortened, which read(2) and
 * write(2) allow; a call that is still too big goes home.
 */
#include <sys/uio.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

#define M_FAULT		(-1)	/* unreadable: the pointer faults at home */
#define M_STOP		(-2)	/* stop: home, gone or error, m says */
#define M_NULL		(-3)

#define FDSET_MAX	(1 << 20)	/* nfds: the kernel's nr_open default */
#define NAME_MAX_LEN	128		/* struct sockaddr_storage */
#define MMSG_MAX	64		/* messages of sendmmsg, recvmmsg */

struct marshal {
	pid_t		 pid;
	struct rmt_call	*c;
	int		 argreg[6];	/* region each argument points at */
	uint64_t	 trim_total;
	int		 nobound;
	const char	*why;		/* must go home */
	int		 gone;
	int		 error;		/* errno of a failed read */
	size_t		 regsize, relsize, keepsize;
};

static uint64_t
get64(const uint8_t *p)
{
	uint64_t	v;

	memcpy(&v, p, 8);
	return v;
}

static void
put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Read up to len bytes of R; the count read, or -1 (m says why). */
static ssize_t
m_read(struct marshal *m, uint64_t addr, void *buf, size_t len)
{
	struct iovec	local = { buf, len };
	struct iovec	remote = { (void *)(uintptr_t)addr, len };
	ssize_t		n;

	if (len == 0)
		return 0;
	n = process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
	if (n >= 0)
		return n;
	if (errno == EFAULT || errno == EIO || errno == ENOMEM)
		return 0;
	if (errno == ESRCH)
		m->gone = 1;
	else
		m->error = errno;
	return -1;
}

static int
m_add(struct marshal *m, uint64_t addr, uint64_t size, int dir, int trim,
    uint8_t *data)
{
	struct rmt_call		*c = m->c;
	struct rmt_region	*r;

	if (c->nregions == RMT_REGIONS_MAX || size > RMT_CALL_MAX ||
	    c->total + size > RMT_CALL_MAX) {
		m->why = "arguments too large to forward";
		free(data);
		return M_STOP;
	}
	if (c->nregions == m->regsize) {
		m->regsize = m->regsize == 0 ? 8 : 2 * m->regsize;
		c->regions = xreallocarray(c->regions, m->regsize,
		    sizeof *c->regions);
	}
	r = &c->regions[c->nregions];
	r->addr = addr;
	r->size = size;
	r->dir = dir;
	r->trim = trim;
	r->data = data;
	c->total += size;
	if (trim)
		m->trim_total += size;
	return c->nregions++;
}

/* A buffer of R: read now if the call reads it. */
static int
m_buffer(struct marshal *m, uint64_t addr, uint64_t size, int dir, int trim)
{
	uint8_t	*data = NULL;
	ssize_t	 n;

	if (addr == 0)
		return M_NULL;
	if (size > RMT_CALL_MAX || m->c->total + size > RMT_CALL_MAX) {
		m->why = "arguments too large to forward";
		return M_STOP;
	}
	if (dir != RMT_OUT && size != 0) {
		data = xmalloc(size);
		if ((n = m_read(m, addr, data, size)) != (ssize_t)size) {
			free(data);
			return n == -1 ? M_STOP : M_FAULT;
		}
	}
	return m_add(m, addr, size, dir, trim, data);
}

/*
 * A NUL-terminated string, read a page at a time so as not to run into
 * the next mapping. Longer than PATH_MAX: sent as PATH_MAX bytes without
 * a NUL, which the home kernel refuses with ENAMETOOLONG as it would.
 */
static int
m_string(struct marshal *m, uint64_t addr)
{
	uint8_t		*buf, *nul;
	size_t		 got = 0, chunk;
	ssize_t		 n;

	if (addr == 0)
		return M_NULL;
	buf = xmalloc(PATH_MAX);
	while (got < PATH_MAX) {
		chunk = 4096 - ((addr + got) & 4095);
		if (chunk > PATH_MAX - got)
			chunk = PATH_MAX - got;
		if ((n = m_read(m, addr + got, buf + got, chunk)) == -1) {
			free(buf);
			return M_STOP;
		}
		if ((nul = memchr(buf + got, '\0', n)) != NULL) {
			got = nul - buf + 1;
			break;
		}
		got += n;
		if ((size_t)n < chunk) {
			free(buf);
			return M_FAULT;
		}
	}
	return m_add(m, addr, got, RMT_IN, 0, buf);
}

static void
m_reloc(struct marshal *m, uint32_t target, int arg, uint32_t in,
    uint64_t off)
{
	struct rmt_call		*c = m->c;

	if (c->nrelocs == m->relsize) {
		m->relsize = m->relsize == 0 ? 8 : 2 * m->relsize;
		c->relocs = xreallocarray(c->relocs, m->relsize,
		    sizeof *c->relocs);
	}
	c->relocs[c->nrelocs++] = (struct rmt_reloc){ target, arg, in, off };
}

/* Point argument i at what m_buffer or m_string gave. */
/*
 * A wait's signal mask (ppoll, pselect6, epoll_pwait): kept with the call
 * and applied where R runs — the call goes home without one, and the
 * guest agent decides by it which signals end the wait (docs/REMOTE.md).
 * An odd size or an unreadable mask fails as it would at home: the call
 * goes home.
 */
static int
m_mask(struct marshal *m, uint64_t addr, uint64_t size)
{
	uint64_t	set;

	if (size != sizeof set) {
		m->why = "wait with a signal mask of an odd size";
		return -1;
	}
	if (m_read(m, addr, &set, sizeof set) != (ssize_t)sizeof set) {
		if (!m->gone && m->error == 0)
			m->why = "wait with an unreadable signal mask";
		return -1;
	}
	m->c->has_mask = 1;
	m->c->mask = set;
	return 0;
}

static int
m_arg(struct marshal *m, int i, int r)
{
	if (r >= 0) {
		m_reloc(m, r, i, 0, 0);
		m->argreg[i] = r;
	} else if (r == M_FAULT)
		m->c->args[i] = RMT_FAULT_ADDR;
	return r == M_STOP ? -1 : 0;
}

/*
 * Point the slot at off in region `in` at result r. The slot holds R's
 * pointer, which an in-out region must get back when written into R.
 */
static int
m_slot(struct marshal *m, uint32_t in, uint64_t off, int r)
{
	struct rmt_call		*c = m->c;
	struct rmt_region	*parent = &c->regions[in];

	if (r == M_STOP)
		return -1;
	if (r == M_NULL)
		return 0;
	if (parent->dir == RMT_INOUT) {
		if (c->nkeeps == m->keepsize) {
			m->keepsize = m->keepsize == 0 ? 4 : 2 * m->keepsize;
			c->keeps = xreallocarray(c->keeps, m->keepsize,
			    sizeof *c->keeps);
		}
		c->keeps[c->nkeeps++] = (struct rmt_keep){ in, off,
		    get64(parent->data + off) };
	}
	if (r >= 0)
		m_reloc(m, r, -1, in, off);
	else
		put64(parent->data + off, RMT_FAULT_ADDR);
	return 0;
}

/*
 * An iovec array of count entries and the buffers it points at, data
 * `dir`: the array's region, or M_FAULT, M_STOP. The total is cut to
 * RMT_IO_MAX in our copy of the array; a negative length is left for the
 * home kernel to refuse (EINVAL) and nothing after it is described.
 */
static int
m_iovec(struct marshal *m, uint64_t addr, uint64_t count, int dir,
    int nobound)
{
	struct rmt_region	*arr;
	uint64_t		 total = 0, base, len;
	uint64_t		 j;
	int			 a, r;

	if (count > UIO_MAXIOV)
		return M_FAULT;		/* EINVAL (EMSGSIZE) before use */
	if ((a = m_buffer(m, addr, count * 16, RMT_IN, 0)) < 0)
		return a;
	for (j = 0; j < count; j++) {
		arr = &m->c->regions[a];
		base = get64(arr->data + 16 * j);
		len = get64(arr->data + 16 * j + 8);
		if ((int64_t)len < 0)
			break;
		if (len > RMT_IO_MAX - total) {
			len = RMT_IO_MAX - total;
			put64(arr->data + 16 * j + 8, len);
		}
		total += len;
		if (len == 0)
			continue;
		r = m_buffer(m, base, len, dir, dir == RMT_OUT);
		if (m_slot(m, a, 16 * j, r) != 0)
			return M_STOP;
	}
	if (dir == RMT_OUT && nobound)
		m->nobound = 1;
	return a;
}

/*
 * The buffers of the struct msghdr at off in region a. For sendmsg they
 * are in; for recvmsg the name and control buffers are in-out, so that
 * what the kernel does not write stays as R had it, and the data is out,
 * trimmed to what was received, or in-out for recvmmsg, whose messages
 * each have their own length.
 */
static int
m_msgbufs(struct marshal *m, int a, uint64_t off, int recv, int many)
{
	uint8_t		*h = m->c->regions[a].data + off;
	uint64_t	 name, iov, iovlen, control, controllen;
	int32_t		 namelen;
	int		 r, dir = recv ? RMT_INOUT : RMT_IN;

	name = get64(h);
	memcpy(&namelen, h + 8, 4);
	iov = get64(h + 16);
	iovlen = get64(h + 24);
	control = get64(h + 32);
	controllen = get64(h + 40);

	if (namelen < 0)
		namelen = 0;
	if (namelen > NAME_MAX_LEN)
		namelen = NAME_MAX_LEN;		/* the kernel's own cut */
	r = m_buffer(m, name, namelen, dir, 0);
	if (m_slot(m, a, off, r) != 0)
		return -1;
	r = iov == 0 ? M_NULL : m_iovec(m, iov, iovlen,
	    !recv ? RMT_IN : many ? RMT_INOUT : RMT_OUT, 1);
	if (m_slot(m, a, off + 16, r) != 0)
		return -1;
	r = m_buffer(m, control, controllen, dir, 0);
	if (m_slot(m, a, off + 32, r) != 0)
		return -1;
	return 0;
}

/*
 * A struct msghdr (56 bytes), or an array of n struct mmsghdr (64 bytes:
 * a msghdr and the length the kernel writes), with their buffers. The
 * headers are in-out but for sendmsg's.
 */
static int
m_msghdr(struct marshal *m, uint64_t addr, int recv, int many, uint64_t n)
{
	uint64_t	i, size = many ? 64 : 56;
	int		a;

	if ((a = m_buffer(m, addr, n * size, recv || many ? RMT_INOUT :
	    RMT_IN, 0)) < 0)
		return a;
	for (i = 0; i < n; i++) {
		if (m_msgbufs(m, a, i * size, recv, many) != 0)
			return M_STOP;
	}
	return a;
}

/* A buffer's size from the table: fixed, or argument times unit. */
static int
m_size(struct marshal *m, const struct table_arg *a, uint64_t *size)
{
	uint64_t	v, unit = a->unit != 0 ? a->unit : 1;

	if (a->size != 0) {
		*size = a->size;
		return 0;
	}
	v = m->c->args[a->len];
	if ((a->flags & TF_INT) && (int32_t)v < 0)
		v = 0;
	else if (a->flags & TF_INT)
		v = (uint32_t)v;
	if (v > RMT_IO_MAX / unit && (a->flags & TF_CLAMP)) {
		v = RMT_IO_MAX / unit;
		m->c->args[a->len] = v;
	}
	if (v > RMT_CALL_MAX / unit) {
		m->why = "arguments too large to forward";
		return -1;
	}
	*size = v * unit;
	return 0;
}

static int
m_describe(struct marshal *m, const struct table_call *tc, int i)
{
	const struct table_arg	*a = &tc->args[i];
	struct rmt_call		*c = m->c;
	uint64_t		 addr = c->args[i], size;
	int64_t			 nfds;
	uint32_t		 version;
	int			 r, len;

	switch (a->kind) {
	case TA_VAL:
		return 0;
	case TA_STR:
		return m_arg(m, i, m_string(m, addr));
	case TA_BUF:
		if (m_size(m, a, &size) != 0)
			return -1;
		if (a->flags & TF_NOBOUND)
			m->nobound = 1;
		return m_arg(m, i, m_buffer(m, addr, size, a->dir,
		    a->flags & TF_TRIM));
	case TA_LENP:
		len = 0;
		if ((r = m->argreg[a->len]) >= 0)
			memcpy(&len, c->regions[r].data, 4);
		return m_arg(m, i, m_buffer(m, addr, len < 0 ? 0 : len,
		    a->dir, 0));
	case TA_IOV:
		if (addr == 0)
			return 0;
		return m_arg(m, i, m_iovec(m, addr, c->args[a->len], a->dir,
		    0));
	case TA_MSG:
		if (addr == 0)
			return 0;
		return m_arg(m, i, m_msghdr(m, addr, a->dir == RMT_OUT, 0, 1));
	case TA_MMSG:
		/* fewer messages than asked for is a valid result */
		if ((uint32_t)c->args[a->len] > MMSG_MAX)
			c->args[a->len] = MMSG_MAX;
		if (addr == 0)
			return 0;
		return m_arg(m, i, m_msghdr(m, addr, a->dir == RMT_OUT, 1,
		    (uint32_t)c->args[a->len]));
	case TA_FDSET:
		nfds = (int32_t)c->args[a->len];
		if (nfds > FDSET_MAX) {
			nfds = FDSET_MAX;
			c->args[a->len] = nfds;
		}
		size = nfds < 0 ? 0 : (nfds + 63) / 64 * 8;
		return m_arg(m, i, m_buffer(m, addr, size, a->dir, 0));
	case TA_SIGDATA:
		/* pselect6's { sigset_t *, size_t }: the mask stays here */
		r = m_buffer(m, addr, 16, RMT_IN, 0);
		if (r >= 0 && get64(c->regions[r].data) != 0) {
			if (m_mask(m, get64(c->regions[r].data),
			    get64(c->regions[r].data + 8)) == -1)
				return -1;
			put64(c->regions[r].data, 0);
		}
		return m_arg(m, i, r);
	case TA_MASK:
		/* the mask stays here; the sigsetsize is the next argument */
		if (addr == 0)
			return 0;
		if (i == 5 || m_mask(m, addr, c->args[i + 1]) == -1)
			return -1;
		c->args[i] = 0;
		return 0;
	case TA_CAPDATA:
		version = 0;
		if ((r = m->argreg[0]) >= 0)
			memcpy(&version, c->regions[r].data, 4);
		if (version == 0x19980330)		/* v1: one u32 set */
			size = 12;
		else if (version == 0x20071026 || version == 0x20080522)
			size = 24;
		else
			size = 0;		/* EINVAL at home */
		return m_arg(m, i, m_buffer(m, addr, size, a->dir, 0));
	}
	return 0;
}

/*
 * Describe call tc with arguments args of R's thread pid into c. The
 * description depends on what earlier arguments point at (a socklen_t,
 * capget's version), which are described first.
 */
enum marshal_result
marshal_call(pid_t pid, const struct table_call *tc, const uint64_t *args,
    struct rmt_call *c, const char **why, char **cause)
{
	struct marshal	m;
	int		i, pass, late;

	memset(c, 0, sizeof *c);
	memset(&m, 0, sizeof m);
	m.pid = pid;
	m.c = c;
	for (i = 0; i < 6; i++)
		m.argreg[i] = -1;
	c->nr = tc->entry->nr;
	c->name = tc->name;
	memcpy(c->args, args, sizeof c->args);
	c->trim_unit = tc->entry->trim_unit != 0 ? tc->entry->trim_unit : 1;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < 6; i++) {
			late = tc->args[i].kind == TA_LENP ||
			    tc->args[i].kind == TA_CAPDATA;
			if (late != pass)
				continue;
			if (m_describe(&m, tc, i) != 0)
				goto stop;
		}
	}
	c->ret_max = INT64_MAX;
	if (m.trim_total != 0 && !m.nobound)
		c->ret_max = m.trim_total / c->trim_unit;
	return MARSHAL_OK;

stop:
	marshal_free(c);
	if (m.why != NULL) {
		*why = m.why;
		return MARSHAL_HOME;
	}
	if (m.gone)
		return MARSHAL_GONE;
	xasprintf(cause, "reading the memory of %ld: %s", (long)pid,
	    strerror(m.error));
	return MARSHAL_ERROR;
}

void
marshal_free(struct rmt_call *c)
{
	size_t	i;

	for (i = 0; i < c->nregions; i++)
		free(c->regions[i].data);
	free(c->regions);
	free(c->relocs);
	free(c->keeps);
	memset(c, 0, sizeof *c);
}

/*
 * Pack c as a RemoteCall into a fresh buffer, and drop the data read out
 * of R, which the pending call no longer needs.
 */
void
marshal_pack(struct rmt_call *c, uint8_t **out, size_t *len)
{
	Osm__RemoteCall		  msg = OSM__REMOTE_CALL__INIT;
	Osm__RemoteRegion	 *regs, **regp;
	Osm__RemoteReloc	 *rels, **relp;
	uint64_t		  args[6];
	size_t			  i;

	regs = xcalloc(c->nregions, sizeof *regs);
	regp = xcalloc(c->nregions, sizeof *regp);
	rels = xcalloc(c->nrelocs, sizeof *rels);
	relp = xcalloc(c->nrelocs, sizeof *relp);
	memcpy(args, c->args, sizeof args);
	msg.seq = c->seq;
	msg.nr = c->nr;
	if (c->vtid > 0) {
		msg.has_tid = 1;
		msg.tid = c->vtid;
	}
	msg.n_args = 6;
	msg.args = args;
	if (c->trim_unit != 1) {
		msg.has_trim_unit = 1;
		msg.trim_unit = c->trim_unit;
	}
	if (c->behind) {
		msg.has_behind = 1;
		msg.behind = 1;
	}
	if (c->want_fd) {
		msg.has_want_fd = 1;
		msg.want_fd = 1;
	}
	if (c->fd_info) {
		msg.has_fd_info = 1;
		msg.fd_info = 1;
	}
	if (c->open_here) {
		msg.has_open_at = msg.has_open_ino = 1;
		msg.open_at = c->open_at;
		msg.open_ino = c->open_ino;
	}
	msg.n_writes = c->nwrites;
	msg.writes = (uint32_t *)c->writes;
	for (i = 0; i < c->nregions; i++) {
		osm__remote_region__init(&regs[i]);
		regs[i].dir = c->regions[i].dir;
		regs[i].size = c->regions[i].size;
		if (c->regions[i].dir != RMT_OUT) {
			regs[i].has_data = 1;
			regs[i].data.len = c->regions[i].size;
			regs[i].data.data = c->regions[i].data;
		}
		if (c->regions[i].trim) {
			regs[i].has_trim = 1;
			regs[i].trim = 1;
		}
		regp[i] = &regs[i];
	}
	for (i = 0; i < c->nrelocs; i++) {
		osm__remote_reloc__init(&rels[i]);
		rels[i].target = c->relocs[i].target;
		if (c->relocs[i].arg >= 0) {
			rels[i].has_arg = 1;
			rels[i].arg = c->relocs[i].arg;
		} else {
			rels[i].has_region = 1;
			rels[i].region = c->relocs[i].in;
			rels[i].has_offset = 1;
			rels[i].offset = c->relocs[i].off;
		}
		relp[i] = &rels[i];
	}
	msg.n_regions = c->nregions;
	msg.regions = regp;
	msg.n_relocs = c->nrelocs;
	msg.relocs = relp;

	*len = osm__remote_call__get_packed_size(&msg);
	*out = xmalloc(*len);
	osm__remote_call__pack(&msg, *out);

	for (i = 0; i < c->nregions; i++) {
		free(c->regions[i].data);
		c->regions[i].data = NULL;
	}
	free(regs);
	free(regp);
	free(rels);
	free(relp);
}

/* st written into R's memory at addr (thread tid): 0, or -1 (refused). */
int
marshal_put_stat(pid_t tid, uint64_t addr, const struct stat *st)
{
	struct iovec	local, remote;

	local.iov_base = (void *)st;
	local.iov_len = sizeof *st;
	remote.iov_base = (void *)(uintptr_t)addr;
	remote.iov_len = sizeof *st;
	return process_vm_writev(tid, &local, 1, &remote, 1, 0) ==
	    (ssize_t)sizeof *st ? 0 : -1;
}
