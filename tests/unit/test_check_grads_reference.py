"""Where check-grads computes its references (vjplint.gradcheck.reference; issue #44 item 6): on
a CPU or a GPU, in float64 on that device as always; on a TPU, whose float64 is missing or
emulated, on the CPU in float64, said in the report. Decided without a TPU: the platform name and
the CPU devices are passed in."""

from vjplint.gradcheck.reference import cpu_devices, reference_device


class _Device:
    def __init__(self, name):
        self.name = name


class _Jax:
    def __init__(self, cpus):
        self.cpus = cpus

    def devices(self, backend=None):
        assert backend == "cpu"
        if self.cpus is None:
            raise RuntimeError("Backend 'cpu' failed to initialize: not in JAX_PLATFORMS")
        return self.cpus


def test_a_device_with_float64_keeps_today_s_behaviour():
    cpu = _Device("cpu0")
    for platform in ("cpu", "gpu", "cuda", "rocm", "CUDA"):
        assert reference_device(platform, [cpu]) == (None, "")


def test_a_tpu_takes_its_references_to_the_first_cpu_device_in_float64():
    first, second = _Device("cpu0"), _Device("cpu1")
    device, note = reference_device("tpu", [first, second])
    assert device is first
    assert note == "references in float64 on the CPU: tpu has no native float64"


def test_an_unknown_accelerator_is_treated_as_lacking_float64():
    cpu = _Device("cpu0")
    device, note = reference_device("METAL", [cpu])
    assert device is cpu
    assert note == "references in float64 on the CPU: metal has no native float64"


def test_without_a_cpu_device_the_report_says_the_references_stay_in_float32():
    assert reference_device("tpu", []) == (
        None, "references in float32 on tpu: it has no native float64, and no CPU device is available "
        "(JAX_PLATFORMS=tpu hides it: `tpu,cpu` gives float64 references and host callbacks a device)")


def test_cpu_devices_is_empty_when_the_cpu_backend_is_off():
    cpus = [_Device("cpu0")]
    assert cpu_devices(_Jax(cpus)) == cpus
    assert cpu_devices(_Jax(None)) == []


def _outcome(reference):
    from pathlib import Path

    from vjplint.diagnostics import Position
    from vjplint.gradcheck.api import ModuleJob, Outcome, Target
    from vjplint.settings.config import Config
    from vjplint.verify.api import FunctionReport, HarnessOutcome, _apply_events

    report = FunctionReport("ops.py", "soft", 6, "unverified")
    start = {"event": "start", "device": "TPU_0", "device_kind": "TPU v5 lite", "jax_version": "0.10.2",
             **({"reference": reference} if reference else {})}
    inputs = [{"name": "x", "role": "diff", "value": "float32[3]", "source": "EXAMPLE_ARGS() in the module"}]
    _apply_events(HarnessOutcome([start, {"event": "imported"}, {"event": "begin", "name": "soft"},
                                  {"event": "function", "name": "soft", "status": "verified", "reason": "",
                                   "checks": [], "inputs": inputs}, {"event": "done"}], 0, False, ""),
                  [report], 60.0)
    target = Target("soft", "vjp", 6, Position(6, 1), Position(6, 5), {"qualname": "soft"})
    return Outcome(ModuleJob("ops.py", Path("ops.py"), "", Config()), target, report)


def test_the_summary_and_the_report_say_where_the_references_ran():
    from vjplint.gradcheck import report

    note = "references in float64 on the CPU: tpu has no native float64"
    outcome = _outcome(note)
    assert outcome.report.reference == note and outcome.status == "passed"
    assert report.summary([outcome], 1, 1.0) == (
        "check-grads: 1 custom derivative in 1 module on TPU_0 (TPU v5 lite), JAX 0.10.2 (references in float64 on "
        "the CPU: tpu has no native float64), 1.0 s: 1 passed, 0 failed, 0 not checked.")
    assert report.to_json([outcome])[0]["reference"] == note
    plain = _outcome("")  # a CPU or a GPU: the report is as before, no "reference" key
    assert "references" not in report.summary([plain], 1, 1.0)
    assert "reference" not in report.to_json([plain])[0]
