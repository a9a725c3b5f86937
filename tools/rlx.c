/* The rlx command line (placeholder until the full CLI lands). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rlx/rlx.h"

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "conformance") == 0) return rlx_cli_conformance(argc - 2, argv + 2);
    printf("rlx %s\n", RLX_VERSION_STRING);
    return 0;
}
