/* Model inputs for `rlx run` and `rlx bench` (see cli.h): NAME=VALUE
 * options, the seeded generator of random inputs, and one input tensor
 * from a .npy file or random values of a given or declared shape. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rlx/inspect.h"

int cli_named_add(cli_named_list *l, const char *command, const char *opt, const char *s, bool split_last) {
    const char *eq = split_last ? strrchr(s, '=') : strchr(s, '=');
    if (!eq || eq == s) return cli_usage_error(command, "%s expects NAME=VALUE, got '%s'", opt, s);
    if (l->n == CLI_MAX_NAMED) return cli_usage_error(command, "too many %s options (at most %d)", opt, CLI_MAX_NAMED);
    size_t len = (size_t)(eq - s);
    /* an --input with a second '=' is checked once its name is resolved */
    for (size_t i = 0; i < l->n && (split_last || !strchr(eq + 1, '=')); i++)
        if (strlen(l->a[i].name) == len && strncmp(l->a[i].name, s, len) == 0)
            return cli_usage_error(command, "%s given twice for '%.*s'", opt, (int)len, s);
    char *name = malloc(len + 1);
    if (!name) return cli_usage_error(command, "out of memory");
    memcpy(name, s, len);
    name[len] = '\0';
    l->a[l->n].name = name;
    l->a[l->n].value = eq + 1;
    l->a[l->n].arg = s;
    l->n++;
    return CLI_EXIT_OK;
}

const cli_named *cli_named_find(const cli_named_list *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->a[i].name, name) == 0) return &l->a[i];
    return NULL;
}

void cli_named_free(cli_named_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->a[i].name);
    l->n = 0;
}

bool cli_device_ok(const char *d) {
    if (strcmp(d, "cpu") == 0 || strcmp(d, "gpu") == 0) return true;
    int64_t n;
    return strncmp(d, "gpu:", 4) == 0 && cli_parse_i64(d + 4, 0, 1 << 20, &n);
}

int cli_model_arg(int argc, char **argv, int *i, const char *command, int64_t iters_min, cli_model_args *m) {
    const char *a = argv[*i], *v = NULL;
    bool err = false;
    int64_t n;
    if (cli_option_arg(argc, argv, i, &m->opts, command, &err)) {
        if (err) return CLI_EXIT_USAGE;
    } else if (cli_opt_value(argc, argv, i, "--device", &v, command, &err)) {
        if (err) return CLI_EXIT_USAGE;
        if (!cli_device_ok(v)) return cli_usage_error(command, "bad --device '%s' (expected cpu, gpu or gpu:N)", v);
        m->device = v;
    } else if (cli_opt_value(argc, argv, i, "--input", &v, command, &err)) {
        if (err) return CLI_EXIT_USAGE;
        int rc = cli_named_add(&m->inputs, command, "--input", v, false);
        if (rc) return rc;
    } else if (cli_opt_value(argc, argv, i, "--shape", &v, command, &err)) {
        if (err) return CLI_EXIT_USAGE;
        int rc = cli_named_add(&m->shapes, command, "--shape", v, true);
        if (rc) return rc;
        int64_t dims[RLX_MAX_RANK];
        int rank;
        char why[160];
        if (!cli_parse_shape(m->shapes.a[m->shapes.n - 1].value, dims, &rank, why, sizeof why))
            return cli_usage_error(command, "bad --shape '%s': %s", v, why);
    } else if (cli_opt_value(argc, argv, i, "--warmup", &v, command, &err)) {
        if (err) return CLI_EXIT_USAGE;
        int rc = cli_i64_flag(command, "--warmup", v, 0, 1000000, &m->warmup);
        if (rc >= 0) return rc;
    } else if (cli_opt_value(argc, argv, i, "--iters", &v, command, &err)) {
        if (err) return CLI_EXIT_USAGE;
        int rc = cli_i64_flag(command, "--iters", v, iters_min, 1000000, &m->iters);
        if (rc >= 0) return rc;
    } else if (cli_opt_value(argc, argv, i, "--seed", &v, command, &err)) {
        if (err) return CLI_EXIT_USAGE;
        if (!cli_parse_i64(v, 0, INT64_MAX, &n))
            return cli_usage_error(command, "bad --seed '%s' (expected a whole number from 0 to 9223372036854775807)", v);
        m->seed = (uint64_t)n;
    } else if (strcmp(a, "--json") == 0) {
        m->json = true;
    } else if (strcmp(a, "--quiet") == 0) {
        m->quiet = true;
        int rc = cli_quiet(&m->opts, command);
        if (rc >= 0) return rc;
    } else if (a[0] == '-' && a[1] != '\0') {
        return cli_usage_error(command, "unknown option '%s'", a);
    } else if (!m->model) {
        m->model = a;
    } else {
        return cli_usage_error(command, "unexpected argument '%s' (one model at a time)", a);
    }
    return -1;
}

