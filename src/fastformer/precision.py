"""Whether bfloat16 autocast pays on this CPU.

`--bf16` (and the shipped student's fine_tuning.json, which asks for it) autocasts a run's matrix products to bfloat16
on the CPU: where oneDNN has bfloat16 kernels for the CPU (AVX-512 or AMX), faster than float32 (1.8x for a converted
MiniLM distilling on one core with AVX512-BF16). Where it has none (AVX2 only, as some AMD EPYC machines here), torch's
bf16 matrix product falls back to a scalar loop on one thread: the shipped student's fine-tuning step of 8 x 512
tokens ran at 58.7 tokens/s against 1,334 in float32 (22.7x slower, the teacher's 20.4x; 2 threads of an AMD EPYC,
`python benchmarks/distill/cpu_bf16.py`). There a run asked for bf16 trains and scores in float32 instead, and says so
once; `FASTFORMER_CPU_BF16=1` forces bf16 (to study its numerics), `=0` refuses it on any CPU. What the run asked
stays in run_config.json (a resume on another machine continues it); what it used is metrics.json's
`train.bf16_autocast`.
"""

from __future__ import annotations

import functools
import os
import sys

import torch

FORCE = "FASTFORMER_CPU_BF16"  # 1: bf16 autocast on any CPU; 0: never; unset: where the CPU multiplies bfloat16
_said = []  # the note, once per process


@functools.cache
def cpu_multiplies_bf16() -> bool:
    """Whether this CPU has bfloat16 matrix kernels (oneDNN's check, which torch's CPU matmul dispatch follows: AVX-512
    or AMX on x86, BF16 instructions on ARM). Unknown (an older torch without the check): assumed yes, as before."""
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    try:
        return bool(check()) if check is not None else True
    except RuntimeError:
        return True


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
            f"--bf16: float32 instead of bfloat16 autocast: this CPU has no bfloat16 matrix kernels (on x86: no "
            f"AVX-512 or AMX), where bf16 runs a fine-tuning step ~20x slower than float32 ({FORCE}=1 forces it)",
            file=sys.stderr,
        )
    return False
