"""Build the benchmark's compiled modules for the installed torch and interpreter, without
running anything: ``python -P -m bench.native [NAME ...]`` (default: every one). They
are otherwise built at first use (``built_module``); this shows a build error's whole
output, or builds ahead of a run."""

from __future__ import annotations

import argparse
import importlib
import sys

#: name -> its builder module (``MODULE``, ``SOURCES``, ``build(out)``)
BUILDERS = {
    "peers_native": "bench.native.peers_native_build",
    "batched_read": "bench.native.batched_read_build",
    "owned_prototype": "bench.native.owned_prototype_build",
    "internal_fixes": "proposal.fixes.internal_fixes_build",
    "cuda_core_consumer": "bench.native.cuda_core_consumer_build",
    "c_shims": "bench.c_shims.consumer_build",
    "unpack_launcher": "bench.native.unpack_launcher_build",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"what to build: {', '.join(BUILDERS)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BUILDERS]
    if unknown:
        parser.error(f"no such module: {', '.join(unknown)} (choose from {', '.join(BUILDERS)})")
    import torch

    from bench.native import build_dir, torch_version

    for name in args.names or BUILDERS:
        out = build_dir(torch_version(torch))
        if name == "cuda_core_consumer":  # one build per cuda-core release
            from bench.native import cuda_core_consumer as cc

            if cc.cuda_core_version() is None:
                print(f"{name}: skipped, cuda-core is not installed", flush=True)
                continue
            out = cc.build_folder(torch, cc.cuda_core_version())
        builder = importlib.import_module(BUILDERS[name])
        print(f"{name}: {builder.build(out)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
