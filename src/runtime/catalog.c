/* The public operator catalogue (rlx/inspect.h): the op table (src/ir/op.h)
 * joined with the CPU kernel table, the WebGPU lowering table and the
 * lowerings' decline notes (src/backend/webgpu/lower_notes.c); and the
 * contrib ops that the importer expands (src/import/onnx_contrib.c). */
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/webgpu/lower_notes.h"
#include "base/status.h"
#include "import/onnx_contrib.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu.h"
#endif

_Static_assert(RLX_ONNX_OPSET_MIN == RLX_OPSET_MIN && RLX_ONNX_OPSET_MAX == RLX_OPSET_MAX,
               "the public opset range is the op table's");
_Static_assert(RLX_OP_MAX_VERSIONS == RLX_MAX_OP_VERSIONS, "rlx_op_info.versions holds every since-version");

size_t rlx_op_catalog_count(void) { return rlx_op_count(); }

/* The checks both catalogue queries make: out (size bytes, cleared) and
 * an index below the op count. */
static rlx_status catalog_args(size_t index, void *out, size_t size) {
    if (out) memset(out, 0, size);
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_info is NULL");
    if (index >= rlx_op_count())
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "op index %zu out of range (the catalogue has %zu)", index,
                        rlx_op_count());
    return RLX_OK;
}

rlx_status rlx_op_catalog_get(size_t index, rlx_op_info *out) {
    RLX_TRY(catalog_args(index, out, sizeof *out));
    const rlx_op_def *d = rlx_op_at(index);
    out->domain = d->domain ? d->domain : "";
    out->name = d->name;
    while (out->n_versions < RLX_MAX_OP_VERSIONS && d->versions[out->n_versions]) {
        out->versions[out->n_versions] = d->versions[out->n_versions];
        out->n_versions++;
    }
    out->internal = strcmp(out->domain, RLX_INTERNAL_DOMAIN) == 0;
    out->view = (d->flags & RLX_OP_VIEW) != 0;
    out->control_flow = (d->flags & RLX_OP_CONTROL_FLOW) != 0;
    out->data_dependent = (d->flags & RLX_OP_DATA_DEPENDENT) != 0;
    out->takes_strings = rlx_op_takes_strings(d);
    out->cpu = rlx_cpu_find_kernel(d->domain, d->name) != NULL;
#ifdef RLX_HAVE_WEBGPU
    out->webgpu = wg_find_lowering(d->domain, d->name) != NULL;
#endif
    out->webgpu_note = out->webgpu ? wg_note_of(d->domain, d->name) : NULL;
    return RLX_OK;
}

rlx_status rlx_op_catalog_attr(size_t index, size_t k, rlx_op_attr_info *out) {
    RLX_TRY(catalog_args(index, out, sizeof *out));
    const rlx_op_def *d = rlx_op_at(index);
    rlx_attr_type type = RLX_ATTR_UNDEFINED;
    if (!rlx_op_attr_at(d, k, &out->name, &type, &out->since, &out->until, &out->required)) {
        memset(out, 0, sizeof *out);
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "op %s has no attribute %zu", d->name, k);
    }
    out->type = rlx_attr_type_name(type);
    return RLX_OK;
}

const char *const *rlx_op_catalog_webgpu_conditions(size_t *out_count) {
    size_t n = 0;
    const char *const *c = wg_general_notes(&n);
    if (out_count) *out_count = n;
    return c;
}

size_t rlx_contrib_op_catalog_count(void) { return rlx_onnx_contrib_count(); }

rlx_status rlx_contrib_op_catalog_get(size_t index, rlx_contrib_op_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_info is NULL");
    if (index >= rlx_onnx_contrib_count())
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "contrib op index %zu out of range (the catalogue has %zu)", index,
                        rlx_onnx_contrib_count());
    rlx_onnx_contrib_row(index, &out->domain, &out->name, &out->since_version, &out->expansion);
    return RLX_OK;
}

rlx_status rlx_op_catalog_check(void) { return wg_notes_check(); }
