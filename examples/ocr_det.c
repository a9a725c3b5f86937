/* ocr_det: text detection on a scanned page with the PP-OCRv4 detector
 * (a DBNet: the network outputs, per pixel, the probability that it lies
 * inside a text region), run by rlx on the GPU through WebGPU or on the CPU.
 *
 *   ocr_det --model models/ppocrv4_det.onnx --image data/page.png --out out/page_prob.png
 *
 * Steps, and the choices made in each (the pre-processing follows what
 * PaddleOCR's tools/infer/predict_det.py and RapidOCR's text detector do;
 * where the two differ, --preset picks one):
 *
 * 1. Read the PNG as 8-bit RGB (png_io.c: any colour type and depth; alpha
 *    composited over white; 16-bit scaled with rounding).
 *
 * 2. Resize so that each side is a multiple of 32 (the network downsamples
 *    by 32), as DetResizeForTest's "limit_side_len" mode does:
 *      limit type max: if max(h, w) > L, ratio = L / (the longer side), else 1
 *      limit type min: if min(h, w) < L, ratio = L / (the shorter side), else 1
 *      rh = int(h * ratio), rw = int(w * ratio)       (truncation, in double)
 *      rh = max(round(rh / 32) * 32, 32), same for rw (round half to even,
 *      as Python's round(); C's rint in the default rounding mode)
 *    Presets: paddleocr (the default): L = 960, type max (PaddleOCR's
 *    predict_det defaults: a small page keeps its size, up to the rounding);
 *    rapidocr: L = 736, type min (rapidocr-onnxruntime 1.4.4's config.yaml:
 *    small pages are enlarged, here 384x191 becomes 1472x736).
 *    --limit-side-len and --limit-type override the preset.
 *    Interpolation is bilinear with OpenCV's INTER_LINEAR coordinate
 *    mapping (what cv2.resize does there): source x = (x + 0.5) * (sw / dw)
 *    - 0.5; a negative coordinate is clamped to 0, one at or past the last
 *    column uses the last column alone; the same for y. The arithmetic is in
 *    double and rounded to 8 bits (floor(v + 0.5)); OpenCV computes in
 *    11-bit fixed point, so a sample may differ from cv2.resize by one level.
 *
 * 3. Normalise to NCHW float32, channels in BGR order (the PaddleOCR and
 *    RapidOCR pipelines read images with OpenCV, which gives BGR, and the
 *    model was trained that way): x[c] = (v * (1/255) - mean[c]) / std[c],
 *    evaluated in float32 like PaddleOCR's NormalizeImage, with
 *      paddleocr preset: mean 0.485, 0.456, 0.406, std 0.229, 0.224, 0.225
 *        (the ImageNet values of PaddleOCR's PP-OCRv4 det config, applied
 *        to B, G, R in that order);
 *      rapidocr preset:  mean 0.5, 0.5, 0.5, std 0.5, 0.5, 0.5
 *        (rapidocr-onnxruntime 1.4.4's Det settings).
 *
 * 4. Run the model: input "x" [1, 3, H, W] -> probability map [1, 1, H, W].
 *
 * 5. Count text regions: pixels with p > --thresh (0.3, DBPostProcess's
 *    thresh; strict '>' as there) grouped into 8-connected regions; regions
 *    of fewer than --min-area pixels (default 9, a 3x3 square: DB drops
 *    boxes whose shorter side is below its min_size of 3) are not counted.
 *    This is a simplified DB post-process: no 2x2 dilation (RapidOCR's
 *    use_dilation; PaddleOCR's default is off), no box fitting, unclipping
 *    or box-score filter.
 *
 * 6. Write the probability map as an 8-bit grayscale PNG at the network's
 *    resolution: round(clamp(p, 0, 1) * 255).
 *
 * Test hooks: --save-input / --save-output write the network input and
 * output as .npy; --preprocess-only stops after step 3 (no model needed);
 * --count-regions-npy MAP.npy runs step 5 (and 6 with --out) on a map.
 *
 * Exit codes: 0 success; 2 usage error, unreadable image or model, model
 * that rlx cannot load; 1 runtime failure (no GPU adapter, device error). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "png_io.h"
#include "rlx/rlx.h" /* the public API only: rlx_now_seconds, rlx_session_get_stats too */

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* ------------------------------------------------------------ messages */

