/* When each WebGPU lowering declines: the notes `rlx ops` and docs/ops.md
 * print beside each op (the public catalogue, rlx_op_catalog_get), kept
 * here beside the lowerings they describe. Written by hand, read off the
 * lowering functions (their wg_check_io / wg_value_ok / wg_decline calls),
 * except the standalone functions of the elementwise vocabulary, whose one
 * note comes from their rows (k_unary_note); wg_notes_check, run by `rlx
 * ops` and so by the ops_doc test, fails when they and the lowering tables
 * disagree. Built with and without WebGPU (the general conditions are
 * printed either way). */
#include <stdio.h>
#include <string.h>

#include "backend/webgpu/lower_notes.h"
#include "base/status.h"
#include "ir/ew.h"
#include "ir/op.h"
#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu.h"
#endif

/* When each lowering declines, beyond the conditions common to all
 * lowerings (k_gpu_general). `ops` lists op types separated by spaces
 * (domain "" unless prefixed "rlx."); every op with a lowering appears in
 * exactly one entry or has k_unary_note, and every op listed has a
 * lowering (wg_notes_check).
 * Keep each entry next to what its lower_<family>.c checks. */
typedef struct gpu_note {
    const char *ops;
    const char *text;
} gpu_note;

/* The standalone functions of the elementwise vocabulary (rows of KIND OP
 * with a WGSL expression, src/ir/ew_funcs.h): lower_unary in
 * lower_elementwise.c, one unary.wgsl dispatch in T = f32 or f16. Their
 * note comes from the rows, so they are not listed in k_gpu_notes. */
static const char k_unary_note[] = "f32 or f16 (f16 needs shader-f16; computed in f32, rounded once).";

