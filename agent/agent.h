/*
 * agent/ — the two per-process agents and what they share (docs/
 * ARCHITECTURE.md): the deputy, at home, which holds the process P for its
 * whole life, and the guest agent, on the node where the process runs,
 * which holds the running copy R. Both link migrate/ and libremote/ and
 * glue them together; neither library knows the other.
 */
#ifndef AGENT_H
#define AGENT_H

#include <sys/types.h>

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/osm.h"
#include "migrate/migrate.h"

/* husk.c: P at home while it runs elsewhere */
struct husk {
	struct mig_task	*t;
	int		 memfd;		/* the area shared with the stub */
	uint8_t		*shm;		/* our view: control page, scratch */
	size_t		 len;
	uint64_t	 base;		/* the same area in the task */
	uint64_t	 code;		/* the stub */
	int		 running;	/* the stub runs: not stopped by us */
	int		 busy;		/* a call was asked and not answered */
};
enum husk_stop {
	HUSK_RETURNED,		/* the call returned */
	HUSK_SIGNAL,		/* a signal for the process */
	HUSK_OTHER,		/* an interrupt or a group stop */
};
int		 husk_make(struct mig_task *t, size_t scratch, struct husk *h,
		    char **cause);
void		 husk_free(struct husk *h);
uint8_t		*husk_scratch(const struct husk *h, uint64_t *base,
		    size_t *len);
int		 husk_run(struct husk *h, char **cause);
void		 husk_call(struct husk *h, long nr, const uint64_t *args);
enum husk_stop	 husk_stopped(struct husk *h, int status, long *rv,
		    siginfo_t *si);
int		 husk_continue(struct husk *h, int sig, char **cause);
int		 husk_hold(struct husk *h, char **cause);
int		 husk_grow(struct husk *h, size_t want, char **cause);
int		 husk_unblock(struct husk *h, char **cause);
int		 husk_default(struct husk *h, int sig, char **cause);
int		 husk_end(struct husk *h, int signaled, int status,
		    char **cause);
int		 husk_say(struct husk *h, int fd, const char *msg, size_t len);

#endif
