"""torch.cuda.gds through whichever libcufile the process loaded: tensors of several
dtypes and sizes saved with GdsFile.save_storage and loaded back with load_storage,
registered and unregistered, compared byte for byte (and against the file's bytes).
Exits 1 unless every check passed and the loaded libcufile lies under EXPECT.

    python3 gds_roundtrip.py DIR EXPECT
"""
import ctypes
import os
import sys

import torch
import torch.cuda.gds as gds


def loaded_cufile():
    libs = set()
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) >= 6 and "libcufile" in parts[5]:
            libs.add(os.path.realpath(parts[5]))
    return sorted(libs)


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def bound_library(symbol):
    libc = ctypes.CDLL(None)
    try:
        addr = ctypes.cast(getattr(libc, symbol), ctypes.c_void_p).value
    except AttributeError:  # not in the global scope (torch loaded its libcufile locally)
        return None
    info = DlInfo()
    if not libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)):
        return None
    return os.path.realpath(info.dli_fname.decode())


def main():
    d, expect = sys.argv[1], sys.argv[2]
    torch.cuda.init()
    cases = [
        ("float32 1M", torch.randn(1 << 20, device="cuda")),
        ("bfloat16 3x1023x7 (odd size)", torch.randn(3, 1023, 7, device="cuda").to(torch.bfloat16)),
        ("int8 4097", torch.randint(-128, 127, (4097,), dtype=torch.int8, device="cuda")),
        ("uint8 64 MiB", torch.randint(0, 255, (64 << 20,), dtype=torch.uint8, device="cuda")),
        ("float16 256 MiB", torch.randn(128 << 20, device="cuda").to(torch.float16)),
    ]
    failures = 0
    path = os.path.join(d, "gds-roundtrip.bin")
    for i, (name, t) in enumerate(cases):
        registered = i % 2 == 1
        f = gds.GdsFile(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC)
        src = t.untyped_storage()
        if registered:
            gds.gds_register_buffer(src)
        f.save_storage(src, 0)
        u = torch.empty_like(t)
        u.view(-1).view(torch.uint8).fill_(0xA5)
        dst = u.untyped_storage()
        if registered:
            gds.gds_register_buffer(dst)
        f.load_storage(dst, 0)
        torch.cuda.synchronize()
        same = torch.equal(t.view(-1).view(torch.uint8), u.view(-1).view(torch.uint8))
        with open(path, "rb") as fp:
            disk = fp.read()
        ondisk = disk == bytes(t.cpu().view(-1).view(torch.uint8).numpy().tobytes())
        if registered:
            gds.gds_deregister_buffer(src)
            gds.gds_deregister_buffer(dst)
        del f
        print(f"{name:32s} {t.nbytes:>10d} bytes  {'registered  ' if registered else 'unregistered'}  "
              f"load==save {same}  file==tensor {ondisk}")
        failures += (not same) + (not ondisk)
    os.unlink(path)
    libs = loaded_cufile()
    print("libcufile mapped:", libs)
    # torch's own libcufile may be mapped beside a preloaded one; what counts is which
    # library the process's calls bind to: the global lookup scope's cuFileRead
    bound = bound_library("cuFileRead")
    print("cuFileRead binds to:", bound)
    if expect and expect not in (bound or ""):
        print(f"expected cuFileRead from a library under {expect}")
        failures += 1
    print("gds_roundtrip:", "ok" if failures == 0 else f"FAILED ({failures})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