static const gpu_note k_gpu_notes[] = {
    /* lower_elementwise.c (beside the vocabulary's functions, k_unary_note) */
    { "Clip",
      "f32 or f16 with constant bounds (attributes before Clip-11); f32, f16 or i32 with bounds that are scalars of the "
      "input's dtype (Clip-11 and later, also computed at run time)." },
    { "Add Sub Mul", "f32, f16 or i32, all operands of one dtype; at most 8 broadcast dims after merging." },
    { "Div PRelu", "f32 or f16, all operands of one dtype; at most 8 broadcast dims after merging." },
    { "Pow", "f32 or f16, all operands of one dtype; at most 8 broadcast dims after merging. A constant exponent "
             "of one element 2 (int or float: Pow(x, 2) of exported LayerNorms) is x * x (pass pow_exponent, "
             "every plan); another constant integer exponent becomes x's type when every element is exact in it "
             "(|e| <= 2^24 for f32, 2048 for f16; else, and for one fed at run time, the CPU runs it)." },
    { "Sum Max Min",
      "f32, f16 or i32, every input of the output's dtype. A lone one of two or more f32 or f16 inputs runs as one "
      "rlx.FusedElementwise (fuse_elementwise) on both devices. Beyond ONNX's types, integer Sum (ONNX's Sum "
      "takes floats only) and integer Max and Min before opset 12 (floats only there) are taken: the CPU computes "
      "them exactly, at every opset (a sum wraps around as Add's does; uint64 compares unsigned). bool is refused "
      "when the model loads." },
    { "Mean", "f32 or f16. A lone one of two or more inputs runs as one rlx.FusedElementwise (fuse_elementwise) on "
              "both devices. Integer and bool inputs are refused when the model loads (ONNX's Mean takes floats only; an "
              "integer sum would wrap before the division)." },
    /* lower_nn.c */
    { "Conv",
      "f32 or f16 (f16: computed in f32, accumulating in f32, the result rounded once; needs shader-f16). Direct, depthwise, 1x1, implicit-GEMM and im2col paths; operands larger than one binding are "
      "split (weights by output channels, im2col by images and groups); every path adds a fused residual "
      "(fuse_conv_residual) in its epilogue." },
    { "ConvTranspose", "f32 or f16 (f16: computed in f32, accumulating in f32, the result rounded once; needs shader-f16)." },
    { "MaxPool", "f32 or f16; not with the optional Indices output. NaN propagates on both devices: a window holding a NaN "
                 "gives NaN (its first NaN), as ReduceMax and PyTorch's max_pool2d (onnxruntime 1.22 gives NaN only where the "
                 "window's last tap is NaN)." },
    { "AveragePool", "f32 or f16." },
    { "GlobalAveragePool", "f32 or f16; rank >= 2 and non-empty spatial dims." },
    { "GlobalMaxPool", "f32 or f16; rank >= 2 and non-empty spatial dims. NaN propagates (a plane holding a NaN gives "
                       "its first NaN), as in MaxPool and ReduceMax." },
    { "BatchNormalization",
      "inference only (training_mode 0, the Y output only; spatial 1 before BatchNormalization-9); f32 or f16; "
      "scale, B, mean and var of C values each." },
    { "Gemm",
      "f32 or f16 (f16: computed in f32, accumulating in f32, the result rounded once; needs shader-f16); C of rank <= 2 that broadcasts to [M, N] (exactly [M, N] before Gemm-7 without broadcast); with beta 0 C is not read on either device (a NaN or inf in it does not propagate), as onnxruntime and PyTorch's addmm." },
    { "MatMul", "f32 or f16 (f16: computed in f32, accumulating in f32, the result rounded once; needs shader-f16); operands of rank >= 1; at most 4 batch dims after merging broadcast dims." },
    { "Resize",
      "rank <= 4; nearest: f32, i32, u32, f16, int8 or uint8; linear and cubic: f32 or f16 (f16 needs shader-f16); every coordinate_transformation_mode, "
      "nearest_mode, antialias (at most 4096 taps per element), exclude_outside; scales (f32 or f64), sizes and "
      "roi constant (8-bit: not tf_crop_and_resize). Source pixels and weights are the CPU's (the ONNX reference's f64 arithmetic), blended in f32." },
    { "GridSample",
      "X and grid f32, or both f16 (f16 needs shader-f16; computed in f32, rounded once); 1 to 3 spatial dims, every "
      "mode (cubic: 2-D), padding_mode and align_corners, in f32 (the CPU sums in f64). X and grid of two types, bf16 "
      "and f64 run on the CPU (a CPU plan computes f16 models in f32). Both devices give NaN for a NaN grid "
      "value, 0 / the edge / NaN for an infinite one (zeros / border / reflection); far coordinates reflect by their "
      "exact remainder on both." },
    /* lower_tensor.c */
    { "Identity Reshape Flatten Squeeze Unsqueeze",
      "the lowering (a copy) serves steps that are not views: data f32, f16, i32, u32, i64 or bool; rank <= 8." },
    { "Transpose Expand Tile DepthToSpace SpaceToDepth", "data f32, f16, i32, u32, i64 or bool; rank <= 8." },
    { "Slice", "data f32, f16, i32, u32, i64 or bool; rank <= 8; starts, ends, axes and steps constant." },
    { "Concat", "f32, f16, i32, u32 or i64 (not bool); rank 1 to 8." },
    { "Split", "data f32, f16, i32, u32, i64 or bool; rank 1 to 8; every output present." },
    { "Pad",
      "f32, f16, i32, u32 or i64 (not bool); rank <= 8; modes constant, edge, reflect, and wrap (Pad-19 and "
      "later); pads, constant_value and axes constant. Reflect and wrap pads may exceed the axis: they repeat "
      "(periods 2 (n - 1) and n, as numpy.pad and the ONNX reference; onnxruntime refuses them), on both devices." },
    /* lower_reduce.c */
    { "ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceSumSquare",
      "f32, f16 (accumulated in f32, rounded once) or i32; axes constant; at most 4 runs of kept and of reduced dims after merging." },
    { "ReduceMean ReduceL2 ReduceLogSum ReduceLogSumExp",
      "f32 or f16 (accumulated in f32); axes constant; at most 4 runs of kept and of reduced dims after merging. "
      "Over an empty set both devices give 0 for Mean (ONNX leaves it undefined; onnxruntime gives 0) and L2, "
      "-inf for LogSum and LogSumExp. L2 sums scaled squares (as BLAS nrm2), so values whose squares overflow or "
      "underflow f32 (3e20, 1e-25) give their norm, as the CPU's double sums." },
    { "ArgMax ArgMin", "f32, f16 or i32 data; a non-empty axis. NaN (ONNX is silent) as onnxruntime on both devices: "
                       "a row whose element 0 is NaN gives 0 (a row of NaN too), a NaN elsewhere never wins, so "
                       "the other rows give the index of their extreme non-NaN value (numpy's argmax, the first "
                       "NaN, differs)." },
    { "LayerNormalization",
      "f32 or f16 (statistics in f32); Scale and B of the input's type that broadcast only within the normalised "
      "dims; the Mean and InvStdDev outputs of the input's type." },
    { "RMSNormalization", "f32 only; scale f32 that broadcasts only within the normalised dims." },
    { "InstanceNormalization", "f32 only; rank >= 2; scale and B f32 of C values." },
    { "GroupNormalization",
      "f32 only; rank >= 2; num_groups divides C; scale and bias f32 per group (GroupNormalization-18) or "
      "per channel (-21)." },
    { "LpNormalization", "f32 only; p 1 or 2." },
    { "MeanVarianceNormalization Hardmax", "f32 only." },
    { "Softmax LogSoftmax", "f32 or f16 (statistics in f32; f16 needs shader-f16)." },
    { "LRN", "f32 only; rank >= 2." },
    /* lower_index.c */
    { "Gather",
      "data f32, f16, i32, u32, i64, bool, int8 or uint8 (the quantized embedding tables of quantize_dynamic models); indices i32 or i64; "
      "constant indices in range; run-time indices out of range fail the run as on the CPU (the node named)." },
    { "GatherElements", "data f32, f16, i32, u32 or i64 (not bool); indices i32 or i64; constant indices in range;"
                         " run-time indices out of range fail the run as on the CPU (the node named)." },
    { "GatherND",
      "data f32, f16, i32, u32, i64, or bool when slices are multiples of 4 elements; indices i32 or i64, their "
      "last dim <= 8; constant indices in range; run-time indices out of range fail the run as on the CPU (the node "
      "named)." },
    { "ScatterND",
      "data f32, i32, u32, i64, or bool when slices are multiples of 4 elements; reductions (add, mul, max, min) "
      "on f32 and i32 only; indices i32 or i64, their last dim <= 8; constant indices in range;"
      " run-time indices out of range fail the run as on the CPU (the node named)." },
    { "ScatterElements",
      "data f32, i32, u32 or i64 (not bool); reductions (add, mul, max, min) on f32 and i32 only; indices i32 or "
      "i64; rank <= 8; constant indices in range; run-time indices out of range fail the run as on the CPU (the node named)." },
    { "OneHot", "depth a positive constant; indices f32, i32 or i64; values f32, i32, u32 or i64." },
    { "Trilu", "data f32, i32, u32, i64 or bool; rank >= 2; k constant or an i32/i64 scalar." },
    { "EyeLike", "rank 2; output f32, i32, u32, i64 or bool." },
    { "CumSum", "f32, f16 (summed in f32), i32 or u32; axis constant." },
    { "ConstantOfShape", "output f32, i32, u32, i64 or bool (when not folded away: a static output shape)." },
    { "Dropout",
      "inference only: training_mode absent or constant false, or a constant ratio of 0; data f32, i32, u32, "
      "i64 or bool." },
    /* lower_logic.c */
    { "Cast CastLike", "between f32, f16, i32, u32, i64 and bool only (f16 as packed halves: no shader-f16 needed). Float "
                       "to integer truncates toward zero; out of the target's range (undefined in ONNX) it saturates to "
                       "the range, +-inf too, and NaN gives 0, on both devices (onnxruntime on x86 gives INT_MIN for all "
                       "of these); integer to integer keeps the low bits." },
    { "QuantizeLinear DequantizeLinear",
      "between f32 and int8 or uint8 (bytes four to a word), per tensor or per axis, with f32 scales and zero points "
      "of the integer type (or none); not blocked (block_size), not f16 scales or another precision (those, and "
      "int16 / int32 x, run on the CPU; an int32 x with a nonzero zero point is refused: ONNX gives it none). "
      "Both devices "
      "quantize NaN to the type's minimum whatever the zero point (the ONNX reference, onnxruntime) and saturate "
      "+-inf; DynamicQuantizeLinear leaves NaN elements out of its min/max (scale NaN when all are NaN). A "
      "QuantizeLinear -> DequantizeLinear pair on an activation becomes rlx.QuantizeDequantize (fuse_qdq); a "
      "DequantizeLinear of a constant folds; x may be a constant int4 or uint4 (loaded a byte a value, read by "
      "DequantizeLinear only), and such a weight blocked along K (block_size 16 to 4096; [K, N] for a MatMul or a Gemm "
      "with transB 0, [N, K] for transB 1) with f32 or f16 scales that only MatMuls and Gemms (transA 0, alpha 1, beta 1) "
      "of A of the scales' type read becomes one rlx.MatMulNBits each on the weight repacked to 4 bits once (a Gemm's "
      "C: an Add after; an f16 weight that would overflow to inf declines; fuse_nbits). fuse_qdq also writes DynamicQuantizeLinear as ReduceMin/ReduceMax/"
      "QuantizeLinear and MatMulInteger (constant 2-D B, per-tensor A zero point, sums exact in f32: K * 255 * "
      "max|B - zp| <= 2^24) as DequantizeLinear -> MatMul -> Cast, so those run on the GPU too (a CPU-only plan "
      "keeps DynamicQuantizeLinear and MatMulInteger for the CPU's exact int8 GEMM). Every plan makes "
      "DequantizeLinear -> Conv [-> a Relu or Clip that the Q makes a no-op] -> QuantizeLinear a QLinearConv, and "
      "DequantizeLinear -> MatMul [-> Relu or Clip] -> QuantizeLinear a QLinearMatMul (fuse_qdq_conv), whose "
      "integer kernels give both devices the same bits, and a DequantizeLinear -> Gemm (constant 2-D weights, "
      "any transA/transB, an int32 bias at x_scale * w_scale with alpha and beta 1) -> QuantizeLinear the integer "
      "form of onnxruntime's QGemm (MatMulInteger, Add of the bias, Cast, Mul by alpha * x_scale * w_scale / "
      "y_scale, QuantizeLinear(., 1, y_zp): onnxruntime's bits on both devices), where x, the weights and y are 8-bit (int8 or uint8), x "
      "and y per tensor, the weights a constant (per tensor or per output channel) of a 1-D or 2-D Conv or the "
      "right-hand 2-D [K, N] operand of the MatMul, a Conv bias absent or a constant int32 at x_scale * w_scale, "
      "and every scale (x's, each of W's, y's, the bias's) finite and positive. The rest (a 3-D Conv, a MatMul "
      "with the constant on the left or 3-D weights, 16-bit QDQ, unusable scales) stays DequantizeLinear -> f32 "
      "op -> QuantizeLinear, where the devices' f32 sums can put an output one quantum apart. QLinearMatMul, "
      "ConvInteger and QLinearConv are never rewritten: both devices run them exactly (a GPU plan runs the ones "
      "the GPU declines, 3-D or with scales that are not constants, on the CPU). QLinearMatMul and QLinearConv "
      "scales: y_scale finite and nonzero, the operands' (a / x, b / w) finite, where 0 gives the zero point as in "
      "onnxruntime (a constant's at load, a run-time input's at run; 0 or NaN in y_scale and NaN in the others have "
      "no integer result: onnxruntime returns arbitrary levels)." },
    /* lower_qgemm.c */
    { "MatMulInteger QLinearMatMul",
      "the integer GEMM (qgemm: i32 sums, bit-exact with the CPU's integer kernel; WGSL dot4I8Packed where it passes "
      "its self-test, gpu.dot4; by shape, gpu.qgemm_tile: k split across a workgroup for m <= 4, the generated "
      "tiled GEMM's int8 instance (tiles as the f32 GEMM's) for m >= 16 (64 x 64 workgroup tiles from 2^24 "
      "outputs), tiles through workgroup memory for 8 <= m < 16 (16 rows, 32 to 128 columns by the grid's size), else 4 x 4 blocks per invocation; an 8-bit y with n % "
      "4 != 0 keeps the blocks): int8 or uint8 operands of rank >= 1, at most 4 batch dims; zero points of the "
      "operand's type, one or per row of a / column of b (no batch dims). QLinearMatMul: f32 constant scales (one, "
      "per row, per column), a constant y zero point, an int8/uint8 y, a_scale * b_scale / y_scale finite and "
      ">= 0 in f32 (requantized as the CPU and onnxruntime do: f32 multiplier and product, ties to even). A "
      "constant b is packed on the host (a copy of it in the step's table). Where fuse_qdq rewrites a MatMulInteger first (exact f32 sums, see "
      "QuantizeLinear) the f32 form runs instead. A QLinearMatMul applies an 8-bit QDQ chain that alone reads its "
      "result as QLinearConv does (see there)." },
    { "ConvInteger QLinearConv",
      "the integer convolution (one dispatch: the integer GEMM per image and group, its B loads gathering x's taps "
      "four bytes a word (an implicit im2col, no column buffer; a padding tap holds x's zero point), the "
      "requantization in the same kernel; 1x1 stride-1 unpadded: the GEMM on x itself; one input channel per group: "
      "a direct kernel, qdwconv, four outputs of a row per invocation, a kernel row per dot4I8Packed where the "
      "device has it; bit-exact with the CPU's integer kernel): "
      "1-D or 2-D (3-D runs on the CPU), any groups (depthwise too), strides, dilations, pads and auto_pad; x and w int8 or uint8, x's zero point one element, "
      "w's one or per output channel, of the operand's type. QLinearConv: f32 constant scales (x_scale, y_scale "
      "one element, w_scale one or per output channel), a constant y zero point, an int8/uint8 y, B absent or a "
      "constant int32 per output channel, x_scale * w_scale / y_scale finite and >= 0 in f32 (requantized as the "
      "CPU and onnxruntime do: f32 multiplier and product, ties to even). On GPU plans a QLinearConv or "
      "QLinearMatMul whose 8-bit result only an 8-bit QDQ chain reads (a residual Add, a bias Add) applies the "
      "chain where it stores (fuse_qlinear_ew: the chain's bits; at most 2 other chain inputs, f32 or 8-bit, each "
      "within one storage binding)." },
    { "Equal", "inputs f32, f16, i32, u32, i64 or bool, of one dtype." },
    { "Less Greater LessOrEqual GreaterOrEqual", "inputs f32, f16, i32, u32 or i64 (not bool), of one dtype." },
    { "And Or Xor Not", "bool." },
    { "IsNaN IsInf", "f32 or f16 input." },
    { "Where", "bool condition; data f32, f16, i32, u32, i64 or bool, of one dtype." },
    /* lower_internal.c */
    { "rlx.FusedElementwise",
      "f32 and f16 operands (computed in f32; only Casts to f16 round inside the chain), or bool inputs (read as "
      "0 or 1: a Where condition), or the 8-bit inputs and output of a QDQ chain (passes/fuse_qdq_ew.c: "
      "dequantized and quantized as DequantizeLinear and QuantizeLinear; every operand within one storage "
      "binding); no bf16; at most 7 tensor inputs (one dispatch binds them and the output)." },
    { "rlx.AddLayerNormalization", "f32 or f16 (statistics in f32), all operands of one dtype." },
    { "rlx.Attention", "f32 or f16 (computed in f32; f16 with scalar loads); head dims (D, Dv) <= 256; a finite, non-zero scale." },
    { "rlx.MatMulNBits", "A and Y f32 or f16 (f32 arithmetic), uint8 B and zero points, f32 scales (as the contrib import gives them; fuse_nbits converts f16 ones); a GEMV for few rows (where K and block_size are multiples of 32: matmul_nbits_gemv.wgsl, 16 columns x 4 rows a workgroup, each lane's 16 pieces of 16 bytes of B loaded at once, A staged in workgroup memory per 1024 k; else 8 columns x 4 rows, word by word), or from 32 rows of A the weights dequantized into the scratch (f32) and the tiled GEMM (option gpu.nbits)." },
};

