/*
 * Files and directories through forwarding: open, write, read, lseek,
 * pread/pwrite, fstat/stat, getdents64 (readdir), links, renames, locks,
 * file mappings, and the errors a native call would give. Usage: files DIR
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <limits.h>
#include <unistd.h>

#include "rt.h"

#define BIG	(200 * 1024)

static int
dir_has(const char *path, const char *want)
{
	DIR		*d = opendir(path);
	struct dirent	*e;
	int		 n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, want) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int
main(int argc, char **argv)
{
	static char	 big[BIG], back[BIG + 16], name[PATH_MAX + 16];
	char		 buf[256], cwd[PATH_MAX], target[64];
	struct stat	 st, st2;
	struct flock	 fl;
	struct utsname	 u;
	uint8_t		*map;
	ssize_t		 n;
	size_t		 i;
	int		 fd, fd2;

	if (argc != 2) {
		fprintf(stderr, "usage: files DIR\n");
		return 2;
	}
	CHECK(chdir(argv[1]) == 0, "chdir %s", argv[1]);
	CHECK(getcwd(cwd, sizeof cwd) != NULL && strcmp(cwd, argv[1]) == 0,
	    "getcwd %s", cwd);
	if (rt_home_pid() != -1)
		CHECK(getpid() == rt_home_pid(), "getpid %ld", (long)getpid());
	CHECK(uname(&u) == 0 && u.sysname[0] != '\0', "uname");

	for (i = 0; i < BIG; i++)
		big[i] = 'a' + i % 23;
	fd = open("a", O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK(fd >= 0, "open");
	CHECK(write(fd, big, BIG) == BIG, "write");
	CHECK(lseek(fd, 0, SEEK_CUR) == BIG, "lseek");
	CHECK(fstat(fd, &st) == 0 && st.st_size == BIG, "fstat");
	CHECK(stat("a", &st2) == 0 && st2.st_ino == st.st_ino, "stat");
	CHECK(lseek(fd, 0, SEEK_SET) == 0, "rewind");
	memset(back, 'Z', sizeof back);
	for (i = 0; i < BIG; i += n) {
		n = read(fd, back + i, BIG + 16 - i);
		CHECK(n > 0, "read at %zu", i);
		if (n <= 0)
			break;
	}
	CHECK(memcmp(back, big, BIG) == 0, "data read back");
	/* what the kernel did not write is left as it was */
	CHECK(back[BIG] == 'Z' && back[BIG + 15] == 'Z', "sentinel");
	CHECK(read(fd, buf, sizeof buf) == 0, "end of file");

	CHECK(pwrite(fd, "XYZ", 3, 1000) == 3, "pwrite");
	CHECK(pread(fd, buf, 5, 999) == 5 && buf[0] == big[999] &&
	    memcmp(buf + 1, "XYZ", 3) == 0 && buf[4] == big[1003],
	    "pread %.5s", buf);
	CHECK(ftruncate(fd, 4096) == 0 && fstat(fd, &st) == 0 &&
	    st.st_size == 4096, "ftruncate");
	CHECK(fsync(fd) == 0, "fsync");

	/* EBADF before EFAULT, as natively; EFAULT on an unreadable buffer */
	CHECK(syscall(SYS_write, -1, 8, 10) == -1 && errno == EBADF, "EBADF");
	CHECK(syscall(SYS_write, fd, 8, 10) == -1 && errno == EFAULT,
	    "EFAULT");
	CHECK(lseek(fd, 0, SEEK_SET) == 0 && syscall(SYS_read, fd, 8, 10) ==
	    -1 && errno == EFAULT, "EFAULT out");
	CHECK(syscall(SYS_open, NULL, O_RDONLY) == -1 && errno == EFAULT,
	    "open NULL");
	memset(name, 'n', sizeof name - 1);
	CHECK(open(name, O_RDONLY) == -1 && errno == ENAMETOOLONG,
	    "ENAMETOOLONG");
	CHECK(access("a", R_OK | W_OK) == 0, "access");
	CHECK(access("nothing", F_OK) == -1 && errno == ENOENT, "ENOENT");

	/* open file description locks conflict within one process too */
	fd2 = open("a", O_RDWR);
	CHECK(fd2 >= 0, "open again");
	memset(&fl, 0, sizeof fl);
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 10;
	fl.l_len = 20;
	CHECK(fcntl(fd, F_OFD_SETLK, &fl) == 0, "F_OFD_SETLK");
	memset(&fl, 0, sizeof fl);
	fl.l_type = F_RDLCK;
	fl.l_whence = SEEK_SET;
	fl.l_len = 100;
	CHECK(fcntl(fd2, F_OFD_GETLK, &fl) == 0, "F_OFD_GETLK");
	CHECK(fl.l_type == F_WRLCK && fl.l_start == 10 && fl.l_len == 20 &&
	    fl.l_pid == -1, "lock %d %ld %ld %d", fl.l_type,
	    (long)fl.l_start, (long)fl.l_len, fl.l_pid);
	fl.l_pid = 0;
	CHECK(fcntl(fd2, F_OFD_SETLK, &fl) == -1 && errno == EAGAIN,
	    "conflict");
	CHECK(fcntl(fd, F_GETFD) == 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 &&
	    fcntl(fd, F_GETFD) == FD_CLOEXEC, "F_SETFD");
	close(fd2);
	CHECK(close(fd) == 0, "close");
	CHECK(close(fd) == -1 && errno == EBADF, "close twice");

	/* directories */
	CHECK(mkdir("d", 0700) == 0, "mkdir");
	CHECK(close(open("d/x", O_CREAT | O_WRONLY, 0600)) == 0, "create x");
	CHECK(close(creat("d/y", 0600)) == 0, "creat y");
	CHECK(dir_has("d", "x") == 1 && dir_has("d", "y") == 1 &&
	    dir_has("d", "..") == 1 && dir_has("d", "z") == 0, "readdir");
	CHECK(rmdir("d") == -1 && errno == ENOTEMPTY, "ENOTEMPTY");
	CHECK(symlink("a", "l") == 0, "symlink");
	memset(target, 'Q', sizeof target);
	CHECK(readlink("l", target, sizeof target) == 1 && target[0] == 'a' &&
	    target[1] == 'Q', "readlink");
	CHECK(lstat("l", &st) == 0 && S_ISLNK(st.st_mode), "lstat");
	CHECK(rename("l", "d/m") == 0 && dir_has("d", "m") == 1, "rename");
	CHECK(link("a", "d/h") == 0 && stat("d/h", &st) == 0 &&
	    st.st_nlink == 2, "link");
	CHECK(chmod("a", 0640) == 0 && stat("a", &st) == 0 &&
	    (st.st_mode & 0777) == 0640, "chmod");
	CHECK(unlink("d/x") == 0 && unlink("d/y") == 0 && unlink("d/m") == 0 &&
	    unlinkat(AT_FDCWD, "d/h", 0) == 0, "unlink");
	CHECK(rmdir("d") == 0 && dir_has(".", "d") == 0, "rmdir");
	CHECK(unlink("a") == 0, "unlink a");

	/*
	 * file mappings, made where we run of the file from home: private
	 * ones of any protection, a shared one only readable, which stays
	 * so (its descriptor is read-only), the file untouched by a write
	 * to a private one
	 */
	fd = open("m", O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, big, BIG) == BIG, "write m");
	map = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(map != MAP_FAILED && memcmp(map, big, BIG) == 0, "mmap private");
	map[0] = 'Z';
	CHECK(pread(fd, buf, 1, 0) == 1 && buf[0] == big[0],
	    "a private mapping's write stays in it");
	CHECK(munmap(map, BIG) == 0, "munmap");
	map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 8192);
	CHECK(map != MAP_FAILED && memcmp(map, big + 8192, 4096) == 0,
	    "mmap at an offset");
	CHECK(munmap(map, 4096) == 0 && close(fd) == 0, "close m");
	fd = open("m", O_RDONLY);
	map = mmap(NULL, BIG, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED && memcmp(map, big, BIG) == 0, "mmap shared");
	CHECK(mprotect(map, 4096, PROT_READ | PROT_WRITE) == -1 &&
	    errno == EACCES, "a read-only shared mapping cannot turn writable");
	CHECK(munmap(map, BIG) == 0 && close(fd) == 0, "close m again");
	CHECK(unlink("m") == 0, "unlink m");
	return rt_verdict("files");
}
