/*
 * R's side of forwarding, in the guest agent. R's filter stops R on every call
 * that is not local and notifies the listener; remote_receive takes one
 * notification and either answers it (emulated CPU time), or describes it
 * as a RemoteCall to send home and keeps it pending, or says that R must
 * come home (the notification is then left unanswered: interrupting R
 * cancels it and the call restarts, to run natively at home). remote_reply
 * checks the home's answer strictly against the pending call, writes the
 * outputs into R's memory and answers the notification.
 *
 * The filter is installed without SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
 * on purpose: R must stay interruptible while it waits, so that the guest
 * agent can stop it (PTRACE_INTERRUPT) to bring it home, and so that a
 * signal passed on from home can interrupt a forwarded call.
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <stdio.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS	SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP	(1UL << 0)
#endif
#define X32_SYSCALL_BIT		0x40000000
#define ERESTARTSYS		512
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516

struct remote *
remote_new(int listener, pid_t pid, pid_t home_pid,
    const struct emulate_base *base, char **cause)
{
	struct seccomp_notif_sizes	 sizes;
	struct remote			*g;

	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) {
		xasprintf(cause, "SECCOMP_GET_NOTIF_SIZES: %s",
		    strerror(errno));
		return NULL;
	}
	g = xcalloc(1, sizeof *g);
	g->listener = listener;
	g->pid = pid;
	g->emu.pid = pid;
	g->emu.home_pid = home_pid;
	if (base != NULL)
		g->emu.base = *base;
	g->notif_size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ?
	    sizes.seccomp_notif : sizeof(struct seccomp_notif);
	g->resp_size = sizes.seccomp_notif_resp >
	    sizeof(struct seccomp_notif_resp) ? sizes.seccomp_notif_resp :
	    sizeof(struct seccomp_notif_resp);
	g->notif = xcalloc(1, g->notif_size);
	g->resp = xcalloc(1, g->resp_size);
	/*
	 * Wake R and us on the CPU that did the waking (Linux 6.6): a
	 * notification round trip drops from about 12 to 3 us. Older
	 * kernels say EINVAL or ENOTTY and are merely slower.
	 */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	    SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0)
		g->sync_wakeup = 1;
	return g;
}

void
remote_free(struct remote *g)
{
	size_t	i;

	if (g == NULL)
		return;
	for (i = 0; i < g->npending; i++) {
		free(g->pending[i].statc_path);
		marshal_free(&g->pending[i].call);
		free(g->pending[i].msg);
	}
	free(g->pending);
	free(g->tids);
	statc_clear(&g->statc);
	emulate_free(&g->emu);
	ident_clear(&g->ident);
	fio_free(&g->fio);
	shared_free(&g->shared);
	free(g->notif);
	free(g->resp);
	free(g->rstub);
	free(g);
}

/* Answer notification id with raw return value val: 0, 1 gone, -1. */
static int
remote_answer(struct remote *g, uint64_t id, int64_t val, char **cause)
{
	struct seccomp_notif_resp	*resp = g->resp;

	rstub_publish(g, id);
	memset(resp, 0, g->resp_size);
	resp->id = id;
	resp->val = val;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) == 0)
		return 0;
	if (errno == ENOENT) {
		g->stats.gone++;
		return 1;
	}
	xasprintf(cause, "SECCOMP_IOCTL_NOTIF_SEND: %s", strerror(errno));
	return -1;
}

static void
remote_home(struct remote *g, struct remote_event *ev, const char *why)
{
	ev->kind = REMOTE_HOME;
	ev->why = why;
	g->stats.home++;
}

/*
 * A call about the process's identity: answered here from what the home
 * said, if it is known (1, ev says REMOTE_ANSWERED; -1 with *cause if the
 * listener failed), or to go home (0). One that may change it makes the
 * identity unknown until the home says it again, before its answer.
 */
