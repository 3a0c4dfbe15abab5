"""Whether bfloat16 autocast pays on this CPU.

`--bf16` (and the shipped student's fine_tuning.json, which asks for it) autocasts a run's matrix products to bfloat16
on the CPU. It pays only where the CPU has bfloat16 dot-product instructions: AVX512_BF16 or AMX on x86 (an AMD EPYC
with AVX512_BF16: a Linear 384 -> 1,536 forward + backward 2.0x faster than float32, the shipped student's fine-tuning
step 1.7x, a converted MiniLM distilling 1.8x), BF16 on ARM. Elsewhere torch still sends bf16 products to oneDNN
wherever the CPU has AVX-512 (avx512bw/vl/dq, its check), and oneDNN emulates them there in float32 with conversions:
on that EPYC with oneDNN capped at AVX512_CORE (what a Skylake, Cascade Lake or Ice Lake Xeon has) the same Linear ran
2.5x slower than in float32, the student's fine-tuning step 2.1x. Without AVX-512 (AVX2 only, as some AMD EPYC machines
here) torch's bf16 product falls back to a scalar loop on one thread: the shipped student's fine-tuning step of 8 x 512
tokens ran at 58.7 tokens/s against 1,334 in float32 (22.7x slower). All measured by
`python benchmarks/distill/cpu_bf16.py` (docs/RESULTS.md). On such CPUs a run asked for bf16 trains and scores in
float32 instead, and says so once; `FASTFORMER_CPU_BF16=1` forces bf16 (to study its numerics), `=0` refuses it on any
CPU. What the run asked stays in run_config.json (a resume on another machine continues it); what it used is
metrics.json's `train.bf16_autocast`.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from pathlib import Path

import torch

FORCE = "FASTFORMER_CPU_BF16"  # 1: bf16 autocast on any CPU; 0: never; unset: where the CPU multiplies bfloat16
_said = []  # the note, once per process

# (name in results, /proc/cpuinfo flag), widest first: the matrix instructions that set a CPU's speed here
CPU_ISAS = (("amx", "amx_bf16"), ("avx512bf16", "avx512_bf16"), ("avx512", "avx512f"), ("avx2", "avx2"))
# oneDNN's instruction-set caps (ONEDNN_MAX_CPU_ISA) under which it has no bfloat16 dot product, emulating it
ONEDNN_CAPS_WITHOUT_BF16 = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI")


@functools.cache
def cpuinfo() -> tuple[str | None, frozenset[str]]:
    """/proc/cpuinfo's first model name and flags (None and nothing where there is none: macOS, Windows), read once
    per process (the file repeats them for every core)."""
    model, flags = None, frozenset()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if model is None and line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif not flags and line.startswith(("flags", "Features")):
                flags = frozenset(line.split(":", 1)[1].split())
            if model is not None and flags:
                break
    except OSError:
        pass
    return model, flags


def cpu_isa() -> str:
    """The widest matrix instructions this CPU has: amx, avx512bf16, avx512 or avx2 on x86 (from /proc/cpuinfo),
    else torch's own name for its kernels (`torch.backends.cpu.get_cpu_capability()`, lower case). The processor's name
    does not tell them apart: this workplace's "AMD EPYC" had AVX2 only in some sessions and AVX-512 with BF16 in
    others, 20x apart in bf16 autocast."""
    flags = cpuinfo()[1]
    for name, flag in CPU_ISAS:
        if flag in flags:
            return name
    return torch.backends.cpu.get_cpu_capability().lower()


def onednn_cap() -> str | None:
    """The instruction set oneDNN is capped at (ONEDNN_MAX_CPU_ISA, or its older name DNNL_MAX_CPU_ISA), upper case."""
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
    return cap.strip().upper() if cap else None


def onednn_bf16() -> bool:
    """torch's check for sending bfloat16 products to oneDNN: AVX-512 (avx512bw/vl/dq) or AMX on x86, BF16 on ARM.
    Unknown (an older torch without the check): yes, as before."""
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    try:
        return bool(check()) if check is not None else True
    except RuntimeError:
        return True


def bf16_pays(onednn: bool, machine: str, flags: frozenset[str] | set[str], cap: str | None) -> bool:
    """Whether bfloat16 products beat float32 on a CPU: oneDNN takes them (`onednn`) and, on x86 (`machine`), the CPU
    has bfloat16 dot products (AVX512_BF16 or AMX among /proc/cpuinfo's `flags`) that oneDNN may use (`cap`, its
    ONEDNN_MAX_CPU_ISA). No flags known (macOS, Windows): oneDNN's check alone."""
    if not onednn:
        return False
    if machine.lower() not in ("x86_64", "amd64", "i386", "i686"):
        return True
    if cap in ONEDNN_CAPS_WITHOUT_BF16:
        return False
    return not flags or "avx512_bf16" in flags or "amx_bf16" in flags


@functools.cache
def cpu_multiplies_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 faster than float32 (`bf16_pays` for this machine)."""
    return bf16_pays(onednn_bf16(), platform.machine(), cpuinfo()[1], onednn_cap())


def cpu_bf16_autocast(asked: bool) -> bool:
    """Whether a CPU run (or a folder's scoring) that `asked` for bf16 autocast gets it: yes where the CPU multiplies
    bfloat16 (or FORCE=1), else no, said once per process on stderr."""
    if not asked:
        return False
    forced = os.environ.get(FORCE, "")
    if forced not in ("", "0", "1"):
        raise SystemExit(f"fastformer: {FORCE}={forced!r}: 1 forces bfloat16 autocast on this CPU, 0 refuses it")
    if forced:
        return forced == "1"
    if cpu_multiplies_bf16():
        return True
    if not _said:
        _said.append(True)
        print(
            f"--bf16: float32 instead of bfloat16 autocast: this CPU has no bfloat16 dot products (on x86: AVX512_BF16 "
            f"or AMX), where bf16 runs a fine-tuning step slower than float32 (~2x with AVX-512, ~20x without; "
            f"{FORCE}=1 forces it)",
            file=sys.stderr,
        )
    return False
