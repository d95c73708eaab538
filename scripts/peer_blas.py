"""Names the BLAS a peer (numpy or PyTorch) multiplies with, with its version where the library
says it: imported by scripts/bench_compare.py and scripts/bench_gpt2.py, called in the peer's own
process after it has multiplied (so that the library is loaded).

MKL names its version through PyTorch's build configuration; OpenBLAS through its own
openblas_get_config() (version, DYNAMIC_ARCH, and the core it picked for this CPU); BLIS through
bli_info_get_version_str(). The libraries are found in this process's memory map.

fma_peak() is the ceiling both scripts give shares of: attnviz_bench's fused multiply-add peak of
the instruction set the kernels ran."""
import ctypes
import json
import os
import subprocess


def fma_peak(build, kernels):
    """(benchmark name, GFLOP/s): the fused multiply-add peak of `kernels` ("avx512" or "avx2") on
    every core, by attnviz_bench in the folder `build`; None without that program or when it fails."""
    bench = os.path.join(build, "attnviz_bench")
    name = "BM_FmaPeakAvx512" if kernels == "avx512" else "BM_FmaPeak"
    if not os.path.exists(bench):
        return None
    p = subprocess.run([bench, f"--benchmark_filter={name}/", "--benchmark_format=json", "--benchmark_min_time=1"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None
    return name, json.loads(p.stdout)["benchmarks"][0]["GFLOP/s"]


def loaded_libraries():
    """The shared libraries this process has mapped."""
    try:
        with open("/proc/self/maps") as maps:
            return sorted({line.split()[-1] for line in maps if ".so" in line and "/" in line})
    except OSError:
        return []


def _call_string(path, function):
    try:
        lib = ctypes.CDLL(path)
        f = getattr(lib, function)
    except (OSError, AttributeError):
        return None
    f.restype = ctypes.c_char_p
    value = f()
    return value.decode(errors="replace").strip() if value else None


def describe_loaded():
    """What this process multiplies with: "OpenBLAS 0.3.21 … (core Cooperlake)", "BLIS 0.9.0",
    "MKL", or the reference BLAS."""
    libs = loaded_libraries()
    names = []
    for path in libs:
        base = os.path.basename(path)
        if "openblas" in base:
            config = _call_string(path, "openblas_get_config")
            core = _call_string(path, "openblas_get_corename")
            names.append(f"{config or 'OpenBLAS'}{f' (core {core})' if core else ''}")
        elif base.startswith("libblis"):
            version = _call_string(path, "bli_info_get_version_str")
            names.append(f"BLIS {version or '?'}")
        elif base.startswith("libmkl") and "MKL" not in " ".join(names):
            names.append("MKL")
    if not names:
        blas = [p for p in libs if os.path.basename(p).startswith("libblas.so")]
        if blas:
            names.append(f"reference BLAS ({os.path.realpath(blas[0])}): install libopenblas0-pthread for a fair peer")
    return "; ".join(dict.fromkeys(names)) or "no BLAS library mapped (a built-in GEMM)"


def describe_torch(torch):
    """PyTorch's version and the BLAS its build names (MKL with its version where it has one)
    beside the one it has loaded."""
    config = torch.__config__.show()
    mkl = next((line.strip() for line in config.splitlines() if "Math Kernel Library" in line), None)
    blas_info = next((line.split("BLAS_INFO=", 1)[1].split(",")[0] for line in config.splitlines() if "BLAS_INFO=" in line), None)
    loaded = describe_loaded()
    parts = [f"PyTorch {torch.__version__}"]
    if mkl:
        parts.append(mkl.lstrip("- "))
    elif blas_info:
        parts.append(f"built for BLAS '{blas_info}'")
    parts.append(f"multiplying with {loaded}")
    return ", ".join(parts)