/* What every lowering requires (webgpu_lower.c, wg_lower_node and
 * check_windows, and the element layouts of README.md). */
static const char *const k_gpu_general[] = {
    "Shapes are static (known when the plan is compiled for the given input shapes).",
    "The tensors its kernels read and write have dtypes the GPU holds: f32, i32, u32, f16 (halves; the "
    "lowerings that list it, on adapters with shader-f16 except Cast and the comparisons), bool (one byte per "
    "element), i64 (word pairs) or int8/uint8 (bytes: QuantizeLinear, DequantizeLinear, MatMulInteger, "
    "QLinearMatMul, ConvInteger, QLinearConv and Gather only); so nodes on "
    "bf16, f64 and other data run on the CPU.",
    "Every operand fits the device's limits: one binding (maxStorageBufferBindingSize, or RLX_MAX_BINDING_BYTES) "
    "and one buffer (maxBufferSize, or RLX_MAX_BUFFER_BYTES). The elementwise, copy, GEMM and convolution "
    "lowerings split larger operands into blocks; the others decline.",
    "Index arithmetic stays within 32 bits (most kernels: fewer than 2^31 elements).",
    "Its op type is not listed in RLX_GPU_DISABLE.",
    "A fused activation (set by the fuse_activation pass) goes with an f32 output.",
};

