/*
 * A pseudo-terminal through forwarding: posix_openpt, unlockpt, ptsname
 * (TIOCSPTLCK, TIOCGPTN), termios (TCGETS, TCSETS), window size, FIONREAD,
 * isatty.
 */
#include <sys/ioctl.h>

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include "rt.h"

int
main(void)
{
	struct termios	 t, t2;
	struct winsize	 ws = { .ws_row = 42, .ws_col = 137 }, ws2;
	char		 name[64], buf[16];
	int		 m, s, n, p[2];

	m = posix_openpt(O_RDWR | O_NOCTTY);
	CHECK(m >= 0, "posix_openpt");
	CHECK(grantpt(m) == 0 && unlockpt(m) == 0, "unlockpt");
	CHECK(ptsname_r(m, name, sizeof name) == 0 &&
	    strncmp(name, "/dev/pts/", 9) == 0, "ptsname %s", name);
	s = open(name, O_RDWR | O_NOCTTY);
	CHECK(s >= 0, "open %s", name);
	CHECK(isatty(s) == 1, "isatty");
	CHECK(pipe(p) == 0 && isatty(p[0]) == 0 && errno == ENOTTY,
	    "isatty(pipe)");

	CHECK(tcgetattr(s, &t) == 0 && (t.c_lflag & ICANON), "tcgetattr");
	cfmakeraw(&t);
	CHECK(tcsetattr(s, TCSANOW, &t) == 0, "tcsetattr");
	CHECK(tcgetattr(s, &t2) == 0 && !(t2.c_lflag & (ICANON | ECHO)) &&
	    t2.c_cc[VMIN] == 1, "raw");

	CHECK(ioctl(m, TIOCSWINSZ, &ws) == 0, "TIOCSWINSZ");
	memset(&ws2, 0, sizeof ws2);
	CHECK(ioctl(s, TIOCGWINSZ, &ws2) == 0 && ws2.ws_row == 42 &&
	    ws2.ws_col == 137, "TIOCGWINSZ %d %d", ws2.ws_row, ws2.ws_col);

	CHECK(write(m, "abc", 3) == 3, "write master");
	n = -1;
	for (int i = 0; i < 100 && n != 3; i++) {
		CHECK(ioctl(s, FIONREAD, &n) == 0, "FIONREAD");
		if (n != 3)
			usleep(1000);
	}
	CHECK(n == 3, "FIONREAD %d", n);
	CHECK(read(s, buf, sizeof buf) == 3 && memcmp(buf, "abc", 3) == 0,
	    "read slave");
	close(s);
	close(m);
	return rt_verdict("pty");
}