static void err_msg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ocr_det: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ocr_det: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see 'ocr_det --help')\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

/* Exit code of a failed rlx call: 2 when the model or input is at fault. */
static int rlx_exit(rlx_status st, const char *what) {
    err_msg("%s: %s (%s)", what, rlx_last_error(), rlx_status_name(st));
    switch (st) {
    case RLX_ERR_INVALID_ARGUMENT:
    case RLX_ERR_INVALID_MODEL:
    case RLX_ERR_UNSUPPORTED:
    case RLX_ERR_IO: return EXIT_USAGE;
    default: return EXIT_RUNTIME;
    }
}

static void print_help(void) {
    printf("usage: ocr_det --model MODEL.onnx --image PAGE.png [options]\n"
           "       ocr_det --image PAGE.png --preprocess-only --save-input X.npy [options]\n"
           "       ocr_det --count-regions-npy MAP.npy [--thresh T] [--min-area N] [--out MAP.png]\n"
           "\n"
           "Detects text on a page with the PP-OCRv4 text detector (DBNet), run by rlx:\n"
           "reads the PNG, resizes it to multiples of 32 and normalises it as PaddleOCR /\n"
           "RapidOCR do, runs the model, counts the text regions of the probability map,\n"
           "and writes the map as a grayscale PNG. Prints the adapter used, the input\n"
           "size, the region count and the timings.\n"
           "\n"
           "options:\n"
           "  --model FILE          the detector (.onnx), e.g. models/ppocrv4_det.onnx\n"
           "  --image FILE          the page (.png: gray, gray+alpha, RGB, RGBA, palette,\n"
           "                        1 to 16 bits)\n"
           "  --out FILE            write the probability map as an 8-bit gray PNG\n"
           "                        (folders are created)\n"
           "  --device DEV          gpu (default), gpu:N or cpu\n"
           "  --preset NAME         paddleocr (default: side limit 960, type max, ImageNet\n"
           "                        mean/std) or rapidocr (rapidocr-onnxruntime 1.4.4: side\n"
           "                        limit 736, type min, mean/std 0.5)\n"
           "  --limit-side-len N    override the preset's side limit (32..8192 pixels)\n"
           "  --limit-type T        override the preset's limit type: max or min\n"
           "  --thresh T            probability threshold of text pixels (default 0.3)\n"
           "  --min-area N          smallest region counted, in pixels (default 9)\n"
           "  --runs N              steady runs timed after the first (default 3)\n"
           "  --save-input FILE     write the network input [1,3,H,W] f32 as .npy\n"
           "  --save-output FILE    write the probability map [1,1,H,W] f32 as .npy\n"
           "  --preprocess-only     stop after writing --save-input (no model needed)\n"
           "  --count-regions-npy F count the regions of a map in an .npy file (f32 or f64,\n"
           "                        [..., H, W] with leading dims of size 1) and exit\n"
           "  -h, --help            print this help and exit\n"
           "\n"
           "Exit codes: 0 success; 2 usage error, unreadable image or model, a model rlx\n"
           "cannot load; 1 runtime failure (no GPU adapter, device error).\n");
}

/* ------------------------------------------------------------ options */

