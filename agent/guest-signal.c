/*
 * Signals sent to the process at home, delivered to R here. With no call
 * of R's at home one goes to R at once; otherwise whether that call ran
 * decides, as it would have natively: the signal waits for the call's
 * reply (the home is asked to stop the call if the signal came before the
 * call got there), then goes to R after a result, or before an
 * interrupted call's answer, so that R's own mask and handler flags decide
 * whether the call restarts or fails with EINTR (guest-serve.c).
 */
#include <sys/syscall.h>

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

/* Queue a signal sent to the process at home into R. */
void
guest_signal_deliver(struct guest *g, const Osm__SesSignal *s)
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
		rc = syscall(SYS_rt_sigqueueinfo, g->pid, s->signo, &si);
	} else
		rc = kill(g->pid, s->signo);
	if (rc == -1)
		log_warn("%s: signal %d", g->conn.who, s->signo);
}

/*
 * The signals held for a call's reply go to R now, but those in keep (a
 * wait's mask blocks them: R waits in it again), which stay held.
 */
void
guest_signal_deliver_unblocked(struct guest *g, uint64_t keep)
{
	Osm__SesSignal	s = OSM__SES_SIGNAL__INIT;
	int		i, n = 0;

	for (i = 0; i < g->nheld; i++) {
		if (keep & (1ULL << (g->held[i] - 1))) {
			g->held[n++] = g->held[i];
			continue;
		}
		s.signo = g->held[i];
		guest_signal_deliver(g, &s);
	}
	g->nheld = n;
}

void
guest_signal_deliver_held(struct guest *g)
{
	guest_signal_deliver_unblocked(g, 0);
}

/*
 * Will sig end R's wait in the call at home? Not if R blocks or ignores
 * it — by the wait's own mask, for a wait with one — or if its default
 * action is to ignore it: R is waiting, it cannot change its mask or its
 * handlers now.
 */
int
guest_signal_wakes(struct guest *g, int sig)
{
	uint64_t	bit = 1ULL << (sig - 1), blk = 0, ign = 0, cgt = 0;

	if (sig == SIGKILL)
		return 1;
	if (g->has_mask)
		blk = g->mask;
	else
		proc_status_mask(g->pid, "SigBlk", &blk);
	proc_status_mask(g->pid, "SigIgn", &ign);
	proc_status_mask(g->pid, "SigCgt", &cgt);
	if ((blk | ign) & bit)
		return 0;
	if (!(cgt & bit) && (sig == SIGCHLD || sig == SIGURG ||
	    sig == SIGWINCH || sig == SIGCONT))
		return 0;
	return 1;
}

/* A signal sent to the process at home (SES_SIGNAL). */
void
guest_signal_from_home(struct guest *g, const uint8_t *body, size_t len)
{
	Osm__SesSignal	*s;
	Osm__SesCancel	 c = OSM__SES_CANCEL__INIT;

	if ((s = osm__ses_signal__unpack(NULL, len, body)) == NULL ||
	    s->signo < 1 || s->signo >= NSIG) {
		if (s != NULL)
			osm__ses_signal__free_unpacked(s, NULL);
		guest_ses_fail(g, "malformed signal from home");
	}
	if (g->pending == 0 || (s->has_code && s->code == SI_QUEUE))
		guest_signal_deliver(g, s);	/* queued ones carry a value */
	else if (g->has_mask && (g->mask & (1ULL << (s->signo - 1))) &&
	    s->signo != SIGKILL && s->signo != SIGSTOP) {
		/* the wait's mask blocks it: pending until the wait ends */
		if (g->nheld < NSIG)
			g->held[g->nheld++] = s->signo;
	} else {
		if (!s->has_seq || s->seq != g->pending) {
			c.seq = g->pending;
			guest_ses_send(g, OSM__SES_KIND__SES_CANCEL, &c.base);
		}
		if (g->nheld < NSIG)
			g->held[g->nheld++] = s->signo;
	}
	osm__ses_signal__free_unpacked(s, NULL);
}
