/*
 * The cost of libremote's own work on a forwarded call, without the
 * notification, the network or the injection: describing the call from
 * the caller's memory (process_vm_readv on ourselves), packing it, the
 * home's check and layout, the reply, and the guest's check and writes
 * (process_vm_writev). The call itself is executed here and its native
 * time subtracted. Prints a Markdown table; bench/forward runs it.
 *
 * usage: forward [iterations]
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "proto/remote.pb-c.h"

static uint8_t	*scratch;
static char	 buf[65536];

static void
once(int nr, uint64_t *args)
{
	struct table_call	 tc;
	struct rmt_call		 c;
	struct home_call	*hc;
	Osm__RemoteReply	*r;
	const char		*why;
	char			*cause = NULL;
	uint8_t			*msg, *rmsg;
	size_t			 len, rlen;
	int64_t			 ret;
	long			 sys;

	table_resolve(nr, args, 0, &tc);
	if (marshal_call(getpid(), &tc, args, &c, &why, &cause) != MARSHAL_OK)
		fatalx("marshal: %s", cause);
	marshal_pack(&c, &msg, &len);
	if ((hc = home_check(msg, len, 0, &cause)) == NULL ||
	    home_layout(hc, (uintptr_t)scratch, RMT_CALL_MAX, &cause) != 0)
		fatalx("home: %s", cause);
	memcpy(scratch, hc->image, hc->image_len);
	sys = syscall(hc->nr, hc->args[0], hc->args[1], hc->args[2],
	    hc->args[3], hc->args[4], hc->args[5]);
	if (home_reply(hc, sys, scratch, home_readback(hc, sys), &rmsg, &rlen,
	    &cause) != 0)
		fatalx("reply: %s", cause);
	r = osm__remote_reply__unpack(NULL, rlen, rmsg);
	if (r == NULL || remote_apply(getpid(), &c, r, &ret, &cause) != 0)
		fatalx("apply: %s", cause);
	osm__remote_reply__free_unpacked(r, NULL);
	home_free(hc);
	marshal_free(&c);
	free(msg);
	free(rmsg);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char	*name;
		int		 nr;
		size_t		 size;
	} cases[] = {
		{ "getppid", SYS_getppid, 0 },
		{ "read 4 KiB", SYS_read, 4096 },
		{ "read 64 KiB", SYS_read, 65536 },
	};
	uint64_t	 args[6];
	uint64_t	 t0;
	double		 native, lib;
	size_t		 i;
	int		 n = argc > 1 ? atoi(argv[1]) : 100000, j, fd;

	log_init(1, "forward");
	scratch = mmap(NULL, RMT_CALL_MAX, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (scratch == MAP_FAILED || (fd = open("/dev/zero", O_RDONLY)) == -1)
		fatal("set-up");
	printf("| call | native | libremote, both sides |\n");
	printf("|---|---:|---:|\n");
	for (i = 0; i < nitems(cases); i++) {
		memset(args, 0, sizeof args);
		args[0] = fd;
		args[1] = (uintptr_t)buf;
		args[2] = cases[i].size;
		t0 = now_us();
		for (j = 0; j < n; j++)
			syscall(cases[i].nr, args[0], args[1], args[2]);
		native = (double)(now_us() - t0) / n;
		t0 = now_us();
		for (j = 0; j < n; j++)
			once(cases[i].nr, args);
		lib = (double)(now_us() - t0) / n - native;
		printf("| %s | %.2f us | %.2f us |\n", cases[i].name, native,
		    lib);
	}
	return 0;
}
