"""Python bindings for rlx (ctypes over librlx.so).

    import numpy as np, rlx
    model = rlx.Model("model.onnx")
    sess = rlx.Session(model, device="gpu")          # "cpu", "gpu", "gpu:N"
    outputs = sess.run({"x": np.zeros((1, 3, 224, 224), np.float32)})
    print(sess.output_names, sess.device_name, outputs[0].shape)

The library is found through the RLX_LIBRARY environment variable, else next
to this package in a build folder (build/librlx.so), else on the loader path.
Errors raise rlx.Error with the library's message (it names the node and op);
arguments of the wrong Python type raise TypeError. Inputs are passed in C
order and native byte order (others are converted); bfloat16 inputs take
ml_dtypes.bfloat16 arrays (onnx's type for them), bfloat16 outputs come back
as float32 (exact).

Model, Session and InferenceSession hold the library's objects until
close() (idempotent; garbage collection closes them too) or the end of a
`with` block: `with rlx.Session(model) as sess: ...`. Any method or
property of a closed one raises ValueError "rlx.Session is closed" (as a
closed Python file); `closed` tells. A session keeps running after its
Model is closed (it holds its own reference on the C model).

rlx.InferenceSession (python/rlx/_ort.py) offers onnxruntime's InferenceSession
calls over the same library: InferenceSession(path_or_bytes, sess_options,
providers=["WebGpuExecutionProvider", "CPUExecutionProvider"]),
get_inputs()/get_outputs(), run(output_names, feeds), get_modelmeta().

String tensors (ONNX tensor(string)): feed a numpy array of str ('<U') or
bytes ('S'), or an object array of str/bytes (str is encoded as UTF-8,
surrogate escapes as the bytes they stand for; a NUL character is refused);
string outputs come back as object arrays of str (decoded as UTF-8,
undecodable bytes kept as surrogate escapes, so an output fed back in gives
the same bytes).
"""
from __future__ import annotations

import ctypes
import numbers
import os
import threading
from collections.abc import Mapping
from typing import Dict, List, Optional, Sequence

import numpy as np

__all__ = ["Error", "Model", "Session", "adapters", "library_path", "set_log_callback", "version",
           "InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "NodeArg", "ModelMetadata",
           "get_available_providers", "ORT_CONFIG_MAPPED", "ORT_CONFIG_IGNORED", "__version__"]

MAX_RANK = 8

_DTYPES = {  # rlx_dtype (ONNX TensorProto numbering) <-> numpy
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
    9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
}
_NP_TO_DTYPE = {np.dtype(v): k for k, v in _DTYPES.items()}
_BF16 = 16  # outputs are returned as float32; inputs take ml_dtypes.bfloat16 arrays (numpy has no bfloat16)
_STRING = 8  # rlx_dtype STRING: one const char * per element


# onnxruntime's type strings, by rlx dtype (ONNX TensorProto numbering)
_TYPE_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
               9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64", 16: "bfloat16"}


def _string_elements(a: np.ndarray, name: str):
    """The elements of a str/bytes/object array as NUL-free bytes."""
    out = []
    for v in a.reshape(-1).tolist():
        if isinstance(v, str):
            # surrogate escapes back to their bytes, as string outputs decode
            # bytes that are not UTF-8 (an output fed back in raised a bare
            # UnicodeEncodeError); another lone surrogate has no bytes
            try:
                v = v.encode("utf-8", errors="surrogateescape")
            except UnicodeEncodeError as e:
                raise ValueError(f"input '{name}': string element {v!r} is not encodable as UTF-8 ({e.reason} at "
                                 f"position {e.start})") from None
        if not isinstance(v, bytes):
            raise TypeError(f"input '{name}': string tensor elements must be str or bytes, got {type(v).__name__}")
        if b"\0" in v:
            raise ValueError(f"input '{name}': string element {v!r} contains a NUL character")
        out.append(v)
    return out