void cli_model_args_free(cli_model_args *m) {
    rlx_options_destroy(m->opts);
    cli_named_free(&m->inputs);
    cli_named_free(&m->shapes);
}

int cli_model_load(const cli_model_args *a, bool progress, rlx_model **m, double *t_import) {
    double t0 = rlx_now_seconds();
    cli_progress(progress, "rlx: loading %s", a->model);
    rlx_status st = rlx_model_load_onnx_with_options(a->model, a->opts, m);
    cli_progress_end(progress);
    *t_import = rlx_now_seconds() - t0;
    return st ? cli_fail_model(st, a->model) : -1;
}

void cli_model_inputs_free(const char **names, rlx_tensor **inputs, size_t n_in) {
    for (size_t i = 0; inputs && i < n_in; i++) rlx_tensor_destroy(inputs[i]);
    free(inputs);
    free((void *)names);
}

int cli_model_inputs(const cli_input_opts *io, const rlx_model *m, const char *path, const char ***names_out,
                     rlx_tensor ***inputs_out, size_t *n_in) {
    *names_out = NULL;
    *inputs_out = NULL;
    *n_in = 0;
    int rc = cli_check_input_names(io, m);
    if (rc >= 0) return rc;
    /* room for every input and every overridable initializer --input may feed */
    size_t n = rlx_model_num_inputs(m), n_ov = rlx_model_num_overridable_initializers(m);
    const char **names = calloc(n + n_ov + 1, sizeof *names);
    rlx_tensor **inputs = calloc(n + n_ov + 1, sizeof *inputs);
    *names_out = names;
    *inputs_out = inputs;
    if (!names || !inputs) {
        cli_error("out of memory holding the model's %zu inputs", n);
        return CLI_EXIT_FAILURE;
    }
    *n_in = n;
    if (io->verbose) {
        printf("model: %s\n", cli_esc(path));
        printf("inputs:%s\n", *n_in ? "" : " none");
    }
    cli_rng r;
    cli_rng_seed(&r, io->seed);
    for (size_t i = 0; i < *n_in; i++) {
        rlx_value_info vi;
        rlx_status st = rlx_model_input_info(m, i, &vi);
        if (st) return cli_fail(st, "cannot describe the model's inputs");
        names[i] = vi.name;
        rc = cli_make_input(io, &vi, &r, &inputs[i]);
        if (rc >= 0) return rc;
    }
    /* overridable initializers: fed only when --input names them (else the
     * model's initializer is used) */
    for (size_t i = 0; i < n_ov; i++) {
        rlx_value_info vi;
        rlx_status st = rlx_model_overridable_initializer_info(m, i, &vi);
        if (st) return cli_fail(st, "cannot describe the model's overridable initializers");
        if (!cli_named_find(io->inputs, vi.name)) continue;
        names[*n_in] = vi.name;
        rc = cli_make_input(io, &vi, &r, &inputs[*n_in]);
        (*n_in)++;
        if (rc >= 0) return rc;
    }
    fflush(stdout);
    return -1;
}

int cli_model_session(const cli_model_args *a, rlx_model *m, rlx_session **s, double *t_session) {
    rlx_session_options so = { .device = a->device };
    double t0 = rlx_now_seconds();
    rlx_status st = rlx_session_create_with_options(m, &so, a->opts, s);
    *t_session = rlx_now_seconds() - t0;
    if (!st) return -1;
    char what[300];
    snprintf(what, sizeof what, "cannot create a session on device '%s'", a->device);
    return cli_fail(st, what);
}

void cli_rng_seed(cli_rng *r, uint64_t seed) {
    /* splitmix64 step so that seeds 0, 1, 2 ... give unrelated streams and
     * the state is never 0 */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    r->s = (z ^ (z >> 31)) | 1;
}

static uint64_t rng_next(cli_rng *r) {
    /* xorshift64* (Vigna) */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}

