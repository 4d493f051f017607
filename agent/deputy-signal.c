/*
 * Signals while the process is away. A signal sent to P at home stops the
 * husk for us (every signal is unblocked in it) and goes to R; signals our
 * own stops of P took go the same way; when R is stopped by a stop signal
 * there, P stops too, a group stop its shell sees. Each of these returns
 * -1 with *cause when the session broke: the caller gives the copy up.
 */
#include <sys/ptrace.h>

#include <linux/ptrace.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

/*
 * Are signals waiting for P's thread tid? A peek at its queue and the
 * process's.
 */
int
deputy_signal_pending(struct deputy *d, pid_t tid)
{
	struct ptrace_peeksiginfo_args	a = { .off = 0, .nr = 1 };
	siginfo_t			si;

	if (ptrace(PTRACE_PEEKSIGINFO, tid, &a, &si) > 0)
		return 1;
	a.flags = PTRACE_PEEKSIGINFO_SHARED;
	return ptrace(PTRACE_PEEKSIGINFO, tid, &a, &si) > 0;
}

/*
 * Pass a signal sent to P at home, which stopped lane l, on to R, saying
 * which call of R's ran in that lane when it came: R's guest decides from
 * the call's reply whether the signal broke it off. A signal sent to the
 * thread (tgkill, pthread_kill, raise) goes to R's thread of that id; any
 * other, to R.
 */
int
deputy_signal_relay(struct deputy *d, struct husk_lane *l,
    const siginfo_t *si, char **cause)
{
	Osm__SesSignal	s = OSM__SES_SIGNAL__INIT;

	s.signo = si->si_signo;
	if (l->call != NULL) {
		s.has_seq = 1;
		s.seq = l->call->seq;
		l->nudged = 0;	/* its EINTR may be this signal's */
	}
	if (si->si_code == SI_TKILL) {
		s.has_tid = 1;
		s.tid = l->tid;
	}
	s.has_code = s.has_sender_pid = s.has_sender_uid = 1;
	s.code = si->si_code;
	s.sender_pid = si->si_pid;
	s.sender_uid = si->si_uid;
	if (si->si_code == SI_QUEUE) {
		s.has_value = 1;
		s.value = si->si_value.sival_int;
	}
	return session_send_msg(&d->ses, OSM__SES_KIND__SES_SIGNAL, &s.base,
	    cause);
}

/* Signals migrate/'s stops took from P on our behalf go to R too. */
int
deputy_signal_stolen(struct deputy *d, char **cause)
{
	struct husk_lane	*l;
	siginfo_t		 si[8];
	size_t			 n, i, k;

	for (k = 0; k < d->husk.nlanes; k++) {
		l = &d->husk.lanes[k];
		while ((n = mig_thread_stolen(d->task, l->tid, si,
		    nitems(si))) > 0)
			for (i = 0; i < n; i++)
				if (deputy_hold_pass(d, si[i].si_signo) != 0 &&
				    deputy_signal_relay(d, l, &si[i],
				    cause) == -1)
					return -1;
	}
	return 0;
}

/* R stopped by a stop signal: P stops too, a group stop for the shell. */
int
deputy_signal_stopped(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__SesSignal	*s;
	int		 signo;

	if ((s = osm__ses_signal__unpack(NULL, len, body)) == NULL ||
	    s->signo < 1 || s->signo >= NSIG) {
		if (s != NULL)
			osm__ses_signal__free_unpacked(s, NULL);
		xasprintf(cause, "malformed stop");
		return -1;
	}
	signo = s->signo;
	osm__ses_signal__free_unpacked(s, NULL);
	/*
	 * R waits in no call: it is stopped. P's handler is gone: default
	 * (SIGSTOP's action is always that, and cannot be set).
	 */
	if (!husk_busy(&d->husk) && (husk_hold(&d->husk, cause) == -1 ||
	    (signo != SIGSTOP && husk_default(&d->husk, signo, cause) == -1) ||
	    husk_run(&d->husk, cause) == -1))
		return -1;
	d->stop_sent = signo;
	kill(d->pid, signo);
	return deputy_signal_stolen(d, cause);
}
