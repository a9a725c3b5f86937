"""onnxruntime-style calls over rlx: InferenceSession, SessionOptions,
NodeArg, ModelMetadata, get_available_providers.

Code written against onnxruntime.InferenceSession runs unchanged for the
common calls:

    sess = rlx.InferenceSession("model.onnx", providers=["WebGpuExecutionProvider", "CPUExecutionProvider"])
    x = sess.get_inputs()[0]                  # .name, .shape ([1, 3, "height", "width"]), .type ("tensor(float)")
    (y,) = sess.run(None, {x.name: array})    # None: every output, in graph order

Providers (execution devices), in order of preference, as names or
(name, options) pairs; the first that can be opened is used:
  "CPUExecutionProvider"     rlx's CPU backend
  "WebGpuExecutionProvider"  rlx's WebGPU backend (ops it lacks run on the
                             CPU inside the same plan); option device_id=N
                             picks adapter N (as device "gpu:N")
Options of either whose key contains a dot are rlx session options
("gpu.f16": "1"). Any other provider name raises ValueError listing these.
A GPU provider without an adapter (RLX_ERR_NO_ADAPTER) gives way to the
next one in the list; when it is the last, the error is raised.

Semantics differ from onnxruntime where rlx has no such thing: IOBinding,
OrtValue, profiling and saving the optimised model are not offered
(enable_profiling or optimized_model_filepath raise rlx.Error
RLX_ERR_UNSUPPORTED when the session is created). run_options takes an
rlx.RunOptions (or a dict of its attributes): its terminate stops the runs
given it, as onnxruntime's does (see RunOptions).
"""
from __future__ import annotations

import ctypes
import mmap
import numbers
import os
import threading
from collections.abc import Mapping
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import _TYPE_NAMES, Error, Model, Session, _check, _load, _model_arg_error, _name, _option_table, adapters

CPU = "CPUExecutionProvider"
WEBGPU = "WebGpuExecutionProvider"
MAX_CPU_THREADS = 256  # the CPU worker pool's maximum (option cpu.threads)
MAX_THREADS_OPTION = 1 << 20  # the largest value the option cpu.threads takes

# numpy types for feeds given as Python lists or numbers (run)
_NP_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
             8: np.object_, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}

# The passes option passes.disable can name (src/base/options.c,
# k_optional_passes); tests/python/test_ort_compat.py checks this list against
# the option's own description.
OPTIONAL_PASSES = ("cse", "fuse_nbits", "fuse_qdq", "fuse_qdq_conv", "fold_conv_affine", "fuse_activation", "fuse_conv_residual",
                   "fuse_attention", "fuse_add_layernorm", "fuse_layernorm", "fuse_elementwise", "fuse_qdq_ew",
                   "fuse_qlinear_ew")
_FUSIONS = tuple(p for p in OPTIONAL_PASSES if p.startswith("fuse_"))

# onnxruntime's session config keys (SessionOptions.add_session_config_entry)
# that rlx takes besides its own options. Those with an rlx equivalent, by
# value: the rlx options the value amounts to.
ORT_CONFIG_MAPPED = {
    # "1": no packed copy of the constant GEMM operands
    "session.disable_prepacking": {"0": {"cpu.prepack": "1"}, "1": {"cpu.prepack": "0"}},
    # "0": idle worker threads sleep at once; "1" (onnxruntime's default):
    # rlx's default spin. rlx's pool is per process: the first session
    # fixes its spin, and a later one asking for another is refused
    "session.intra_op.allow_spinning": {"0": {"cpu.pool_spin_us": "0"}, "1": {}},
}
# Keys that only tune onnxruntime's own threads and allocators (speed and
# memory, never results) and have nothing to tune in rlx: taken, with any
# value, and ignored.
ORT_CONFIG_IGNORED = ("session.inter_op.allow_spinning", "session.force_spinning_stop", "session.dynamic_block_base",
                      "session.intra_op_thread_affinities", "session.use_env_allocators",
                      "session.use_device_allocator_for_initializers")


def _ort_config_keys() -> str:
    """The onnxruntime config keys rlx takes, for messages."""
    mapped = ", ".join(f"{k} ({'/'.join(v)})" for k, v in ORT_CONFIG_MAPPED.items())
    return f"mapped: {mapped}; taken without effect: {', '.join(ORT_CONFIG_IGNORED)}"