void cli_fill_random(rlx_tensor *t, cli_rng *r, int fixed) {
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        uint64_t u = rng_next(r);
        double f = (double)(u >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
        int64_t k = fixed >= 0 ? fixed : (int64_t)((u >> 33) % 10);
        switch (t->dtype) {
        case RLX_DTYPE_F32: ((float *)t->data)[i] = (float)f; break;
        case RLX_DTYPE_F64: ((double *)t->data)[i] = f; break;
        case RLX_DTYPE_F16: ((uint16_t *)t->data)[i] = rlx_f32_to_f16((float)f); break;
        case RLX_DTYPE_BF16: ((uint16_t *)t->data)[i] = rlx_f32_to_bf16((float)f); break;
        case RLX_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)k; break;
        case RLX_DTYPE_I8: ((int8_t *)t->data)[i] = (int8_t)k; break;
        case RLX_DTYPE_U16: ((uint16_t *)t->data)[i] = (uint16_t)k; break;
        case RLX_DTYPE_I16: ((int16_t *)t->data)[i] = (int16_t)k; break;
        case RLX_DTYPE_U32: ((uint32_t *)t->data)[i] = (uint32_t)k; break;
        case RLX_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)k; break;
        case RLX_DTYPE_U64: ((uint64_t *)t->data)[i] = (uint64_t)k; break;
        case RLX_DTYPE_I64: ((int64_t *)t->data)[i] = k; break;
        case RLX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(k & 1); break;
        default: break;
        }
    }
}

/* Creates the input (shell NULL) or fills *shell, its data NULL. */
static int create_input(const rlx_options *opts, const char *name, rlx_dtype dtype, const int64_t *dims, int rank,
                        rlx_tensor *shell, rlx_tensor **out) {
    char sh[512], what[600], esc[400];
    if (out) *out = NULL;
    /* the limit first: a declared [2147483648] must not be allocated first */
    uint64_t bytes = rlx_dtype_size(dtype);
    for (int d = 0; d < rank; d++)
        bytes = dims[d] > 0 && bytes > UINT64_MAX / (uint64_t)dims[d] ? UINT64_MAX : bytes * (uint64_t)(dims[d] > 0 ? dims[d] : 0);
    snprintf(what, sizeof what, "generated input '%s' (%s %s)", rlx_escape_text(name, esc, sizeof esc),
             rlx_dtype_name(dtype), cli_shape_str(dims, rank, sh, sizeof sh));
    rlx_status st = rlx_options_check_limit(opts, "limits.max_tensor_bytes", bytes, what);
    if (!st && shell) {
        *shell = (rlx_tensor){ .dtype = dtype, .rank = rank };
        if (rank > 0 && rank <= RLX_MAX_RANK) memcpy(shell->dims, dims, (size_t)rank * sizeof *dims);
    } else if (!st) {
        st = rlx_tensor_create(dtype, dims, rank, out);
    }
    if (st) {
        snprintf(what, sizeof what, "cannot create input '%s'", rlx_escape_text(name, esc, sizeof esc));
        return cli_fail(st, what);
    }
    return -1;
}

int cli_create_input(const rlx_options *opts, const char *name, rlx_dtype dtype, const int64_t *dims, int rank,
                     rlx_tensor **out) {
    return create_input(opts, name, dtype, dims, rank, NULL, out);
}

int cli_input_shape(const rlx_options *opts, const char *name, rlx_dtype dtype, const int64_t *dims, int rank,
                    rlx_tensor *shell) {
    return create_input(opts, name, dtype, dims, rank, shell, NULL);
}

