/* The rlx command line (placeholder until the CLI lands). */
#include <stdio.h>
#include "rlx/rlx.h"

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("rlx %s\n", RLX_VERSION_STRING);
    return 0;
}
