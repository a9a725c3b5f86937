/* Sub-commands of the rlx command line, one file each. Each takes the
 * arguments after its name and returns the process exit code
 * (0 success, 1 runtime failure, 2 usage or model error). */
#ifndef RLX_TOOLS_CLI_H
#define RLX_TOOLS_CLI_H

int rlx_cli_conformance(int argc, char **argv);

#endif