static int
remote_ident(struct remote *g, const struct seccomp_notif *n,
    const struct table_call *tc, const uint64_t *args,
    struct remote_event *ev, char **cause)
{
	long	rv;

	if (tc->entry == NULL || tc->entry->ident == TI_NONE)
		return 0;
	if (tc->entry->ident == TI_CHANGE) {
		g->ident.valid = 0;
		rstub_ident(g);
		return 0;
	}
	/* a pointer it writes through is R's only while R waits here */
	if (!g->ident.valid || ioctl(g->listener,
	    SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) != 0 ||
	    !ident_answer(&g->ident, n->pid, g->pid, n->data.nr, args, &rv))
		return 0;
	if (remote_answer(g, n->id, rv, cause) == -1)
		return -1;
	ev->kind = REMOTE_ANSWERED;
	g->stats.ident++;
	return 1;
}

/*
 * Send R's call (notification id, thread tid) home: pending until its
 * reply (REMOTE_FORWARD), or, behind, answered now with the bytes it
 * writes and queued for remote_out (REMOTE_ANSWERED). 0, or -1 if R's
 * memory cannot be read at all.
 */
static int
remote_forward(struct remote *g, uint64_t id, pid_t tid,
    const struct table_call *tc, const uint64_t *args, int behind,
    struct remote_event *ev, char **cause)
{
	struct remote_pending	*p;
	struct rmt_call		 call;
	const char		*why = NULL;
	char			*keep = NULL;
	uint8_t			*msg;
	size_t			 len;
	int64_t			 n;

	switch (marshal_call(tid, tc, args, &call, &why, cause)) {
	case MARSHAL_OK:
		break;
	case MARSHAL_HOME:
		remote_home(g, ev, why);
		return 0;
	case MARSHAL_GONE:
		return 0;
	case MARSHAL_ERROR:
		return -1;
	}
	/* the memory we read was R's only if R still waits in this call */
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) {
		marshal_free(&call);
		return 0;
	}
	/* a stat the home answered a moment ago: its answer again */
	if (!behind && statc_answer(g, tid, &call, &n, &keep)) {
		marshal_free(&call);
		ev->kind = REMOTE_ANSWERED;
		return remote_answer(g, id, n, cause) == -1 ? -1 : 0;
	}
	call.seq = ++g->seq;
	call.vtid = remote_vtid(g, tid);
	ptable_sent(&g->fio.ptab, call.nr, call.args);
	if (behind) {
		/* write and pwrite64: the count, as cut to what goes home;
		   an unlock (fiobehind.c): 0 */
		n = call.nr == SYS_write || call.nr == SYS_pwrite64 ?
		    (int64_t)call.args[2] : 0;
		call.behind = 1;
		marshal_pack(&call, &msg, &len);
		fio_push(&g->fio, REMOTE_OUT_CALL, 0, msg, len);
		fio_sent_behind(&g->fio, call.seq, call.nr, call.args, n);
		marshal_free(&call);
		g->stats.forwarded++;
		if (remote_answer(g, id, n, cause) == -1)
			return -1;
		ev->kind = REMOTE_ANSWERED;
		return 0;
	}
	g->pending = xreallocarray(g->pending, g->npending + 1,
	    sizeof *g->pending);
	p = &g->pending[g->npending++];
	p->id = id;
	p->tid = tid;
	p->flags = 0;
	p->adopted = 0;
	p->open = shared_want(g, &call, &p->flags, &p->dup_of) &&
	    p->dup_of == -1;
	p->statc_path = keep;
	p->statc_gen = g->statc.gen;
	/* any other open: the home says what it opened, with the reply */
	if (!call.want_fd && !g->fio.off && fio_opens(call.nr, call.args))
		call.fd_info = 1;
	p->call = call;
	g->stats.waited++;
	marshal_pack(&p->call, &p->msg, &p->len);

	ev->kind = REMOTE_FORWARD;
	ev->tid = tid;
	ev->seq = call.seq;
	ev->msg = p->msg;
	ev->len = p->len;
	ev->has_mask = p->call.has_mask;
	ev->mask = p->call.mask;
	g->stats.forwarded++;
	return 0;
}

