"""A launch-bound GPU step: one small CUDA kernel, launched through cuda.core, with N
tensor arguments bridged per launch (scenario 7, ``bench_launch.py``).

The workloads where bridging matters are those whose host time per launch is the
bottleneck: many small kernels, each taking a few tensors. ``add_one_<N>`` adds 1 to
every element of N 32x32 float32 tensors (microseconds of GPU time), and every launch
bridges its N tensors first, as a kernel library does: ``launch(stream, config, kernel,
f(x0).ptr, ..., f(xN-1).ptr)``. ``Step`` compiles the kernels (cuda.core's ``Program``,
NVRTC) and measures per launch the host time, the wall time until the stream ran them
all (``1e9 / wall``: launches per second) and the kernel's GPU time (``gpu_time_ns``).
"""

from __future__ import annotations

import contextlib
import time
import timeit
from dataclasses import dataclass

from bench import protocol as interleave

#: Tensor arguments per launch.
ARITIES = (1, 3, 8)
#: Elements per tensor (a 32x32 float32 tensor, the seed's) and threads per block.
N_ELEMENTS = 32 * 32
THREADS = 256
#: Launches queued behind the spin kernel for one GPU-time sample; well under the
#: driver's pending-launch queue (about a thousand), so the host never blocks on it.
GPU_BURST = 256
#: Spin length, in GPU clock cycles (~10 ms at 1.98 GHz): longer than queuing a burst.
SPIN_CYCLES = 20_000_000
#: Seconds of launches before the first measurement. On the H200 host the first second
#: of launches ran ~1.5 us slower per launch, then settled for the rest of the run (the
#: host's clocks or the driver warming up): a count-based warm-up of a few thousand
#: launches ends inside that second.
WARM_UP_S = 2.0


def kernel_source() -> str:
    """CUDA C++ of ``add_one_<N>`` for every N in ``ARITIES`` and of ``spin``."""
    parts = ['extern "C" __global__ void spin(long long cycles) {\n'
             "  const long long start = clock64();\n"
             "  while (clock64() - start < cycles) {}\n}\n"]
    for n in ARITIES:
        params = ", ".join(f"float* __restrict__ p{i}" for i in range(n))
        body = "".join(f"    p{i}[i] += 1.0f;\n" for i in range(n))
        parts.append(f'extern "C" __global__ void add_one_{n}({params}) {{\n'
                     "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     f"  if (i < {N_ELEMENTS}) {{\n{body}  }}\n}}\n")
    return "\n".join(parts)


def launch_statement(arity: int, arg: str) -> str:
    """The timed statement: one launch whose arguments are ``arg`` formatted with
    ``i`` = 0..arity-1 (``"f(x{i}).ptr"``, ``"x{i}.data_ptr()"``, ``"p{i}"``)."""
    args = ", ".join(arg.format(i=i) for i in range(arity))
    return f"launch(s, c, k, {args})"


class Unavailable(RuntimeError):
    """The step cannot run here (no cuda-core, no CUDA device, no NVRTC); says why."""