int cli_make_input(const cli_input_opts *io, const rlx_value_info *vi, cli_rng *r, rlx_tensor **out) {
    char sh[512], dsh[512];
    const char *cmd = io->command;
    *out = NULL;
    const cli_named *in = cli_named_find(io->inputs, vi->name);
    const cli_named *shp = cli_named_find(io->shapes, vi->name);
    if (in && shp)
        return cli_usage_error(cmd, "input '%s' is given both --input and --shape; the file decides the shape",
                               vi->name);
    if (vi->dtype == RLX_DTYPE_STRING && !in) {
        cli_error("input '%s' is a string tensor: the command line does not generate strings; give it with --input "
                  "%s=FILE.npy (a NumPy array of str or bytes)", vi->name, vi->name);
        return CLI_EXIT_USAGE;
    }
    if (in) {
        rlx_status st = rlx_tensor_load_npy(in->value, out);
        if (st) {
            char what[1200];
            /* the library's message names the file already (unless it is empty) */
            const char *msg = rlx_last_error();
            if (*in->value && msg && strstr(msg, in->value))
                snprintf(what, sizeof what, "cannot read input '%s'", vi->name);
            else
                snprintf(what, sizeof what, "cannot read input '%s' from '%s'", vi->name, in->value);
            int rc = cli_fail(st, what);
            return rc == CLI_EXIT_FAILURE && st != RLX_ERR_OUT_OF_MEMORY ? CLI_EXIT_USAGE : rc;
        }
        /* a bfloat16 input from an f32 file, rounded to nearest even: .npy
         * has no bfloat16 (NumPy saves ml_dtypes' as '<V2'), so no file
         * could feed one; --output-dir writes bf16 outputs as f32 too */
        bool rounded = false;
        if ((*out)->dtype == RLX_DTYPE_F32 && vi->dtype == RLX_DTYPE_BF16) {
            rlx_tensor *b;
            rlx_status cst = rlx_tensor_create(RLX_DTYPE_BF16, (*out)->dims, (*out)->rank, &b);
            if (cst) {
                rlx_tensor_destroy(*out);
                *out = NULL;
                return cli_fail(cst, "cannot convert the f32 input to bf16");
            }
            const float *f = (*out)->data;
            uint16_t *h = b->data;
            for (size_t k = 0, n = rlx_tensor_numel(b); k < n; k++) h[k] = rlx_f32_to_bf16(f[k]);
            rlx_tensor_destroy(*out);
            *out = b;
            rounded = true;
        }
        if ((*out)->dtype != vi->dtype) {
            cli_error("input '%s': '%s' holds %s, the model expects %s%s", vi->name, in->value,
                      rlx_dtype_name((*out)->dtype), rlx_dtype_name(vi->dtype),
                      vi->dtype == RLX_DTYPE_BF16 ? " (or f32, rounded to it: .npy has no bfloat16)" : "");
            rlx_tensor_destroy(*out);
            *out = NULL;
            return CLI_EXIT_USAGE;
        }
        if (io->verbose)
            printf("  %-24s %-5s %-20s from %s%s\n", cli_esc(vi->name), rlx_dtype_name(vi->dtype),
                   cli_shape_str((*out)->dims, (*out)->rank, sh, sizeof sh), in->value,
                   rounded ? " (f32 rounded to bf16)" : "");
        return -1;
    }
    if (!rlx_dtype_size(vi->dtype)) {
        cli_error("input '%s' has dtype %s, which rlx cannot generate values for (give it with --input)", vi->name,
                  rlx_dtype_name(vi->dtype));
        return CLI_EXIT_USAGE;
    }
    int64_t dims[RLX_MAX_RANK];
    int rank;
    char note[700] = "";
    if (shp) {
        char why[160];
        if (!cli_parse_shape(shp->value, dims, &rank, why, sizeof why))
            return cli_usage_error(cmd, "bad --shape '%s=%s': %s", shp->name, shp->value, why);
        if (vi->rank >= 0 && rank != vi->rank)
            return cli_usage_error(cmd, "--shape %s=%s has rank %d, the model declares %s (rank %d)", shp->name,
                                   shp->value, rank, cli_info_shape_str(vi, dsh, sizeof dsh), vi->rank);
        for (int d = 0; d < rank && vi->rank >= 0; d++)
            if (vi->dims[d] >= 0 && dims[d] != vi->dims[d])
                return cli_usage_error(cmd, "--shape %s=%s: dim %d is %lld, the model declares %s", shp->name,
                                       shp->value, d, (long long)dims[d], cli_info_shape_str(vi, dsh, sizeof dsh));
    } else {
        if (vi->rank < 0)
            return cli_usage_error(cmd, "input '%s' has an unknown rank: give its shape with --shape %s=DxDx...",
                                   vi->name, vi->name);
        rank = vi->rank;
        size_t no = 0;
        for (int d = 0; d < rank; d++) {
            dims[d] = vi->dims[d] >= 0 ? vi->dims[d] : 1;
            if (vi->dims[d] < 0 && no < sizeof note)
                no += (size_t)snprintf(note + no, sizeof note - no, "%s%s", no ? ", " : "",
                                       vi->dim_names[d] ? vi->dim_names[d] : "?");
        }
    }
    int rc = cli_create_input(io->opts, vi->name, vi->dtype, dims, rank, out);
    if (rc >= 0) return rc;
    /* BERT-like inputs: an attention mask of ones, token types 0 */
    int fixed = -1;
    if (io->bert_defaults)
        fixed = strstr(vi->name, "mask") ? 1 : (strstr(vi->name, "type") || strstr(vi->name, "segment")) ? 0 : -1;
    cli_fill_random(*out, r, fixed);
    if (io->verbose) {
        if (fixed >= 0 && vi->dtype != RLX_DTYPE_F32 && vi->dtype != RLX_DTYPE_F64 && vi->dtype != RLX_DTYPE_F16 &&
            vi->dtype != RLX_DTYPE_BF16)
            printf("  %-24s %-5s %-20s all %d (the name says %s)\n", cli_esc(vi->name), rlx_dtype_name(vi->dtype),
                   cli_shape_str(dims, rank, sh, sizeof sh), fixed, fixed ? "'mask'" : "'type' or 'segment'");
        else
            printf("  %-24s %-5s %-20s random (seed %llu)\n", cli_esc(vi->name), rlx_dtype_name(vi->dtype),
                   cli_shape_str(dims, rank, sh, sizeof sh), (unsigned long long)io->seed);
        if (note[0])
            printf("    note: symbolic dims %s of %s set to 1 (use --shape %s=DxDx...)\n", note,
                   cli_info_shape_str(vi, dsh, sizeof dsh), vi->name);
    }
    return -1;
}