typedef struct options {
    const char *model, *image, *out, *device, *save_input, *save_output, *count_npy;
    const char *preset;
    int limit_side_len;  /* 0: from the preset */
    const char *limit_type; /* NULL: from the preset */
    double thresh;
    long min_area, runs;
    bool preprocess_only;
} options;

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* Returns -1 to continue, else an exit code. */
static int parse_options(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->device = "gpu";
    o->preset = "paddleocr";
    o->thresh = 0.3;
    o->min_area = 9;
    o->runs = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help();
            return EXIT_OK;
        }
        if (strcmp(a, "--preprocess-only") == 0) {
            o->preprocess_only = true;
            continue;
        }
        static const char *const with_value[] = { "--model", "--image", "--out", "--device", "--preset",
                                                  "--limit-side-len", "--limit-type", "--thresh", "--min-area",
                                                  "--runs", "--save-input", "--save-output",
                                                  "--count-regions-npy" };
        const char *name = NULL, *v = NULL;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) {
            size_t n = strlen(with_value[k]);
            if (strncmp(a, with_value[k], n) == 0 && (a[n] == '\0' || a[n] == '=')) {
                name = with_value[k];
                if (a[n] == '=') {
                    v = a + n + 1;
                } else if (i + 1 < argc) {
                    v = argv[++i];
                } else {
                    return usage_error("option %s needs a value", name);
                }
                break;
            }
        }
        if (!name) {
            if (a[0] == '-') return usage_error("unknown option '%s'", a);
            return usage_error("unexpected argument '%s'", a);
        }
        long n;
        if (strcmp(name, "--model") == 0) o->model = v;
        else if (strcmp(name, "--image") == 0) o->image = v;
        else if (strcmp(name, "--out") == 0) o->out = v;
        else if (strcmp(name, "--save-input") == 0) o->save_input = v;
        else if (strcmp(name, "--save-output") == 0) o->save_output = v;
        else if (strcmp(name, "--count-regions-npy") == 0) o->count_npy = v;
        else if (strcmp(name, "--device") == 0) {
            if (!(strcmp(v, "cpu") == 0 || strcmp(v, "gpu") == 0 ||
                  (strncmp(v, "gpu:", 4) == 0 && parse_long(v + 4, 0, 1 << 20, &n))))
                return usage_error("bad --device '%s' (expected gpu, gpu:N or cpu)", v);
            o->device = v;
        } else if (strcmp(name, "--preset") == 0) {
            if (strcmp(v, "paddleocr") != 0 && strcmp(v, "rapidocr") != 0)
                return usage_error("bad --preset '%s' (expected paddleocr or rapidocr)", v);
            o->preset = v;
        } else if (strcmp(name, "--limit-side-len") == 0) {
            if (!parse_long(v, 32, 8192, &n)) return usage_error("bad --limit-side-len '%s' (expected 32..8192)", v);
            o->limit_side_len = (int)n;
        } else if (strcmp(name, "--limit-type") == 0) {
            if (strcmp(v, "max") != 0 && strcmp(v, "min") != 0)
                return usage_error("bad --limit-type '%s' (expected max or min)", v);
            o->limit_type = v;
        } else if (strcmp(name, "--thresh") == 0) {
            char *end;
            errno = 0;
            double t = strtod(v, &end);
            if (!*v || *end || errno || !(t >= 0.0 && t < 1.0))
                return usage_error("bad --thresh '%s' (expected a number in [0, 1))", v);
            o->thresh = t;
        } else if (strcmp(name, "--min-area") == 0) {
            if (!parse_long(v, 1, 1L << 30, &o->min_area)) return usage_error("bad --min-area '%s' (expected >= 1)", v);
        } else if (strcmp(name, "--runs") == 0) {
            if (!parse_long(v, 0, 100000, &o->runs)) return usage_error("bad --runs '%s' (expected 0..100000)", v);
        }
    }
    if (o->count_npy) {
        if (o->model || o->image) return usage_error("--count-regions-npy takes no --model or --image");
        return -1;
    }
    if (!o->image) return usage_error("no --image given");
    if (o->preprocess_only) {
        if (!o->save_input) return usage_error("--preprocess-only needs --save-input");
        return -1;
    }
    if (!o->model) return usage_error("no --model given");
    return -1;
}

/* ------------------------------------------------------------ files */

/* Creates the folders above `path` (mkdir -p of its directory part). */
static bool make_parent_dirs(const char *path) {
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) return false;
    memcpy(p, path, n + 1);
    bool ok = true;
    for (size_t i = 1; i < n && ok; i++) {
        if (p[i] != '/') continue;
        p[i] = '\0';
        struct stat sb;
        if (stat(p, &sb) != 0 && mkdir(p, 0777) != 0 && errno != EEXIST) ok = false;
        p[i] = '/';
    }
    free(p);
    return ok;
}

/* ------------------------------------------------------------ pre-processing */

/* Largest network input accepted: 16384 pixels a side, 2^26 pixels (the
 * input tensor is then 768 MiB). */
