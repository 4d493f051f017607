/*
 * Calls that cannot be served remotely: the loopback must report them as
 * going home (and kill us), so reaching the end is a failure.
 * Usage: home fork|mmap|ioctl|i386|unknown|pselect
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>

#include <fcntl.h>
#include <stdint.h>
#include <signal.h>
#include <unistd.h>

#include "rt.h"

int
main(int argc, char **argv)
{
	sigset_t	 mask;
	const char	*what = argc == 2 ? argv[1] : "";
	long		 r;
	int		 fd;

	if (strcmp(what, "fork") == 0)
		r = fork();
	else if (strcmp(what, "mmap") == 0) {
		/* writable and shared: its writes must reach the file */
		fd = open("/proc/self/exe", O_RDONLY);
		CHECK(fd >= 0, "open");
		r = (long)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, 0);
	} else if (strcmp(what, "ioctl") == 0)
		r = ioctl(0, 0x5401 + 0x7000, 0);
	else if (strcmp(what, "i386") == 0)
		__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	else if (strcmp(what, "unknown") == 0)
		r = syscall(490);
	else if (strcmp(what, "pselect") == 0) {
		/* a mask of a size the kernel refuses: refused at home */
		sigemptyset(&mask);
		r = syscall(SYS_pselect6, 0, NULL, NULL, NULL, NULL,
		    (uint64_t[2]){ (uintptr_t)&mask, 16 });
	} else {
		fprintf(stderr, "usage: home fork|mmap|ioctl|i386|unknown|"
		    "pselect\n");
		return 2;
	}
	CHECK(0, "%s returned %ld here", what, r);
	return rt_verdict("home");
}
