#!/usr/bin/env python3
"""Validates every WGSL golden (tests/codegen/golden/*.wgsl) with a real
WebGPU implementation: wgpu-py (wgpu-native, whose naga front end is the
WGSL validator) compiles each module and creates a compute pipeline for
each of its entry points, with the pipeline constants rk_wg_x/y/z set.

Exit status 0 when all pass, 1 on a failure, 77 (ctest's skip) when
python's wgpu package or a WebGPU adapter is missing (scripts/deps.sh
installs them as optional test dependencies; any adapter works, e.g.
Mesa's lavapipe CPU Vulkan driver).

Usage: validate_wgsl.py GOLDEN_DIR
"""
import glob
import os
import re
import sys

SKIP = 77


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "golden")
    try:
        import wgpu  # noqa: F401
    except Exception as e:  # ImportError, or a missing wgpu-native library
        print("SKIP: no WGSL validator: python3 cannot import wgpu (%s); "
              "scripts/deps.sh installs it" % e)
        return SKIP
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="low-power")
        if adapter is None:
            raise RuntimeError("request_adapter returned None")
        device = adapter.request_device_sync()
    except Exception as e:
        print("SKIP: no WGSL validator: no WebGPU adapter (%s); install a "
              "Vulkan driver such as mesa-vulkan-drivers (lavapipe)" % e)
        return SKIP
    files = sorted(glob.glob(os.path.join(golden, "*.wgsl")))
    if not files:
        print("FAIL: no .wgsl files under %s" % golden)
        return 1
    failures = 0
    for path in files:
        name = os.path.basename(path)
        src = open(path).read()
        entries = re.findall(r"@compute[^\n]*\nfn (\w+)\(", src)
        try:
            module = device.create_shader_module(code=src, label=name)
            for entry in entries:
                device.create_compute_pipeline(
                    layout="auto",
                    compute={"module": module, "entry_point": entry,
                             "constants": {"rk_wg_x": 16, "rk_wg_y": 16,
                                           "rk_wg_z": 1}},
                    label=name + ":" + entry)
            print("ok   %s (%s)" % (name, ", ".join(entries)))
        except Exception as e:
            failures += 1
            print("FAIL %s:\n%s" % (name, e))
    print("%d of %d WGSL files valid (%s)" % (
        len(files) - failures, len(files), adapter.info.get("device", "?")))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
