/* Escaping of text that comes from outside (model files: node, value and op
 * names, domains, doc strings; .npy headers) before it reaches a terminal,
 * a log or JSON. The public entry point is rlx_escape_text (rlx/inspect.h);
 * rlx_fail escapes every message it records with it. */
#ifndef RLX_BASE_ESCAPE_H
#define RLX_BASE_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* Writes `text` (NULL: "") into buf, at most cap bytes with the NUL, with
 * every byte a terminal could act on, or that is not UTF-8, escaped:
 *   \n \r \t                for newline, carriage return, tab;
 *   \xNN (two hex digits)   for the other C0 controls, DEL (0x7f), and each
 *                           byte of an invalid UTF-8 sequence (a stray
 *                           continuation byte, a truncated sequence, an
 *                           overlong form, a surrogate, above U+10FFFF);
 *   \u00NN                  for the C1 controls U+0080..U+009F (CSI, OSC).
 * Everything else (printable ASCII, backslash included, and valid UTF-8)
 * is copied unchanged. Output that does not fit is cut before the escape
 * or character that would not fit. keep_newlines: '\n' is copied as is
 * (multi-line reports). Returns the length written (without the NUL). buf
 * may not overlap text. */
size_t rlx_escape_into(const char *text, char *buf, size_t cap, bool keep_newlines);

#endif