/*
 * Take one notification and deal with it; ev says what became of it.
 * Returns -1 only when the listener fails or R's memory cannot be read at
 * all (not R's uid, or R undumpable).
 */
int
remote_receive(struct remote *g, struct remote_event *ev, char **cause)
{
	struct seccomp_notif	*n = g->notif;
	struct table_call	 tc;
	uint64_t		 args[6];
	long			 rv;
	int			 i;

	memset(ev, 0, sizeof *ev);
	memset(n, 0, g->notif_size);
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_RECV, n) == -1) {
		if (errno == EINTR || errno == ENOENT || errno == EAGAIN)
			return 0;	/* R was interrupted or killed first */
		xasprintf(cause, "SECCOMP_IOCTL_NOTIF_RECV: %s",
		    strerror(errno));
		return -1;
	}
	rstub_sync(g);
	shared_stub_closes(g);
	ev->id = n->id;
	ev->tid = n->pid;
	ev->nr = n->data.nr;
	for (i = 0; i < 6; i++)
		args[i] = n->data.args[i];
	if (n->data.arch != AUDIT_ARCH_X86_64 ||
	    (n->data.nr & X32_SYSCALL_BIT)) {
		ev->name = "foreign";
		remote_home(g, ev, "not an x86_64 system call");
		return 0;
	}
	table_resolve(n->data.nr, args, g->emu.home_pid, &tc);
	ev->name = tc.name;

	switch (tc.class) {
	case RMT_LOCAL:
		/* the filter would have let it run: never trust that here */
		remote_home(g, ev, "local call notified");
		return 0;
	case RMT_HOME:
		remote_home(g, ev, tc.entry == NULL ? "unknown system call" :
		    tc.entry->why != NULL ? tc.entry->why : tc.name);
		return 0;
	case RMT_EMULATE:
		rv = emulate_call(&g->emu, n->pid, n->data.nr, args);
		if (remote_answer(g, n->id, rv, cause) == -1)
			return -1;
		ev->kind = REMOTE_ANSWERED;
		g->stats.emulated++;
		if (n->data.nr == SYS_times || n->data.nr == SYS_getrusage)
			g->stats.usage++;
		return 0;
	case RMT_MAP:
		if ((i = shared_call(g, n->id, n->pid, n->data.nr, args, 1, ev,
		    cause)) != 0)
			return i == -1 ? -1 : 0;
		/* the file's bytes as R wrote them: its writes gathered first */
		fio_flush(&g->fio, &g->seq);
		ev->kind = REMOTE_MAP;
		memcpy(ev->args, args, sizeof ev->args);
		g->stats.mapped++;
		return 0;
	case RMT_THREAD:
		g->fio.ptab.ok = 0;	/* a fork's own table, a thread's */
		statc_clear(&g->statc);
		ev->kind = REMOTE_THREAD;
		ev->why = tc.entry != NULL ? tc.entry->why : NULL;
		memcpy(ev->args, args, sizeof ev->args);
		return 0;
	case RMT_FORWARD:
		break;
	}
	if (remote_ident(g, n, &tc, args, ev, cause) != 0)
		return ev->kind == REMOTE_ANSWERED ? 0 : -1;
	statc_call(g, n->data.nr, args);
	/* what it sends behind goes in the caller's lane, if P must make it */
	g->fio.vtid = (i = remote_vtid(g, n->pid)) > 0 ? i : 0;
	i = shared_call(g, n->id, n->pid, n->data.nr, args, 0, ev, cause);
	if (i != 0) {
		g->fio.vtid = 0;
		return i == -1 ? -1 : 0;
	}
	if (pipes_call(&g->fio, n->pid, n->data.nr, args, &g->seq, &rv))
		i = FIO_ANSWER;		/* a pipe's or a device's (pipes.c) */
	else
		i = fio_call(&g->fio, n->pid, n->id, n->data.nr, args,
		    fio_on_fd(g->pending, g->npending, args[0], 0), &g->seq,
		    &rv);
	g->fio.vtid = 0;
	switch (i) {
	case FIO_PASS:
		break;
	case FIO_BEHIND:
		return remote_forward(g, n->id, n->pid, &tc, args, 1, ev,
		    cause);
	case FIO_ANSWER:
		if ((i = remote_answer(g, n->id, rv, cause)) == 1)
			rstub_unanswered(g, n->data.nr, args, rv);
		ev->kind = REMOTE_ANSWERED;
		return i == -1 ? -1 : 0;
	case FIO_WAIT:
		ev->kind = REMOTE_WAITING;
		return 0;
	}
	return remote_forward(g, n->id, n->pid, &tc, args, 0, ev, cause);
}

