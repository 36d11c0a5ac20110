"""Timing: warm-up, rounds of steps, medians, and the CPU load of other processes.

The machine may be shared, so every timed round also records how many CPUs the *other*
processes kept busy meanwhile: the machine's busy time from /proc/stat minus this process's
own (and its waited-for children's) CPU time, over the round's wall time.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (None where /proc/stat is missing)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal ...
    values = [int(v) for v in fields[1:]]
    busy = values[0] + values[1] + values[2] + sum(values[5:8])
    return busy / CLOCK_TICKS


def own_cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of the children it has waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class LoadProbe:
    """Measures the other processes' load (in CPUs) over a `with` block."""

    def __enter__(self) -> LoadProbe:
        self._busy0 = machine_busy_seconds()
        self._own0 = own_cpu_seconds()
        self._wall0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._wall0
        busy1 = machine_busy_seconds()
        own = own_cpu_seconds() - self._own0
        self.own_cpus = own / wall if wall > 0 else None
        if self._busy0 is None or busy1 is None or wall <= 0:
            self.other_cpus = None
        else:
            self.other_cpus = max(0.0, (busy1 - self._busy0 - own) / wall)


@dataclass
class Timing:
    """Seconds per step of each timed round, and the other processes' load in each round."""

    round_seconds: list[float] = field(default_factory=list)
    round_load: list[float | None] = field(default_factory=list)
    round_own: list[float | None] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.round_seconds)

    @property
    def load(self) -> float | None:
        loads = [v for v in self.round_load if v is not None]
        return statistics.mean(loads) if loads else None

    @property
    def own(self) -> float | None:
        """CPUs this process kept busy (its threads): checks the thread setting took effect."""
        own = [v for v in self.round_own if v is not None]
        return statistics.mean(own) if own else None

    def add(self, per_step: float, probe: LoadProbe) -> None:
        self.round_seconds.append(per_step)
        self.round_load.append(probe.other_cpus)
        self.round_own.append(probe.own_cpus)


@dataclass(frozen=True)
class Plan:
    """How long to measure: warm-up time, the length of a round, and how many rounds."""

    warmup_s: float = 0.3
    round_s: float = 0.25
    rounds: int = 7
    min_warmup_steps: int = 3
    profile_s: float = 1.0  # tfc: seconds of TFC_PROFILE-style per-kernel timing (0: none)

    @staticmethod
    def quick() -> Plan:
        return Plan(warmup_s=0.02, round_s=0.03, rounds=3, min_warmup_steps=1, profile_s=0.0)


def time_steps(step: Callable[[int], object], sync: Callable[[object], None], plan: Plan) -> Timing:
    """Time `step(i)` (i counts up from 0): warm up, pick a round length of about plan.round_s,
    then plan.rounds rounds; `sync(last result)` waits for asynchronous work at a round's end."""
    i = 0
    start = time.perf_counter()
    steps = 0
    while steps < plan.min_warmup_steps or time.perf_counter() - start < plan.warmup_s:
        out = step(i)
        i += 1
        steps += 1
    sync(out)
    per_step = max((time.perf_counter() - start) / steps, 1e-7)
    n = max(1, int(plan.round_s / per_step))
    timing = Timing()
    for _ in range(plan.rounds):
        with LoadProbe() as probe:
            t0 = time.perf_counter()
            for _ in range(n):
                out = step(i)
                i += 1
            sync(out)
            elapsed = time.perf_counter() - t0
        timing.add(elapsed / n, probe)
        n = max(1, int(plan.round_s / max(elapsed / n, 1e-7)))
    return timing