/* Whether the space-separated list names op (a qualified name). */
static bool list_has(const char *list, const char *op) {
    size_t n = strlen(op);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, op, n) == 0) return true;
        p += len;
    }
    return false;
}

/* "rlx.Name" for ops of a domain, the bare name otherwise. */
static void qualified(const char *domain, const char *name, char *buf, size_t cap) {
    if (domain && *domain) snprintf(buf, cap, "%s.%s", domain, name);
    else snprintf(buf, cap, "%s", name);
}

/* k_unary_note when d is a function of the vocabulary with a WGSL
 * expression, else NULL. */
static const char *unary_note(const rlx_op_def *d) {
    const rlx_ew_info *r = d ? rlx_ew_info_of(rlx_ew_of_op(d->id)) : NULL;
    return r && r->wgsl ? k_unary_note : NULL;
}

const char *wg_note_of(const char *domain, const char *name) {
    char q[160];
    qualified(domain, name, q, sizeof q);
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_gpu_notes); i++)
        if (list_has(k_gpu_notes[i].ops, q)) return k_gpu_notes[i].text;
    return unary_note(rlx_op_find(domain, name));
}

const char *const *wg_general_notes(size_t *out_count) {
    *out_count = RLX_ARRAY_LEN(k_gpu_general);
    return k_gpu_general;
}