/*
 * The outputs a reply must carry, in order, and their lengths, by the
 * rule home_output states.
 */
static int
remote_check(const struct rmt_call *c, const Osm__RemoteReply *r,
    char **cause)
{
	const struct rmt_region	*reg;
	uint64_t		 budget;
	int64_t			 want;
	size_t			 i, k = 0;

	if (r->ret < -4095 || r->ret > c->ret_max) {
		xasprintf(cause, "%s: return value %lld out of range", c->name,
		    (long long)r->ret);
		return -1;
	}
	budget = home_budget(r->ret, c->trim_unit);
	for (i = 0; i < c->nregions; i++) {
		reg = &c->regions[i];
		want = home_output(reg->dir, reg->size, reg->trim, r->ret,
		    &budget);
		if (want < 0)
			continue;
		if (k == r->n_outputs) {
			xasprintf(cause, "%s: output for region %zu missing",
			    c->name, i);
			return -1;
		}
		if (r->outputs[k]->region != i ||
		    r->outputs[k]->data.len != (uint64_t)want) {
			xasprintf(cause, "%s: output %zu is region %u of %zu "
			    "bytes, expected region %zu of %lld", c->name, k,
			    r->outputs[k]->region, r->outputs[k]->data.len,
			    i, (long long)want);
			return -1;
		}
		k++;
	}
	if (k != r->n_outputs) {
		xasprintf(cause, "%s: %zu outputs, expected %zu", c->name,
		    r->n_outputs, k);
		return -1;
	}
	return 0;
}

/* Write the outputs into R: 0, or -1 if R's memory refused. */
static int
remote_write(pid_t tid, const struct rmt_call *c, Osm__RemoteReply *r)
{
	struct iovec		 local[64], remote[64];
	const struct rmt_keep	*keep;
	Osm__RemoteOutput	*o;
	size_t			 i, j, n = 0, want = 0;

	for (i = 0; i < c->nkeeps; i++) {
		keep = &c->keeps[i];
		for (j = 0; j < r->n_outputs; j++) {
			o = r->outputs[j];
			if (o->region == keep->region)
				memcpy(o->data.data + keep->off, &keep->value,
				    8);
		}
	}
	for (i = 0; i <= r->n_outputs; i++) {
		if (n == nitems(local) || (i == r->n_outputs && n > 0)) {
			if (process_vm_writev(tid, local, n, remote, n, 0) !=
			    (ssize_t)want)
				return -1;
			n = want = 0;
		}
		if (i == r->n_outputs)
			break;
		o = r->outputs[i];
		if (o->data.len == 0)
			continue;
		local[n].iov_base = o->data.data;
		local[n].iov_len = o->data.len;
		remote[n].iov_base =
		    (void *)(uintptr_t)c->regions[o->region].addr;
		remote[n].iov_len = o->data.len;
		want += o->data.len;
		n++;
	}
	return 0;
}

/* The free space a reply says its file's file system has, or -1. */
static int64_t
remote_fs_free(const Osm__RemoteReply *r)
{
	if (!r->has_fs_free)
		return -1;
	return r->fs_free > INT64_MAX ? INT64_MAX : (int64_t)r->fs_free;
}

