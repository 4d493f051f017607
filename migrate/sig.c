/*
 * The process's signal state: handlers (read by injected rt_sigaction
 * calls: ptrace has no request for them), process-directed pending
 * signals and the interval timers that send signals. What is each
 * thread's (mask, its own pending signals, alternate stack) is in
 * threads.c.
 *
 * Each injected call costs two ptrace stops, so only the handlers that
 * mean something are read and written: those /proc says are caught or
 * ignored, and SIGCHLD's, whose flags (SA_NOCLDWAIT, SA_NOCLDSTOP) count
 * even with the default action. The flags and mask of another signal left
 * at its default are not carried: the kernel never uses them.
 */
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

#define SIG_MAX		64
#define PENDING_MAX	65536

/* The kernel's struct sigaction on x86_64. */
struct ksigaction {
	uint64_t	handler;
	uint64_t	flags;
	uint64_t	restorer;
	uint64_t	mask;
};

/* The signals whose handlers process pid has set, or all if unknown. */
static uint64_t
sig_set(pid_t pid)
{
	uint64_t	cgt, ign;

	if (proc_status_mask(pid, "SigCgt", &cgt) == -1 ||
	    proc_status_mask(pid, "SigIgn", &ign) == -1)
		return ~0ULL;
	return cgt | ign | 1ULL << (SIGCHLD - 1);
}

/* Pending signals of thread th, or of the process (shared). */
int
sig_peek(struct mig_thread *th, int shared, ProtobufCBinaryData **out,
    size_t *n, char **cause)
{
	struct __ptrace_peeksiginfo_args a;
	siginfo_t	 si[32];
	int		 got, i;

	*out = NULL;
	*n = 0;
	a.off = 0;
	a.flags = shared ? PTRACE_PEEKSIGINFO_SHARED : 0;
	for (;;) {
		a.nr = nitems(si);
		got = ptrace(PTRACE_PEEKSIGINFO, th->tid, &a, si);
		if (got == -1) {
			xasprintf(cause, "PTRACE_PEEKSIGINFO: %s",
			    strerror(errno));
			return -1;
		}
		if (got == 0)
			break;
		if (*n + got > PENDING_MAX) {
			xasprintf(cause, "thread %d has too many pending "
			    "signals", th->tid);
			return -1;
		}
		*out = xreallocarray(*out, *n + got, sizeof **out);
		for (i = 0; i < got; i++) {
			(*out)[*n].data = xmalloc(sizeof si[i]);
			memcpy((*out)[*n].data, &si[i], sizeof si[i]);
			(*out)[*n].len = sizeof si[i];
			(*n)++;
		}
		a.off += got;
	}
	return 0;
}

/*
 * A signal that claims a sender (kill, tgkill, the kernel) can be queued
 * again for the process only from its main thread (task_requeue): with
 * that gone, such a pending signal would come back thread-directed, which
 * is not what it was.
 */
static int
sig_claims_sender(const ProtobufCBinaryData *d, size_t n)
{
	siginfo_t	si;
	size_t		i;

	for (i = 0; i < n; i++) {
		memcpy(&si, d[i].data, sizeof si);
		if (si.si_code >= 0 || si.si_code == SI_TKILL)
			return si.si_signo;
	}
	return 0;
}

int
sig_dump(struct mig_task *t, Osm__ImgSignals *s, int flags, char **cause)
{
	struct ksigaction	 ka;
	struct itimerval	 it;
	Osm__ImgSigaction	*a;
	Osm__ImgItimer		*ti;
	uint64_t		 set;
	size_t			 i;
	int			 sig;

	osm__img_signals__init(s);
	s->actions = xcalloc(SIG_MAX, sizeof *s->actions);
	set = sig_set(t->pid);
	for (sig = 1; sig <= SIG_MAX; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP ||
		    !(set & 1ULL << (sig - 1)))
			continue;
		if (task_sys_ok(t, "rt_sigaction", SYS_rt_sigaction,
		    (sysargs){ sig, 0, t->scratch, 8 }) == -1)
			goto inject;
		if (task_read(t, t->scratch, &ka, sizeof ka, cause) == -1)
			return -1;
		if (ka.handler == 0 && ka.flags == 0 && ka.mask == 0)
			continue;
		a = xmalloc(sizeof *a);
		osm__img_sigaction__init(a);
		a->signo = sig;
		a->handler = ka.handler;
		a->flags = ka.flags;
		a->restorer = ka.restorer;
		a->mask = ka.mask;
		s->actions[s->n_actions++] = a;
	}

	/* Interval timers are the home process's with MIG_CONTEXT. */
	s->itimers = xcalloc(3, sizeof *s->itimers);
	for (i = 0; i < 3 && !(flags & MIG_CONTEXT); i++) {
		if (task_sys_ok(t, "getitimer", SYS_getitimer, (sysargs){ i,
		    t->scratch }) == -1)
			goto inject;
		if (task_read(t, t->scratch, &it, sizeof it, cause) == -1)
			return -1;
		if (!timerisset(&it.it_value))
			continue;
		ti = xmalloc(sizeof *ti);
		osm__img_itimer__init(ti);
		ti->which = i;
		ti->interval_us = it.it_interval.tv_sec * 1000000ULL +
		    it.it_interval.tv_usec;
		ti->value_us = it.it_value.tv_sec * 1000000ULL +
		    it.it_value.tv_usec;
		s->itimers[s->n_itimers++] = ti;
	}

	if (flags & MIG_PENDING_STAY)
		return 0;
	if (sig_peek(t->lead, 1, &s->pending_shared, &s->n_pending_shared,
	    cause) == -1)
		return -1;
	if (t->lead->tid != t->tgid && (sig = sig_claims_sender(
	    s->pending_shared, s->n_pending_shared)) != 0) {
		xasprintf(cause, "process %d has signal %d pending for the "
		    "process, from a sender, and its main thread has ended: "
		    "it could only come back directed at one thread",
		    t->tgid, sig);
		return -1;
	}
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

