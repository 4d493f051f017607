/*
 * Signals sent to the process at home, delivered to R here. With no call
 * of R's at home one goes to R at once; otherwise whether the calls ran
 * decides, as it would have natively: the signal waits for the calls'
 * replies (the home is asked to stop each call it may break off), then
 * goes to R after the results, and before the interrupted calls' answers,
 * so that R's own masks and handler flags decide whether each call
 * restarts or fails with EINTR (guest-serve.c). A signal sent at home to
 * one thread (tgkill) goes to that thread of R's, by its id. And those
 * our own stops of R took (a checkpoint, the look at its locks) are given
 * back once it goes on (guest_release).
 */
#include <sys/syscall.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

/* R's call at home of sequence number seq, or NULL. */
struct guest_call *
guest_signal_call(struct guest *g, uint64_t seq)
{
	size_t	i;

	for (i = 0; i < g->ncalls; i++)
		if (g->calls[i].seq == seq)
			return &g->calls[i];
	return NULL;
}

/*
 * Queue a signal sent to the process at home into R: into R's thread tid
 * (ours) alone if tid, else into R, where its kernel picks a thread that
 * does not block it.
 */
void
guest_signal_deliver(struct guest *g, const Osm__SesSignal *s, pid_t tid)
{
	siginfo_t	si;
	int		rc;

	if (s->has_code && s->code == SI_QUEUE && s->has_value) {
		/* sigqueue's value must survive; the sender is now us */
		memset(&si, 0, sizeof si);
		si.si_signo = s->signo;
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value.sival_int = s->value;
		rc = tid != 0 ? syscall(SYS_rt_tgsigqueueinfo, g->pid, tid,
		    s->signo, &si) : syscall(SYS_rt_sigqueueinfo, g->pid,
		    s->signo, &si);
	} else if (tid != 0)
		rc = syscall(SYS_tgkill, g->pid, tid, s->signo);
	else
		rc = kill(g->pid, s->signo);
	if (rc == -1)
		log_warn("%s: signal %d", g->conn.who, s->signo);
	remote_news(g->remote);	/* it may say a file changed */
}

/*
 * The signals held for the calls' replies go to R now, but those in keep
 * (a wait's mask blocks them: R waits in it again), which stay held.
 */
void
guest_signal_deliver_unblocked(struct guest *g, uint64_t keep)
{
	Osm__SesSignal	s = OSM__SES_SIGNAL__INIT;
	int		i, n = 0;

	for (i = 0; i < g->nheld; i++) {
		if (keep & (1ULL << (g->held[i].signo - 1))) {
			g->held[n++] = g->held[i];
			continue;
		}
		s.signo = g->held[i].signo;
		guest_signal_deliver(g, &s, g->held[i].tid);
	}
	g->nheld = n;
}

void
guest_signal_deliver_held(struct guest *g)
{
	guest_signal_deliver_unblocked(g, 0);
}

/*
 * Will held signal h end the wait of R's thread in call c at home? Not if
 * it is another thread's, or the thread blocks or ignores it — by the
 * wait's own mask, for a wait with one — or if its default action is to
 * ignore it: the thread is waiting, it cannot change its mask or its
 * handlers now.
 */
int
guest_signal_wakes(struct guest *g, const struct guest_call *c,
    const struct guest_held *h)
{
	uint64_t	bit = 1ULL << (h->signo - 1), blk = 0, ign = 0, cgt = 0;
	int		sig = h->signo;

	if (sig == SIGKILL)
		return 1;
	if (h->tid != 0 && h->tid != c->tid)
		return 0;
	if (c->has_mask)
		blk = c->mask;
	else
		proc_status_mask(c->tid, "SigBlk", &blk);
	proc_status_mask(g->pid, "SigIgn", &ign);
	proc_status_mask(g->pid, "SigCgt", &cgt);
	if ((blk | ign) & bit)
		return 0;
	if (!(cgt & bit) && (sig == SIGCHLD || sig == SIGURG ||
	    sig == SIGWINCH || sig == SIGCONT))
		return 0;
	return 1;
}

/*
 * Does held signal h, sent to one thread of R's, end R once given: not
 * caught, ignored or blocked by that thread, and ending the process by
 * its default action?
 */
