"""Where check-grads computes its references (issue #44, item 6): the finite differences and the
primal's own autodiff that a rule is compared with. On a device with float64 of its own (a CPU, a
GPU) the whole check runs there in float64, as it always has. On one without (a TPU: float64 is
unavailable or emulated), the rule runs on that device at the inputs' dtype, and the references are
computed on the CPU in float64, so that finite differences keep their digits; the report says so.

Only the standard library: the check-grads child loads this module by its path (it runs under
`python -I`), and vjplint's tests import it to decide without a TPU (the platform name and the CPU
devices are passed in).
"""

# Platforms whose float64 is native (jax.Device.platform). Any other (tpu, METAL, an unknown
# plugin) is treated as lacking it: references on the CPU when there is one.
NATIVE_FLOAT64 = frozenset({"cpu", "gpu", "cuda", "rocm"})


def reference_device(platform, cpu_devices):
    """(the device for the references or None, the note the report shows or "").

    None with no note: the check runs on the default device in float64, references included (a
    CPU or a GPU). A CPU device with a note: the default device lacks float64; the references go
    to that CPU device in float64 while the rule runs on the default device. None with a note: no
    CPU device is available either; everything runs at the inputs' dtype (float32)."""
    platform = str(platform or "").lower()
    if platform in NATIVE_FLOAT64:
        return None, ""
    if cpu_devices:
        return cpu_devices[0], "references in float64 on the CPU: {} has no native float64".format(platform)
    return None, ("references in float32 on {}: it has no native float64, and no CPU device is available "
                  "(JAX_PLATFORMS={} hides it: `{},cpu` gives float64 references and host callbacks a "
                  "device)".format(platform, platform, platform))


def cpu_devices(jax):
    """JAX's CPU devices, or [] when the CPU backend is not enabled (JAX_PLATFORMS=tpu)."""
    try:
        return list(jax.devices("cpu"))
    except RuntimeError:
        return []
