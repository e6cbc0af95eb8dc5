#!/usr/bin/env python3
"""Run ON THE GPU MACHINE: loads one safetensors model into GPU memory with Phoenix
(`./phoenix load --device 0`), with safetensors.torch.load_file(device="cuda"), and with
PyTorch's cuFile path (torch.cuda.gds), side by side on the same file in one run, page cache
warm; then Phoenix cold (drop_caches) beside a parallel O_DIRECT reader. Prints one JSON
object. Usage: load_bench.py MODEL.safetensors [--repeat 3] [--settle SECONDS]

torch.cuda.gds is measured twice: as PyTorch runs it (GdsFile opens the file O_DIRECT, so
cuFile's compatibility mode reads the disk), and in a child process whose open() drops O_DIRECT
(scripts/gpu/no_odirect.c), which reads the same file through the page cache.

--settle pauses before every measurement, for every reader alike: right after a process frees
gigabytes of device memory (each reader's process does), the next transfer on the GPU runs
about 10 % slower for a moment (phoenix-native/tests/gpu/load_shape.cu, docs/benchmarks.md),
which would otherwise penalise whichever reader happens to follow another."""
import json, os, statistics, subprocess, sys, time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOENIX = os.path.join(ROOT, "phoenix")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def warm(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def phoenix_load(path, extra=()):
    out = json.loads(sh([PHOENIX, "load", path, "--device", "0", "--json", *extra]))
    return out["gb_per_s"], out


def phoenix_ceiling(path, direct=False):
    """The library's own bounce rate on the same file: one batch of 64 MiB requests."""
    args = [PHOENIX, "bench", "--file", path, "--device", "0", "--no-sweep", "--json", "--quiet",
            "--repeat", "1" if direct else "3"]
    if direct:
        args += ["--direct"]
    return json.loads(sh(args))["whole_file"]


def safetensors_load(path):
    from safetensors.torch import load_file
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tensors = load_file(path, device="cuda")
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    n = sum(t.numel() * t.element_size() for t in tensors.values())
    del tensors
    torch.cuda.empty_cache()
    return os.path.getsize(path) / secs / 1e9, n


def fake_udev(path):
    """cuFile's compatibility mode wants udev data the VM lacks (reference/cufile-abi.md):
    every block device gets E:ID_FS_USAGE=filesystem."""
    os.makedirs("/run/udev/data", exist_ok=True)
    fstypes = {}
    for line in open("/proc/self/mountinfo"):
        parts = line.split()
        fstypes[parts[2]] = parts[parts.index("-") + 1]
    for dev in os.listdir("/sys/class/block"):
        try:
            majmin = open(f"/sys/class/block/{dev}/dev").read().strip()
        except OSError:
            continue
        with open(f"/run/udev/data/b{majmin}", "w") as f:
            f.write(f"E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE={fstypes.get(majmin, 'ext4')}\n")


def gds_diagnostics(path):
    st = os.stat(path)
    lines = [f"st_dev {os.major(st.st_dev)}:{os.minor(st.st_dev)}"]
    for line in open("/proc/self/mountinfo"):
        if line.split()[2] == f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}":
            lines.append(line.strip())
    lines.append("udev: " + " ".join(sorted(os.listdir("/run/udev/data"))))
    for log in ("cufile.log", os.path.join(ROOT, "cufile.log")):
        if os.path.exists(log):
            lines += open(log).read().splitlines()[-15:]
            break
    return lines


def gds_load(path):
    """torch.cuda.gds: one read of the whole file into one registered uint8 tensor."""
    import torch.cuda.gds as gds
    size = os.path.getsize(path)
    t = torch.empty(size, dtype=torch.uint8, device="cuda")
    storage = t.untyped_storage()
    gds.gds_register_buffer(storage)
    f = gds.GdsFile(path, os.O_RDONLY)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    f.load_storage(storage, 0)
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    gds.gds_deregister_buffer(storage)
    del f, t, storage
    torch.cuda.empty_cache()
    return size / secs / 1e9


def gds_page_cache_runs(path, n):
    """torch.cuda.gds again, in a child process whose open() drops O_DIRECT
    (scripts/gpu/no_odirect.c): the same torch and cuFile code, reading through the page cache
    as the reference's 18.7-22.1 GB/s did, instead of from the disk."""
    so = os.path.join(ROOT, "build", "gpu", "no_odirect.so")
    if not os.path.exists(so):
        os.makedirs(os.path.dirname(so), exist_ok=True)
        sh(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", so,
            os.path.join(ROOT, "scripts", "gpu", "no_odirect.c"), "-ldl"])
    out = sh([sys.executable, os.path.abspath(__file__), path, "--gds-only", str(n)],
             env={**os.environ, "LD_PRELOAD": so})
    return json.loads(out.strip().splitlines()[-1])