#ifdef RLX_HAVE_WEBGPU
/* Appends one finding to the check's message ('; ' between them). */
static void add_line(char *msg, size_t cap, size_t *at, const char *line) {
    if (*at < cap) *at += (size_t)snprintf(msg + *at, cap - *at, "%s%s", *at ? "; " : "", line);
}
#endif

rlx_status wg_notes_check(void) {
#ifdef RLX_HAVE_WEBGPU
    char msg[4096], line[320];
    size_t at = 0;
    msg[0] = '\0';
    for (size_t i = 0; i < rlx_op_count(); i++) {
        const rlx_op_def *d = rlx_op_at(i);
        char q[160];
        qualified(d->domain, d->name, q, sizeof q);
        bool gpu = wg_find_lowering(d->domain, d->name) != NULL;
        size_t hits = unary_note(d) != NULL;
        for (size_t k = 0; k < RLX_ARRAY_LEN(k_gpu_notes); k++) hits += list_has(k_gpu_notes[k].ops, q);
        line[0] = '\0';
        if (gpu && hits == 0)
            snprintf(line, sizeof line, "op %s has a WebGPU lowering but src/backend/webgpu/lower_notes.c "
                     "(k_gpu_notes) does not say when it declines", q);
        else if (hits > 1)
            snprintf(line, sizeof line, "op %s is listed in %zu entries of k_gpu_notes (src/backend/webgpu/lower_notes.c)%s",
                     q, hits, unary_note(d) ? ", one of them its vocabulary row's (k_unary_note)" : "");
        else if (!gpu && hits)
            snprintf(line, sizeof line, "k_gpu_notes (src/backend/webgpu/lower_notes.c) describes op %s, which has no "
                     "WebGPU lowering", q);
        if (line[0]) add_line(msg, sizeof msg, &at, line);
    }
    /* names in the notes that are no op at all */
    for (size_t k = 0; k < RLX_ARRAY_LEN(k_gpu_notes); k++) {
        for (const char *p = k_gpu_notes[k].ops; *p;) {
            while (*p == ' ') p++;
            size_t len = strcspn(p, " ");
            if (!len) break;
            bool found = false;
            for (size_t i = 0; i < rlx_op_count() && !found; i++) {
                char q[160];
                qualified(rlx_op_at(i)->domain, rlx_op_at(i)->name, q, sizeof q);
                found = strlen(q) == len && strncmp(q, p, len) == 0;
            }
            if (!found) {
                snprintf(line, sizeof line, "k_gpu_notes (src/backend/webgpu/lower_notes.c) names '%.*s', which is "
                         "not in the op table", (int)len, p);
                add_line(msg, sizeof msg, &at, line);
            }
            p += len;
        }
    }
    if (at) return rlx_fail(RLX_ERR_INTERNAL, "%s", msg);
#endif
    return RLX_OK;
}
