/* Shared pieces of the `rlx` command line: error reporting and exit codes,
 * option parsing helpers, and formatting of shapes, sizes and durations.
 *
 * Exit codes (documented in `rlx --help`):
 *   0  success
 *   2  usage error (bad flag, missing argument, bad input file), or a model
 *      that cannot be loaded or is not supported (RLX_ERR_INVALID_MODEL,
 *      RLX_ERR_UNSUPPORTED, RLX_ERR_IO on the model, RLX_ERR_INVALID_ARGUMENT
 *      on the inputs)
 *   1  any other runtime failure (no adapter, device error, device lost,
 *      out of memory, internal error, writing outputs)
 * Every error message starts with "rlx: error: ". */
#ifndef RLX_TOOLS_CLI_H
#define RLX_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rlx/rlx.h" /* the public API only (CMake gives tools/ no other include path) */

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

#define CLI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILURE = 1, CLI_EXIT_USAGE = 2 };

/* Prints "rlx: error: <message>\n" to stderr (and, after
 * cli_json_errors(true), the JSON error object on stdout). */
void cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);

/* --json of run, bench and info, once their arguments are parsed: the first
 * error after this (cli_error, cli_fail, cli_usage_error) is also printed
 * to stdout as one JSON document, {"error": {"status": S, "message": M}}
 * (S the library status name, "RLX_ERR_USAGE" for a usage error,
 * "RLX_ERR_FAILURE" for others: two CLI-only names, not rlx_status values,
 * documented in README and the --json help), unless the command's JSON document has
 * begun (cli_json_init). The stderr line stays. */
void cli_json_errors(bool on);
/* Prints that error document (cli_error and friends call it); once the
 * command's document has begun, keeps the first error for
 * cli_json_error_member instead. */
void cli_json_error_out(const char *status, const char *message);

/* Prints a usage error naming the command ("run") and a hint to its --help;
 * returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Exit code for a library status (see the table above): 2 for
 * INVALID_MODEL, UNSUPPORTED, IO and INVALID_ARGUMENT, 1 for the rest. */
int cli_exit_code(rlx_status st);

/* Reports a failed library call: "rlx: error: <what>: <rlx_last_error()>
 * (<status name>)" and returns cli_exit_code(st). */
int cli_fail(rlx_status st, const char *what);

/* Reports a failed model load: the library's message as it is when it
 * already names the file, else prefixed with "cannot load model 'PATH'".
 * Returns cli_exit_code(st). */
int cli_fail_model(rlx_status st, const char *path);

/* Option scanning. An option may be written "--name value" or
 * "--name=value". cli_opt_value returns true when argv[*i] is option `name`
 * and stores its value (advancing *i past a separate value); when the value
 * is missing it prints a usage error and sets *err. */
bool cli_opt_value(int argc, char **argv, int *i, const char *name, const char **out, const char *command,
                   bool *err);

/* `s` (a name from the model file) with control characters and invalid
 * UTF-8 escaped (rlx_escape_text), for printing; one of 4 static buffers
 * used in turn, so up to 4 may appear in one printf. */
const char *cli_esc(const char *s);

/* Session options on the command line: when argv[*i] is "--option
 * KEY=VALUE" (or "--option=KEY=VALUE"), sets it in *opts (created on first
 * use; free with rlx_options_destroy) and returns true; a bad key or value
 * prints a usage error naming the accepted values and sets *err. */
bool cli_option_arg(int argc, char **argv, int *i, rlx_options **opts, const char *command, bool *err);
/* Help line of --option, for the commands that take it. */
#define CLI_OPTION_HELP                                                                         \
    "  --option KEY=VALUE     set a session option (repeatable; 'rlx options' lists\n"         \
    "                         the keys, defaults and environment variables)\n"         \
    "  --max-model-bytes N, --max-arena-bytes N, --max-tensor-bytes N\n"                    \
    "                         limits (bytes, suffixes K M G T; 0: none): short for\n"       \
    "                         --option limits.max_model_bytes=N and so on\n"           \
    "  --timeout MS           time limit of each run in ms (0: none; past it the run\n"   \
    "                         fails): short for --option run.timeout_ms=MS\n"

/* `rlx options [--markdown]`: lists the session options. */
int cli_cmd_options(int argc, char **argv);