/* Lists the model's input names into buf ("'x', 'y'"). */
static char *input_list(const rlx_model *m, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rlx_model_num_inputs(m) && o < cap; i++) {
        rlx_value_info vi;
        if (rlx_model_input_info(m, i, &vi)) continue;
        o += (size_t)snprintf(buf + o, cap - o, "%s'%s'", i ? ", " : "", vi.name);
    }
    if (!buf[0]) snprintf(buf, cap, "none");
    return buf;
}

/* Whether the model has an input or an overridable initializer `len` bytes
 * long that `name` starts with. */
static bool model_feeds(const rlx_model *m, const char *name, size_t len) {
    for (size_t i = 0; i < rlx_model_num_inputs(m); i++) {
        rlx_value_info vi;
        if (rlx_model_input_info(m, i, &vi) == RLX_OK && strlen(vi.name) == len && strncmp(vi.name, name, len) == 0)
            return true;
    }
    for (size_t i = 0; i < rlx_model_num_overridable_initializers(m); i++) {
        rlx_value_info vi;
        if (rlx_model_overridable_initializer_info(m, i, &vi) == RLX_OK && strlen(vi.name) == len &&
            strncmp(vi.name, name, len) == 0)
            return true;
    }
    return false;
}

/* An --input whose name before its first '=' is not the model's, split at a
 * later '=' where the name is ('a=b=x.npy' for an input named 'a=b'; a
 * file name may hold a '=' too, so the first split is kept where it names
 * an input). */
static int resolve_input_name(const cli_input_opts *io, const rlx_model *m, cli_named *na) {
    if (model_feeds(m, na->name, strlen(na->name))) return -1;
    for (const char *eq = strchr(na->value, '='); eq; eq = strchr(eq + 1, '=')) {
        size_t len = (size_t)(eq - na->arg);
        if (!model_feeds(m, na->arg, len)) continue;
        char *name = malloc(len + 1);
        if (!name) return cli_usage_error(io->command, "out of memory");
        memcpy(name, na->arg, len);
        name[len] = '\0';
        free(na->name);
        na->name = name;
        na->value = eq + 1;
        break;
    }
    return -1;
}

int cli_check_input_names(const cli_input_opts *io, const rlx_model *m) {
    for (size_t k = 0; k < io->inputs->n; k++) {
        int rc = resolve_input_name(io, m, &io->inputs->a[k]);
        if (rc >= 0) return rc;
        for (size_t i = 0; i < k; i++)
            if (strcmp(io->inputs->a[i].name, io->inputs->a[k].name) == 0)
                return cli_usage_error(io->command, "--input given twice for '%s'", io->inputs->a[k].name);
    }
    for (size_t k = 0; k < io->inputs->n + io->shapes->n; k++) {
        const cli_named *na = k < io->inputs->n ? &io->inputs->a[k] : &io->shapes->a[k - io->inputs->n];
        bool found = false;
        for (size_t i = 0; i < rlx_model_num_inputs(m) && !found; i++) {
            rlx_value_info vi;
            found = rlx_model_input_info(m, i, &vi) == RLX_OK && strcmp(vi.name, na->name) == 0;
        }
        bool overridable = false;
        for (size_t i = 0; i < rlx_model_num_overridable_initializers(m) && !found && !overridable; i++) {
            rlx_value_info vi;
            overridable = rlx_model_overridable_initializer_info(m, i, &vi) == RLX_OK && strcmp(vi.name, na->name) == 0;
        }
        found = found || (overridable && k < io->inputs->n); /* fed from a file; --shape would make up a weight */
        if (overridable && !found)
            return cli_usage_error(io->command,
                                   "'%s' is an overridable initializer: feed it with --input %s=FILE.npy or leave it "
                                   "out (the model's initializer is used); --shape does not apply", na->name, na->name);
        if (!found) {
            char list[1024];
            return cli_usage_error(io->command, "the model has no input '%s' (its inputs: %s)", na->name,
                                   input_list(m, list, sizeof list));
        }
    }
    return -1;
}
