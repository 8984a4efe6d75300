/* SQLite's unix VFS calls its "fcntl" system call as the variadic fcntl(2). Rust cannot define
 * a variadic function on stable, so this forwards the call, its one optional argument read as a
 * pointer (as glibc's and musl's own fcntl read it), to the wrapper in ofd.rs. */
#include <stdarg.h>

int execstore_ofd_fcntl(int fd, int op, void *arg);

int execstore_ofd_fcntl_variadic(int fd, int op, ...) {
    va_list ap;
    void *arg;
    va_start(ap, op);
    arg = va_arg(ap, void *);
    va_end(ap);
    return execstore_ofd_fcntl(fd, op, arg);
}
