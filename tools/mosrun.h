/* mosrun and its deputy agent. */
#ifndef MOSRUN_H
#define MOSRUN_H

#include <sys/types.h>

#include <ev.h>
#include <sched.h>
#include <stdint.h>

#include "lib/osm.h"
#include "agent/agent.h"

struct home_call;

struct mosrun_opts {
	const char	 *sock;
	uint32_t	  start_node;	/* -r, 0: home */
	int		  best;		/* -b: start on the best node */
	int		  locked;	/* -L: no automatic migration */
	uint64_t	  mem_need;	/* -m, bytes */
	const char	 *ckpt_base;	/* -C: FILE.1, FILE.2, ... */
	double		  ckpt_every;	/* -A, seconds; 0: on demand */
	unsigned	  ckpt_max;	/* -N: the last kept; 0: all */
	const char	 *recover;	/* -R: the checkpoint to go on from */
	struct mig_fd_override *overrides;	/* --fd, with -R */
	size_t		  noverrides;
	char		**argv;
};

enum deputy_where {
	DEPUTY_HOME,		/* P runs natively */
	DEPUTY_AWAY,		/* P is a husk, R runs on dep->where */
};

struct deputy {
	const struct mosrun_opts *o;
	pid_t			 pid;		/* P */
	uint32_t		 self;		/* the home node */
	enum deputy_where	 state;
	uint32_t		 where;
	char			 command[256];
	int			 log_fd;	/* OSM_DEPUTY_LOG, or -1 */
	struct ev_loop		*loop;
	ev_signal		 sigchld;
	ev_signal		 sigterm;

	/* our connection to mosd, re-made if mosd restarts */
	int			 ctl_fd;
	ev_io			 ctl_ev;
	ev_timer		 reconnect;
	ev_timer		 stats;		/* how P does, at home */
	/* where mosd sends orders for P */
	int			 order_fd;
	ev_io			 order_ev;
	char			 order_path[64];

	/* away: P is held stopped, R runs elsewhere */
	struct mig_task		*task;
	struct session		 ses;
	int			 ses_open;
	ev_io			 ses_ev;
	ev_timer		 ses_timer;	/* silence on the session */
	struct husk		 husk;		/* P while away */
	struct mig_pin		 pin;		/* P and us, while away */
	struct home_call	*call;		/* a forwarded call in P */
	int			 nudged;	/* broken off for a checkpoint */
	uint8_t			*held;		/* its reply, until signals */
	size_t			 held_len;
	int			 stop_sent;	/* our stop signal, to pass */
	int			 ending;	/* the signal P dies of */
	uint64_t		 cpu_ns;	/* total, for mosps */
	uint64_t		 cpu_at;	/* when cpu_ns was last seen */
	uint32_t		 cpu_permille;
	uint64_t		 rss;

	/* checkpoints */
	char			*ckpt_base;	/* absolute */
	unsigned		 ckpt_last;	/* FILE.N written last, or 0 */
	ev_timer		 ckpt_timer;	/* -A */
	int			 ckpt_asked;	/* away: R's context asked for */
	ev_timer		 ckpt_nudge;	/* breaks off R's blocked calls */
	int			*ckpt_waiting;	/* orders to answer, when done */
	size_t			 nckpt_waiting;
};

/* mosrun-deputy.c */
int	 deputy_main(const struct mosrun_opts *, pid_t, int);
int	 deputy_options(struct deputy *, char **);
void	 deputy_report(struct deputy *);
void	 deputy_exit(struct deputy *, int);

/* mosrun-ckpt.c */
void	 ckpt_init(struct deputy *);
void	 ckpt_take(struct deputy *, int);
void	 ckpt_away(struct deputy *, const uint8_t *, size_t);
void	 ckpt_home(struct deputy *);
void	 ckpt_ended(struct deputy *);
void	 ckpt_recover(struct deputy *);
int	 ckpt_open_last(struct deputy *, char **, char **);

/* mosrun-away.c */
int	 away_stop_home(struct deputy *, char **);
int	 away_hold_home(struct deputy *, int, char **);
void	 away_resume(struct deputy *);
int	 away_migrate(struct deputy *, uint32_t, int, char **);
int	 away_come_home(struct deputy *, char **);
void	 away_session_cb(struct ev_loop *, ev_io *, int);
void	 away_message(struct deputy *, uint16_t, const uint8_t *, size_t);
void	 away_ptrace_event(struct deputy *, int);
void	 away_relay_stolen(struct deputy *);
void	 away_lost(struct deputy *, const char *);

#endif
