/* When each WebGPU lowering declines (lower_notes.c): the notes of the
 * public op catalogue (rlx_op_catalog_get, `rlx ops`, docs/ops.md). */
#ifndef RLX_BACKEND_WEBGPU_LOWER_NOTES_H
#define RLX_BACKEND_WEBGPU_LOWER_NOTES_H

#include <stddef.h>

#include "rlx/rlx.h"

/* The note of op (domain, name): the conditions under which its lowering
 * runs a node; NULL for an op without a lowering. Static. */
const char *wg_note_of(const char *domain, const char *name);

/* The conditions every lowering has, *out_count of them. Static. */
const char *const *wg_general_notes(size_t *out_count);

/* Notes and lowering tables agree (each op with a lowering has exactly one
 * note, each note names ops with one); RLX_OK without WebGPU.
 * errors: RLX_ERR_INTERNAL listing every disagreement, one per line. */
rlx_status wg_notes_check(void);

#endif
