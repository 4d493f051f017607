/*
 * P's descriptor table as the guest knows it (docs/REMOTE.md, "Opens made
 * here"). A file under a shared path that R opens where it runs must have
 * the number P's kernel would have given it — the lowest P has free — and
 * P must then hold that number for the same file (Numbers (the rule)).
 * The home says which of P's numbers are taken, and its umask, with its
 * answer about an open under a shared path (RemoteFdInfo.table); from
 * then on every call sent home keeps the copy right: a close frees its
 * number, an open or a dup that went home takes the one it returned, and
 * a call that may change P's table in a way the guest cannot follow (a
 * socket, a pipe, a message that may carry descriptors, umask, anything
 * not known to leave the table as it was) makes it unknown until the home
 * says it again.
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <fcntl.h>
#include <string.h>

#include "internal.h"

void
ptable_set(struct ptable *t, const uint64_t *words, size_t n, uint32_t umask)
{
	if (n != PTABLE_WORDS) {
		t->ok = 0;
		return;
	}
	memcpy(t->used, words, sizeof t->used);
	t->umask = umask & 0777;
	t->ok = 1;
}

/* Calls that leave P's descriptor table and umask as they were. */
static int
ptable_neutral(int nr, const uint64_t *args)
{
	switch (nr) {
	case SYS_read:
	case SYS_write:
	case SYS_pread64:
	case SYS_pwrite64:
	case SYS_readv:
	case SYS_writev:
	case SYS_preadv:
	case SYS_pwritev:
	case SYS_preadv2:
	case SYS_pwritev2:
	case SYS_lseek:
	case SYS_fstat:
	case SYS_stat:
	case SYS_lstat:
	case SYS_newfstatat:
	case SYS_statx:
	case SYS_statfs:
	case SYS_fstatfs:
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_sync_file_range:
	case SYS_flock:
	case SYS_ftruncate:
	case SYS_truncate:
	case SYS_fallocate:
	case SYS_fadvise64:
	case SYS_readahead:
	case SYS_getdents64:
	case SYS_access:
	case SYS_faccessat:
	case SYS_faccessat2:
	case SYS_readlink:
	case SYS_readlinkat:
	case SYS_unlink:
	case SYS_unlinkat:
	case SYS_rename:
	case SYS_renameat:
	case SYS_renameat2:
	case SYS_mkdir:
	case SYS_mkdirat:
	case SYS_rmdir:
	case SYS_link:
	case SYS_linkat:
	case SYS_symlink:
	case SYS_symlinkat:
	case SYS_chmod:
	case SYS_fchmod:
	case SYS_fchmodat:
	case SYS_chown:
	case SYS_fchown:
	case SYS_lchown:
	case SYS_fchownat:
	case SYS_utimensat:
	case SYS_getcwd:
	case SYS_chdir:
	case SYS_fchdir:
	case SYS_getpid:
	case SYS_getppid:
	case SYS_gettid:
	case SYS_getuid:
	case SYS_geteuid:
	case SYS_getgid:
	case SYS_getegid:
	case SYS_getgroups:
	case SYS_getresuid:
	case SYS_getresgid:
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_kill:
	case SYS_tgkill:
		return 1;
	case SYS_fcntl:
		return args[1] != F_DUPFD && args[1] != F_DUPFD_CLOEXEC;
	case SYS_ioctl:
		/* a terminal's, and a descriptor's flags: none gives one */
		switch (args[1]) {
		case TCGETS:
		case TCSETS:
		case TCSETSW:
		case TCSETSF:
		case TIOCGWINSZ:
		case TIOCSWINSZ:
		case TIOCGPGRP:
		case TIOCSPGRP:
		case FIONREAD:
		case FIONBIO:
		case FIOCLEX:
		case FIONCLEX:
			return 1;
		}
		return 0;
	}
	return 0;
}

/* Calls that take the number they return (once they have). */
static int
ptable_gives(int nr, const uint64_t *args)
{
	switch (nr) {
	case SYS_open:
	case SYS_openat:
	case SYS_creat:
	case SYS_dup:
	case SYS_dup2:
	case SYS_dup3:
		return 1;
	case SYS_fcntl:
		return args[1] == F_DUPFD || args[1] == F_DUPFD_CLOEXEC;
	}
	return 0;
}

static void
ptable_put(struct ptable *t, int64_t fd, int used)
{
	if (fd < 0 || fd >= 64 * PTABLE_WORDS)
		return;
	if (used)
		t->used[fd / 64] |= 1ULL << (fd % 64);
	else
		t->used[fd / 64] &= ~(1ULL << (fd % 64));
}

/*
 * Call nr is sent home (waited for or behind): a close frees its number
 * now (P's kernel frees it whatever the close returns), an open or a dup
 * takes its number with its reply (ptable_got), anything else that may
 * change the table makes it unknown.
 */
void
ptable_sent(struct ptable *t, int nr, const uint64_t *args)
{
	if (!t->ok || ptable_neutral(nr, args) || ptable_gives(nr, args))
		return;
	if (nr == SYS_close)
		ptable_put(t, (int64_t)args[0], 0);
	else
		t->ok = 0;
}

/* The reply of call nr sent home said ret: the number it gave is P's. */
void
ptable_got(struct ptable *t, int nr, const uint64_t *args, int64_t ret)
{
	if (ret >= 0 && ptable_gives(nr, args))
		ptable_put(t, ret, 1);
}

/* The number P's kernel would give now, or -1 if it is not known. */
int
ptable_lowest(const struct ptable *t)
{
	size_t	w;

	if (!t->ok)
		return -1;
	for (w = 0; w < PTABLE_WORDS; w++)
		if (t->used[w] != ~0ULL)
			return (int)(64 * w + __builtin_ctzll(~t->used[w]));
	return -1;
}

/* fd is P's from now on (an open made here, sent home behind). */
void
ptable_take(struct ptable *t, int fd)
{
	ptable_put(t, fd, 1);
}

/* Number fd is free again in P (an open made here, moot: fio_later). */
void
ptable_free(struct ptable *t, int fd)
{
	ptable_put(t, fd, 0);
}