@dataclass
class Step:
    """The compiled kernels on one device and what launching them needs.

    ``kernels[n]`` is ``add_one_<n>``; ``stream`` is a cuda.core stream of its own (the
    tensors are made and synchronised on torch's stream before any launch); ``config``
    is ``LaunchConfig(grid=N_ELEMENTS // THREADS, block=THREADS)``.

    A route costs launches per second where its own host time per launch exceeds the
    kernel's GPU time; the step is launch-bound for every route where even the
    unbridged loop (``ints``) takes longer than the kernel. ``gpu_time_ns`` times the
    kernel alone: a spin kernel holds the stream while the host queues ``GPU_BURST``
    launches, so the CUDA events around them see no host gaps. Where the GPU is the
    bottleneck, a round of more launches than the driver queues makes the host wait
    inside ``launch``, so its host time is the GPU's pace: the report then shows no
    bridging share.
    """

    cuda: object
    device: object
    stream: object
    config: object
    kernels: dict
    spin: object
    arch: str

    @classmethod
    def build(cls, device_index: int = 0) -> "Step":
        """Compile ``kernel_source()`` for the device's architecture.

        Raises ``Unavailable`` when cuda-core cannot be imported, sees no device, or
        NVRTC cannot compile (the message carries cuda.core's own error).
        """
        try:
            import cuda.core as cuda
        except Exception as exc:
            raise Unavailable(f"import cuda.core failed: {type(exc).__name__}: {exc}") from exc
        try:
            dev = cuda.Device(device_index)
            dev.set_current()
            arch = "sm_" + "".join(str(x) for x in dev.compute_capability)
            prog = cuda.Program(kernel_source(), "c++", cuda.ProgramOptions(arch=arch))
            mod = prog.compile("cubin")
            kernels = {n: mod.get_kernel(f"add_one_{n}") for n in ARITIES}
            spin = mod.get_kernel("spin")
            stream = dev.create_stream()
        except Exception as exc:
            raise Unavailable(f"cuda.core could not compile or load the kernel: "
                              f"{type(exc).__name__}: {exc}") from exc
        config = cuda.LaunchConfig(grid=N_ELEMENTS // THREADS, block=THREADS)
        return cls(cuda, dev, stream, config, kernels, spin, arch)

    def namespace(self, arity: int, tensors, f=None) -> dict:
        """The names ``launch_statement`` uses: ``launch, s, c, k``, ``x0..``, ``p0..``
        (the tensors' pointers read once) and ``f``."""
        ns = {"launch": self.cuda.launch, "s": self.stream, "c": self.config,
              "k": self.kernels[arity], "f": f}
        for i, x in enumerate(tensors):
            ns[f"x{i}"] = x
            ns[f"p{i}"] = x.data_ptr()
        return ns

    def timing_event(self):
        return self.stream.record(options=self.cuda.EventOptions(timing_enabled=True))

    def contender(self, name: str, stmt: str, namespace: dict, wall: list,
                  context=contextlib.nullcontext) -> interleave.Contender:
        """A contender whose ``run(n)`` returns the host ns per launch of ``n`` launches
        of ``stmt`` (``timeit``, gc already off in ``interleave.measure``) and appends
        the wall ns per launch (until ``Stream.sync()`` returns) to ``wall``. ``context``:
        a factory of a context manager held around the round (an internal fix)."""
        timer = timeit.Timer(stmt, globals=namespace)
        stream = self.stream

        def run(n: int) -> float:
            with context():
                stream.sync()
                start = time.perf_counter_ns()
                host = timer.timeit(n)
                stream.sync()
                wall.append((time.perf_counter_ns() - start) / n)
            return host / n * 1e9

        return interleave.Contender(name, run, "python")

    def gpu_time_ns(self, arity: int, pointers) -> float:
        """GPU ns per launch of ``add_one_<arity>`` on ``pointers``, back to back."""
        cuda, s = self.cuda, self.stream
        s.sync()
        cuda.launch(s, self.config_one(), self.spin, SPIN_CYCLES)
        start = self.timing_event()
        k = self.kernels[arity]
        for _ in range(GPU_BURST):
            cuda.launch(s, self.config, k, *pointers)
        end = self.timing_event()
        end.sync()
        return (end - start) * 1e6 / GPU_BURST

    def warm_up(self, pointer: int, seconds: float = WARM_UP_S) -> int:
        """Launch ``add_one_1`` on ``pointer`` (a tensor of ``N_ELEMENTS`` float32) for
        ``seconds``; returns the launches made."""
        k, launch_, s, c = self.kernels[1], self.cuda.launch, self.stream, self.config
        made, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(1000):
                launch_(s, c, k, pointer)
            made += 1000
        s.sync()
        return made

    def config_one(self):
        return self.cuda.LaunchConfig(grid=1, block=1)