/* Parses a whole decimal integer in [lo, hi]; false on junk or range. */
bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* The value v of option `flag` as a whole number in [lo, hi]: -1 when it
 * is one, else the usage error "bad FLAG 'v' (expected lo..hi)" (exit 2),
 * so that the range is written once. */
int cli_i64_flag(const char *command, const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out);
/* Parses a whole decimal/float number; false on junk or non-finite. */
bool cli_parse_f64(const char *s, double *out);

/* Parses "1x3x224x224" into dims (each in 0..2^40). "" and "scalar" give
 * rank 0. False on junk, a dim above 2^40, more than RLX_MAX_RANK dims,
 * with why (why_cap bytes) saying which ("dim 0 (...) is too large (at
 * most 2^40 = 1099511627776)"). */
bool cli_parse_shape(const char *s, int64_t *dims, int *rank, char *why, size_t why_cap);

/* Formats "[1,3,224,224]" for concrete dims. */
char *cli_shape_str(const int64_t *dims, int rank, char *buf, size_t cap);

/* Formats a declared shape with symbolic names: "[batch,3,?,224]" ("?" for
 * an unnamed dynamic dim), "unknown rank" when rank < 0. */
char *cli_info_shape_str(const rlx_value_info *info, char *buf, size_t cap);

/* "1.5 GiB", "128 MiB", "32 KiB", "100 B" (binary units, 3 significant
 * digits). */
char *cli_bytes_str(uint64_t bytes, char *buf, size_t cap);

/* "24 B" below 1 KiB, else "1.5 MiB (1572864 bytes)". */
char *cli_bytes_long_str(uint64_t bytes, char *buf, size_t cap);

/* "812 us", "12.3 ms", "1.23 s". */
char *cli_time_str(double seconds, char *buf, size_t cap);

/* Creates a directory and its parents (like mkdir -p). Existing is fine.
 * Returns false with errno set on failure. */
bool cli_mkdirs(const char *path);

/* True when path exists and is a directory / a regular file. */
bool cli_is_dir(const char *path);
bool cli_is_file(const char *path);

/* Names of the entries of a directory (no "." and ".."), sorted by strcmp,
 * in a malloc'ed array of malloc'ed strings (free each and the array).
 * False with errno set when it cannot be read. */
bool cli_list_dir(const char *path, char ***out_names, size_t *out_count);

/* Element i of a tensor as a double (f16 and bf16 through rlx/half.h; NaN
 * for dtypes without numbers: strings, undefined). */
double cli_elem_f64(const rlx_tensor *t, size_t i);

/* ------------------------------------------------ JSON output (cli_json.c) */

/* --json of every command: one JSON document on stdout. Strings are
 * always valid UTF-8: a byte that is not part of a UTF-8 sequence (a file
 * name in another encoding) is written as U+FFFD; control characters (C0, DEL and the C1 U+0080..U+009F) are
 * escaped. Numbers are JSON numbers; NaN and infinities become null. */
#define CLI_JSON_MAX_DEPTH 16
typedef struct cli_json {
    FILE *f;
    int depth;
    int pretty_depth; /* members down to this depth go on lines of their own (default 1) */
    size_t count[CLI_JSON_MAX_DEPTH];
} cli_json;

void cli_json_init(cli_json *j, FILE *f);
/* Members: `key` names them inside an object; NULL inside an array or at
 * the top. Objects and arrays close with cli_json_end_*; the top one ends
 * with a newline. */
void cli_json_obj(cli_json *j, const char *key);
void cli_json_arr(cli_json *j, const char *key);
void cli_json_end_obj(cli_json *j);
/* The member "error": {"status": S, "message": M} of the first error since
 * the command's document began (nothing when there was none): a failing
 * command's document says why, as the error document would. */
void cli_json_error_member(cli_json *j);
void cli_json_end_arr(cli_json *j);
void cli_json_s(cli_json *j, const char *key, const char *v); /* NULL: null */
void cli_json_n(cli_json *j, const char *key, double v);
void cli_json_i(cli_json *j, const char *key, int64_t v);
void cli_json_u(cli_json *j, const char *key, uint64_t v);
void cli_json_b(cli_json *j, const char *key, bool v);
/* [1, 3, 224, 224] */
void cli_json_dims(cli_json *j, const char *key, const int64_t *dims, int rank);
/* A declared shape: [ "batch", 3, null, 224 ] (a name for a symbolic dim,
 * null for an unnamed one); null for an unknown rank. */
