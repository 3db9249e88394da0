/* sec_host LIBRARY [EXEC_FILE]: loads LIBRARY (a copy of libsec_probe.so),
 * maps EXEC_FILE (any file) executable if given, prints "ready", then calls
 * the library's probed function every millisecond, reading the library's
 * semaphores in this process after each call: "semaphores N" is printed
 * (line-buffered) whenever N changes, and once a second, until killed. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	void *lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*call)(void) = (void (*)(void))dlsym(lib, "sec_probe_call");
	unsigned (*semaphores)(void) = (unsigned (*)(void))dlsym(lib, "sec_probe_semaphores");
	if (argc > 2) {
		int fd = open(argv[2], O_RDONLY);
		if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
			perror(argv[2]);
			return 1;
		}
		close(fd);
	}
	printf("ready\n");
	for (unsigned i = 0, last = ~0u;; i++) {
		call();
		unsigned now = semaphores();
		if (now != last || i % 1000 == 0)
			printf("semaphores %u\n", now);
		last = now;
		usleep(1000);
	}
}
