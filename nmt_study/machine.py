"""Which processor a run was trained on: what makes its minutes comparable."""

import os
import platform


def cpu_fingerprint(cpuinfo: str | None = None) -> str:
    """What makes a run's minutes comparable: the processor's model, family and
    model number, its widest vector unit and the core count, from
    /proc/cpuinfo where there is one ("AMD EPYC, family 25 model 1, avx2, 2
    cores"). Recorded with each run, so that a plan estimates from runs on
    the same kind of processor."""
    from nmt import cpu_flags, cpuinfo_fields, read_cpuinfo

    cpuinfo = read_cpuinfo() if cpuinfo is None else cpuinfo
    fields = cpuinfo_fields(cpuinfo)
    flags = cpu_flags(cpuinfo)
    vector = next(
        (
            f
            for f in ("amx_bf16", "avx512_bf16", "avx512f", "avx2", "avx", "neon", "asimd")
            if f in flags or f in fields.get("Features", "").split()
        ),
        "no avx",
    )
    name = fields.get("model name") or platform.processor() or platform.machine()
    family = (
        f", family {fields['cpu family']} model {fields['model']}"
        if "cpu family" in fields and "model" in fields
        else ""
    )
    return f"{name}{family}, {vector}, {os.cpu_count()} cores"
