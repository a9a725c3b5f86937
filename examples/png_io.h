/* PNG reading and writing for the examples, over libpng 1.6.
 *
 * Independent of rlx: functions return 0 on success and -1 on failure, with
 * a message (naming the file) in the caller's err buffer. Nothing here
 * aborts on a bad file: libpng's errors come back through setjmp/longjmp
 * inside this file and become that message. */
#ifndef RLX_EXAMPLES_PNG_IO_H
#define RLX_EXAMPLES_PNG_IO_H

#include <stddef.h>
#include <stdint.h>

/* An 8-bit image: rows top to bottom, `channels` interleaved samples per
 * pixel (1 = gray, 3 = RGB in that order), no padding between rows. */
typedef struct demo_image {
    int width, height, channels;
    uint8_t *pixels; /* width * height * channels bytes, malloc'ed */
} demo_image;

/* Largest image png_read_rgb8 accepts, in pixels (256 Mi: 1 GiB as RGBA). */
#define PNG_IO_MAX_PIXELS ((size_t)1 << 28)

/* Reads a PNG file of any colour type and bit depth as 8-bit RGB:
 *  - gray (1, 2, 4, 8, 16 bit) is replicated into R = G = B;
 *  - palette images are expanded through their palette (and tRNS);
 *  - 16-bit samples are scaled to 8 bits with rounding (v * 255 / 65535);
 *  - alpha (gray+alpha, RGBA, tRNS) is composited over white:
 *    out = (c * a + 255 * (255 - a) + 127) / 255, since a transparent
 *    background of a scanned page means paper;
 *  - interlaced (Adam7) files are de-interlaced;
 *  - no gamma or colour-profile conversion is applied (samples as stored).
 * out->channels is 3. `kind`, when not NULL, receives a description of the
 * file's format, e.g. "gray 8-bit" or "RGBA 16-bit, interlaced".
 * errors: file missing or unreadable, not a PNG, corrupt or truncated data,
 *         more than PNG_IO_MAX_PIXELS pixels, out of memory. */
int png_read_rgb8(const char *path, demo_image *out, char *kind, size_t kind_cap, char *err, size_t err_cap);

/* Writes an 8-bit gray (channels 1) or RGB (channels 3) PNG, no alpha, not
 * interlaced. pixels: width * height * channels bytes, rows top to bottom.
 * errors: bad arguments (channels not 1 or 3, width/height not in
 *         1..2^31-1), the file cannot be created or written. */
int png_write_8bit(const char *path, const uint8_t *pixels, int width, int height, int channels, char *err,
                   size_t err_cap);

/* Frees the pixels and clears the struct. NULL is allowed. */
void demo_image_free(demo_image *img);

#endif