void cli_json_info_dims(cli_json *j, const char *key, const rlx_value_info *vi);
/* An option's value (a default, or a value given by --option or by its
 * environment variable) as member `key`, typed by the option's type (see
 * rlx_option_info): a bool as true/false (1/0, true/false, on/off,
 * yes/no), an int or float written as a plain number as a number, anything
 * else (enums, strings, an int's "auto", a byte count with a suffix such
 * as 4G) as the string. */
void cli_json_option(cli_json *j, const char *key, const char *type, const char *value);
/* Writes s as a quoted JSON string (as above). */
void cli_json_string(FILE *f, const char *s);

/* ------------------------------------------------ progress (cli_json.c) */

/* Whether the command shows progress lines on stderr: not with --quiet;
 * else as the session option progress says (--option progress=on|off, or
 * RLX_PROGRESS), auto meaning "stderr is a terminal". */
bool cli_progress_wanted(const rlx_options *opts, bool quiet);
/* Rewrites the progress line ("\r" text, erase to the end of the line). */
void cli_progress(bool on, const char *fmt, ...) CLI_PRINTF(2, 3);
/* Clears the progress line. */
void cli_progress_end(bool on);
/* --quiet: sets the session option progress=off in *opts (created when
 * NULL). -1 on success, else an exit code. */
int cli_quiet(rlx_options **opts, const char *command);
/* The CLI's log function (rlx_set_log_callback): the library's messages
 * as the default prints them, after clearing the CLI's own progress line;
 * the library's progress lines share that line. */
void cli_log(rlx_log_level level, const char *message, void *user);
/* True when stderr is a terminal (cli_common.c). */
bool cli_stderr_is_tty(void);

/* Subcommands: argv[0] is the command name ("run"). Each returns an exit
 * code. */
/* ------------------------------------------------ model inputs (cli_inputs.c) */

/* NAME=VALUE options (--input NAME=FILE.npy, --shape NAME=DIMS): name owned,
 * value and arg (the whole argument) pointing into argv. */
#define CLI_MAX_NAMED 64
typedef struct cli_named {
    char *name;
    const char *value, *arg;
} cli_named;
typedef struct cli_named_list {
    cli_named a[CLI_MAX_NAMED];
    size_t n;
} cli_named_list;

/* Appends option `opt`'s argument s ("NAME=VALUE"), split at its first '='
 * (its last with split_last: a --shape's dims hold none, so a name may); a
 * usage error of `command` (CLI_EXIT_USAGE) when it has no name, names an
 * input twice or the list is full. An --input whose name holds a '=' is
 * split again once the model is known (cli_check_input_names). */
int cli_named_add(cli_named_list *l, const char *command, const char *opt, const char *s, bool split_last);
const cli_named *cli_named_find(const cli_named_list *l, const char *name);
void cli_named_free(cli_named_list *l);

/* The random inputs' generator: xorshift64* seeded through splitmix64, so
 * that a seed gives the same values in `rlx run` and `rlx bench`. */
typedef struct cli_rng {
    uint64_t s;
} cli_rng;
void cli_rng_seed(cli_rng *r, uint64_t seed);
/* Floats uniform in [-1, 1), integers in [0, 10) (or `fixed` everywhere
 * when >= 0), bools from the integers' parity. */
void cli_fill_random(rlx_tensor *t, cli_rng *r, int fixed);

typedef struct cli_input_opts {
    const char *command;                 /* "run", "bench": names usage errors */
    cli_named_list *inputs;               /* --input (names resolved against the model's) */
    const cli_named_list *shapes;         /* --shape */
    uint64_t seed;                       /* printed with random inputs */
    bool verbose;                        /* print a line per input */
    bool bert_defaults;                  /* inputs named *mask* all 1, *type* / *segment* all 0 */
    const rlx_options *opts;             /* limits.max_tensor_bytes bounds generated inputs (NULL: defaults) */
} cli_input_opts;

