/*
 * agent/ — the two per-process agents and what they share
 * (docs/ARCHITECTURE.md): the deputy, at home, which holds the process P
 * for its whole life, and the guest agent (the mosd-guest program), on the
 * node where the process runs, which holds the running copy R. Both glue
 * migrate/ and libremote/ together; neither library knows the other.
 *
 * This is the public header, for mosrun, which starts a deputy for the
 * program it becomes. What agent/'s files share is in internal.h.
 */
#ifndef AGENT_H
#define AGENT_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

/* What mosrun was asked for (mosrun(1)). */
/* How a move carries the memory (docs/REMOTE.md, "Live moves"). */
enum deputy_move {
	DEPUTY_MOVE_LIVE,	/* pre-copy: in rounds while it runs */
	DEPUTY_MOVE_STOP,	/* stop and copy */
	DEPUTY_MOVE_POST,	/* post-copy: runs there at once, its pages
				   following (docs/REMOTE.md, "Post-copy") */
};

struct deputy_opts {
	const char	 *sock;		/* mosd's control socket */
	uint32_t	  start_node;	/* -r, 0: home */
	int		  best;		/* -b: start on the best node */
	int		  locked;	/* -L: no automatic migration */
	int		  strict_io;	/* -s: no read ahead, no write behind */
	uint64_t	  mem_need;	/* -m, bytes */
	uint32_t	 *nodes;	/* -n: the only ones besides home */
	size_t		  nnodes;	/* 0: any */
	const char	 *ckpt_base;	/* -C: FILE.1, FILE.2, ... */
	double		  ckpt_every;	/* -A, seconds; 0: on demand */
	unsigned	  ckpt_max;	/* -N: the last kept; 0: all */
	int		  ckpt_signal;	/* --checkpoint-on; 0: none */
	const char	 *ckpt_exec;	/* --checkpoint-exec: run after one */
	const char	 *recover;	/* -R: the checkpoint to go on from */
	int		  ids_here;	/* -R in a PID namespace of this
					   node's (its thread ids): it may
					   not move */
	enum deputy_move  move_mode;	/* --stop-copy, --post-copy */
	struct mig_fd_override *overrides;	/* --fd, with -R */
	size_t		  noverrides;
	char		**argv;
};

/* deputy.c */
int	 deputy_main(const struct deputy_opts *o, pid_t pid, int sync);

#endif
