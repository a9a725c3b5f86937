/* Platform layer: looking up an optional entry point of a loaded shared
 * library (see rlx_library_symbol in platform.h). Its own file because
 * dladdr, RTLD_NOLOAD and RTLD_DEFAULT are GNU / BSD extensions. */
#define _GNU_SOURCE
#include "base/platform.h"

#ifndef _WIN32
#include <dlfcn.h>
#endif

void *rlx_library_symbol(const void *anchor, const char *name) {
#ifdef _WIN32
    (void)anchor, (void)name;
    return NULL;
#else
    void *fn = NULL;
    Dl_info info;
    /* the library that holds anchor, without loading anything new (a
     * process that reached it through a local dlopen, as Python's ctypes
     * does, has it outside the global scope) */
    if (anchor && dladdr(anchor, &info) && info.dli_fname) {
        void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            fn = dlsym(h, name);
            dlclose(h); /* drops the reference NOLOAD took; the library stays */
        }
    }
    /* an executable's own address of a library function may be a stub in
     * the executable: then the global scope, which holds its libraries */
    if (!fn) fn = dlsym(RTLD_DEFAULT, name);
    return fn;
#endif
}
