/*
 * Holding P at home. The deputy traces P for its whole life; here it sets
 * P's trace options, stops P where it is for calls of its own (a dump, a
 * move out, a checkpoint), lets it go on natively, and runs a freshly
 * exec'd P to its program's entry point. Every signal P is let go with
 * passes deputy_hold_pass, which keeps back the one that asks for a
 * checkpoint.
 */
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <linux/auxvec.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Every thread P makes is traced from its start (PTRACE_O_TRACECLONE):
 * a move must hold all of them. Its children (fork, vfork) are not.
 */
#define HOLD_OPTIONS	(PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD | \
			 PTRACE_O_TRACECLONE)

/*
 * P's trace options, in each of its threads, stopped: exec events, new
 * threads, syscall stops told apart, and while away, P killed with us: a
 * husk cannot live on without its deputy.
 */
int
deputy_hold_options(struct deputy *d, char **cause)
{
	long	 opts = HOLD_OPTIONS;
	pid_t	*tids;
	ssize_t	 n, i;

	if (d->state == DEPUTY_AWAY)
		opts |= PTRACE_O_EXITKILL;
	if ((n = proc_threads(d->pid, &tids)) == -1)
		n = 0;
	for (i = 0; i < n; i++)
		if (tids[i] != d->pid)
			ptrace(PTRACE_SETOPTIONS, tids[i], 0, opts);
	free(tids);
	if (ptrace(PTRACE_SETOPTIONS, d->pid, 0, opts) == -1) {
		if (cause != NULL)
			xasprintf(cause, "PTRACE_SETOPTIONS: %s",
			    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The signal P is let go with after a signal stop: sig, or none for the
 * signal of mosrun --checkpoint-on, which is not the program's to see but
 * asks for a checkpoint. That is taken from the loop once P runs again
 * (d->ckpt_soon, deputy.c), not in the middle of this stop.
 */
int
deputy_hold_pass(struct deputy *d, int sig)
{
	if (sig == 0 || sig != d->o->ckpt_signal)
		return sig;
	d->ckpt_signalled = 1;
	if (d->loop != NULL)
		ev_timer_start(d->loop, &d->ckpt_soon);
	return 0;
}

/* Take hold of P, which mosrun's deputy_main found: -1 if we cannot. */
int
deputy_hold_seize(struct deputy *d, char **cause)
{
	if (ptrace(PTRACE_SEIZE, d->pid, 0, HOLD_OPTIONS) == -1) {
		xasprintf(cause, "cannot hold process %d: %s", (int)d->pid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* Thread tid of P, among those asked to stop: its index, or -1. */
static ssize_t
hold_find(const pid_t *asked, size_t n, pid_t tid)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (asked[i] == tid)
			return i;
	return -1;
}

/*
 * Stop P where it is, at home, every thread of it as a ptrace interrupt
 * stop, and the threads it makes meanwhile. Signals that come first are
 * delivered: at home they are P's own business.
 */
static int
deputy_hold_stop(struct deputy *d, char **cause)
{
	pid_t	*tids, *asked = NULL, r;
	int	*stopped = NULL, status, more;
	size_t	 nasked = 0, i;
	ssize_t	 n, k;

	do {
		if ((n = proc_threads(d->pid, &tids)) == -1) {
			xasprintf(cause, "the process ended");
			goto fail;
		}
		more = 0;
		for (k = 0; k < n; k++) {
			if (hold_find(asked, nasked, tids[k]) != -1)
				continue;
			if (ptrace(PTRACE_INTERRUPT, tids[k], 0, 0) == -1)
				continue;	/* ending, or not ours yet */
			asked = xreallocarray(asked, nasked + 1, sizeof *asked);
			stopped = xreallocarray(stopped, nasked + 1,
			    sizeof *stopped);
			asked[nasked] = tids[k];
			stopped[nasked++] = 0;
			more = 1;
		}
		free(tids);
		for (;;) {
			for (i = 0; i < nasked && stopped[i]; i++)
				;
			if (i == nasked)
				break;
			while ((r = waitpid(-1, &status, __WALL)) == -1 &&
			    errno == EINTR)
				;
			if (r == d->pid && !WIFSTOPPED(status)) {
				/* Reaped here: SIGCHLD's handler must hear. */
				d->gone = 1;
				if (d->loop != NULL)
					ev_feed_signal_event(d->loop, SIGCHLD);
			}
			if (r == -1 || (r == d->pid && !WIFSTOPPED(status))) {
				xasprintf(cause, "the process ended");
				goto fail;
			}
			k = hold_find(asked, nasked, r);
			if (!WIFSTOPPED(status)) {
				if (k != -1)	/* a thread ended */
					stopped[k] = 1;
				continue;
			}
			if ((status >> 16) == PTRACE_EVENT_STOP &&
			    WSTOPSIG(status) == SIGTRAP) {
				if (k == -1) {
					/* a new thread's first stop: keep it */
					asked = xreallocarray(asked, nasked + 1,
					    sizeof *asked);
					stopped = xreallocarray(stopped,
					    nasked + 1, sizeof *stopped);
					asked[nasked] = r;
					k = nasked++;
					more = 1;
				}
				stopped[k] = 1;
				continue;
			}
			ptrace(PTRACE_CONT, r, 0, (status >> 16) == 0 ?
			    deputy_hold_pass(d, WSTOPSIG(status)) : 0);
			/* a clone event or a signal took the interrupt's place */
			if (k != -1)
				ptrace(PTRACE_INTERRUPT, r, 0, 0);
		}
	} while (more);
	free(asked);
	free(stopped);
	return 0;
fail:
	free(asked);
	free(stopped);
	return -1;
}

/* Let every thread of P, stopped, go on. */
static void
hold_cont_all(struct deputy *d)
{
	pid_t	*tids;
	ssize_t	 n, i;

	if ((n = proc_threads(d->pid, &tids)) == -1)
		return;
	for (i = 0; i < n; i++)
		ptrace(PTRACE_CONT, tids[i], 0, 0);
	free(tids);
}

/*
 * Hold P, running at home or in a ptrace stop if stopped, for calls of
 * ours (d->task); deputy_hold_resume lets it go on. On failure P goes on.
 */
int
deputy_hold(struct deputy *d, int stopped, char **cause)
{
	if (!stopped && deputy_hold_stop(d, cause) == -1)
		return -1;
	if ((d->task = mig_adopt(d->pid, cause)) == NULL) {
		deputy_hold_options(d, NULL);
		hold_cont_all(d);
		return -1;
	}
	deputy_clock_hold(d);
	d->state = DEPUTY_HELD;
	return 0;
}

/* Let P, held, run natively at home again, still traced by us. */
void
deputy_hold_resume(struct deputy *d)
{
	char	*why = NULL;

	d->state = DEPUTY_HOME;
	/* options first: they can be set only while P is stopped */
	if (deputy_hold_options(d, &why) == -1 ||
	    mig_resume(d->task, &why) == -1) {
		log_warnx("process %d: resume: %s", (int)d->pid, why);
		free(why);
	}
	d->task = NULL;
}

/*
 * Run P, stopped at its exec, to the program's entry point: the dynamic
 * loader has mapped every library by then, which a process away could only
 * do by coming home. A breakpoint at AT_ENTRY stops it there, stopped
 * again for the caller.
 */
int
deputy_hold_to_entry(struct deputy *d, char **cause)
{
	struct user_regs_struct	 r;
	unsigned long		 av[2], entry = 0;
	long			 word;
	char			 path[64];
	FILE			*f;
	int			 status;

	snprintf(path, sizeof path, "/proc/%d/auxv", (int)d->pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fread(av, sizeof av, 1, f) == 1 && av[0] != AT_NULL)
		if (av[0] == AT_ENTRY)
			entry = av[1];
	fclose(f);
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, d->pid, entry, 0);
	if (entry == 0 || errno != 0 || ptrace(PTRACE_POKETEXT, d->pid, entry,
	    (word & ~0xffL) | 0xcc) == -1) {
		xasprintf(cause, "breakpoint at the entry point: %s",
		    strerror(errno));
		return -1;
	}
	ptrace(PTRACE_CONT, d->pid, 0, 0);
	for (;;) {
		while (waitpid(d->pid, &status, __WALL) == -1 && errno == EINTR)
			;
		if (!WIFSTOPPED(status)) {
			xasprintf(cause, "the process ended");
			return -1;
		}
		if ((status >> 16) == 0 && WSTOPSIG(status) == SIGTRAP &&
		    ptrace(PTRACE_GETREGS, d->pid, 0, &r) == 0 &&
		    r.rip == entry + 1)
			break;
		ptrace(PTRACE_CONT, d->pid, 0, (status >> 16) == 0 ?
		    deputy_hold_pass(d, WSTOPSIG(status)) : 0);
	}
	r.rip = entry;
	if (ptrace(PTRACE_POKETEXT, d->pid, entry, word) == -1 ||
	    ptrace(PTRACE_SETREGS, d->pid, 0, &r) == -1) {
		xasprintf(cause, "back from the breakpoint: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}