class Error(RuntimeError):
    """An rlx call failed; .status is the rlx_status name."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int), ("dims", ctypes.c_int64 * MAX_RANK),
                ("data", ctypes.c_void_p), ("nbytes", ctypes.c_size_t)]


class _ValueInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK)]


class _AdapterInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("driver", ctypes.c_char * 256), ("backend", ctypes.c_char * 16),
                ("type", ctypes.c_char * 16), ("vendor_id", ctypes.c_uint32), ("device_id", ctypes.c_uint32),
                ("max_buffer_size", ctypes.c_uint64), ("max_storage_buffer_binding_size", ctypes.c_uint64),
                ("max_compute_workgroups_per_dimension", ctypes.c_uint32),
                ("max_compute_invocations_per_workgroup", ctypes.c_uint32),
                ("max_compute_workgroup_storage_size", ctypes.c_uint32),
                ("max_storage_buffers_per_shader_stage", ctypes.c_uint32),
                ("shader_f16", ctypes.c_bool), ("subgroups", ctypes.c_bool), ("timestamp_query", ctypes.c_bool),
                ("cooperative_matrix", ctypes.c_bool), ("unchecked_shaders", ctypes.c_bool)]


class _OptionInfo(ctypes.Structure):  # rlx_option_info, field for field
    _fields_ = [("key", ctypes.c_char_p), ("type", ctypes.c_char_p), ("values", ctypes.c_char_p),
                ("default_value", ctypes.c_char_p), ("env", ctypes.c_char_p), ("doc", ctypes.c_char_p),
                ("per_process", ctypes.c_bool)]


class _SessionOptions(ctypes.Structure):  # rlx_session_options, field for field
    _fields_ = [("device", ctypes.c_char_p), ("gpu_conv_direct", ctypes.c_bool), ("gpu_f16", ctypes.c_bool)]


def _name(raw: bytes) -> str:
    """A name from the library (a graph input or output, a symbolic dim) as
    str: UTF-8, with bytes that are not UTF-8 as surrogate escapes (a model
    file may hold any bytes there), which _c_string turns back into them."""
    return raw.decode("utf-8", errors="surrogateescape")


def _c_string(value, what: str) -> bytes:
    """value (str, bytes or a path) as a NUL-terminated C string; a NUL
    inside would cut it short where C reads it, so it is refused."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        try:
            value = os.fsencode(value) if what == "path" else value.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError as e:
            raise ValueError(f"{what} {value!r} is not encodable as UTF-8 ({e.reason} at position {e.start})") from None
    if not isinstance(value, bytes):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if b"\0" in value:
        raise ValueError(f"{what} {value!r} contains a NUL character")
    return value