void
sig_free(Osm__ImgSignals *s)
{
	size_t	i;

	for (i = 0; i < s->n_actions; i++)
		free(s->actions[i]);
	free(s->actions);
	for (i = 0; i < s->n_itimers; i++)
		free(s->itimers[i]);
	free(s->itimers);
	for (i = 0; i < s->n_pending_shared; i++)
		free(s->pending_shared[i].data);
	free(s->pending_shared);
}

/* Queued siginfo of the image, on paper. */
int
sig_check_info(const ProtobufCBinaryData *d, size_t n)
{
	siginfo_t	si;
	size_t		i;

	for (i = 0; i < n; i++) {
		if (d[i].len != sizeof si)
			return -1;
		memcpy(&si, d[i].data, sizeof si);
		if (si.si_signo < 1 || si.si_signo > SIG_MAX)
			return -1;
	}
	return 0;
}

int
sig_check(const Osm__ImgSignals *s, char **cause)
{
	uint64_t	seen = 0;
	size_t		i;
	unsigned int	sig;

	if (s->n_actions > SIG_MAX || s->n_itimers > 3 ||
	    s->n_pending_shared > PENDING_MAX)
		goto bad;
	for (i = 0; i < s->n_actions; i++) {
		sig = s->actions[i]->signo;
		if (sig < 1 || sig > SIG_MAX || sig == SIGKILL ||
		    sig == SIGSTOP || (seen & (1ULL << (sig - 1))))
			goto bad;
		seen |= 1ULL << (sig - 1);
	}
	for (i = 0; i < s->n_itimers; i++) {
		if (s->itimers[i]->which > 2)
			goto bad;
	}
	if (sig_check_info(s->pending_shared, s->n_pending_shared) == -1)
		goto bad;
	return 0;
bad:
	xasprintf(cause, "image corrupted: signal state");
	return -1;
}

int
sig_restore(struct mig_task *t, const Osm__ImgSignals *s, int flags,
    char **cause)
{
	struct ksigaction	 ka;
	struct itimerval	 it[3];
	siginfo_t		 si;
	uint64_t		 set;
	size_t			 i;
	int			 sig;

	/* The image's handlers, and the target's own back to the default. */
	set = sig_set(t->pid);
	for (i = 0; i < s->n_actions; i++) {
		if (s->actions[i]->signo >= 1 &&
		    s->actions[i]->signo <= SIG_MAX)
			set |= 1ULL << (s->actions[i]->signo - 1);
	}
	for (sig = 1; sig <= SIG_MAX; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP ||
		    !(set & 1ULL << (sig - 1)))
			continue;
		memset(&ka, 0, sizeof ka);
		for (i = 0; i < s->n_actions; i++) {
			if ((int)s->actions[i]->signo != sig)
				continue;
			ka.handler = s->actions[i]->handler;
			ka.flags = s->actions[i]->flags;
			ka.restorer = s->actions[i]->restorer;
			ka.mask = s->actions[i]->mask;
		}
		if (task_write(t, t->scratch, &ka, sizeof ka, cause) == -1)
			return -1;
		if (task_sys_ok(t, "rt_sigaction", SYS_rt_sigaction,
		    (sysargs){ sig, t->scratch, 0, 8 }) == -1)
			goto inject;
	}

	memset(it, 0, sizeof it);
	for (i = 0; i < s->n_itimers; i++) {
		struct itimerval *v = &it[s->itimers[i]->which];

		v->it_interval.tv_sec = s->itimers[i]->interval_us / 1000000;
		v->it_interval.tv_usec = s->itimers[i]->interval_us % 1000000;
		v->it_value.tv_sec = s->itimers[i]->value_us / 1000000;
		v->it_value.tv_usec = s->itimers[i]->value_us % 1000000;
	}
	for (i = 0; i < 3 && !(flags & MIG_CONTEXT); i++) {
		if (task_write(t, t->scratch, &it[i], sizeof it[i],
		    cause) == -1)
			return -1;
		if (task_sys_ok(t, "setitimer", SYS_setitimer, (sysargs){ i,
		    t->scratch, 0 }) == -1)
			goto inject;
	}

	for (i = 0; i < s->n_pending_shared; i++) {
		memcpy(&si, s->pending_shared[i].data, sizeof si);
		if (task_requeue(t, t->lead, &si, 1, cause) == -1)
			return -1;
	}
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}