/*
 * Check reply r against call c and write its outputs into R's thread tid.
 * *ret is then what to answer R: the call's result, -EFAULT if R's memory
 * refused the outputs. Returns -1 if the reply is refused.
 */
int
remote_apply(pid_t tid, const struct rmt_call *c, Osm__RemoteReply *r,
    int64_t *ret, char **cause)
{
	if (remote_check(c, r, cause) != 0)
		return -1;
	*ret = r->ret;
	if (remote_write(tid, c, r) != 0)
		*ret = -EFAULT;
	/*
	 * A wait interrupted at home asks to be restarted through its
	 * restart block, which R's kernel does not have: restart it whole
	 * when no handler runs, fail it with EINTR when one does, as the
	 * kernel does for -ERESTARTNOHAND.
	 */
	if (*ret == -ERESTART_RESTARTBLOCK)
		*ret = -ERESTARTNOHAND;
	return 0;
}

/*
 * Has R's thread tid a signal that will take it through the kernel's
 * signal path (and its restart logic) on its way out of call c? Blocked
 * is R's mask, or the call's own for a wait with one.
 */
static int
remote_signalled(pid_t tid, const struct rmt_call *c)
{
	char		 path[64], line[128];
	FILE		*f;
	unsigned long	 v, pending = 0, blocked = 0;

	snprintf(path, sizeof path, "/proc/%ld/status", (long)tid);
	if ((f = fopen(path, "r")) == NULL)
		return 1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "SigPnd: %lx", &v) == 1 ||
		    sscanf(line, "ShdPnd: %lx", &v) == 1)
			pending |= v;
		else if (sscanf(line, "SigBlk: %lx", &v) == 1)
			blocked = v;
	}
	fclose(f);
	if (c->has_mask)
		blocked = c->mask;
	return (pending & ~blocked) != 0;
}

static int
remote_find(struct remote *g, uint64_t seq)
{
	size_t	i;

	for (i = 0; i < g->npending; i++) {
		if (g->pending[i].call.seq == seq)
			return i;
	}
	return -1;
}

static void
remote_drop(struct remote *g, int i)
{
	free(g->pending[i].statc_path);
	marshal_free(&g->pending[i].call);
	free(g->pending[i].msg);
	g->pending[i] = g->pending[--g->npending];
}

/*
 * Forget pending call seq, which remote_reply handed back to send home
 * again (REMOTE_FORWARD): R, interrupted while it waits in it, makes the
 * call again itself.
 */
void
remote_forget(struct remote *g, uint64_t seq)
{
	int	i;

	if ((i = remote_find(g, seq)) != -1)
		remote_drop(g, i);
}

/*
 * A RemoteReply from home: check it against its pending call, write its
 * outputs into R and answer R; ev says what became of it:
 *
 *   REMOTE_ANSWERED  R has its answer
 *   REMOTE_NONE      R had left the call (interrupted: it restarts the
 *		     call, or went on) and the result is dropped
 *   REMOTE_FORWARD   the call was interrupted at home and asks to be
 *		     restarted, but no signal will take R through the
 *		     kernel's restart logic: send ev->msg home again, as the
 *		     kernel would have restarted it
 *
 * woken says whether the caller has just queued a signal into R that
 * will end R's wait (1), none (0), or that it does not know (-1: R's
 * pending signals are looked at, which a signal R already took escapes).
 *
 * Returns -1 when the reply is refused: it does not match what was asked,
 * and the session is not to be trusted further.
 */
int
remote_reply(struct remote *g, const uint8_t *msg, size_t len, int woken,
    struct remote_event *ev, char **cause)
{
	Osm__RemoteReply	*r;
	struct remote_pending	*p;
	int64_t			 ret;
	int			 i, rv = -1;