# rlx_log_level, and the C type of rlx_log_fn
LOG_LEVELS = ("debug", "progress", "info", "warning", "error", "off")
_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def library_path() -> str:
    """The librlx.so this package loads: RLX_LIBRARY when set, else the one
    installed inside the package (a wheel puts it there, with the libraries
    it needs, which it finds through its RPATH $ORIGIN), else build/librlx.so
    of the checkout this package sits in (python/rlx), else the loader path."""
    env = os.environ.get("RLX_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "librlx.so"), os.path.join(here, "..", "..", "build", "librlx.so")):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    return "librlx.so"


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        # the loader's message names the file only: say where the path came
        # from and what sets it
        if os.environ.get("RLX_LIBRARY"):
            where = "RLX_LIBRARY names it"
        elif path == "librlx.so":
            where = ("no librlx.so inside the package or in build/ of this checkout, so the loader path was "
                     "searched: build rlx (cmake --build build) or set RLX_LIBRARY to the librlx.so to use")
        else:
            where = "set RLX_LIBRARY to load another"
        raise OSError(f"rlx: cannot load the library {path!r} ({where}): {e}") from None
    P, S, I, SZ = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
    sigs = {
        "rlx_last_error": ([], S), "rlx_status_name": ([I], S),
        "rlx_model_load_onnx": ([S, ctypes.POINTER(P)], I), "rlx_model_destroy": ([P], None),
        "rlx_model_load_onnx_memory": ([P, SZ, S, ctypes.POINTER(P)], I),
        "rlx_model_num_inputs": ([P], SZ), "rlx_model_num_outputs": ([P], SZ),
        "rlx_model_input_info": ([P, SZ, ctypes.POINTER(_ValueInfo)], I),
        "rlx_model_output_info": ([P, SZ, ctypes.POINTER(_ValueInfo)], I),
        "rlx_model_num_overridable_initializers": ([P], SZ),
        "rlx_model_overridable_initializer_info": ([P, SZ, ctypes.POINTER(_ValueInfo)], I),
        "rlx_session_create": ([P, ctypes.POINTER(_SessionOptions), ctypes.POINTER(P)], I),
        "rlx_session_create_with_options": ([P, ctypes.POINTER(_SessionOptions), P, ctypes.POINTER(P)], I),
        "rlx_options_create": ([ctypes.POINTER(P)], I), "rlx_options_destroy": ([P], None),
        "rlx_options_set": ([P, S, S], I),
        "rlx_option_count": ([], SZ), "rlx_option_info_get": ([SZ, ctypes.POINTER(_OptionInfo)], I),
        "rlx_session_destroy": ([P], None),
        "rlx_session_run_with": ([P, P, SZ, ctypes.POINTER(S), ctypes.POINTER(ctypes.POINTER(_Tensor)),
                                  ctypes.POINTER(ctypes.POINTER(ctypes.POINTER(_Tensor))), ctypes.POINTER(SZ)], I),
        "rlx_run_options_create": ([ctypes.POINTER(P)], I), "rlx_run_options_destroy": ([P], None),
        "rlx_run_options_set_terminate": ([P, ctypes.c_bool], I),
        "rlx_run_options_set_timeout": ([P, ctypes.c_int64], I),
        "rlx_session_terminate": ([P], I), "rlx_session_set_terminate": ([P, ctypes.c_bool], I),
        "rlx_session_set_run_timeout": ([P, ctypes.c_int64], I),
        "rlx_session_num_outputs": ([P], SZ), "rlx_session_output_name": ([P, SZ], S),
        "rlx_session_device_name": ([P], S), "rlx_session_dispatch_report": ([P], S),
        "rlx_tensor_destroy": ([ctypes.POINTER(_Tensor)], None),
        "rlx_adapters_list": ([ctypes.POINTER(ctypes.POINTER(_AdapterInfo)), ctypes.POINTER(SZ)], I),
        "rlx_set_log_callback": ([_LOG_FN, P, I], None), "rlx_version": ([], S),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    lib._free = libc.free
    _lib = lib
    return lib


_option_kinds: Optional[Dict[str, tuple]] = None


def _option_table() -> Dict[str, tuple]:
    """rlx's session options by key: (type, values), as `rlx options` lists them."""
    global _option_kinds
    if _option_kinds is None:
        lib, kinds, info = _load(), {}, _OptionInfo()
        for i in range(lib.rlx_option_count()):
            _check(lib.rlx_option_info_get(i, ctypes.byref(info)))
            kinds[info.key.decode()] = (info.type.decode(), (info.values or b"").decode())
        _option_kinds = kinds
    return _option_kinds


def _option_text(key: str, value) -> str:
    """The text rlx_options_set takes for a Python option value: a str as
    it is, an int in decimal, a bool as 1/0 for a bool option only. bool
    is a subclass of int, but True for cpu.threads is not a count (it used
    to pass as 1), nor a word of an enum or a string option's value: a
    TypeError naming the key, its type and its values, as for a float or
    None. An unknown key is left to rlx_options_set (rlx.Error naming it)."""
    # numpy's integers and bools are ints and bools here, as
    # SessionOptions.intra_op_num_threads and Session.set_run_timeout take them
    if isinstance(value, np.bool_):
        value = bool(value)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = int(value)
    if not isinstance(value, (str, bool, int)):
        raise TypeError(f"option {key}={value!r}: expected str, bool or int, got {type(value).__name__}")
    if not isinstance(value, bool):
        return str(value)
    kind, values = _option_table().get(key, ("bool", ""))
    if kind != "bool":
        want = "an int" if kind == "int" else "a str"
        raise TypeError(f"option {key}={value!r}: expected {want} ({kind} option, {values}), got bool")
    return "1" if value else "0"


def _check(status: int) -> None:
    if status != 0:
        lib = _load()
        raise Error(lib.rlx_status_name(status).decode(), lib.rlx_last_error().decode(errors="replace"))


def _info(v: _ValueInfo) -> dict:
    dims = []
    for i in range(max(v.rank, 0)):
        dims.append(v.dims[i] if v.dims[i] >= 0 else (_name(v.dim_names[i]) if v.dim_names[i] else None))
    dt = np.dtype(_DTYPES[v.dtype]) if v.dtype in _DTYPES else (np.dtype(object) if v.dtype == _STRING else None)
    return {"name": _name(v.name), "dtype": dt, "elem_type": v.dtype,  # elem_type: ONNX TensorProto number
            "shape": dims if v.rank >= 0 else None}


def _model_arg_error(who: str, model) -> str:
    hint = " (as bytes: arr.tobytes())" if isinstance(model, np.ndarray) else ""
    return (f"{who} takes a path (str or os.PathLike) or the model's bytes (bytes, bytearray or memoryview), "
            f"got {type(model).__name__}{hint}")


class _Handle:
    """A C handle (self._h) that close() releases: _handle() gives it, or
    raises ValueError once closed (the library answered a NULL handle with
    C-level messages, empty lists or ''). _NAME names the class in it."""

    _NAME = ""

    def _handle(self) -> ctypes.c_void_p:
        h = getattr(self, "_h", None)
        if not h:
            raise ValueError(f"{self._NAME} is closed (close() or the end of its with block released it)")
        return h

    @property
    def closed(self) -> bool:
        """True after close()."""
        return not getattr(self, "_h", None)


class Model(_Handle):
    """An imported ONNX model: Model(path) reads a file (rlx_model_load_onnx);
    Model(data) with bytes, bytearray or memoryview (a serialized ModelProto,
    e.g. onnx's model.SerializeToString()) loads from memory
    (rlx_model_load_onnx_memory), with external data looked up under
    base_dir (None: a model with external data is refused)."""

    _NAME = "rlx.Model"

    def __init__(self, model, base_dir: Optional[str] = None):
        lib = _load()
        self._h = ctypes.c_void_p()
        self.path = None
        if isinstance(model, (bytes, bytearray, memoryview)):
            if isinstance(model, memoryview) and not model.contiguous:
                model = model.tobytes()  # a strided view (np.frombuffer raised BufferError), as InferenceSession copies it
            data = np.frombuffer(model, dtype=np.uint8)  # no copy; kept alive for the call
            c_dir = _c_string(base_dir, "path") if base_dir is not None else None
            try:
                _check(lib.rlx_model_load_onnx_memory(data.ctypes.data if data.size else None, data.size, c_dir,
                                                      ctypes.byref(self._h)))
            except Error as e:
                if base_dir is None and "no folder to read it from" in str(e):
                    # the library's message names its C call; say what takes the folder here
                    raise Error(e.status, str(e)[len(e.status) + 2:] + "; from Python: rlx.Model(data, "
                                "base_dir=FOLDER) (\"\" the current folder)") from None
                raise
            return
        if not isinstance(model, (str, os.PathLike)):
            # _c_string said "path must be a str, got ndarray"; the model's bytes are welcome too
            raise TypeError(_model_arg_error("rlx.Model", model))
        if base_dir is not None:
            raise TypeError("base_dir applies to a model given as bytes; a file's external data is read "
                            "next to the file")
        _check(lib.rlx_model_load_onnx(_c_string(model, "path"), ctypes.byref(self._h)))
        self.path = os.fspath(model)

    def close(self) -> None:
        """Releases the model (rlx_model_destroy); again is a no-op. Its
        sessions keep working; any other use of it raises ValueError."""
        h = getattr(self, "_h", None)
        self._h = None
        if h:
            _load().rlx_model_destroy(h)

    def __enter__(self) -> "Model":
        self._handle()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _infos(self, count_fn, info_fn) -> List[dict]:
        h = self._handle()
        out = []
        for i in range(count_fn(h)):
            v = _ValueInfo()
            _check(info_fn(h, i, ctypes.byref(v)))
            out.append(_info(v))
        return out

    @property
    def inputs(self) -> List[dict]:
        lib = _load()
        return self._infos(lib.rlx_model_num_inputs, lib.rlx_model_input_info)

    @property
    def outputs(self) -> List[dict]:
        lib = _load()
        return self._infos(lib.rlx_model_num_outputs, lib.rlx_model_output_info)

    @property
    def overridable_initializers(self) -> List[dict]:
        """Initializers that the model (ONNX IR version >= 4) also lists as
        graph inputs, as onnxruntime's get_overridable_initializers: not in
        `inputs`; a run may feed them by name (the fed value replaces the
        initializer for that run) or leave them out (the initializer is
        used)."""
        lib = _load()
        return self._infos(lib.rlx_model_num_overridable_initializers, lib.rlx_model_overridable_initializer_info)

    def __del__(self):
        self.close()


class Session(_Handle):
    """Runs a Model on a device ("cpu", "gpu", "gpu:N"; None is "cpu"). A session may be
    used from several threads: its runs take turns.

    Stopping runs: terminate() (from another thread) makes the runs in
    progress or waiting fail with rlx.Error status "RLX_ERR_CANCELLED";
    the option run.timeout_ms (or set_run_timeout) limits each run's time
    the same way. The message names where the run stopped."""

    _NAME = "rlx.Session"

    def __init__(self, model: Model, device: Optional[str] = "cpu", gpu_conv_direct: bool = False, gpu_f16: bool = False,
                 options: Optional[Dict[str, object]] = None):
        """options: session options by key (`rlx options` lists them), e.g.
        {"gpu.f16": True, "passes.disable": "fuse_elementwise"}; values may be
        str, bool (1/0; for bool options only) or int (other types, and a
        bool for an int, enum or string option, raise TypeError naming the
        key). A key left out
        takes its RLX_* environment variable, else its default. A bad key or value raises rlx.Error
        (RLX_ERR_INVALID_ARGUMENT) naming the key and the accepted values."""
        lib = _load()
        if not isinstance(model, Model):
            raise TypeError(f"model must be an rlx.Model, got {type(model).__name__}")
        # device None is "cpu", as the C API's NULL
        so = _SessionOptions(_c_string("cpu" if device is None else device, "device"), bool(gpu_conv_direct),
                             bool(gpu_f16))
        self._h = ctypes.c_void_p()
        self._lock = threading.Lock()  # guards _h and _runs: close() refuses while a run is in progress
        self._runs = 0  # runs in progress (on any thread)
        opts = ctypes.c_void_p()
        _check(lib.rlx_options_create(ctypes.byref(opts)))
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(f"options must be a dict of KEY: value, got {type(options).__name__}")
        try:
            for key, value in (options or {}).items():
                if not isinstance(key, str):
                    raise TypeError(f"option key {key!r}: expected str, got {type(key).__name__}")
                # str() of anything else would pass its repr ('None', "['Conv']", '1.0') as the value
                value = _option_text(key, value)
                _check(lib.rlx_options_set(opts, _c_string(key, "option key"), _c_string(value, "option value")))
            _check(lib.rlx_session_create_with_options(model._handle(), ctypes.byref(so), opts,
                                                       ctypes.byref(self._h)))
        finally:
            lib.rlx_options_destroy(opts)
        # declared element types of what a run may feed (run's object arrays)
        self._feed_types = {i["name"]: i["elem_type"] for i in model.inputs + model.overridable_initializers}

    def terminate(self) -> None:
        """Stops every run of this session that has already begun (the one
        in progress and those waiting for their turn): each raises rlx.Error
        with status RLX_ERR_CANCELLED soon after, at its next check (between
        nodes, at each Loop/Scan iteration, between GPU segments). Runs
        begun later are not affected. Safe from any thread (rlx releases the
        GIL while it runs); rlx_session_terminate in C."""
        _check(_load().rlx_session_terminate(self._handle()))

    def set_terminate(self, terminate: bool) -> None:
        """A terminate flag per session (rlx.RunOptions is the per-run
        one, as onnxruntime's): True stops the
        runs in progress and waiting (as terminate()) and makes every later
        run fail at once (RLX_ERR_CANCELLED) until set False again."""
        _check(_load().rlx_session_set_terminate(self._handle(), bool(terminate)))

    def set_run_timeout(self, ms: int) -> None:
        """Time limit of each run begun after the call, in milliseconds (0:
        none); the option run.timeout_ms sets it at creation. Counted from
        the run's turn, compiling a plan for new shapes included; a run past
        it raises rlx.Error with status RLX_ERR_CANCELLED."""
        # numpy's integers too (np.int64(100)), as SessionOptions.intra_op_num_threads takes them
        if isinstance(ms, (bool, np.bool_)) or not isinstance(ms, numbers.Integral):
            raise TypeError(f"run timeout: expected int milliseconds, got {type(ms).__name__}")
        ms = int(ms)
        h = self._handle()
        # ctypes would wrap it into int64_t (2**64 + 1 a 1 ms limit)
        if not -(1 << 63) <= ms < 1 << 63:
            raise Error("RLX_ERR_INVALID_ARGUMENT", f"run time limit {ms} ms: expected 0 (none) to 9223372036854, "
                        "as rlx_session_set_run_timeout")
        _check(_load().rlx_session_set_run_timeout(h, ms))

    def close(self) -> None:
        """Releases the session (rlx_session_destroy); again is a no-op.
        Any later use raises ValueError. While a run of it is in progress on
        another thread, raises RuntimeError and leaves it open
        (set_terminate(True) stops the run, even one about to begin)."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before the handle existed
            return
        with lock:
            if self._runs:
                raise RuntimeError(f"rlx.Session.close(): {self._runs} run(s) of this session are in progress "
                                   "(set_terminate(True) stops them)")
            h, self._h = self._h, None
        if h:
            _load().rlx_session_destroy(h)

    def __enter__(self) -> "Session":
        self._handle()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def output_names(self) -> List[str]:
        lib, h = _load(), self._handle()
        return [_name(lib.rlx_session_output_name(h, i)) for i in range(lib.rlx_session_num_outputs(h))]

    @property
    def device_name(self) -> str:
        return _load().rlx_session_device_name(self._handle()).decode()

    @property
    def dispatch_report(self) -> str:
        return _load().rlx_session_dispatch_report(self._handle()).decode()

    def run(self, feeds: Dict[str, np.ndarray], run_options=None) -> List[np.ndarray]:
        """One forward pass; returns the outputs in graph order as numpy arrays.
        run_options: None or an rlx.RunOptions (its terminate flag applies to
        this run, as onnxruntime's; rlx_session_run_with in C, where
        rlx_run_options_set_timeout also gives a per-run time limit)."""
        lib = _load()
        self._handle()
        if run_options is not None and not hasattr(run_options, "_c_handle"):
            raise TypeError(f"run_options must be an rlx.RunOptions or None, got {type(run_options).__name__}")
        c_ro = run_options._c_handle() if run_options is not None else None
        if not isinstance(feeds, dict):
            raise TypeError(f"feeds must be a dict of input name -> array, got {type(feeds).__name__}")
        names, tensors, keep = [], [], []
        for name, arr in feeds.items():
            c_name = _c_string(name, "input name")
            if arr is None:
                raise TypeError(f"input '{name}': the feed is None (give an array)")
            # (np.ascontiguousarray would turn a 0-d array into shape (1,))
            a = np.asarray(arr, order="C")
            want = self._feed_types.get(name, _STRING)
            if a.dtype.kind == "O" and want != _STRING:
                # its elements would become strings (a string tensor, refused
                # by dtype); onnxruntime refuses it too, naming tensor(string)
                np_name = "ml_dtypes.bfloat16" if want == _BF16 else "np.bool_" if want == 9 else \
                    f"np.{np.dtype(_DTYPES[want]).name}" if want in _DTYPES else None
                hint = f": convert it first, e.g. np.asarray(x, dtype={np_name})" if np_name else ""
                raise Error("RLX_ERR_INVALID_ARGUMENT",
                            f"input '{name}' takes tensor({_TYPE_NAMES.get(want, want)}), but an object array "
                            f"(dtype=object) was fed; object arrays feed string inputs only{hint}")
            if a.dtype.kind in "USO":  # strings: an array of char pointers into bytes kept alive here
                if a.ndim > MAX_RANK:
                    raise Error("RLX_ERR_INVALID_ARGUMENT", f"input '{name}': rank {a.ndim} > {MAX_RANK}")
                elems = _string_elements(a, name)
                ptrs = (ctypes.c_char_p * max(len(elems), 1))(*elems)
                t = _Tensor()
                t.dtype = _STRING
                t.rank = a.ndim
                for i, d in enumerate(a.shape):
                    t.dims[i] = d
                t.data = ctypes.addressof(ptrs)
                t.nbytes = len(elems) * ctypes.sizeof(ctypes.c_char_p)
                keep.append((elems, ptrs))
                names.append(c_name)
                tensors.append(ctypes.pointer(t))
                continue
            if not a.flags.c_contiguous:
                a = a.copy(order="C")
            if a.dtype.byteorder == ">" or (a.dtype.byteorder == "<" and not np.little_endian):
                a = a.astype(a.dtype.newbyteorder("="))  # rlx takes native byte order
            # ml_dtypes.bfloat16 (onnx's numpy type for tensor(bfloat16)): the
            # same 2-byte pattern as rlx's bf16; it was refused as an unknown dtype
            bf16 = a.dtype.name == "bfloat16" and a.dtype.itemsize == 2
            if a.dtype not in _NP_TO_DTYPE and not bf16:
                raise Error("RLX_ERR_INVALID_ARGUMENT", f"input '{name}': numpy dtype {a.dtype} is not supported")
            if a.ndim > MAX_RANK:
                raise Error("RLX_ERR_INVALID_ARGUMENT", f"input '{name}': rank {a.ndim} > {MAX_RANK}")
            t = _Tensor()
            t.dtype = _BF16 if bf16 else _NP_TO_DTYPE[a.dtype]
            t.rank = a.ndim
            for i, d in enumerate(a.shape):
                t.dims[i] = d
            t.data = a.ctypes.data
            t.nbytes = a.nbytes
            keep.append(a)
            names.append(c_name)
            tensors.append(ctypes.pointer(t))
        n = len(names)
        c_names = (ctypes.c_char_p * max(n, 1))(*names)
        c_tensors = (ctypes.POINTER(_Tensor) * max(n, 1))(*tensors)
        outs = ctypes.POINTER(ctypes.POINTER(_Tensor))()
        n_out = ctypes.c_size_t()
        with self._lock:  # close() refuses while a run is in progress: it would free the session under it
            h = self._handle()
            self._runs += 1
        try:
            status = lib.rlx_session_run_with(h, c_ro, n, c_names, c_tensors, ctypes.byref(outs), ctypes.byref(n_out))
            _check(status)
            return self._outputs(lib, h, outs, n_out.value)
        finally:
            with self._lock:
                self._runs -= 1

    def _outputs(self, lib, h, outs, n_out: int) -> List[np.ndarray]:
        """The run's output tensors as numpy arrays; frees them."""
        result = []
        try:
            for i in range(n_out):
                t = outs[i].contents
                shape = tuple(t.dims[j] for j in range(t.rank))
                if t.dtype == _STRING:
                    count = t.nbytes // ctypes.sizeof(ctypes.c_char_p)
                    raw = (ctypes.c_char_p * count).from_address(t.data) if count else []
                    vals = [bytes(raw[j]).decode("utf-8", errors="surrogateescape") for j in range(count)]
                    arr = np.empty(count, dtype=object)
                    arr[:] = vals
                    result.append(arr.reshape(shape))
                    continue
                if t.dtype == _BF16:  # numpy has no bfloat16: widened exactly to float32
                    buf = bytes((ctypes.c_char * t.nbytes).from_address(t.data)) if t.nbytes else b""
                    bits = np.frombuffer(buf, dtype=np.uint16).astype(np.uint32) << 16
                    result.append(bits.view(np.float32).reshape(shape))
                elif t.dtype in _DTYPES:  # one copy, out of the tensor rlx wrote
                    arr = np.empty(shape, dtype=_DTYPES[t.dtype])
                    if arr.nbytes != t.nbytes:
                        raise Error("RLX_ERR_INTERNAL", f"output {i}: {t.nbytes} bytes for shape {shape}")
                    if arr.nbytes:
                        ctypes.memmove(arr.ctypes.data, t.data, arr.nbytes)
                    result.append(arr)
                else:
                    name = lib.rlx_session_output_name(h, i)
                    raise Error("RLX_ERR_UNSUPPORTED", f"output {i} ('{_name(name) if name else '?'}') has rlx "
                                f"dtype {t.dtype}, which has no numpy equivalent")
        finally:
            for i in range(n_out):
                lib.rlx_tensor_destroy(outs[i])
            lib._free(ctypes.cast(outs, ctypes.c_void_p))
        return result

    def __del__(self):
        self.close()


def adapters() -> List[dict]:
    """GPU adapters as rlx_adapters_list reports them."""
    lib = _load()
    arr = ctypes.POINTER(_AdapterInfo)()
    n = ctypes.c_size_t()
    _check(lib.rlx_adapters_list(ctypes.byref(arr), ctypes.byref(n)))
    out = []
    for i in range(n.value):
        a = arr[i]
        out.append({f: (getattr(a, f).decode() if isinstance(getattr(a, f), bytes) else getattr(a, f))
                    for f, _ in _AdapterInfo._fields_})
    if arr:
        lib._free(ctypes.cast(arr, ctypes.c_void_p))
    return out


_log_hook = None  # the ctypes callback in use: kept alive while the library holds it


def set_log_callback(fn, level: str = "debug") -> None:
    """Sends rlx's messages (rlx_set_log_callback) of `level` and above
    ("debug", "progress", "info", "warning", "error", "off") to
    fn(level_name, message); fn None restores the default, which prints to
    stderr. fn runs on the thread that logs; an exception it raises is
    printed by ctypes and otherwise ignored."""
    global _log_hook
    if fn is not None and not callable(fn):
        # ctypes would call it at the first message and print a TypeError
        # it then ignores, once per message
        raise TypeError(f"set_log_callback: fn must be callable or None, got {type(fn).__name__}")
    if level not in LOG_LEVELS:
        raise ValueError("level %r: expected one of %s" % (level, ", ".join(LOG_LEVELS)))
    lib = _load()
    if fn is None:
        hook = _LOG_FN()  # NULL: the default printer
    else:
        def hook_fn(lv, msg, _user):
            fn(LOG_LEVELS[lv] if 0 <= lv < len(LOG_LEVELS) else str(lv), msg.decode("utf-8", "replace"))
        hook = _LOG_FN(hook_fn)
    lib.rlx_set_log_callback(hook, None, LOG_LEVELS.index(level))
    _log_hook = hook


def version() -> str:
    """The version of the loaded library (rlx_version)."""
    return _load().rlx_version().decode()


from ._ort import (ORT_CONFIG_IGNORED, ORT_CONFIG_MAPPED, GraphOptimizationLevel, InferenceSession,  # noqa: E402
                   ModelMetadata, NodeArg, RunOptions, SessionOptions, get_available_providers)

try:  # the installed distribution's version; a checkout without an install has none
    from importlib.metadata import version as _dist_version
    __version__ = _dist_version("rlx")
except Exception:  # noqa: BLE001 (PackageNotFoundError, or no importlib.metadata)
    __version__ = "unknown"
