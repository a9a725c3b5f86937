/* The `rlx` command line: `rlx run`, `rlx bench`, `rlx info`,
 * `rlx devices`, `rlx ops`, `rlx conformance`. Each command lives in its
 * own file (cli_run.c, cli_bench.c, cli_info.c, cli_devices.c, cli_ops.c,
 * conformance.c);
 * shared helpers in cli_common.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void print_help(FILE *f) {
    fprintf(f,
            "rlx %s: a small ML compiler and runtime: runs ONNX models on the CPU or on a GPU\n"
            "through WebGPU (wgpu-native).\n"
            "\n"
            "usage: rlx COMMAND [ARGS...]\n"
            "       rlx --help | --version\n"
            "\n"
            "commands:\n"
            "  run MODEL.onnx    run a model on a device, print its outputs and timings\n"
            "  bench MODEL.onnx  time forward passes (wall clock, GPU timestamps, a trace)\n"
            "  info MODEL.onnx   describe a model: opset, inputs, outputs, ops, weights\n"
            "  devices           list the GPU adapters and the CPU\n"
            "  ops [OP...]       list the ONNX ops rlx knows: opsets, CPU kernel, GPU lowering\n"
            "  options           list the session options (--option KEY=VALUE) and their\n"
            "                    environment variables\n"
            "  conformance ROOT  run the ONNX backend test suite under ROOT on each device\n"
            "\n"
            "'rlx COMMAND --help' describes a command's options.\n"
            "\n"
            "options:\n"
            "  -h, --help        print this help and exit\n"
            "  --version         print the version and exit\n"
            "\n"
            "exit codes:\n"
            "  0  success\n"
            "  1  runtime failure: no GPU adapter, device error or loss, out of memory,\n"
            "     an output that cannot be written, an internal error\n"
            "  2  usage error (unknown command or option, missing or bad value), an input\n"
            "     file that cannot be read or does not fit the model, or a model that\n"
            "     cannot be loaded or is not supported (malformed file, unknown op,\n"
            "     unsupported opset); the message names the op type, node and opset\n"
            "Errors are printed to stderr and start with \"rlx: error: \".\n"
            "\n"
            "environment:\n"
            "  each session option's RLX_* variable supplies its default ('rlx options'),\n"
            "  e.g. RLX_DISPATCH_REPORT=1 (debug.dispatch_report) prints the dispatch report\n"
            "  to stderr after each plan compile\n",
            RLX_VERSION_STRING);
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) return cli_usage_error(NULL, "no command given: expected run, bench, info, devices, ops, options or conformance");
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        if (argc > 2 && strcmp(cmd, "help") == 0) {
            /* "rlx help run" is "rlx run --help" */
            char *sub[] = { argv[2], (char *)"--help", NULL };
            if (strcmp(argv[2], "run") == 0) return cli_cmd_run(2, sub);
            if (strcmp(argv[2], "bench") == 0) return cli_cmd_bench(2, sub);
            if (strcmp(argv[2], "info") == 0) return cli_cmd_info(2, sub);
            if (strcmp(argv[2], "devices") == 0) return cli_cmd_devices(2, sub);
            if (strcmp(argv[2], "ops") == 0) return cli_cmd_ops(2, sub);
            if (strcmp(argv[2], "options") == 0) return cli_cmd_options(2, sub);
            if (strcmp(argv[2], "conformance") == 0) return rlx_cli_conformance(1, sub + 1);
            return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        }
        print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        if (argc > 2) return cli_usage_error(NULL, "%s takes no arguments (given '%s')", cmd, argv[2]);
        printf("rlx %s\n", RLX_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    /* --json anywhere on the line: usage errors found while the arguments
     * are parsed print the JSON error object too, like the later ones */
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--json") == 0) cli_json_errors(true);
    if (strcmp(cmd, "run") == 0) return cli_cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cli_cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0) return cli_cmd_info(argc - 1, argv + 1);
    if (strcmp(cmd, "devices") == 0) return cli_cmd_devices(argc - 1, argv + 1);
    if (strcmp(cmd, "ops") == 0) return cli_cmd_ops(argc - 1, argv + 1);
    if (strcmp(cmd, "options") == 0) return cli_cmd_options(argc - 1, argv + 1);
    if (strcmp(cmd, "conformance") == 0) return rlx_cli_conformance(argc - 2, argv + 2);
    if (cmd[0] == '-') return cli_usage_error(NULL, "unknown option '%s'", cmd);
    return cli_usage_error(NULL, "unknown command '%s'", cmd);
}

/* Every command's stdout is checked once at exit: a write that failed
 * (a full disk, /dev/full, a closed pipe) turns success into exit 1, as the
 * help promises, instead of a silently truncated output. */
int main(int argc, char **argv) {
    rlx_set_log_callback(cli_log, NULL, RLX_LOG_DEBUG);
    int rc = dispatch(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        if (rc == CLI_EXIT_OK) {
            fprintf(stderr, "rlx: error: cannot write the standard output: %s\n", e ? strerror(e) : "write error");
            rc = CLI_EXIT_FAILURE;
        }
    }
    return rc;
}
