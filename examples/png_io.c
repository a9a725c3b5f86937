/* PNG reading and writing over libpng 1.6 (see png_io.h).
 *
 * libpng reports errors by calling an error function that must not return;
 * ours records the message and longjmps back to the setjmp in the calling
 * function. Everything that must survive the longjmp (file, buffers) lives
 * in a heap-allocated context whose pointer is set before setjmp and never
 * changes afterwards, so no automatic variable is modified between setjmp
 * and longjmp (C11 7.13.2.1). */
#define _POSIX_C_SOURCE 200809L
#include "png_io.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct png_ctx {
    char msg[256];
    FILE *f;
    png_structp png;
    png_infop info;
    uint8_t *rgba;      /* read: decoded rows */
    png_bytep *rows;    /* row pointers into rgba / the caller's pixels */
} png_ctx;

static void set_err(char *err, size_t cap, const char *fmt, ...) {
    if (!err || !cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

static void on_error(png_structp png, png_const_charp msg) {
    png_ctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "libpng error");
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg; /* warnings (e.g. a bad iCCP chunk) do not stop reading */
}

static const char *color_name(int t) {
    switch (t) {
    case PNG_COLOR_TYPE_GRAY: return "gray";
    case PNG_COLOR_TYPE_GRAY_ALPHA: return "gray+alpha";
    case PNG_COLOR_TYPE_RGB: return "RGB";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
    case PNG_COLOR_TYPE_PALETTE: return "palette";
    default: return "unknown";
    }
}

void demo_image_free(demo_image *img) {
    if (!img) return;
    free(img->pixels);
    memset(img, 0, sizeof *img);
}

/* The part of png_read_rgb8 that may longjmp; fills c->rgba (RGBA 8-bit). */
static int read_rgba(png_ctx *c, png_uint_32 *w, png_uint_32 *h, char *kind, size_t kind_cap) {
    if (setjmp(png_jmpbuf(c->png))) return -1;
    png_init_io(c->png, c->f);
    png_set_sig_bytes(c->png, 8);
    /* refuse absurd sizes before any allocation */
    png_set_user_limits(c->png, 1u << 20, 1u << 20);
    png_read_info(c->png, c->info);
    int depth, color, interlace;
    png_get_IHDR(c->png, c->info, w, h, &depth, &color, &interlace, NULL, NULL);
    if ((size_t)*w * (size_t)*h > PNG_IO_MAX_PIXELS) {
        snprintf(c->msg, sizeof c->msg, "image is %ux%u, more than the %zu pixels allowed", (unsigned)*w,
                 (unsigned)*h, PNG_IO_MAX_PIXELS);
        return -1;
    }
    if (kind)
        snprintf(kind, kind_cap, "%s %d-bit%s%s", color_name(color), depth,
                 png_get_valid(c->png, c->info, PNG_INFO_tRNS) ? ", tRNS" : "",
                 interlace != PNG_INTERLACE_NONE ? ", interlaced" : "");
    /* Transformations, in libpng's terms:
     *  expand: palette -> RGB(A), gray < 8 bit -> 8 bit, tRNS -> alpha;
     *  scale_16: 16 -> 8 bit with rounding (strip_16 would truncate);
     *  gray_to_rgb: G -> G,G,G; add_alpha: opaque alpha where there is none,
     *  so that every row arrives as RGBA 8-bit. */
    png_set_expand(c->png);
#ifdef PNG_READ_SCALE_16_TO_8_SUPPORTED
    png_set_scale_16(c->png);
#else
    png_set_strip_16(c->png);
#endif
    png_set_gray_to_rgb(c->png);
    png_set_add_alpha(c->png, 0xff, PNG_FILLER_AFTER);
    (void)png_set_interlace_handling(c->png);
    png_read_update_info(c->png, c->info);
    size_t rowbytes = png_get_rowbytes(c->png, c->info);
    if (rowbytes != (size_t)*w * 4) {
        snprintf(c->msg, sizeof c->msg, "unexpected row size %zu after conversion to RGBA (width %u)", rowbytes,
                 (unsigned)*w);
        return -1;
    }
    c->rgba = malloc(rowbytes * (size_t)*h);
    c->rows = malloc(sizeof(png_bytep) * (size_t)*h);
    if (!c->rgba || !c->rows) {
        snprintf(c->msg, sizeof c->msg, "out of memory for a %ux%u image", (unsigned)*w, (unsigned)*h);
        return -1;
    }
    for (png_uint_32 y = 0; y < *h; y++) c->rows[y] = c->rgba + (size_t)y * rowbytes;
    png_read_image(c->png, c->rows);
    png_read_end(c->png, NULL);
    return 0;
}

int png_read_rgb8(const char *path, demo_image *out, char *kind, size_t kind_cap, char *err, size_t err_cap) {
    memset(out, 0, sizeof *out);
    if (kind && kind_cap) kind[0] = '\0';
    png_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        set_err(err, err_cap, "%s: out of memory", path);
        return -1;
    }
    int rc = -1;
    c->f = fopen(path, "rb");
    if (!c->f) {
        set_err(err, err_cap, "%s: %s", path, strerror(errno));
        free(c);
        return -1;
    }
    unsigned char sig[8];
    errno = 0;
    size_t got = fread(sig, 1, 8, c->f);
    if (got != 8 && ferror(c->f)) { /* a directory opens, then fails to read (EISDIR) */
        set_err(err, err_cap, "%s: %s", path, errno ? strerror(errno) : "read error");
        goto done;
    }
    if (got != 8 || png_sig_cmp(sig, 0, 8) != 0) {
        set_err(err, err_cap, "%s: not a PNG file (no PNG signature)", path);
        goto done;
    }
    c->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, c, on_error, on_warning);
    if (c->png) c->info = png_create_info_struct(c->png);
    if (!c->png || !c->info) {
        set_err(err, err_cap, "%s: cannot initialise libpng", path);
        goto done;
    }
    png_uint_32 w = 0, h = 0;
    if (read_rgba(c, &w, &h, kind, kind_cap) != 0) {
        set_err(err, err_cap, "%s: %s", path, c->msg[0] ? c->msg : "cannot decode");
        goto done;
    }
    uint8_t *rgb = malloc((size_t)w * h * 3 + 1);
    if (!rgb) {
        set_err(err, err_cap, "%s: out of memory", path);
        goto done;
    }
    size_t n = (size_t)w * h;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = c->rgba + 4 * i;
        unsigned a = p[3];
        for (int k = 0; k < 3; k++)
            rgb[3 * i + (size_t)k] = (uint8_t)((p[k] * a + 255u * (255u - a) + 127u) / 255u);
    }
    out->width = (int)w;
    out->height = (int)h;
    out->channels = 3;
    out->pixels = rgb;
    rc = 0;
