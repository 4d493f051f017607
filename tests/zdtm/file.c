/*
 * Files written before and after the checkpoint: one read-write at an
 * offset, one in append mode, one read-only half read. Contents and
 * offsets must be right after the restore. argv[1] is a directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>

#include "zdtm.h"

int
main(int argc, char **argv)
{
	char	 a[PATH_MAX], b[PATH_MAX], buf[256];
	int	 fa, fb, fc;
	off_t	 off;

	if (argc < 2)
		zdtm_fail("usage: file DIR");
	zdtm_init();
	snprintf(a, sizeof a, "%s/zdtm-file-a", argv[1]);
	snprintf(b, sizeof b, "%s/zdtm-file-b", argv[1]);
	if ((fa = open(a, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    (fb = open(b, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) == -1)
		zdtm_fail("open: %s", strerror(errno));
	if (write(fa, "before\n", 7) != 7 || write(fb, "one\n", 4) != 4)
		zdtm_fail("write");
	if ((fc = open(a, O_RDONLY)) == -1 || read(fc, buf, 3) != 3)
		zdtm_fail("open for reading");
	/* Keep fd numbers sparse to be sure they come back as they were. */
	if (dup2(fb, 17) == -1)
		zdtm_fail("dup2");
	close(fb);
	fcntl(17, F_SETFD, FD_CLOEXEC);

	zdtm_ready();
	zdtm_wait_go();

	if ((off = lseek(fa, 0, SEEK_CUR)) != 7)
		zdtm_fail("offset of a is %lld, not 7", (long long)off);
	if (write(fa, "after\n", 6) != 6 || write(17, "two\n", 4) != 4)
		zdtm_fail("write after restore: %s", strerror(errno));
	if (read(fc, buf, 10) != 10 || memcmp(buf, "ore\nafter\n", 10) != 0)
		zdtm_fail("read offset of c lost");
	if (fcntl(17, F_GETFD) != FD_CLOEXEC || (fcntl(17, F_GETFL) &
	    O_APPEND) == 0)
		zdtm_fail("descriptor flags differ");
	if (pread(fa, buf, sizeof buf, 0) != 13 ||
	    memcmp(buf, "before\nafter\n", 13) != 0)
		zdtm_fail("contents of a differ");
	close(fa);
	if ((fa = open(b, O_RDONLY)) == -1 || read(fa, buf, sizeof buf) != 8 ||
	    memcmp(buf, "one\ntwo\n", 8) != 0)
		zdtm_fail("contents of b differ");
	unlink(a);
	unlink(b);
	zdtm_pass();
}
