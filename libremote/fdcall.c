/*
 * What R's calls do to what the guest keeps of regular files (fileio.c,
 * docs/REMOTE.md "Regular files"), pure: which change no file's bytes,
 * and which keep what is held of the file they are on.
 */
#include <sys/syscall.h>

#include <fcntl.h>
#include <stdint.h>

#include "internal.h"

/* Calls that change no file's bytes: windows outlive them. */
int
fdcall_harmless(int nr, const uint64_t *a)
{
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
	case SYS_fchown:	/* a file's owner and mode are not its bytes */
	case SYS_fchmod:
	case SYS_fchownat:
	case SYS_fchmodat:
	case SYS_chown:
	case SYS_lchown:
	case SYS_chmod:
		return 1;
	case SYS_open:
		return ((int)a[1] & O_TRUNC) == 0;
	case SYS_openat:
		return ((int)a[2] & O_TRUNC) == 0;
	}
	return 0;
}

/* Is fcntl's cmd one that takes or gives up a lock? */
static int
fdcall_is_lock(int cmd)
{
	return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK ||
	    cmd == F_OFD_SETLKW;
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
