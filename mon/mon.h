/*
 * mon/ — mosmon, the terminal cluster monitor. Sampling (sample.c) is kept
 * apart from drawing (draw.c, batch.c) so each can be tested alone; view.c
 * holds what the user chose to look at and the paging arithmetic.
 */
#ifndef MON_H
#define MON_H

#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/osm.h"

struct Osm__CtlReply;

/* One node as last sampled. A figure that is not known is NAN. */
struct mon_node {
	uint32_t	 id;
	enum ctl_node_state state;
	int		 up;		/* state is CTL_NODE_UP */
	double		 load;		/* 1.0: CPU capacity exactly used */
	double		 cpus;		/* CPU capacity, in CPUs */
	double		 speed;		/* 1000: the reference CPU */
	double		 mem_total;	/* MiB */
	double		 mem_free;	/* MiB */
	double		 swap_total;	/* MiB */
	double		 swap_free;	/* MiB */
	double		 guests;	/* processes it runs for other nodes */
	uint32_t	 flags;		/* NodeFlag; 0 if not known */
};

/* The cluster as the local mosd saw it at one moment. */
struct mon_sample {
	uint32_t	 self;		/* this node; 0 if mosd did not say */
	struct mon_node	*nodes;		/* in node order */
	size_t		 nnodes;
	size_t		 active;	/* nodes up */
	time_t		 when;		/* 0: nothing sampled yet */
};

enum mon_mode {
	MON_LOAD,
	MON_SPEED,
	MON_MEM,
	MON_SWAP
};

struct mon_view {
	enum mon_mode	 mode;
	int		 hide_down;
	size_t		 top;		/* first shown, among the visible */
	int		 quit;
};

/* Rows of a screen that are not node rows: status, column heads, help. */
#define VIEW_CHROME	3
#define VIEW_REPAINT	('L' & 0x1f)	/* Ctrl-L */

/* sample.c */
int	 sample_convert(const struct Osm__CtlReply *r, struct mon_sample *s,
	    char **cause);
int	 sample_fetch(const char *path, struct mon_sample *s, char **cause);
void	 sample_clear(struct mon_sample *s);
size_t	 sample_visible(const struct mon_sample *s, int hide_down);

/* view.c */
const char *view_mode_name(enum mon_mode mode);
size_t	 view_rows(int lines);
void	 view_page(struct mon_view *v, size_t n, size_t rows, size_t *first,
	    size_t *count);
int	 view_key(struct mon_view *v, int key, const struct mon_sample *s,
	    size_t rows);

/* draw.c */
void	 draw_init(void);
void	 draw_frame(WINDOW *w, const struct mon_sample *s, const char *error,
	    struct mon_view *v);

/* batch.c */
int	 batch_print(FILE *f, const struct mon_sample *s, int hide_down);

#endif
