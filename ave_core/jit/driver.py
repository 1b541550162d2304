"""Launching a cached binary on torch tensors: cubin with the CUDA driver API
(``cuda-bindings``), HSACO with HIP (``hip-python``), behind one interface.

Imports only the standard library, torch and the GPU runtime binding (lazily, at first launch).
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64",
                "i32": "int32", "i64": "int64", "i8": "int8", "u8": "uint8", "i1": "bool",
                "fp8e4m3": "float8_e4m3fn", "fp8e5m2": "float8_e5m2"}


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # older cuda-python layout
        except ImportError:
            raise RuntimeError("launching on an NVIDIA GPU needs cuda-bindings: "
                               "pip install 'ave[gpu]'") from None
    return driver


def _check(res: Any, what: str) -> Any:
    err = res[0] if isinstance(res, tuple) else res
    if int(err) != 0:
        drv = _driver()
        name = drv.cuGetErrorName(err)
        raise RuntimeError(f"CUDA driver error in {what}: "
                           f"{name[1].decode() if name[0] == 0 else int(err)}")
    if isinstance(res, tuple):
        return res[1] if len(res) == 2 else res[1:]
    return None


def _pack(self: Any, args: Sequence[Any]) -> tuple[tuple, tuple]:
    """Check the arguments against the specialization and build the parameter list."""
    import torch
    if len(args) != len(self.params):
        names = ", ".join(p["name"] for p in self.params)
        raise TypeError(f"{self.meta['kernel']} takes {len(self.params)} runtime arguments "
                        f"({names}), got {len(args)}")
    vals: list = []
    types: list = []
    dev = None
    for p, a in zip(self.params, args):
        if p["kind"] == "tensor":
            if not isinstance(a, torch.Tensor):
                raise TypeError(f"`{p['name']}` must be a torch CUDA tensor, got "
                                f"{type(a).__name__}")
            want = getattr(torch, TORCH_DTYPES.get(p["dtype"], p["dtype"]), None)
            if a.dtype != want:
                raise TypeError(f"`{p['name']}` has dtype {a.dtype}; the kernel declares "
                                f"{p['dtype']} ({want})")
            if a.device.type != "cuda":
                raise ValueError(f"`{p['name']}` is on {a.device}; all tensors must be on "
                                 "the same CUDA device")
            if dev is None:
                dev = a.device
            elif a.device != dev:
                raise ValueError(f"`{p['name']}` is on {a.device}, others on {dev}")
            if a.dim() != p["rank"]:
                raise ValueError(f"`{p['name']}` has rank {a.dim()}; the kernel declares "
                                 f"{p['rank']}")
            st = a.stride()
            if a.numel() and a.shape[-1] > 1 and st[-1] != 1:
                raise ValueError(f"`{p['name']}` has innermost stride {st[-1]}; Ave tensors "
                                 "are contiguous along their last dimension (.contiguous())")
            eb = a.element_size()
            if a.numel() == 0:
                pass                      # nothing is read or written through it
            elif a.data_ptr() % self.align:
                raise ValueError(f"`{p['name']}` is not {self.align}-byte aligned (data_ptr "
                                 f"{a.data_ptr():#x}); the compiled kernel uses "
                                 f"{self.align}-byte vector accesses")
            for d in range(a.dim() - 1):
                if a.numel() and a.shape[d] > 1 and (st[d] * eb) % self.align:
                    raise ValueError(
                        f"`{p['name']}`: the pitch of dimension {d} is {st[d] * eb} bytes, "
                        f"not a multiple of {self.align} (the kernel's vector width); pad "
                        "the tensor or pick sizes that keep rows aligned")
            if any(s >= 2 ** 31 for s in a.shape):
                raise ValueError(f"`{p['name']}`: dimensions must be < 2**31")
            vals.append(a.data_ptr())
            types.append(ctypes.c_void_p)
            for s in a.shape:
                vals.append(int(s))
                types.append(ctypes.c_int32)
            for d in range(a.dim() - 1):
                vals.append(int(st[d]))
                types.append(ctypes.c_int64)
        else:
            v, t = _pack_scalar(p, a)
            vals.append(v)
            types.append(t)
    return tuple(vals), tuple(types)


_INT_SCALARS = {"i32": (ctypes.c_int32, -2 ** 31, 2 ** 31 - 1), "i8": (ctypes.c_int8, -128, 127),
                "u8": (ctypes.c_uint8, 0, 255), "i1": (ctypes.c_uint8, 0, 1)}


def _pack_scalar(p: dict, a: Any) -> tuple[Any, Any]:
    """One scalar parameter as the kernel's ABI has it: f32/f64 as such, f16 and bf16 as
    their 16-bit patterns (round to nearest even; the PTX parameter is 2 bytes), integers in
    their declared width after a range check (a value that does not fit is an error, never
    a silent wrap)."""
    import struct
    dt = p["dtype"]
    if dt in ("f32", "f16", "bf16", "f64"):
        if isinstance(a, bool) or not isinstance(a, (int, float)) and not hasattr(a, "__float__"):
            raise TypeError(f"`{p['name']}` is a {dt} scalar, got {type(a).__name__}")
        x = float(a)
        if dt == "f64":
            return x, ctypes.c_double
        if dt == "f32":
            return x, ctypes.c_float
        if dt == "f16":
            import numpy as np
            return int(np.array(x, dtype=np.float16).view(np.uint16)), ctypes.c_uint16
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        if x != x:
            return 0x7FC0, ctypes.c_uint16
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF, ctypes.c_uint16
    if dt not in _INT_SCALARS:
        raise TypeError(f"`{p['name']}`: scalar dtype {dt} cannot be passed to a kernel")
    ct, lo, hi = _INT_SCALARS[dt]
    if isinstance(a, float) or not hasattr(a, "__index__"):
        raise TypeError(f"`{p['name']}` is an {dt} scalar, got {type(a).__name__} {a!r}")
    v = int(a.__index__())
    if not lo <= v <= hi:
        raise ValueError(f"`{p['name']}` = {v} does not fit the kernel's {dt} parameter "
                         f"({lo} .. {hi})")
    return v, ct



def device_target() -> str:
    """The target of torch's current GPU: ``sm_XY`` (CUDA) or ``gfxNNN`` (ROCm)."""
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no GPU is visible to torch (torch.cuda.is_available() is False)")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if getattr(torch.version, "hip", None):
        return str(getattr(props, "gcnArchName", "gfx942")).split(":")[0]
    return f"sm_{props.major}{props.minor}"