/* cpu, gpu or gpu:N (N in 0..2^20): a --device value. */
bool cli_device_ok(const char *d);

/* The arguments of a command that runs one model (run, bench): the model
 * path, --device, --input, --shape (dims checked), --seed, --warmup,
 * --iters, --json, --quiet and --option (with its short flags). */
typedef struct cli_model_args {
    const char *model, *device;
    cli_named_list inputs, shapes;
    int64_t warmup, iters;
    uint64_t seed;
    bool json, quiet;
    rlx_options *opts; /* --option KEY=VALUE */
} cli_model_args;

/* Takes argv[*i] (advancing *i past a separate value) as one of those, or
 * else as an unknown option or a second model (usage errors); the caller
 * sets the defaults and tries its own options first. --iters takes
 * iters_min..1000000. Returns -1 when taken, else the exit code of the
 * usage error it printed. */
int cli_model_arg(int argc, char **argv, int *i, const char *command, int64_t iters_min, cli_model_args *m);
void cli_model_args_free(cli_model_args *m);

/* A tensor (zeros) of dtype and shape dims[rank] for the model input
 * `name`, allocated only when its size is within limits.max_tensor_bytes as
 * opts (NULL: none set) resolves it; over the limit nothing is allocated.
 * Returns -1 on success, else the exit code after printing the error
 * ("cannot create input 'NAME': ... more than the limit ..."). */
int cli_create_input(const rlx_options *opts, const char *name, rlx_dtype dtype, const int64_t *dims, int rank,
                     rlx_tensor **out);

/* As cli_create_input, but fills *shell with the dtype and shape and NULL
 * data (nothing allocated): an input for rlx_session_prepare. */
int cli_input_shape(const rlx_options *opts, const char *name, rlx_dtype dtype, const int64_t *dims, int rank,
                    rlx_tensor *shell);

/* Builds the model input vi: from its --input file (dtype checked), or
 * random values of its --shape or its declared shape (symbolic dims 1).
 * Returns -1 on success, else the exit code after printing the error. */
int cli_make_input(const cli_input_opts *io, const rlx_value_info *vi, cli_rng *r, rlx_tensor **out);

/* Every --input and --shape must name a graph input of m: -1, or the
 * usage error (listing the model's inputs) after printing it. */
int cli_check_input_names(const cli_input_opts *io, const rlx_model *m);

/* Loads a->model with a->opts (a progress line while it loads when
 * `progress`); *t_import its seconds. -1 on success, else the exit code
 * after printing the error. */
int cli_model_load(const cli_model_args *a, bool progress, rlx_model **m, double *t_import);

/* The inputs of m, after cli_check_input_names: arrays *names and *inputs
 * of *n_in entries each (any number), made by cli_make_input from io->seed;
 * with io->verbose a "model: PATH" and an "inputs:" line first. The caller
 * frees them with cli_model_inputs_free, also after a failure. -1 on
 * success, else the exit code after printing the error. */
int cli_model_inputs(const cli_input_opts *io, const rlx_model *m, const char *path, const char ***names,
                     rlx_tensor ***inputs, size_t *n_in);
void cli_model_inputs_free(const char **names, rlx_tensor **inputs, size_t n_in);

/* A session of m on a->device with a->opts; *t_session its seconds. -1 on
 * success, else the exit code after printing the error. */
int cli_model_session(const cli_model_args *a, rlx_model *m, rlx_session **s, double *t_session);

/* --json of run and bench: "model", "device" (the session's), "device_arg"
 * and "inputs" (name, dtype, shape, and the --input file or null). */
void cli_json_run_head(cli_json *j, const char *model, const rlx_session *s, const char *device_arg, size_t n_in,
                       const char *const *names, rlx_tensor *const *inputs, const cli_named_list *files);

int cli_cmd_run(int argc, char **argv);
int cli_cmd_info(int argc, char **argv);
int cli_cmd_devices(int argc, char **argv);
int cli_cmd_bench(int argc, char **argv);
int cli_cmd_ops(int argc, char **argv);

/* `rlx conformance` (tools/conformance.c): takes the arguments after its
 * name and returns the exit code (0 success, 1 runtime failure or
 * regression, 2 usage error). */
int rlx_cli_conformance(int argc, char **argv);

#endif