def main():
    path = sys.argv[1]
    if "--gds-only" in sys.argv:  # the child of gds_page_cache_runs
        n = int(sys.argv[sys.argv.index("--gds-only") + 1])
        torch.zeros(1, device="cuda")
        warm(path)
        print(json.dumps([gds_load(path) for _ in range(n)]))
        return
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    settle_s = float(sys.argv[sys.argv.index("--settle") + 1]) if "--settle" in sys.argv else 0.0

    def settle():
        if settle_s > 0:
            time.sleep(settle_s)
    size = os.path.getsize(path)
    torch.zeros(1, device="cuda")  # CUDA context outside the timings
    warm(path)
    res = {"file": path, "bytes": size, "repeat": repeat, "settle_seconds": settle_s, "runs": {}}
    runs = {"phoenix_load": [], "safetensors_load_file": [], "torch_gds": [], "phoenix_bounce_ceiling": []}
    gds_error = None
    try:
        fake_udev(path)
    except OSError as e:
        gds_error = f"udev: {e}"
    for _ in range(repeat):
        settle()
        runs["phoenix_bounce_ceiling"].append(phoenix_ceiling(path)["phoenix_gbps"])
        settle()
        runs["phoenix_load"].append(phoenix_load(path)[0])
        settle()
        runs["safetensors_load_file"].append(safetensors_load(path)[0])
        settle()
        if gds_error is None:
            try:
                runs["torch_gds"].append(gds_load(path))
            except Exception as e:  # reported, not hidden
                gds_error = f"{type(e).__name__}: {e}"
    if gds_error is None:
        try:
            runs["torch_gds_page_cache"] = gds_page_cache_runs(path, repeat)
        except (OSError, subprocess.CalledProcessError, ValueError) as e:
            res["torch_gds_page_cache_error"] = f"{type(e).__name__}: {e} {getattr(e, 'stderr', '')[-2000:]}"
    res["runs"] = runs
    med = {k: statistics.median(v) for k, v in runs.items() if v}
    res["median_gbps"] = med
    res["torch_gds_error"] = gds_error
    if gds_error:
        res["torch_gds_diagnostics"] = gds_diagnostics(path)
    if "phoenix_load" in med:
        p = med["phoenix_load"]
        res["phoenix_vs_bounce_ceiling"] = p / med["phoenix_bounce_ceiling"]
        res["phoenix_vs_safetensors"] = p / med["safetensors_load_file"]
        if "torch_gds" in med:
            res["phoenix_vs_torch_gds"] = p / med["torch_gds"]
        if "torch_gds_page_cache" in med:
            res["phoenix_vs_torch_gds_page_cache"] = p / med["torch_gds_page_cache"]
    # peak host RSS of a device load: bounce slots, not the model, should decide it
    settle()
    _, detail = phoenix_load(path)
    res["phoenix_load_detail"] = {k: v for k, v in detail.items() if k != "tensors"}
    # the same load without the progress listener's waves, and a second CLI run for spread
    settle()
    res["phoenix_load_again_gbps"] = phoenix_load(path)[0]
    # cold cache: a parallel O_DIRECT reader (8 threads x 8 MiB) beside Phoenix after drop_caches
    try:
        drop_caches()
        res["cold_odirect_parallel_gbps"] = phoenix_ceiling(path, direct=True)["ceiling_gbps"]
        drop_caches()
        res["cold_phoenix_load_gbps"] = phoenix_load(path)[0]  # picks O_DIRECT: the file is not cached
        drop_caches()
        res["cold_phoenix_load_buffered_gbps"] = phoenix_load(path, ["--buffered"])[0]
        res["cold_phoenix_vs_odirect"] = res["cold_phoenix_load_gbps"] / res["cold_odirect_parallel_gbps"]
    except (OSError, subprocess.CalledProcessError) as e:
        res["cold_error"] = str(e)
    print(json.dumps(res, indent=1))
    print(f"SUMMARY load {med.get('phoenix_load', 0):.2f} GB/s, bounce ceiling {med.get('phoenix_bounce_ceiling', 0):.2f}, "
          f"safetensors {med.get('safetensors_load_file', 0):.2f}, torch.cuda.gds {med.get('torch_gds', 0):.2f} "
          f"(through the page cache {med.get('torch_gds_page_cache', 0):.2f})", file=sys.stderr)


if __name__ == "__main__":
    main()
