"""An independent reference for `-R`/`-u`: Debian's libsoxr called directly through ctypes with the
parameters squeezelite's recipe stands for (high quality, linear phase, 1 dB attenuation by
default), the whole track in one call, then flushed. The player must produce the same frames."""

from __future__ import annotations

import ctypes
import ctypes.util

SOXR_INT32_I = 2  # soxr_datatype_t: SOXR_FLOAT32_I, SOXR_FLOAT64_I, SOXR_INT32_I, SOXR_INT16_I
SOXR_HQ = 4


class IOSpec(ctypes.Structure):
    _fields_ = [("itype", ctypes.c_int), ("otype", ctypes.c_int), ("scale", ctypes.c_double),
                ("e", ctypes.c_void_p), ("flags", ctypes.c_ulong)]


class QualitySpec(ctypes.Structure):
    _fields_ = [("precision", ctypes.c_double), ("phase_response", ctypes.c_double),
                ("passband_end", ctypes.c_double), ("stopband_begin", ctypes.c_double),
                ("e", ctypes.c_void_p), ("flags", ctypes.c_ulong)]


class RuntimeSpec(ctypes.Structure):
    _fields_ = [("log2_min_dft_size", ctypes.c_uint), ("log2_large_dft_size", ctypes.c_uint),
                ("coef_size_kbytes", ctypes.c_uint), ("num_threads", ctypes.c_uint),
                ("e", ctypes.c_void_p), ("flags", ctypes.c_ulong)]


def _library() -> ctypes.CDLL:
    lib = ctypes.CDLL("libsoxr.so.0")
    lib.soxr_io_spec.restype = IOSpec
    lib.soxr_io_spec.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.soxr_quality_spec.restype = QualitySpec
    lib.soxr_quality_spec.argtypes = [ctypes.c_ulong, ctypes.c_ulong]
    lib.soxr_runtime_spec.restype = RuntimeSpec
    lib.soxr_runtime_spec.argtypes = [ctypes.c_uint]
    lib.soxr_create.restype = ctypes.c_void_p
    lib.soxr_create.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_uint, ctypes.POINTER(ctypes.c_char_p),
                                ctypes.POINTER(IOSpec), ctypes.POINTER(QualitySpec), ctypes.POINTER(RuntimeSpec)]
    lib.soxr_process.restype = ctypes.c_char_p
    lib.soxr_process.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                 ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    lib.soxr_delete.argtypes = [ctypes.c_void_p]
    return lib


def resample(frames: bytes, input_rate: int, output_rate: int, attenuation_db: float = 1.0,
             recipe: int = SOXR_HQ) -> bytes:
    """Interleaved stereo little-endian int32 frames at `input_rate`, resampled to `output_rate`."""
    lib = _library()
    io = lib.soxr_io_spec(SOXR_INT32_I, SOXR_INT32_I)
    io.scale = 10 ** (-attenuation_db / 20)
    quality = lib.soxr_quality_spec(recipe, 0)
    runtime = lib.soxr_runtime_spec(1)
    error = ctypes.c_char_p()
    handle = lib.soxr_create(input_rate, output_rate, 2, ctypes.byref(error), ctypes.byref(io),
                             ctypes.byref(quality), ctypes.byref(runtime))
    assert not error.value and handle, error.value
    try:
        count = len(frames) // 8
        source = ctypes.create_string_buffer(frames, len(frames))
        room = count * output_rate // input_rate + 65536
        target = ctypes.create_string_buffer(room * 8)
        used, done = ctypes.c_size_t(), ctypes.c_size_t()
        out = bytearray()
        assert lib.soxr_process(handle, source, count, ctypes.byref(used), target, room, ctypes.byref(done)) is None
        assert used.value == count
        out += target.raw[:done.value * 8]
        while True:
            assert lib.soxr_process(handle, None, 0, None, target, room, ctypes.byref(done)) is None
            if done.value == 0:
                break
            out += target.raw[:done.value * 8]
        return bytes(out)
    finally:
        lib.soxr_delete(handle)