	memset(ev, 0, sizeof *ev);
	if (len > RMT_MSG_MAX) {
		xasprintf(cause, "reply of %zu bytes over the limit", len);
		return -1;
	}
	if ((r = osm__remote_reply__unpack(NULL, len, msg)) == NULL) {
		xasprintf(cause, "malformed reply");
		return -1;
	}
	if ((i = remote_find(g, r->seq)) == -1) {
		xasprintf(cause, "reply to no pending call (seq %llu)",
		    (unsigned long long)r->seq);
		goto out;
	}
	p = &g->pending[i];
	ev->id = p->id;
	ev->tid = p->tid;
	ev->nr = p->call.nr;
	ev->name = p->call.name;
	ev->seq = p->call.seq;

	/* R left the call: it restarts it or went on; drop the result */
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &p->id) != 0) {
		g->stats.gone++;
		/* what it opened at home is P's all the same */
		ptable_got(&g->fio.ptab, p->call.nr, p->call.args, r->ret);
		remote_drop(g, i);
		rv = 0;
		goto out;
	}
	if (remote_apply(p->tid, &p->call, r, &ret, cause) != 0) {
		g->fio.ptab.ok = 0;
		remote_drop(g, i);
		goto out;
	}
	if (ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK &&
	    (woken == -1 ? !remote_signalled(p->tid, &p->call) : !woken)) {
		ev->kind = REMOTE_FORWARD;
		ev->msg = p->msg;
		ev->len = p->len;
		ev->has_mask = p->call.has_mask;
		ev->mask = p->call.mask;
		g->stats.restarted++;
		rv = 0;
		goto out;
	}
	fio_result(&g->fio, p->call.nr, p->call.args, &ret,
	    remote_fs_free(r), fio_on_fd(g->pending, g->npending,
	    p->call.args[0], p->call.seq));
	statc_reply(g, &p->call, &p->statc_path, p->statc_gen, ret,
	    r->n_outputs == 1 ? r->outputs[0]->data.data : NULL,
	    r->n_outputs == 1 ? r->outputs[0]->data.len : 0);
	statc_replied(g, p->call.nr, p->call.args);
	ptable_got(&g->fio.ptab, p->call.nr, p->call.args, ret);
	if (p->open && ret >= 0)
		shared_opened(g, p->id, p->flags, ret, p->call.seq == g->seq);
	if (p->dup_of >= 0 && ret >= 0)
		shared_dup(g, p->id, p->dup_of, p->flags, ret);
	if (p->adopted)
		shared_adopted(g, p->call.nr, (int)p->call.args[0], ret);
	if (ret == -EFAULT && r->ret != -EFAULT)
		g->stats.faults++;
	if ((rv = remote_answer(g, p->id, ret, cause)) == 1)
		rv = 0;
	else if (rv == 0)
		ev->kind = REMOTE_ANSWERED;
	remote_drop(g, i);
out:
	osm__remote_reply__free_unpacked(r, NULL);
	return rv;
}

int
remote_listener(const struct remote *g)
{
	return g->listener;
}

const struct remote_stats *
remote_stats(struct remote *g)
{
	g->stats.behind = g->fio.stats_behind;
	g->stats.served = g->fio.stats_served;
	g->stats.held = g->fio.stats_held;
	g->stats.fetches = g->fio.stats_fetches;
	g->stats.behind_errors = g->fio.stats_errors;
	g->stats.at_once = g->fio.stats_at_once;
	g->stats.known = g->fio.stats_known;
	g->stats.here = g->fio.stats_here;
	g->stats.stats_again = g->statc.hits;
	g->stats.piped = g->fio.stats_piped;
	g->stats.local = g->shared.stats_local;
	g->stats.local_in_r = g->shared.stats_local_r;
	g->stats.opened = g->shared.stats_opened;
	g->stats.refused = g->shared.stats_refused;
	g->stats.unlinked = g->shared.stats_unlinked;
	g->stats.opened_alone = g->shared.stats_alone;
	g->stats.opened_unseen = g->shared.stats_unseen;
	g->stats.ident_in_r = rstub_ident_hits(g);
	return &g->stats;
}

