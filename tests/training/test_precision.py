"""trainer.precision=auto: bf16 where the hardware multiplies bf16 natively."""

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.base.device import cpu_description, cpu_flags, cpuinfo_fields
from nmt.training.precision import resolve_precision
from tests.helpers import train

EPYC = ("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
        "flags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_bf16 avx512_vnni\n"
        "processor\t: 1\nflags\t\t: fpu\n")
SKYLAKE = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_vnni\n"
SAPPHIRE = "flags\t\t: avx512f amx_tile amx_bf16 amx_int8\n"


def test_cpu_flags_are_the_first_flags_line():
    assert cpu_flags(EPYC) == {"fpu", "sse2", "avx2", "avx512f", "avx512bw", "avx512_bf16", "avx512_vnni"}
    assert cpu_flags("no flags here") == set()


def test_cpuinfo_fields_are_the_first_processors():
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nno colon\nprocessor\t: 1\nvendor_id\t: Other\n"
    assert cpuinfo_fields(text) == {"processor": "0", "vendor_id": "AuthenticAMD"}
    assert cpuinfo_fields("") == {}


def test_cpu_description_names_model_family_and_model():
    text = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\ncpu family\t: 25\nmodel\t\t: 1\nprocessor\t: 1\nmodel\t\t: 9\n"
    assert cpu_description(text) == "AMD EPYC 7B13, family 25 model 1"      # the first processor's numbers
    assert cpu_description("model name\t: Some CPU\n") == "Some CPU"       # no numbers: the name alone


@pytest.mark.parametrize("cpuinfo, expected", [(EPYC, "bf16"), (SAPPHIRE, "bf16"), (SKYLAKE, "fp32"), ("", "fp32")])
def test_auto_is_bf16_only_with_native_bf16(cpuinfo, expected):
    assert resolve_precision("auto", torch.device("cpu"), cpuinfo) == expected


@pytest.mark.parametrize("name", ["fp32", "bf16", "fp16"])
def test_an_explicit_precision_is_kept(name):
    assert resolve_precision(name, torch.device("cpu"), EPYC if name == "fp32" else SKYLAKE) == name


def test_auto_trains_with_what_it_resolved(tmp_path, cache_dir, caplog):
    caplog.set_level("INFO", logger="nmt.train")
    trainer = train(tmp_path, "experiment=quickstart", "trainer.max_steps=2", "trainer.val_every=2",
                    "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0", "trainer.precision=auto",
                    cache_dir=cache_dir)
    assert trainer.precision == resolve_precision("auto", torch.device("cpu"))
    assert trainer.precision in ("fp32", "bf16") and trainer.step == 2
    assert f"parameters on cpu, {trainer.precision} (trainer.precision=auto)" in caplog.text


def test_an_unknown_precision_is_one_line(tmp_path, cache_dir):
    with pytest.raises(NmtError, match=r"trainer.precision=fp8: must be one of auto, fp32, bf16, fp16"):
        train(tmp_path, "experiment=quickstart", "trainer.precision=fp8", cache_dir=cache_dir)
