/* A writable MAP_SHARED file mapping: the dump must refuse. argv[1]: dir */
#include <sys/mman.h>

#include <fcntl.h>
#include <limits.h>

#include "zdtm.h"

int
main(int argc, char **argv)
{
	char	 path[PATH_MAX], *p;
	int	 fd;

	snprintf(path, sizeof path, "%s/zdtm-shared", argc > 1 ? argv[1] :
	    "/tmp");
	if ((fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    ftruncate(fd, 4096) == -1)
		zdtm_fail("open %s", path);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	strcpy(p, "written through the mapping");
	zdtm_ready();
	for (;;)
		pause();
}