def make_launcher(meta: dict, binary: bytes):
    """The launcher for a cache entry's target."""
    if str(meta.get("target", "")).startswith("gfx"):
        return HipLauncher(meta, binary)
    return CudaLauncher(meta, binary)


class _Args:
    """Argument checks and packing shared by the CUDA and HIP launchers."""

    meta: dict
    params: list
    align: int

    def pack(self, args: Sequence[Any]) -> tuple[tuple, tuple]:
        return _pack(self, args)


class CudaLauncher(_Args):
    """A loaded cubin: call it with ``(grid, args)``."""

    def __init__(self, meta: dict, cubin: bytes) -> None:
        import torch
        drv = _driver()
        self.meta = meta
        self.params = meta["params"]
        torch.cuda.init()
        torch.cuda.current_device()
        ctx = _check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if not int(ctx):
            dev = _check(drv.cuDeviceGet(torch.cuda.current_device()), "cuDeviceGet")
            ctx = _check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
            _check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self._keep = cubin
        self.module = _check(drv.cuModuleLoadData(cubin), "cuModuleLoadData")
        self.func = _check(drv.cuModuleGetFunction(self.module, meta["symbol"].encode()),
                           "cuModuleGetFunction")
        self.smem = int(meta["shared_bytes"])
        if self.smem > 48 * 1024:
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(drv.cuFuncSetAttribute(self.func, attr, self.smem), "cuFuncSetAttribute")
        self.threads = int(meta["threads"])
        self.align = int(meta.get("spec", {}).get("pointer_align", 16))

    def __call__(self, grid: tuple, args: Sequence[Any]) -> None:
        import torch
        drv = _driver()
        vals, types = self.pack(args)
        g = tuple(grid) + (1,) * (3 - len(grid))
        stream = torch.cuda.current_stream().cuda_stream
        _check(drv.cuLaunchKernel(self.func, g[0], g[1], g[2], self.threads, 1, 1, self.smem,
                                  stream, (vals, types), 0), "cuLaunchKernel")


class HipLauncher(_Args):
    """A loaded HSACO code object (AMD, ROCm): call it with ``(grid, args)``."""

    def __init__(self, meta: dict, hsaco: bytes) -> None:
        try:
            from hip import hip
        except ImportError:
            raise RuntimeError("launching on AMD GPUs needs hip-python: pip install "
                               "'ave[amd]'") from None
        except RuntimeError as e:     # hip-python without a ROCm runtime
            raise RuntimeError("launching on AMD GPUs needs the ROCm runtime "
                               f"(libamdhip64.so), which is not installed here ({e})") from None
        self.hip = hip
        self.meta = meta
        self.params = meta["params"]
        self.align = int(meta.get("spec", {}).get("pointer_align", 16))
        self.threads = int(meta["threads"])
        self.smem = 0                 # LDS is allocated statically in the code object
        self._keep = hsaco
        try:
            err, self.module = hip.hipModuleLoadData(hsaco)
        except RuntimeError as e:     # hip-python loads libamdhip64.so at the first call
            raise RuntimeError("launching on AMD GPUs needs the ROCm runtime "
                               f"(libamdhip64.so), which is not installed here ({e})") from None
        self._check(err, "hipModuleLoadData")
        err, self.func = hip.hipModuleGetFunction(self.module, meta["symbol"].encode())
        self._check(err, "hipModuleGetFunction")

    def _check(self, err: Any, what: str) -> None:
        if int(err) != 0:
            raise RuntimeError(f"HIP error in {what}: {err}")

    def __call__(self, grid: tuple, args: Sequence[Any]) -> None:
        import torch
        vals, types = self.pack(args)
        g = tuple(grid) + (1,) * (3 - len(grid))
        holders = [t(v) for v, t in zip(vals, types)]
        ptrs = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
        stream = torch.cuda.current_stream().cuda_stream
        err = self.hip.hipModuleLaunchKernel(self.func, g[0], g[1], g[2], self.threads, 1, 1,
                                             self.smem, stream, kernelParams=ptrs, extra=None)
        self._check(err[0] if isinstance(err, tuple) else err, "hipModuleLaunchKernel")