#define MAX_INPUT_SIDE 16384
#define MAX_INPUT_PIXELS (1 << 26)

typedef struct preprocess_params {
    int limit_side_len;
    bool limit_max; /* true: limit type max; false: min */
    float mean[3], std[3]; /* for channels B, G, R */
} preprocess_params;

static preprocess_params params_for(const options *o) {
    preprocess_params p;
    if (strcmp(o->preset, "rapidocr") == 0) {
        p = (preprocess_params){ 736, false, { 0.5f, 0.5f, 0.5f }, { 0.5f, 0.5f, 0.5f } };
    } else {
        p = (preprocess_params){ 960, true, { 0.485f, 0.456f, 0.406f }, { 0.229f, 0.224f, 0.225f } };
    }
    if (o->limit_side_len) p.limit_side_len = o->limit_side_len;
    if (o->limit_type) p.limit_max = strcmp(o->limit_type, "max") == 0;
    return p;
}

/* Target size of DetResizeForTest's limit_side_len mode (see the top). */
static void target_size(int h, int w, const preprocess_params *pp, long *out_h, long *out_w) {
    double ratio = 1.0, lim = (double)pp->limit_side_len;
    if (pp->limit_max) {
        if ((h > w ? h : w) > pp->limit_side_len) ratio = h > w ? lim / h : lim / w;
    } else {
        if ((h < w ? h : w) < pp->limit_side_len) ratio = h < w ? lim / h : lim / w;
    }
    double rh = floor(h * ratio), rw = floor(w * ratio); /* int() of a positive number */
    long th = (long)rint(rh / 32.0) * 32, tw = (long)rint(rw / 32.0) * 32;
    *out_h = th < 32 ? 32 : th;
    *out_w = tw < 32 ? 32 : tw;
}

/* Source index and weight of output coordinate d for a resize of n_src
 * samples to n_dst (OpenCV INTER_LINEAR mapping, see the top). */
static void linear_coord(int d, int n_src, int n_dst, int *i0, double *frac) {
    double s = ((double)d + 0.5) * ((double)n_src / (double)n_dst) - 0.5;
    double fl = floor(s);
    int i = (int)fl;
    double f = s - fl;
    if (i < 0) {
        i = 0;
        f = 0.0;
    }
    if (i >= n_src - 1) {
        i = n_src - 1;
        f = 0.0;
    }
    *i0 = i;
    *frac = f;
}