/*
 * The next message for home that the last event left, before the call it
 * sends (post 0), or after it (1); the caller frees *msg. 0: none.
 */
int
remote_out(struct remote *g, int post, enum remote_out *kind, uint8_t **msg,
    size_t *len)
{
	int	k;

	if (!fio_out(&g->fio, post, &k, msg, len))
		return 0;
	*kind = k;
	return 1;
}

/* Offsets owed go home (remote_out): before a dump of R, or at its end. */
void
remote_settle(struct remote *g)
{
	rstub_sync(g);
	fio_settle(&g->fio, &g->seq);
	shared_settle(g);
}

/*
 * Writes behind gathered wait for the next call: 1 if some do, and the
 * agent should send them a moment later (remote_flush) if none comes.
 */
int
remote_batched(const struct remote *g)
{
	return fio_batched(&g->fio) || rstub_batched(g);
}

/* Writes gathered go home (remote_out), those in R's ring with them. */
void
remote_flush(struct remote *g)
{
	rstub_flush(g);
	fio_flush(&g->fio, &g->seq);
}

/* Every call goes home as it is and waits for its answer (mosrun -s). */
void
remote_strict(struct remote *g)
{
	g->fio.off = 1;
	statc_clear(&g->statc);
	g->fio.wait_home |= g->fio.waiting;	/* a read waiting goes home */
	held_drop(&g->fio.held, -1);
}

/*
 * Something from outside reached R (a signal the home sent it): what the
 * guest kept of files at home may no longer be what they are (statc.c).
 */
void
remote_news(struct remote *g)
{
	statc_clear(&g->statc);
}

/*
 * A reply to a call sent behind, if it is one: 1 (a failure is kept for
 * the next call on its descriptor), 0 not one, -1 refused.
 */
int
remote_reply_behind(struct remote *g, const uint8_t *msg, size_t len,
    char **cause)
{
	Osm__RemoteReply	*r;
	int64_t			 expect;
	int			 rv;

	if (len > RMT_MSG_MAX ||
	    (r = osm__remote_reply__unpack(NULL, len, msg)) == NULL) {
		xasprintf(cause, "malformed reply");
		return -1;
	}
	rv = fio_behind_reply(&g->fio, r->seq, r->ret, remote_fs_free(r),
	    &expect);
	if (rv == 1)
		shared_behind_reply(g, r->seq, r->ret);
	if (rv == 1 && expect >= 0)	/* a write's or an unlock's */
		statc_replied(g, -1, NULL);
	rstub_failed(g);	/* a write of its slot's may have failed */
	if (rv == 1 && (r->n_outputs != 0 || r->ret < -4095 ||
	    (expect >= 0 && r->ret > expect))) {
		xasprintf(cause, "reply to a call behind out of range");
		rv = -1;
	}
	osm__remote_reply__free_unpacked(r, NULL);
	return rv;
}

/*
 * Bytes read ahead (SES_READ_DATA, msg taken: fio_data_unpack) for R's
 * read waiting: ev says REMOTE_ANSWERED, REMOTE_NONE (R left it, or they
 * are for none), or REMOTE_FORWARD (the home could not: R's read goes
 * home as it is).
 */
int
remote_read_data(struct remote *g, uint8_t *msg, size_t len,
    struct remote_event *ev, char **cause)
{
	Osm__RemoteReadData	*m;
	struct table_call	 tc;
	uint64_t		 id = g->fio.wait_id;
	pid_t			 tid = g->fio.wait_tid;
	long			 rv;
	int			 valid, rc = 0;