class GraphOptimizationLevel:
    """onnxruntime's levels, mapped onto rlx's optional passes: DISABLE_ALL
    turns every optional pass off, BASIC turns the fusions off, EXTENDED and
    ALL leave everything on. Constant folding and dead-code removal always
    run (rlx needs them)."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


_LEVELS = (GraphOptimizationLevel.ORT_DISABLE_ALL, GraphOptimizationLevel.ORT_ENABLE_BASIC,
           GraphOptimizationLevel.ORT_ENABLE_EXTENDED, GraphOptimizationLevel.ORT_ENABLE_ALL)


class SessionOptions:
    """onnxruntime-style session options. What rlx maps:
      graph_optimization_level  -> passes.disable (see GraphOptimizationLevel; another
                                   value raises TypeError when set, as onnxruntime)
      intra_op_num_threads > 0  -> cpu.threads (per session: sessions share one
                                   worker pool, each run uses at most its
                                   own count); an int (TypeError for a float,
                                   str or bool, as onnxruntime refuses floats
                                   and str); counts above the pool's maximum
                                   (256) run on 256 threads, as onnxruntime
                                   accepts any count; outside 0 to 2^20
                                   (cpu.threads' range) a ValueError
      add_session_config_entry(key, value) -> the rlx option key (e.g.
                                   "gpu.f16", "1"), or one of onnxruntime's keys
                                   in ORT_CONFIG_MAPPED (session.disable_prepacking
                                   -> cpu.prepack, session.intra_op.allow_spinning
                                   "0" -> cpu.pool_spin_us 0, per process) or
                                   ORT_CONFIG_IGNORED (thread and allocator tuning:
                                   taken, no effect); an rlx key given too wins.
                                   Keys and values are checked when the session
                                   is created: another key is an rlx.Error that
                                   lists these
    Accepted without effect (they change no result): inter_op_num_threads,
    execution_mode, execution_order, log_severity_level, log_verbosity_level,
    logid, enable_mem_pattern, enable_mem_reuse, enable_cpu_mem_arena,
    profile_file_prefix, use_deterministic_compute (rlx is deterministic).
    Refused when set (rlx.Error RLX_ERR_UNSUPPORTED at session creation):
    enable_profiling, optimized_model_filepath. Any other attribute raises
    AttributeError, as on onnxruntime's SessionOptions (a misspelt
    intra_op_num_thread was kept and changed nothing)."""

    __slots__ = ("_graph_optimization_level", "_intra_op_num_threads", "inter_op_num_threads", "execution_mode",
                 "execution_order", "log_severity_level", "log_verbosity_level", "logid", "enable_mem_pattern",
                 "enable_mem_reuse", "enable_cpu_mem_arena", "profile_file_prefix", "use_deterministic_compute",
                 "enable_profiling", "optimized_model_filepath", "_config")

    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self._intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = 0
        self.execution_order = 0
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_cpu_mem_arena = True
        self.profile_file_prefix = "onnxruntime_profile_"
        self.use_deterministic_compute = False
        self.enable_profiling = False
        self.optimized_model_filepath = ""
        self._config: Dict[str, str] = {}

    @property
    def graph_optimization_level(self):
        return self._graph_optimization_level

    @graph_optimization_level.setter
    def graph_optimization_level(self, value) -> None:
        # one of the four levels, as an int or an enum member of
        # onnxruntime's (its .value); anything else raises TypeError, as
        # onnxruntime's setter does ("fast" or 12345 ran with every pass on)
        level = getattr(value, "value", value)
        if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Integral) or level not in _LEVELS:
            raise TypeError(f"SessionOptions.graph_optimization_level: expected a GraphOptimizationLevel "
                            f"(ORT_DISABLE_ALL 0, ORT_ENABLE_BASIC 1, ORT_ENABLE_EXTENDED 2, ORT_ENABLE_ALL 99), got "
                            f"{type(value).__name__} {value!r}")
        self._graph_optimization_level = value

    @property
    def intra_op_num_threads(self) -> int:
        return self._intra_op_num_threads

    @intra_op_num_threads.setter
    def intra_op_num_threads(self, value) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"SessionOptions.intra_op_num_threads must be an int, got {type(value).__name__} {value!r}")
        if not 0 <= value <= MAX_THREADS_OPTION:
            raise ValueError(f"SessionOptions.intra_op_num_threads = {value}: expected 0 to {MAX_THREADS_OPTION} "
                             "(the range of the option cpu.threads; 0: one per core)")
        self._intra_op_num_threads = int(value)

    def add_session_config_entry(self, key: str, value: str) -> None:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("add_session_config_entry takes a str key and a str value")
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        return self._config[key]

    def rlx_options(self) -> Dict[str, object]:
        """The rlx session options these settings amount to."""
        if self.enable_profiling:
            raise Error("RLX_ERR_UNSUPPORTED", "SessionOptions.enable_profiling: rlx has no onnxruntime-style "
                        "profile (the command line's rlx bench --profile times each step)")
        if self.optimized_model_filepath:
            raise Error("RLX_ERR_UNSUPPORTED", "SessionOptions.optimized_model_filepath: rlx does not save its "
                        "optimised graph as ONNX")
        opts: Dict[str, object] = {}
        level = self.graph_optimization_level
        level = getattr(level, "value", level)  # an enum member of onnxruntime's, or an int
        if level == GraphOptimizationLevel.ORT_DISABLE_ALL:
            opts["passes.disable"] = ",".join(OPTIONAL_PASSES)
        elif level == GraphOptimizationLevel.ORT_ENABLE_BASIC:
            opts["passes.disable"] = ",".join(_FUSIONS)
        if self.intra_op_num_threads:
            opts["cpu.threads"] = min(self.intra_op_num_threads, MAX_CPU_THREADS)
        mapped: Dict[str, object] = {}
        direct: Dict[str, object] = {}
        for key, value in self._config.items():
            if key in ORT_CONFIG_MAPPED:
                table = ORT_CONFIG_MAPPED[key]
                if value not in table:
                    raise Error("RLX_ERR_INVALID_ARGUMENT", f"session config entry {key}={value!r}: expected "
                                f"{' or '.join(repr(v) for v in table)}")
                mapped.update(table[value])
            elif key in ORT_CONFIG_IGNORED:
                continue
            elif key in _option_table():
                direct[key] = value
            else:
                raise Error("RLX_ERR_INVALID_ARGUMENT", f"session config entry {key!r}: unknown rlx option "
                            f"(`rlx options` lists them) and not one of the onnxruntime config keys rlx takes "
                            f"({_ort_config_keys()})")
        opts.update(mapped)
        opts.update(direct)
        return opts

    def _ort_key_of(self, rlx_key: str) -> Optional[str]:
        """The onnxruntime config entry that set rlx option rlx_key, if one did."""
        if rlx_key in self._config:
            return None
        for key, value in self._config.items():
            if rlx_key in ORT_CONFIG_MAPPED.get(key, {}).get(value, {}):
                return key
        return None


class NodeArg:
    """A graph input or output as onnxruntime describes it: .name, .shape (a
    list of ints for static dims, the symbol's name (str) for a named
    symbolic dim, None for an unnamed one; None for an unknown rank) and
    .type ("tensor(float)", "tensor(int64)", ...)."""

    def __init__(self, name: str, shape, type: str):  # noqa: A002 (onnxruntime's attribute name)
        self.name, self.shape, self.type = name, shape, type

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """The ModelProto's descriptive fields, as onnxruntime's ModelMetadata:
    producer_name, graph_name, domain, description (the model's doc_string),
    graph_description (the graph's doc_string), version (model_version) and
    custom_metadata_map (metadata_props)."""

    def __init__(self, producer_name="", graph_name="", domain="", description="", graph_description="",
                 version=0, custom_metadata_map=None):
        self.producer_name, self.graph_name, self.domain = producer_name, graph_name, domain
        self.description, self.graph_description, self.version = description, graph_description, version
        self.custom_metadata_map = dict(custom_metadata_map or {})


def _varint(buf, i: int):
    value, shift = 0, 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of a protobuf message: an int for
    varints, a memoryview slice otherwise (nothing is copied)."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = buf[i:i + size], i + size
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        else:
            raise ValueError(f"protobuf wire type {wire} (field {field}) is not valid in an ONNX model")
        if i > n:
            raise ValueError(f"field {field} runs past the end of the message")
        yield field, wire, value


def _text(v) -> str:
    return bytes(v).decode("utf-8", errors="replace")


def _declared_shape(value_info):
    """The dims a graph input/output's ValueInfoProto declares (1 name, 2
    TypeProto: 1 tensor_type: 2 shape: 1 dim: 1 dim_value | 2 dim_param):
    (name, [int | str | None, ...]), the list None when no shape is given."""
    name, dims = "", None
    for f, w, v in _fields(value_info):
        if w == 2 and f == 1:
            name = _name(bytes(v))  # as rlx.Model names values: non-UTF-8 bytes as surrogate escapes
        elif w == 2 and f == 2:
            for tf, tw, tv in _fields(v):
                if tf != 1 or tw != 2:
                    continue  # not a tensor type
                for ef, ew, ev in _fields(tv):
                    if ef == 2 and ew == 2:
                        dims = []
                        for df, dw, dv in _fields(ev):
                            if df == 1 and dw == 2:
                                dim = None
                                for xf, xw, xv in _fields(dv):
                                    if xf == 1 and xw == 0:
                                        # an int64: a negative one (read as 2^64 - k) is no size
                                        # (rlx takes it as dynamic), as an empty dim_param is no
                                        # name: None, as onnxruntime shows both
                                        dim = xv if xv < 1 << 63 else None
                                    elif xf == 2 and xw == 2:
                                        dim = _name(bytes(xv)) or None
                                dims.append(dim)
    return name, dims


def _read_model(buf):
    """(ModelMetadata, {graph input/output name: declared dims}) of a
    serialized ModelProto (ONNX field numbers: 2 producer_name, 4 domain, 5
    model_version, 6 doc_string, 7 graph (2 name, 10 doc_string, 11 input, 12
    output), 14 metadata_props (1 key, 2 value)). Only the top level, the
    graph's own fields and its inputs and outputs are walked; nodes and
    tensors are skipped by length. Raises ValueError on a malformed message."""
    m = ModelMetadata()
    m.version = (1 << 63) - 1  # onnxruntime's value when the model sets none
    declared = {}
    for field, wire, v in _fields(buf):
        if wire == 2 and field == 2:
            m.producer_name = _text(v)
        elif wire == 2 and field == 4:
            m.domain = _text(v)
        elif wire == 0 and field == 5:
            m.version = v - (1 << 64) if v >= 1 << 63 else v
        elif wire == 2 and field == 6:
            m.description = _text(v)
        elif wire == 2 and field == 7:
            for gf, gw, gv in _fields(v):
                if gw == 2 and gf == 2:
                    m.graph_name = _text(gv)
                elif gw == 2 and gf == 10:
                    m.graph_description = _text(gv)
                elif gw == 2 and gf in (11, 12):
                    name, dims = _declared_shape(gv)
                    declared[name] = dims
        elif wire == 2 and field == 14:
            entry = {f: _text(x) for f, w, x in _fields(v) if w == 2}
            m.custom_metadata_map[entry.get(1, "")] = entry.get(2, "")
    return m, declared


def _dim(declared, inferred):
    """One dim of NodeArg.shape, merged as onnxruntime merges the model's
    declaration with its inference: a size beats a symbol's name (or none),
    two different sizes give None (the declared one is wrong: the run gives
    the inferred one), and a symbol's name stands where neither has a size."""
    d_int, i_int = isinstance(declared, int), isinstance(inferred, int)
    if d_int and i_int:
        return declared if declared == inferred else None
    if d_int or i_int:
        return declared if d_int else inferred
    return declared if declared is not None else inferred


def _shape(declared, inferred):
    """onnxruntime's NodeArg.shape: the model's declared shape merged with
    the one rlx inferred, dim by dim (_dim)."""
    if declared is None or inferred is None or len(declared) != len(inferred):
        return inferred
    return [_dim(d, i) for d, i in zip(declared, inferred)]


def _node_args(infos: List[dict], declared: Dict[str, list]) -> List[NodeArg]:
    out = []
    for info in infos:
        type_name = _TYPE_NAMES.get(info["elem_type"])
        out.append(NodeArg(info["name"], _shape(declared.get(info["name"]), info["shape"]),
                           f"tensor({type_name})" if type_name else "unknown"))
    return out


def get_available_providers() -> List[str]:
    """The providers this build of rlx has: WebGPU first when the library
    was built with it and an adapter can be listed, then the CPU."""
    try:
        gpu = len(adapters()) > 0
    except Error:
        gpu = False
    return [WEBGPU, CPU] if gpu else [CPU]


def _provider_list(providers, provider_options) -> List[tuple]:
    """[(name, {key: str}), ...] from onnxruntime's providers/provider_options
    arguments; unknown names raise ValueError."""
    if providers is None:
        providers = [CPU]
    if isinstance(providers, (str, bytes)) or not isinstance(providers, Sequence):
        raise TypeError(f"providers must be a list of provider names, got {type(providers).__name__}")
    if provider_options is not None:
        # as onnxruntime: a sequence of dicts (a dict, None or a list of
        # pairs raised KeyError, TypeError or dict()'s ValueError)
        if isinstance(provider_options, (str, bytes, Mapping)) or not isinstance(provider_options, Sequence):
            raise TypeError(f"provider_options must be a list of dicts, one per provider, got "
                            f"{type(provider_options).__name__}")
        if len(provider_options) != len(providers):
            raise ValueError("provider_options must have one dict per provider")
        for i, po in enumerate(provider_options):
            if not isinstance(po, Mapping):
                raise TypeError(f"provider_options[{i}] must be a dict of options, got {type(po).__name__}")
    out = []
    for i, p in enumerate(providers):
        opts = dict(provider_options[i]) if provider_options is not None else {}
        if isinstance(p, tuple):
            if len(p) != 2 or not isinstance(p[1], Mapping):
                raise TypeError(f"provider {p!r}: expected a name or a (name, options dict) pair")
            p, more = p
            opts.update(more)
        if p not in (CPU, WEBGPU):
            raise ValueError(f"provider {p!r} is not available in rlx; rlx offers {WEBGPU!r} (any GPU through "
                             f"WebGPU) and {CPU!r}")
        # a bool stays a bool: Session takes it for bool options only (True
        # for cpu.threads is a TypeError, not 1)
        out.append((p, {str(k): (v if isinstance(v, bool) else str(v)) for k, v in opts.items()}))
    if not out:
        out.append((CPU, {}))
    return out


class RunOptions:
    """onnxruntime.RunOptions over rlx (rlx_run_options in C), for
    InferenceSession.run and Session.run.

    terminate: set True (from any thread) while runs given these options
      are in progress, each stops at its next check (between nodes, at each
      Loop/Scan iteration, between GPU segments) and raises rlx.Error with
      status "RLX_ERR_CANCELLED" (a RuntimeError; onnxruntime raises its Fail
      with "Exiting due to terminate flag being set to true"); a run given
      options whose terminate is already True raises at once. Other runs,
      of the same session too, are not affected. Set it False again to
      reuse the options.
    log_severity_level, log_verbosity_level, logid, run_tag: accepted and
      kept, as onnxruntime's; rlx's messages go through one process-wide log
      (rlx.set_log_callback), so they change nothing.
    only_execute_path_to_fetches: accepted and kept; rlx runs the whole
      plan, which gives the same outputs."""

    _KEYS = ("terminate", "log_severity_level", "log_verbosity_level", "logid", "run_tag",
             "only_execute_path_to_fetches")
    # no other attributes: a misspelt one (ro.terminat = True) raises
    # AttributeError, as on onnxruntime's RunOptions, instead of being kept
    __slots__ = ("_h", "_terminate", "log_severity_level", "log_verbosity_level", "logid", "run_tag",
                 "only_execute_path_to_fetches")

    def __init__(self):
        self._h = None
        h = ctypes.c_void_p()
        _check(_load().rlx_run_options_create(ctypes.byref(h)))
        self._h = h
        self._terminate = False
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.only_execute_path_to_fetches = False

    def __del__(self):
        if getattr(self, "_h", None):
            _load().rlx_run_options_destroy(self._h)
            self._h = None

    def _c_handle(self):
        return self._h

    @classmethod
    def _from(cls, run_options) -> "RunOptions":
        """run_options as given to run: None, a RunOptions, or a dict of
        its attributes (anything else raises TypeError)."""
        if run_options is None:
            return None
        if isinstance(run_options, RunOptions):
            return run_options
        if isinstance(run_options, Mapping):
            ro = cls()
            for key, value in run_options.items():
                if key not in cls._KEYS:
                    raise ValueError(f"run_options: unknown key {key!r} (known: {', '.join(cls._KEYS)})")
                setattr(ro, key, value)
            return ro
        kind = type(run_options)
        raise TypeError("run_options must be an rlx.RunOptions, a dict of its attributes or None, got "
                        f"{kind.__module__}.{kind.__qualname__}: create it with rlx.RunOptions(), which takes "
                        "onnxruntime's attributes (terminate, log_severity_level, ...)")

    @property
    def terminate(self) -> bool:
        return self._terminate

    @terminate.setter
    def terminate(self, value) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"RunOptions.terminate: expected bool, got {type(value).__name__}")
        self._terminate = bool(value)
        _check(_load().rlx_run_options_set_terminate(self._h, self._terminate))


