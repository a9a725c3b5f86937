/* Escaping of outside text for terminals, logs and JSON (see escape.h). */
#include "base/escape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rlx/inspect.h"

/* Length of the valid UTF-8 sequence at p (2 to 4), or 0 when the bytes
 * there do not form one (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). p[0] >= 0x80. */
static size_t utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

size_t rlx_escape_into(const char *text, char *buf, size_t cap, bool keep_newlines) {
    if (!cap) return 0;
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    size_t at = 0;
    while (*p) {
        char esc[8];
        const char *piece = esc;
        size_t len, adv = 1;
        unsigned c = *p;
        if (c == '\n' && keep_newlines) {
            piece = (const char *)p, len = 1;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            esc[0] = '\\', esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't', len = 2;
        } else if (c < 0x20 || c == 0x7f) {
            len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
        } else if (c < 0x80) {
            piece = (const char *)p, len = 1;
        } else if (!(adv = utf8_len(p))) {
            len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c), adv = 1;
        } else if (c == 0xc2 && p[1] < 0xa0) {
            len = (size_t)snprintf(esc, sizeof esc, "\\u%04x", (unsigned)p[1]); /* C1 control */
        } else {
            piece = (const char *)p, len = adv;
        }
        if (at + len >= cap) break;
        memcpy(buf + at, piece, len);
        at += len;
        p += adv;
    }
    buf[at] = '\0';
    return at;
}

const char *rlx_escape_text(const char *text, char *buf, size_t cap) {
    if (buf) rlx_escape_into(text, buf, cap, false);
    return buf;
}