/* Bilinear resize of an 8-bit RGB image to dw x dh (rounded to 8 bits). */
static uint8_t *resize_rgb8(const demo_image *src, int dw, int dh) {
    uint8_t *dst = malloc((size_t)dw * (size_t)dh * 3);
    if (!dst) return NULL;
    const int sw = src->width, sh = src->height;
    for (int y = 0; y < dh; y++) {
        int y0;
        double fy;
        linear_coord(y, sh, dh, &y0, &fy);
        int y1 = y0 + 1 < sh ? y0 + 1 : y0;
        for (int x = 0; x < dw; x++) {
            int x0;
            double fx;
            linear_coord(x, sw, dw, &x0, &fx);
            int x1 = x0 + 1 < sw ? x0 + 1 : x0;
            for (int c = 0; c < 3; c++) {
                double p00 = src->pixels[((size_t)y0 * sw + x0) * 3 + c];
                double p01 = src->pixels[((size_t)y0 * sw + x1) * 3 + c];
                double p10 = src->pixels[((size_t)y1 * sw + x0) * 3 + c];
                double p11 = src->pixels[((size_t)y1 * sw + x1) * 3 + c];
                double top = (1.0 - fx) * p00 + fx * p01;
                double bot = (1.0 - fx) * p10 + fx * p11;
                double v = (1.0 - fy) * top + fy * bot;
                v = floor(v + 0.5);
                dst[((size_t)y * dw + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
    return dst;
}

/* The whole pre-processing: returns the [1, 3, H, W] f32 input. */
static rlx_status preprocess(const demo_image *img, const preprocess_params *pp, rlx_tensor **out) {
    *out = NULL;
    long th, tw;
    target_size(img->height, img->width, pp, &th, &tw);
    if (th > MAX_INPUT_SIDE || tw > MAX_INPUT_SIDE || th * tw > MAX_INPUT_PIXELS) {
        err_msg("the resized input would be %ldx%ld, larger than %d pixels a side or %d pixels in all "
                "(lower --limit-side-len or use --limit-type max)", tw, th, MAX_INPUT_SIDE, MAX_INPUT_PIXELS);
        return RLX_ERR_INVALID_ARGUMENT;
    }
    uint8_t *rs = resize_rgb8(img, (int)tw, (int)th);
    if (!rs) {
        err_msg("pre-processing: out of memory");
        return RLX_ERR_OUT_OF_MEMORY;
    }
    int64_t dims[4] = { 1, 3, th, tw };
    rlx_status st = rlx_tensor_create(RLX_DTYPE_F32, dims, 4, out);
    if (st) {
        free(rs);
        err_msg("pre-processing: %s", rlx_last_error());
        return st;
    }
    float *x = (*out)->data;
    const size_t plane = (size_t)th * (size_t)tw;
    const float scale = (float)(1.0 / 255.0); /* np.float32(1.0 / 255.0), as PaddleOCR */
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) {
            /* channel c of the input is B, G, R for c = 0, 1, 2: source RGB
             * sample 2 - c */
            float v = (float)rs[i * 3 + (size_t)(2 - c)];
            x[(size_t)c * plane + i] = (v * scale - pp->mean[c]) / pp->std[c];
        }
    free(rs);
    return RLX_OK;
}

/* ------------------------------------------------------------ regions */

typedef struct region {
    int x0, y0, x1, y1; /* bounding box, inclusive, in map pixels */
    long area;          /* pixels */
    double mean_p;      /* mean probability over the region */
} region;

/* Labels 8-connected regions of p > thresh in an h x w map (breadth-first
 * flood fill with an explicit queue, in raster order of each region's first
 * pixel) and returns those with at least min_area pixels in *out (malloc'ed;
 * count in *n_out). Returns false when out of memory. */
static bool find_regions(const float *p, int h, int w, float thresh, long min_area, region **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    size_t n = (size_t)h * (size_t)w;
    uint8_t *seen = calloc(n + 1, 1);
    int32_t *queue = malloc((n + 1) * sizeof *queue);
    size_t cap = 16, count = 0;
    region *rs = malloc(cap * sizeof *rs);
    if (!seen || !queue || !rs) goto oom;
    for (size_t start = 0; start < n; start++) {
        if (seen[start] || !(p[start] > thresh)) continue;
        region r = { (int)(start % (size_t)w), (int)(start / (size_t)w), (int)(start % (size_t)w),
                     (int)(start / (size_t)w), 0, 0.0 };
        double sum = 0.0;
        size_t head = 0, tail = 0;
        queue[tail++] = (int32_t)start;
        seen[start] = 1;
        while (head < tail) {
            int32_t k = queue[head++];
            int y = (int)(k / w), x = (int)(k % w);
            r.area++;
            sum += p[k];
            if (x < r.x0) r.x0 = x;
            if (x > r.x1) r.x1 = x;
            if (y < r.y0) r.y0 = y;
            if (y > r.y1) r.y1 = y;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy, xx = x + dx;
                    if ((dx == 0 && dy == 0) || yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                    size_t kk = (size_t)yy * (size_t)w + (size_t)xx;
                    if (!seen[kk] && p[kk] > thresh) {
                        seen[kk] = 1;
                        queue[tail++] = (int32_t)kk;
                    }
                }
        }
        if (r.area < min_area) continue;
        r.mean_p = sum / (double)r.area;
        if (count == cap) {
            region *nr = realloc(rs, 2 * cap * sizeof *rs);
            if (!nr) goto oom;
            rs = nr;
            cap *= 2;
        }
        rs[count++] = r;
    }
    free(seen);
    free(queue);
    *out = rs;
    *n_out = count;
    return true;
oom:
    free(seen);
    free(queue);
    free(rs);
    return false;
}

/* Prints the region count and the first few boxes, scaled by sx, sy into
 * the coordinates of the original image. */
static void print_regions(const region *rs, size_t n, const options *o, double sx, double sy, const char *units) {
    printf("text regions: %zu (p > %.2f, 8-connected, at least %ld pixels)\n", n, o->thresh, o->min_area);
    size_t show = n < 12 ? n : 12;
    for (size_t i = 0; i < show; i++) {
        const region *r = &rs[i];
        printf("  #%-3zu x [%4.0f, %4.0f) y [%4.0f, %4.0f) (%s)  area %ld px  mean p %.2f\n", i + 1, r->x0 * sx,
               (r->x1 + 1) * sx, r->y0 * sy, (r->y1 + 1) * sy, units, r->area, r->mean_p);
    }
    if (n > show) printf("  ... and %zu more\n", n - show);
}

/* Writes the map as an 8-bit gray PNG: round(clamp(p, 0, 1) * 255). */
static int write_map_png(const char *path, const float *p, int h, int w) {
    size_t n = (size_t)h * (size_t)w;
    uint8_t *g = malloc(n + 1);
    if (!g) {
        err_msg("out of memory");
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < n; i++) {
        float v = p[i];
        if (!(v > 0.0f)) v = 0.0f; /* NaN too */
        if (v > 1.0f) v = 1.0f;
        g[i] = (uint8_t)floorf(v * 255.0f + 0.5f);
    }
    char err[512];
    int rc = EXIT_OK;
    if (!make_parent_dirs(path)) {
        err_msg("cannot create the folder of '%s': %s", path, strerror(errno));
        rc = EXIT_RUNTIME;
    } else if (png_write_8bit(path, g, w, h, 1, err, sizeof err) != 0) {
        err_msg("%s", err);
        rc = EXIT_RUNTIME;
    } else {
        printf("wrote %s (%dx%d, 8-bit gray, value = round(p * 255))\n", path, w, h);
    }
    free(g);
    return rc;
}

static int save_npy(const rlx_tensor *t, const char *path) {
    if (!make_parent_dirs(path)) {
        err_msg("cannot create the folder of '%s': %s", path, strerror(errno));
        return EXIT_RUNTIME;
    }
    rlx_status st = rlx_tensor_save_npy(t, path);
    if (st) {
        err_msg("%s", rlx_last_error()); /* names the file and the reason */
        return EXIT_RUNTIME;
    }
    printf("wrote %s\n", path);
    return EXIT_OK;
}

/* --count-regions-npy: step 5 (and 6 with --out) on a map from a file. */
static int count_regions_npy(const options *o) {
    rlx_tensor *t = NULL;
    rlx_status st = rlx_tensor_load_npy(o->count_npy, &t);
    if (st) return rlx_exit(st, "cannot read the map");
    int rc = EXIT_OK;
    float *p = NULL;
    size_t lead = 1;
    for (int d = 0; d + 2 < t->rank; d++) lead *= (size_t)t->dims[d];
    if (t->rank < 2 || lead != 1 || (t->dtype != RLX_DTYPE_F32 && t->dtype != RLX_DTYPE_F64) ||
        t->dims[t->rank - 1] < 1 || t->dims[t->rank - 2] < 1 ||
        t->dims[t->rank - 1] * t->dims[t->rank - 2] > (int64_t)1 << 30) {
        err_msg("'%s': expected an f32 or f64 map [..., H, W] with leading dims of size 1", o->count_npy);
        rlx_tensor_destroy(t);
        return EXIT_USAGE;
    }
    int h = (int)t->dims[t->rank - 2], w = (int)t->dims[t->rank - 1];
    size_t n = (size_t)h * (size_t)w;
    if (t->dtype == RLX_DTYPE_F64) {
        p = malloc(n * sizeof *p);
        if (!p) {
            rlx_tensor_destroy(t);
            err_msg("out of memory");
            return EXIT_RUNTIME;
        }
        for (size_t i = 0; i < n; i++) p[i] = (float)((const double *)t->data)[i];
    }
    const float *map = p ? p : (const float *)t->data;
    region *rs;
    size_t nr;
    if (!find_regions(map, h, w, (float)o->thresh, o->min_area, &rs, &nr)) {
        err_msg("out of memory");
        rc = EXIT_RUNTIME;
    } else {
        printf("map: %s (%dx%d)\n", o->count_npy, w, h);
        print_regions(rs, nr, o, 1.0, 1.0, "map px");
        free(rs);
        if (o->out) rc = write_map_png(o->out, map, h, w);
    }
    free(p);
    rlx_tensor_destroy(t);
    return rc;
}

/* ------------------------------------------------------------ device */

/* Type of the adapter a GPU session runs on ("cpu", "discrete", ...), or
 * "" when it cannot be told. The adapter list is in gpu:N order; for
 * "gpu" the adapter is found by name in the session's device name. */
static void adapter_type(const char *device, const char *dev_name, char *type, size_t cap) {
    type[0] = '\0';
    rlx_adapter_info *ad = NULL;
    size_t n = 0;
    if (rlx_adapters_list(&ad, &n) != RLX_OK) return;
    long idx = -1;
    if (strncmp(device, "gpu:", 4) == 0) parse_long(device + 4, 0, 1 << 20, &idx);
    for (size_t i = 0; i < n; i++) {
        bool match = idx >= 0 ? (size_t)idx == i : (ad[i].name[0] && strncmp(dev_name, ad[i].name, strlen(ad[i].name)) == 0);
        if (match) {
            snprintf(type, cap, "%s", ad[i].type);
            break;
        }
    }
    free(ad);
}

/* ------------------------------------------------------------ main */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "12.3 ms" below a second, else "1.23 s"; buf holds 32 bytes. */
static char *fmt_time(double sec, char *buf) {
    if (sec < 1.0)
        snprintf(buf, 32, "%.1f ms", sec * 1e3);
    else
        snprintf(buf, 32, "%.2f s", sec);
    return buf;
}

static void free_outs(rlx_tensor **outs, size_t n) {
    if (!outs) return;
    for (size_t i = 0; i < n; i++) rlx_tensor_destroy(outs[i]);
    free(outs);
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    if (o.count_npy) return count_regions_npy(&o);

    demo_image img = { 0 };
    rlx_tensor *x = NULL;
    rlx_model *model = NULL;
    rlx_session *s = NULL;
    rlx_tensor **outs = NULL;
    size_t n_outs = 0;
    double *times = NULL;
    char err[1024], kind[128];

    /* 1. read */
    if (png_read_rgb8(o.image, &img, kind, sizeof kind, err, sizeof err) != 0) {
        err_msg("cannot read the image: %s", err);
        return EXIT_USAGE;
    }
    /* 2-3. resize and normalise */
    preprocess_params pp = params_for(&o);
    rlx_status st = preprocess(&img, &pp, &x);
    if (st) {
        rc = st == RLX_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
        goto done;
    }
    const int in_h = (int)x->dims[2], in_w = (int)x->dims[3];
    printf("image: %s, %dx%d (%s)\n", o.image, img.width, img.height, kind);
    printf("input: 1x3x%dx%d f32, NCHW, BGR (preset %s: side limit %d, type %s; mean %.3g,%.3g,%.3g, std "
           "%.3g,%.3g,%.3g)\n",
           in_h, in_w, o.preset, pp.limit_side_len, pp.limit_max ? "max" : "min", pp.mean[0], pp.mean[1],
           pp.mean[2], pp.std[0], pp.std[1], pp.std[2]);
    if (o.save_input && (rc = save_npy(x, o.save_input)) != EXIT_OK) goto done;
    if (o.preprocess_only) {
        rc = EXIT_OK;
        goto done;
    }

    /* 4. load, compile, run */
    double t0 = rlx_now_seconds();
    st = rlx_model_load_onnx(o.model, &model);
    double t_load = rlx_now_seconds() - t0;
    if (st) {
        /* the importer's message names the file; add it only if not */
        if (strstr(rlx_last_error(), o.model))
            snprintf(err, sizeof err, "cannot load the model");
        else
            snprintf(err, sizeof err, "cannot load the model '%s'", o.model);
        rc = rlx_exit(st, err);
        goto done;
    }
    rlx_value_info in_info;
    if (rlx_model_num_inputs(model) != 1 || rlx_model_input_info(model, 0, &in_info) != RLX_OK) {
        err_msg("'%s' has %zu inputs; the text detector has one, [N, 3, H, W]", o.model,
                rlx_model_num_inputs(model));
        rc = EXIT_USAGE;
        goto done;
    }
    rlx_session_options so = { .device = o.device };
    st = rlx_session_create(model, &so, &s);
    if (st) {
        snprintf(err, sizeof err, "cannot use device '%s'%s", o.device,
                 strcmp(o.device, "cpu") != 0 ? " (--device cpu runs without a GPU)" : "");
        rc = rlx_exit(st, err);
        goto done;
    }
    const char *dev_name = rlx_session_device_name(s);
    printf("device: %s\n", dev_name);
    if (rlx_session_device_kind(s) == RLX_DEVICE_GPU) {
        char type[32];
        adapter_type(o.device, dev_name, type, sizeof type);
        if (strcmp(type, "cpu") == 0)
            printf("  note: this is a CPU-type adapter (a software rasteriser such as Mesa lavapipe): no GPU was\n"
                   "  found, so the 'GPU' timings below are CPU timings\n");
        else if (type[0])
            printf("  adapter type: %s\n", type);
    } else {
        printf("  (the CPU backend; --device gpu uses a GPU through WebGPU)\n");
    }
    fflush(stdout);
    const char *in_name = in_info.name;
    const rlx_tensor *in_t = x;
    t0 = rlx_now_seconds();
    st = rlx_session_run(s, 1, &in_name, &in_t, &outs, &n_outs);
    double t_first = rlx_now_seconds() - t0;
    if (st) {
        rc = rlx_exit(st, "the first run failed");
        goto done;
    }
    rlx_session_stats ss;
    rlx_session_get_stats(s, &ss);
    double t_compile = ss.passes_s + ss.backend_compile_s;
    if (o.runs > 0 && !(times = malloc((size_t)o.runs * sizeof *times))) {
        err_msg("out of memory");
        rc = EXIT_RUNTIME;
        goto done;
    }
    for (long k = 0; k < o.runs; k++) {
        rlx_tensor **tmp = NULL;
        size_t nt = 0;
        t0 = rlx_now_seconds();
        st = rlx_session_run(s, 1, &in_name, &in_t, &tmp, &nt);
        times[k] = rlx_now_seconds() - t0;
        free_outs(tmp, nt);
        if (st) {
            rc = rlx_exit(st, "a steady run failed");
            goto done;
        }
    }
    const rlx_tensor *prob = n_outs ? outs[0] : NULL;
    if (!prob || prob->dtype != RLX_DTYPE_F32 || prob->rank != 4 || prob->dims[0] != 1 || prob->dims[1] != 1) {
        err_msg("the model's first output is not a [1, 1, H, W] f32 probability map");
        rc = EXIT_USAGE;
        goto done;
    }
    const int out_h = (int)prob->dims[2], out_w = (int)prob->dims[3];

    /* 5. regions */
    region *rs;
    size_t nr;
    if (!find_regions(prob->data, out_h, out_w, (float)o.thresh, o.min_area, &rs, &nr)) {
        err_msg("out of memory");
        rc = EXIT_RUNTIME;
        goto done;
    }
    print_regions(rs, nr, &o, (double)img.width / out_w, (double)img.height / out_h, "image px");
    free(rs);

    char b[4][32];
    printf("timings: load %s, compile %s, first run %s (including the compile)", fmt_time(t_load, b[0]),
           fmt_time(t_compile, b[1]), fmt_time(t_first, b[2]));
    if (o.runs > 0) {
        qsort(times, (size_t)o.runs, sizeof *times, cmp_double);
        size_t n = (size_t)o.runs;
        double med = (n % 2) ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
        printf(", steady median %s over %zu runs", fmt_time(med, b[3]), n);
    }
    printf("\n");

    /* 6. outputs */
    if (o.out && (rc = write_map_png(o.out, prob->data, out_h, out_w)) != EXIT_OK) goto done;
    if (o.save_output && (rc = save_npy(prob, o.save_output)) != EXIT_OK) goto done;
    rc = EXIT_OK;
done:
    fflush(stdout);
    free(times);
    free_outs(outs, n_outs);
    rlx_session_destroy(s);
    rlx_model_destroy(model);
    rlx_tensor_destroy(x);
    demo_image_free(&img);
    return rc;
}