def _file_identity(path):
    """(device, inode, size, modification time) of a file, None when it is
    gone: what tells that a model file was replaced or rewritten."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class InferenceSession:
    """onnxruntime.InferenceSession's common calls over an rlx session.

    path_or_bytes: a model file path, or the serialized model (bytes; its
      external data, if any, is read relative to the current folder, as
      onnxruntime reads it).
    sess_options: an rlx.SessionOptions (None: defaults); anything else,
      onnxruntime's SessionOptions included, raises TypeError.
    providers, provider_options: as onnxruntime (module docstring); None:
      the CPU, as onnxruntime's default.
    The rlx objects underneath are .rlx_model and .rlx_session. Once the
    session exists the model's handle is released (the session keeps its
    own reference, and as the model's only holder its CPU plans may free
    the plain copy of the weights they read packed: cpu.release_packed);
    .rlx_model (and set_providers) load the model again when asked for.

    close() (idempotent) releases both, as does the end of a `with` block;
    every method of a closed one raises ValueError "rlx.InferenceSession is
    closed" (onnxruntime has no close(): its sessions go with the garbage)."""

    def __init__(self, path_or_bytes, sess_options: Optional[SessionOptions] = None, providers=None,
                 provider_options=None, **kwargs):
        if kwargs:
            raise TypeError(f"InferenceSession: unsupported arguments {sorted(kwargs)}")
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            cls = type(sess_options)
            raise TypeError("sess_options must be an rlx.SessionOptions (or None), got "
                            f"{cls.__module__}.{cls.__qualname__}: create it with rlx.SessionOptions(), which takes the same attributes "
                            "(intra_op_num_threads, graph_optimization_level, add_session_config_entry, ...)")
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_bytes = bytes(path_or_bytes)
            self._model_path = None
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_bytes = None
            self._model_path = os.fspath(path_or_bytes)
        else:  # os.fspath said "expected str, bytes or os.PathLike object, not ndarray"
            raise TypeError(_model_arg_error("InferenceSession", path_or_bytes))
        self._model_dropped = False
        self._rlx_model = self._load_model()
        if self._model_path is not None:
            # reloads (.rlx_model, set_providers) read the same file from any
            # working folder, and refuse it once it has changed
            self._model_path = os.path.abspath(self._model_path)
            self._model_stat = _file_identity(self._model_path)
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._create(providers, provider_options)
        self._meta, declared = self._read_fields()
        model = self._rlx_model
        self._inputs = _node_args(model.inputs, declared)
        self._input_np = {i["name"]: _NP_TYPES[i["elem_type"]] for i in model.inputs
                          if i["elem_type"] in _NP_TYPES}
        self._outputs = _node_args(model.outputs, declared)
        self._overridable = _node_args(model.overridable_initializers, declared)
        self._output_index = {o.name: i for i, o in enumerate(self._outputs)}
        self._drop_model()

    def _load_model(self) -> Model:
        # a model given as bytes reads its external data from the current
        # folder, as onnxruntime does (base_dir ""); rlx.Model's default
        # refuses it
        if self._model_bytes is not None:
            return Model(self._model_bytes, base_dir="")
        known = getattr(self, "_model_stat", None)
        if known is not None and _file_identity(self._model_path) != known:
            raise Error("RLX_ERR_IO", f"'{self._model_path}' changed since this InferenceSession loaded it (it "
                                      "loads the model again for .rlx_model and set_providers): create a new "
                                      "InferenceSession")
        return Model(self._model_path)

    def _drop_model(self) -> None:
        """Releases this object's model handle: the session is then the
        model's only holder (cpu.release_packed may free the plain copy of
        the weights its plans read packed, instead of keeping two copies)."""
        self._rlx_model.close()
        self._model_dropped = True

    @property
    def rlx_model(self) -> Model:
        """The rlx.Model: loaded again (a separate copy of the weights) if
        this session released its handle; closed after close()."""
        if self._model_dropped and not self.closed:
            self._rlx_model = self._load_model()
            self._model_dropped = False
        return self._rlx_model

    def _create(self, providers, provider_options) -> None:
        chosen = _provider_list(providers, provider_options)
        base = self._sess_options.rlx_options()
        last_error = None
        for k, (name, opts) in enumerate(chosen):
            device = "cpu"
            rlx_opts = dict(base)
            for key, value in opts.items():
                if key == "device_id" and name == WEBGPU:
                    if isinstance(value, bool):
                        raise TypeError(f"provider {name}: device_id={value!r}: expected an int, got bool")
                    device = "gpu:" + value
                elif "." in key:
                    rlx_opts[key] = value
                else:
                    raise ValueError(f"provider {name}: option {key!r} is not known to rlx (device_id for "
                                     f"{WEBGPU}, or an rlx option key such as 'gpu.f16')")
            if name == WEBGPU and device == "cpu":
                device = "gpu"
            try:
                self.rlx_session = Session(self.rlx_model, device=device, options=rlx_opts)
            except Error as e:
                if e.status == "RLX_ERR_NO_ADAPTER" and k + 1 < len(chosen):
                    last_error = e
                    continue
                msg = str(e)[len(e.status) + 2:]
                for rlx_key in base:
                    ort_key = self._sess_options._ort_key_of(rlx_key)
                    if ort_key and msg.startswith(rlx_key + "="):  # say which entry asked for it
                        raise Error(e.status, f"session config entry {ort_key}="
                                    f"{self._sess_options._config[ort_key]!r} asks for rlx's {msg}") from None
                raise
            self._providers = [name] + ([CPU] if name == WEBGPU else [])
            self._provider_options = {name: {k: (("1" if v else "0") if isinstance(v, bool) else v)
                                             for k, v in opts.items()}}
            if name == WEBGPU:
                self._provider_options[CPU] = {}
            return
        raise last_error  # not reached: the last provider raises itself

    # ---------------------------------------------------------------- closing

    @property
    def closed(self) -> bool:
        """True after close()."""
        return getattr(self, "_closed", False)

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("rlx.InferenceSession is closed (close() or the end of its with block released it)")

    def close(self) -> None:
        """Releases the rlx session and model; again is a no-op. While a run
        is in progress on another thread, raises RuntimeError (as
        rlx.Session.close) and stays open."""
        if self.closed:
            return
        sess = getattr(self, "rlx_session", None)
        if sess is not None:
            try:
                sess.close()
            except RuntimeError as e:  # name this object's way to stop them
                raise RuntimeError(str(e).replace("rlx.Session.close()", "rlx.InferenceSession.close()").replace(
                    "set_terminate(True) stops them", "a RunOptions with terminate = True stops them")) from None
        model = getattr(self, "_rlx_model", None)
        if model is not None:
            model.close()
        self._closed = True

    def __enter__(self) -> "InferenceSession":
        self._check_open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- metadata

    def get_inputs(self) -> List[NodeArg]:
        self._check_open()
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        self._check_open()
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        # initializers an IR >= 4 model also lists as inputs: a run may feed them
        self._check_open()
        return list(self._overridable)

    def get_providers(self) -> List[str]:
        self._check_open()
        return list(self._providers)

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        self._check_open()
        return {k: dict(v) for k, v in self._provider_options.items()}

    def get_session_options(self) -> SessionOptions:
        self._check_open()
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None) -> None:
        """Re-creates the session on other providers (as onnxruntime)."""
        self._check_open()
        ours = self._model_dropped  # a model the caller took (.rlx_model) stays theirs
        self._create(providers, provider_options)
        if ours:
            self._drop_model()

    def get_modelmeta(self) -> ModelMetadata:
        self._check_open()
        return self._meta

    def _read_fields(self):
        """_read_model of the model's bytes (a file is mapped, not read)."""
        try:
            if self._model_bytes is not None:
                return _read_model(memoryview(self._model_bytes))
            with open(self._model_path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                view = memoryview(mm)
                try:
                    return _read_model(view)
                finally:
                    view.release()
        except (ValueError, OSError) as e:  # rlx loaded it, so this is not expected
            raise Error("RLX_ERR_INVALID_MODEL", f"model metadata: {e}") from None

    # ---------------------------------------------------------------- running

    def run(self, output_names, input_feed, run_options=None) -> List[np.ndarray]:
        """One forward pass. output_names: the outputs wanted, in the order
        wanted (None or empty: every output, in graph order); input_feed: a
        dict of input name -> numpy array. Unknown output names raise
        rlx.Error (RLX_ERR_INVALID_ARGUMENT) before anything runs.
        run_options: None, an rlx.RunOptions or a dict of its attributes;
        its terminate set True from another thread stops the run with
        rlx.Error RLX_ERR_CANCELLED (see RunOptions)."""
        self._check_open()
        ro = RunOptions._from(run_options)
        if isinstance(output_names, np.ndarray) and output_names.ndim == 1 and output_names.dtype.kind == "U":
            output_names = output_names.tolist()  # onnxruntime takes a 1-D array of names too
        if output_names is not None and (isinstance(output_names, (str, bytes)) or
                                         not isinstance(output_names, (list, tuple)) or
                                         not all(isinstance(n, str) for n in output_names)):
            raise TypeError(f"output_names must be a list of names (or None), got {output_names!r}")
        if output_names:
            missing = [n for n in output_names if n not in self._output_index]
            if missing:
                raise Error("RLX_ERR_INVALID_ARGUMENT", f"unknown output name(s) {missing}; the model's outputs "
                            f"are {[o.name for o in self._outputs]}")
        if not isinstance(input_feed, Mapping):
            raise TypeError(f"input_feed must be a dict of input name -> array, got {type(input_feed).__name__}")
        if ro is not None and ro.terminate:
            raise Error("RLX_ERR_CANCELLED", "run refused: RunOptions.terminate is True (set it False to run)")
        feed = dict(input_feed)
        for name, val in feed.items():
            # a Python list, tuple or number takes the input's declared
            # element type, as onnxruntime converts it (numpy would make
            # float64 or int64 of it); arrays keep their own dtype
            if isinstance(val, (list, tuple, int, float, bool)) and name in self._input_np:
                try:
                    feed[name] = np.asarray(val, dtype=self._input_np[name])
                except (ValueError, TypeError, OverflowError) as e:
                    raise Error("RLX_ERR_INVALID_ARGUMENT", f"input '{name}': the {type(val).__name__} does not "
                                f"convert to {self._input_np[name]}: {e}") from None
        try:
            outs = self.rlx_session.run(feed, ro)
        except Error as e:
            if ro is not None and e.status == "RLX_ERR_CANCELLED" and ro.terminate:
                raise Error(e.status, f"run stopped: RunOptions.terminate was set True ({str(e)[len(e.status) + 2:]})") from None
            raise
        if not output_names:
            return outs
        # a name asked for twice gets an array of its own each time, as
        # onnxruntime returns them: the same object twice let a write to one
        # change the other
        picked, taken = [], set()
        for n in output_names:
            i = self._output_index[n]
            picked.append(outs[i].copy() if i in taken else outs[i])
            taken.add(i)
        return picked