int
guest_signal_ends(struct guest *g, const struct guest_held *h)
{
	uint64_t	bit = 1ULL << (h->signo - 1), blk = 0, ign = 0, cgt = 0;

	if (h->tid <= 0)
		return 0;
	switch (h->signo) {
	case SIGKILL:
		return 1;
	case SIGCHLD:
	case SIGURG:
	case SIGWINCH:
	case SIGCONT:
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		return 0;
	}
	proc_status_mask(h->tid, "SigBlk", &blk);
	proc_status_mask(g->pid, "SigIgn", &ign);
	proc_status_mask(g->pid, "SigCgt", &cgt);
	return !((blk | ign | cgt) & bit);
}

static void
signal_hold(struct guest *g, int signo, pid_t tid)
{
	if (g->nheld < NSIG) {
		g->held[g->nheld].signo = signo;
		g->held[g->nheld++].tid = tid;
	}
}

/*
 * A signal sent to the process at home (SES_SIGNAL), or to one thread of
 * it. Every call at home it may break off is asked to stop (but the one it
 * came in, which the home broke off already), and the signal waits for
 * their replies: a thread of R's waiting in a call the signal woke would
 * make it again, and a call may have run at home.
 */
void
guest_signal_from_home(struct guest *g, const uint8_t *body, size_t len)
{
	Osm__SesSignal		*s;
	Osm__SesCancel		 cancel = OSM__SES_CANCEL__INIT;
	struct guest_call	*c;
	pid_t			 tid = 0;
	size_t			 i;

	if ((s = osm__ses_signal__unpack(NULL, len, body)) == NULL ||
	    s->signo < 1 || s->signo >= NSIG) {
		if (s != NULL)
			osm__ses_signal__free_unpacked(s, NULL);
		guest_ses_fail(g, "malformed signal from home");
	}
	if (s->has_tid && (tid = remote_tid_here(g->remote, s->tid)) <= 0) {
		log_warnx("%s: signal %d for thread %u, which R has not",
		    g->conn.who, s->signo, s->tid);
		osm__ses_signal__free_unpacked(s, NULL);
		return;
	}
	for (i = 0; i < g->ncalls; i++) {
		c = &g->calls[i];
		if (tid != 0 && c->tid != tid)
			continue;
		/* a wait whose mask blocks it: pending until it ends */
		if (c->has_mask && (c->mask & (1ULL << (s->signo - 1))) &&
		    s->signo != SIGKILL && s->signo != SIGSTOP)
			continue;
		if ((!s->has_seq || s->seq != c->seq) && !c->cancelled) {
			cancel.seq = c->seq;
			guest_ses_send(g, OSM__SES_KIND__SES_CANCEL,
			    &cancel.base);
		}
		c->cancelled = 1;
	}
	if (g->ncalls == 0 || (s->has_code && s->code == SI_QUEUE))
		guest_signal_deliver(g, s, tid);	/* queued: a value */
	else
		signal_hold(g, s->signo, tid);
	osm__ses_signal__free_unpacked(s, NULL);
}

/*
 * Let R (held in t) go on: the signals our stops took from its threads
 * are given back, each to the thread it was sent to (SI_TKILL) or to R.
 */
void
guest_release(struct guest *g, struct mig_task *t)
{
	Osm__SesSignal	 s = OSM__SES_SIGNAL__INIT;
	siginfo_t	*si = NULL;
	pid_t		*tids, *to = NULL;
	size_t		 n = 0, i, nt, k;
	char		*cause = NULL;

	/* each thread's, to go to the same thread (ours: by its id here) */
	nt = mig_threads(t, NULL, 0);
	tids = xcalloc(nt, sizeof *tids);
	mig_threads(t, tids, nt);
	for (k = 0; k < nt; k++) {
		for (;;) {
			si = xreallocarray(si, n + 8, sizeof *si);
			to = xreallocarray(to, n + 8, sizeof *to);
			if ((i = mig_thread_stolen(t, tids[k], si + n, 8)) == 0)
				break;
			while (i-- > 0)
				to[n++] = mig_thread_here(t, tids[k]);
		}
	}
	free(tids);
	if (mig_release(t, &cause) == -1) {
		free(si);
		free(to);
		guest_ses_fail(g, cause);	/* R is killed: none to give */
		free(cause);
		return;
	}
	for (i = 0; i < n; i++) {
		s.signo = si[i].si_signo;
		s.has_code = s.has_value = 1;
		s.code = si[i].si_code;
		s.value = si[i].si_value.sival_int;
		/* a signal sent to the thread goes back to it, else to R */
		guest_signal_deliver(g, &s, si[i].si_code == SI_TKILL ? to[i] :
		    0);
	}
	free(si);
	free(to);
}
