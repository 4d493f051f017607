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

struct Osm__CtlReply;

/* One node as last sampled. A figure that is not known is NAN. */
struct mon_node {
	uint32_t	 id;
	int		 up;
	double		 load;		/* 1.0: CPU capacity exactly used */
	double		 cpus;		/* CPU capacity, in CPUs */
	double		 speed;		/* 1000: the reference CPU */
	double		 mem_total;	/* MiB */
	double		 mem_free;	/* MiB */
};

/* The cluster as the local mosd saw it at one moment. */
struct mon_sample {
	uint32_t	 self;		/* this node; 0 if mosd did not say */
	struct mon_node	*nodes;		/* in node order */
	size_t		 nnodes;
	time_t		 when;		/* 0: nothing sampled yet */
};

enum mon_mode {
	MON_LOAD,
	MON_SPEED,
	MON_MEM
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
int	 sample_convert(const struct Osm__CtlReply *, struct mon_sample *,
	    char **);
int	 sample_fetch(const char *, struct mon_sample *, char **);
void	 sample_clear(struct mon_sample *);
size_t	 sample_visible(const struct mon_sample *, int);

/* view.c */
const char *view_mode_name(enum mon_mode);
size_t	 view_rows(int);
void	 view_page(struct mon_view *, size_t, size_t, size_t *, size_t *);
int	 view_key(struct mon_view *, int, const struct mon_sample *, size_t);

/* draw.c */
void	 draw_init(void);
void	 draw_frame(WINDOW *, const struct mon_sample *, const char *,
	    struct mon_view *);

/* batch.c */
int	 batch_print(FILE *, const struct mon_sample *, int);

#endif
