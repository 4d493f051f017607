/*
 * mosmon: watch the load of the cluster, as the local mosd sees it, in a
 * terminal (or print one frame with -b).
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "mon/mon.h"

/* In ms. mosd learns news about once a second; faster only costs it. */
#define MON_INTERVAL_MIN	100
#define MON_INTERVAL_MAX	3600000

static volatile sig_atomic_t	mon_resized;
static volatile sig_atomic_t	mon_quit;

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: mosmon [-bd] [-i seconds] [-S socket]\n"
	    "Show the load of every node of the cluster as the local mosd "
	    "sees it.\n"
	    "  -b          print one frame as text and exit\n"
	    "  -d          hide the nodes that are down\n"
	    "  -i SECONDS  refresh interval (default 1; also 500ms)\n"
	    "  -S PATH     mosd's control socket (default %s)\n"
	    "  -h, --help  show this help\n"
	    "keys: l load and guests, s speed and CPUs, m memory used and "
	    "free,\n  w swap used and free, d hide or show down nodes, "
	    "arrows PgUp PgDn space\n  Home End to page, q quit\n"
	    "A row: the node, * for this one, B blocked, S stay or L lstay,\n"
	    "then its bar and figures, or down, or unknown (never heard "
	    "of).\n", OSM_SOCKET_PATH);
}

/*
 * Only flags here. A second quit signal kills at once: the first may be
 * stuck behind a mosd that accepted the connection and never answers.
 */
static void
mon_signal(int sig)
{
	if (sig == SIGWINCH) {
		mon_resized = 1;
		return;
	}
	if (mon_quit) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	mon_quit = 1;
}

static int
mon_batch(const char *path, int hide_down)
{
	struct mon_sample	 s = { 0 };
	char			*cause;
	int			 rc = 0;

	if (sample_fetch(path, &s, &cause) == -1) {
		fprintf(stderr, "mosmon: %s\n", cause);
		free(cause);
		return 1;
	}
	if (batch_print(stdout, &s, hide_down) == -1) {
		fprintf(stderr, "mosmon: stdout: %s\n", strerror(errno));
		rc = 1;
	}
	sample_clear(&s);
	return rc;
}

static void
mon_resize(void)
{
	struct winsize	ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
	    ws.ws_col > 0)
		resizeterm(ws.ws_row, ws.ws_col);
	/* Terminals differ in what they keep of a resized screen. */
	clearok(curscr, TRUE);
}

/*
 * Sample every interval and redraw after each sample, key and resize.
 * Signals stay blocked except while waiting and while sampling, so that a
 * resize can never slip in between the check and the wait.
 */
static void
mon_loop(const char *path, uint64_t interval, struct mon_view *v)
{
	struct mon_sample	 s = { 0 };
	struct pollfd		 pfd;
	struct timespec		 ts;
	sigset_t		 block, old;
	uint64_t		 next = 0, now;
	char			*error = NULL;
	int			 ch;

	sigemptyset(&block);
	sigaddset(&block, SIGWINCH);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);

	pfd.fd = STDIN_FILENO;
	pfd.events = POLLIN;
	/* Something to look at should the first sample take its time. */
	draw_frame(stdscr, &s, NULL, v);
	refresh();
	while (!mon_quit && !v->quit) {
		if (mon_resized) {
			mon_resized = 0;
			mon_resize();
		}
		if ((now = now_ms()) >= next) {
			free(error);
			error = NULL;
			sigprocmask(SIG_SETMASK, &old, NULL);
			sample_fetch(path, &s, &error);
			sigprocmask(SIG_BLOCK, &block, NULL);
			next = now + interval;
			continue;	/* a signal may have come meanwhile */
		}
		draw_frame(stdscr, &s, error, v);
		wnoutrefresh(stdscr);
		doupdate();

		ts.tv_sec = (next - now) / 1000;
		ts.tv_nsec = (next - now) % 1000 * 1000000;
		if (ppoll(&pfd, 1, &ts, &old) == -1 && errno != EINTR)
			fatal("ppoll");
		/* The terminal is gone: nobody is left to press q. */
		if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
			break;
		while ((ch = getch()) != ERR) {
			if (ch == VIEW_REPAINT)
				clearok(curscr, TRUE);
			view_key(v, ch, &s, view_rows(LINES));
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(error);
	sample_clear(&s);
}

static int
mon_interactive(const char *path, uint64_t interval, struct mon_view *v)
{
	struct sigaction	 sa;
	SCREEN			*scr;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "mosmon: not a terminal (use -b for text)\n");
		return 1;
	}
	/* Ours before ncurses starts, so it does not install its own. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = mon_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	setlocale(LC_ALL, "");
	if ((scr = newterm(NULL, stdout, stdin)) == NULL) {
		fprintf(stderr, "mosmon: cannot drive terminal type %s\n",
		    getenv("TERM") != NULL ? getenv("TERM") : "(TERM unset)");
		return 1;
	}
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	draw_init();
	mon_loop(path, interval, v);
	endwin();
	delscreen(scr);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct mon_view	 v = { .mode = MON_LOAD };
	const char	*path = OSM_SOCKET_PATH;
	uint64_t	 interval = 1000;
	int		 ch, batch = 0;

	log_init(1, "mosmon");
	while ((ch = getopt_long(argc, argv, "bdhi:S:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b':
			batch = 1;
			break;
		case 'd':
			v.hide_down = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'i':
			if (parse_duration_ms(optarg, &interval) == -1 ||
			    interval < MON_INTERVAL_MIN ||
			    interval > MON_INTERVAL_MAX) {
				fprintf(stderr, "mosmon: -i %s: expected an "
				    "interval from 0.1 to 3600 seconds\n",
				    optarg);
				return 2;
			}
			break;
		case 'S':
			if (*optarg == '\0') {
				fprintf(stderr, "mosmon: -S: empty path\n");
				return 2;
			}
			path = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "mosmon: unexpected argument: %s\n",
		    argv[optind]);
		usage(stderr);
		return 2;
	}
	if (batch)
		return mon_batch(path, v.hide_down);
	return mon_interactive(path, interval, &v);
}