done:
    if (c->png) png_destroy_read_struct(&c->png, c->info ? &c->info : NULL, NULL);
    if (c->f) fclose(c->f);
    free(c->rgba);
    free(c->rows);
    free(c);
    return rc;
}

/* The part of png_write_8bit that may longjmp. */
static int write_rows(png_ctx *c, int width, int height, int channels) {
    if (setjmp(png_jmpbuf(c->png))) return -1;
    png_init_io(c->png, c->f);
    png_set_IHDR(c->png, c->info, (png_uint_32)width, (png_uint_32)height, 8,
                 channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(c->png, c->info);
    png_write_image(c->png, c->rows);
    png_write_end(c->png, NULL);
    return 0;
}

int png_write_8bit(const char *path, const uint8_t *pixels, int width, int height, int channels, char *err,
                   size_t err_cap) {
    if ((channels != 1 && channels != 3) || width <= 0 || height <= 0 || !pixels) {
        set_err(err, err_cap, "%s: cannot write a %dx%d image with %d channels", path, width, height, channels);
        return -1;
    }
    png_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        set_err(err, err_cap, "%s: out of memory", path);
        return -1;
    }
    int rc = -1;
    c->rows = malloc(sizeof(png_bytep) * (size_t)height);
    if (!c->rows) {
        set_err(err, err_cap, "%s: out of memory", path);
        goto done;
    }
    size_t stride = (size_t)width * (size_t)channels;
    for (int y = 0; y < height; y++) c->rows[y] = (png_bytep)(pixels + (size_t)y * stride);
    c->f = fopen(path, "wb");
    if (!c->f) {
        set_err(err, err_cap, "%s: %s", path, strerror(errno));
        goto done;
    }
    c->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, c, on_error, on_warning);
    if (c->png) c->info = png_create_info_struct(c->png);
    if (!c->png || !c->info) {
        set_err(err, err_cap, "%s: cannot initialise libpng", path);
        goto done;
    }
    if (write_rows(c, width, height, channels) != 0) {
        set_err(err, err_cap, "%s: %s", path, c->msg[0] ? c->msg : "cannot encode");
        goto done;
    }
    rc = 0;
done:
    if (c->png) png_destroy_write_struct(&c->png, c->info ? &c->info : NULL);
    if (c->f && fclose(c->f) != 0 && rc == 0) {
        set_err(err, err_cap, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    free(c->rows);
    free(c);
    return rc;
}
