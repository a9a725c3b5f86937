/* `rlx devices`: the GPU adapters that the WebGPU implementation reports
 * (in the order `--device gpu:N` counts them) and the CPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void print_help(FILE *f) {
    fprintf(f,
            "usage: rlx devices [--json]\n"
            "\n"
            "Lists the GPU adapters that WebGPU (wgpu-native) finds, numbered as\n"
            "'--device gpu:N' counts them, with name, backend (vulkan, metal, ...), type\n"
            "(discrete, integrated, cpu = a software rasteriser such as Mesa lavapipe),\n"
            "driver, PCI ids, key limits (with units), optional features and whether\n"
            "shader modules can be created without naga's runtime checks; then the\n"
            "CPU backend, which is always there. Says so when no GPU adapter is found.\n"
            "\n"
            "options:\n"
            "  --json       print one JSON object: {\"adapters\": [...], \"cpu\": {...}},\n"
            "               each adapter with the fields above (limits in bytes)\n"
            "  -h, --help   print this help and exit\n");
}

static const char *yes_no(bool b) { return b ? "yes" : "no"; }

static void print_json(const rlx_adapter_info *ad, size_t n, rlx_status st) {
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_obj(&j, NULL);
    cli_json_s(&j, "error", st ? rlx_last_error() : NULL);
    cli_json_arr(&j, "adapters");
    j.pretty_depth = 2;
    for (size_t i = 0; i < n; i++) {
        const rlx_adapter_info *a = &ad[i];
        char dev[32];
        snprintf(dev, sizeof dev, "gpu:%zu", i);
        cli_json_obj(&j, NULL);
        cli_json_s(&j, "device", dev);
        cli_json_s(&j, "name", a->name);
        cli_json_s(&j, "backend", a->backend);
        cli_json_s(&j, "type", a->type);
        cli_json_s(&j, "driver", a->driver);
        cli_json_u(&j, "vendor_id", a->vendor_id);
        cli_json_u(&j, "device_id", a->device_id);
        cli_json_u(&j, "max_buffer_size", a->max_buffer_size);
        cli_json_u(&j, "max_storage_buffer_binding_size", a->max_storage_buffer_binding_size);
        cli_json_u(&j, "max_compute_workgroups_per_dimension", a->max_compute_workgroups_per_dimension);
        cli_json_u(&j, "max_compute_invocations_per_workgroup", a->max_compute_invocations_per_workgroup);
        cli_json_u(&j, "max_compute_workgroup_storage_size", a->max_compute_workgroup_storage_size);
        cli_json_u(&j, "max_storage_buffers_per_shader_stage", a->max_storage_buffers_per_shader_stage);
        cli_json_b(&j, "shader_f16", a->shader_f16);
        cli_json_b(&j, "subgroups", a->subgroups);
        cli_json_b(&j, "timestamp_query", a->timestamp_query);
        cli_json_b(&j, "cooperative_matrix", a->cooperative_matrix);
        cli_json_b(&j, "unchecked_shaders", a->unchecked_shaders);
        cli_json_end_obj(&j);
    }
    cli_json_end_arr(&j);
    j.pretty_depth = 1;
    cli_json_obj(&j, "cpu");
    cli_json_s(&j, "device", "cpu");
    cli_json_s(&j, "name", "the CPU backend");
    cli_json_end_obj(&j);
    cli_json_end_obj(&j);
}

int cli_cmd_devices(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
            continue;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            print_help(stdout);
            return CLI_EXIT_OK;
        }
        if (argv[i][0] == '-') return cli_usage_error("devices", "unknown option '%s'", argv[i]);
        return cli_usage_error("devices", "unexpected argument '%s'", argv[i]);
    }
    rlx_adapter_info *ad = NULL;
    size_t n = 0;
    rlx_status st = rlx_adapters_list(&ad, &n);
    int rc = CLI_EXIT_OK;
    if (st) {
        rc = cli_fail(st, "cannot list GPU adapters");
        if (rc == CLI_EXIT_USAGE) rc = CLI_EXIT_FAILURE; /* never a usage error here */
        n = 0;
    }
    if (json) {
        print_json(ad, n, st);
        free(ad);
        return rc;
    }
    if (n == 0) {
        printf("GPU adapters: none found. '--device gpu' will fail; the CPU backend works.\n"
               "  (On Linux a GPU needs its Vulkan driver and the Vulkan loader; Mesa's lavapipe\n"
               "  from mesa-vulkan-drivers provides a software adapter of type cpu.)\n");
    } else {
        printf("GPU adapters: %zu\n", n);
    }
    for (size_t i = 0; i < n; i++) {
        const rlx_adapter_info *a = &ad[i];
        char b1[64], b2[64], b3[64];
        printf("  gpu:%zu  %s\n", i, a->name[0] ? a->name : "(unnamed)");
        printf("    backend %s, type %s%s\n", a->backend[0] ? a->backend : "unknown",
               a->type[0] ? a->type : "unknown",
               strcmp(a->type, "cpu") == 0 ? " (a software rasteriser such as lavapipe, not a GPU)" : "");
        printf("    driver %s\n", a->driver[0] ? a->driver : "(not reported)");
        printf("    vendor id 0x%04x, device id 0x%04x\n", a->vendor_id, a->device_id);
        printf("    limits: max buffer size %s\n", cli_bytes_long_str(a->max_buffer_size, b1, sizeof b1));
        printf("            max storage buffer binding size %s\n",
               cli_bytes_long_str(a->max_storage_buffer_binding_size, b2, sizeof b2));
        printf("            max compute workgroups per dimension %u\n", a->max_compute_workgroups_per_dimension);
        printf("            max compute invocations per workgroup %u\n", a->max_compute_invocations_per_workgroup);
        printf("            max compute workgroup storage %s\n",
               cli_bytes_long_str(a->max_compute_workgroup_storage_size, b3, sizeof b3));
        printf("            storage buffers per shader stage %u\n", a->max_storage_buffers_per_shader_stage);
        printf("    features: shader-f16 %s, subgroups %s, timestamp-query %s, cooperative-matrix %s\n",
               yes_no(a->shader_f16), yes_no(a->subgroups), yes_no(a->timestamp_query),
               yes_no(a->cooperative_matrix));
        printf("    shader modules: %s\n",
               a->unchecked_shaders
                   ? "audited kernels without naga's runtime checks (wgpuDeviceCreateShaderModuleTrusted; option "
                     "gpu.runtime_checks=auto|on|off)"
                   : "every kernel with naga's runtime checks (the WebGPU library has no "
                     "wgpuDeviceCreateShaderModuleTrusted)");
    }
    free(ad);
    printf("CPU:\n  cpu    the CPU backend (reference kernels and f32/int8 fast paths on its thread pool; always available)\n");
    return rc;
}
