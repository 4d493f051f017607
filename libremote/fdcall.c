/*
 * What R's calls do to what the guest keeps of regular files (fileio.c,
 * docs/REMOTE.md "Regular files"), pure: which change no file's bytes,
 * which keep what is held of the file they are on, and which share a
 * descriptor's offset with another or move it by themselves.
 */
#include <sys/syscall.h>

#include <fcntl.h>
#include <stdint.h>

#include "internal.h"

/* Calls that change a file's owner or mode, and none of its bytes. */
int
fdcall_chattr(int nr)
{
	switch (nr) {
	case SYS_fchown:
	case SYS_fchmod:
	case SYS_fchownat:
	case SYS_fchmodat:
	case SYS_chown:
	case SYS_lchown:
	case SYS_chmod:
		return 1;
	}
	return 0;
}

/* Calls that change no file's bytes: windows outlive them. */
int
fdcall_harmless(int nr, const uint64_t *a)
{
	if (fdcall_chattr(nr))
		return 1;	/* a file's owner and mode are not its bytes */
	switch (nr) {
	case SYS_newfstatat:
	case SYS_statx:
	case SYS_stat:
	case SYS_lstat:
	case SYS_access:
	case SYS_faccessat:
	case SYS_faccessat2:
	case SYS_readlink:
	case SYS_readlinkat:
	case SYS_getcwd:
	case SYS_uname:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_fstat:
	case SYS_lseek:
	case SYS_read:
	case SYS_pread64:
	case SYS_readv:
	case SYS_getdents64:
	case SYS_close:
		return 1;
	case SYS_open:
		return ((int)a[1] & O_TRUNC) == 0;
	case SYS_openat:
		return ((int)a[2] & O_TRUNC) == 0;
	}
	return 0;
}

/* Is fcntl's cmd one that takes or gives up a lock? */
int
fdcall_is_lock(int cmd)
{
	return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK ||
	    cmd == F_OFD_SETLKW;
}

/*
 * Is fcntl cmd with fl (on a regular file R has open) an unlock that
 * cannot fail as R would see, but for the kernel's ENOLCK? Checked as
 * Linux checks it (fs/locks.c): from the start of the file, a start and
 * a length not negative whose end fits, l_pid 0 for an OFD lock. Any
 * other (SEEK_CUR depends on the offset, SEEK_END on the size at home)
 * goes home and has its own answer.
 */
int
fdcall_unlock(int cmd, const struct flock *fl)
{
	if (!fdcall_is_lock(cmd) || fl->l_type != F_UNLCK ||
	    fl->l_whence != SEEK_SET || fl->l_start < 0 || fl->l_len < 0)
		return 0;
	if (fl->l_len > 0 && fl->l_start > INT64_MAX - (fl->l_len - 1))
		return 0;
	return cmd == F_SETLK || cmd == F_SETLKW || fl->l_pid == 0;
}

/*
 * Calls on a regular file's descriptor after which what we hold of the
 * file is still the file's: those that change no byte of it and take no
 * lock (another process's changes are to be seen after a lock).
 */
int
fdcall_keeps(int nr, const uint64_t *args)
{
	switch (nr) {
	case SYS_read:
	case SYS_pread64:
	case SYS_readv:
	case SYS_preadv:
	case SYS_preadv2:
	case SYS_lseek:
	case SYS_fstat:
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_fadvise64:
	case SYS_fstatfs:
	case SYS_sync_file_range:
	case SYS_close:
		return 1;
	case SYS_fcntl:
		return !fdcall_is_lock((int)args[1]);
	}
	return 0;
}

/*
 * The descriptors whose offset R's call nr (args) moves without being on
 * them as fio_fd_call's are (args[0]), or makes another descriptor share:
 * into fds[] (at most 2), their number returned. *dups is set if the call
 * duplicates the descriptor (dup, dup2, dup3, fcntl F_DUPFD and
 * F_DUPFD_CLOEXEC, pidfd_getfd): the two then move one offset. Otherwise
 * the call reads or writes at the offset and moves it (copy_file_range
 * and splice with no offset of their own, sendfile's input with none and
 * its output always).
 */
int
fdcall_moves(int nr, const uint64_t *args, int *fds, int *dups)
{
	int	n = 0;

	*dups = 0;
	switch (nr) {
	case SYS_fcntl:
		if ((int)args[1] != F_DUPFD && (int)args[1] != F_DUPFD_CLOEXEC)
			break;
		/* FALLTHROUGH */
	case SYS_dup:
	case SYS_dup2:
	case SYS_dup3:
		*dups = 1;
		fds[n++] = (int)args[0];
		break;
	case SYS_pidfd_getfd:
		/* of R's own descriptor, if the pidfd is R's: one offset too */
		*dups = 1;
		fds[n++] = (int)args[1];
		break;
	case SYS_copy_file_range:
	case SYS_splice:
		if (args[1] == 0)
			fds[n++] = (int)args[0];
		if (args[3] == 0)
			fds[n++] = (int)args[2];
		break;
	case SYS_sendfile:
		fds[n++] = (int)args[0];
		if (args[2] == 0)
			fds[n++] = (int)args[1];
		break;
	}
	return n;
}