	memset(ev, 0, sizeof *ev);
	if ((m = fio_data_unpack(msg, len, cause)) == NULL)
		return -1;
	valid = g->fio.waiting && ioctl(g->listener,
	    SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
	g->fio.vtid = valid && (rc = remote_vtid(g, tid)) > 0 ? rc : 0;
	rc = fio_data(&g->fio, m, valid, &g->seq, &rv);
	g->fio.vtid = 0;
	switch (rc) {
	case 1:
		if ((rc = remote_answer(g, id, rv, cause)) == 1)
			rc = 0;
		ev->kind = REMOTE_ANSWERED;
		break;
	case -1:
		table_resolve(g->fio.wait_nr, g->fio.wait_args,
		    g->emu.home_pid, &tc);
		rc = remote_forward(g, id, tid, &tc, g->fio.wait_args, 0, ev,
		    cause);
		break;
	}
	osm__remote_read_data__free_unpacked(m, NULL);	/* msg, if left */
	return rc;
}

/*
 * The process's identity at home, as the home says it now: the guest
 * answers calls about it from this until one may change it.
 */
void
remote_set_ident(struct remote *g, const struct remote_ident *id)
{
	ident_set(&g->ident, id);
	rstub_ident(g);
}

/*
 * Make the file mapping R waits in (notification id, a REMOTE_MAP) of the
 * file open on srcfd here: put srcfd in R as its descriptor fd, the one
 * its mmap names, and let the mmap run in R as it is, with R's own
 * address, length, protection, flags and offset. R's calls on fd go home
 * as before; only a mapping takes the descriptor R holds here, and the
 * next mapping of fd puts the file it needs there. 0, 1 if R left the
 * call meanwhile, -1 with *cause.
 */
int
remote_map(struct remote *g, uint64_t id, int fd, int srcfd, char **cause)
{
	struct seccomp_notif_addfd	add;

	memset(&add, 0, sizeof add);
	add.id = id;
	add.flags = SECCOMP_ADDFD_FLAG_SETFD;
	add.srcfd = srcfd;
	add.newfd = fd;
	add.newfd_flags = O_CLOEXEC;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1) {
		if (errno == ENOENT)
			return 1;
		xasprintf(cause, "SECCOMP_IOCTL_NOTIF_ADDFD: %s",
		    strerror(errno));
		return -1;
	}
	return remote_continue(g, id, cause);
}

/*
 * Let the call R waits in (notification id) run in R as it is, unchanged:
 * a thread made or ended, once its mirror at home is. 0, 1 if R left the
 * call meanwhile, -1 with *cause.
 */
int
remote_continue(struct remote *g, uint64_t id, char **cause)
{
	struct seccomp_notif_resp	*resp = g->resp;

	rstub_publish(g, id);
	memset(resp, 0, g->resp_size);
	resp->id = id;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) == 0)
		return 0;
	if (errno == ENOENT)
		return 1;
	xasprintf(cause, "SECCOMP_IOCTL_NOTIF_SEND: %s", strerror(errno));
	return -1;
}

/*
 * The flags of R's thread tid's clone (nr clone, its flags in args[0]) or
 * clone3 (in the struct clone_args args[0] points at, read from R): 0, or
 * -1 if they cannot be read. The flags decide between a thread, which
 * stays here, and a process, which goes home; they are read while R waits
 * in the call, which R's other threads could change before the kernel
 * reads them: a thread that becomes a process then is R's own doing, and
 * its mirror at home is left waiting, ended with the process.
 */
int
remote_clone_flags(struct remote *g, pid_t tid, int nr, const uint64_t *args,
    uint64_t *flags)
{
	struct iovec	local, rem;

	(void)g;
	if (nr == SYS_clone) {
		*flags = args[0];
		return 0;
	}
	if (args[1] < sizeof *flags)
		return -1;
	local.iov_base = flags;
	local.iov_len = sizeof *flags;
	rem.iov_base = (void *)(uintptr_t)args[0];
	rem.iov_len = sizeof *flags;
	return process_vm_readv(tid, &local, 1, &rem, 1, 0) ==
	    (ssize_t)sizeof *flags ? 0 : -1;
}
