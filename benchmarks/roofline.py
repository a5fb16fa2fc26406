"""Roofline of jaxrl's hot programs: FLOPs and bytes from XLA, time, % of the machine's peaks.

Everything in one process, on one backend (CPU or GPU), in this order:

1. **The machine's peaks, measured in the same run.** Matrix products: a large float32
   ``jnp.dot`` (``n x n`` by ``n x n``, ``2 n^3`` FLOPs), traced with the backend's default
   matmul precision and again under ``jax.default_matmul_precision("highest")`` (on a CPU
   both are float32; on an NVIDIA GPU the default is TF32, "highest" is true float32); the
   best median over the sizes. Memory bandwidth: a large float32 copy written over its
   (donated) input (``4 N`` bytes read, ``4 N`` written) and a reduction (``sum``, ``4 N``
   read), the better of the two. Two references beside them: an *in-cache copy* (an array
   of a core's L2 size, or 16 MiB in a GPU's L2, copied 200 times in one program) and the
   time per op of a chain of 500 dependent 16 x 16 matrix products (each its own kernel).
   And the rate of a matrix product at each shape the programs' layers use, chained
   ``LAYER_PRODUCT_REPEATS`` times in one program (``LAYER_PRODUCTS``: 2,048 x 64 by 64 x 64
   for the Pendulum updates' hidden layers, and 16 of them batched, each with its own
   matrices, as 16 seeds under ``vmap`` make them; 1,024 x 64 by 64 x 64 for the MuJoCo ones;
   256 x 256 by 256 x 256 for DDPG's): the best a product of that size reaches on this
   machine, which on a CPU is well below the large product's.
2. **Per program**: the jitted program is lowered and compiled once (compile time
   recorded); FLOPs and bytes accessed come from XLA's own cost analysis of the compiled
   program (``jax.jit(f).lower(*args).compile().cost_analysis()``), corrected for loops (see
   below); the time is the median of ``--repetitions`` repetitions, each the mean of
   back-to-back calls for about ``--seconds`` seconds, every call from the same inputs (so
   every call does the same work, data-dependent loops included) and blocked until its
   outputs are ready (``jax.block_until_ready``: the per-call latency a caller sees, dispatch
   included). Then achieved GFLOP/s and GB/s, % of each peak, arithmetic intensity
   (FLOPs / byte) against the machine balance (peak FLOP/s / peak B/s), the optimized HLO's
   operation counts (``compiled.as_text()``) and the bound.

**Loops.** XLA's ``cost_analysis()`` counts the body of every ``while`` loop once, whatever
its trip count (checked: a ``lax.scan`` of 10 matrix products reports the FLOPs of one).
jaxrl's updates are loops: ``repeat`` passes (a scan), the critic's Adam steps (a scan),
conjugate gradients and TRPO's line search (``while_loop`` s that stop early). So the script
takes XLA's cost analysis of every loop body separately (the body as the entry of a module
parsed from the optimized HLO text, analysed by the same XLA cost model) and scales it by the
loop's trip count: known trip counts from XLA's own annotation (``known_trip_count``, scans);
data-dependent ones (``conjugate_gradient``, ``backtracking_line_search``, told apart by the
function that built the loop, from the HLO's stack frames) from what the same call did, read
from the program's outputs (``cg_iterations``; line-search backtracks and failures). Both
figures are in the records: ``xla_flops_once`` (XLA's figure as it comes) and ``flops``
(loops counted). ``dot_flops`` is a cross-check: ``2 x output size x contracted size`` of
every matrix product in the optimized HLO (cuBLAS calls included), with the same trip counts.
A loop whose trip count is neither known nor read is counted once and flagged
(``loops_unknown_trips``).

**Bytes.** XLA's "bytes accessed" adds up every operand and result of every op, wherever
it is served from: a program whose arrays stay in cache (jaxrl's updates: 2,048 x 64
activations are 512 KiB) can move more bytes per second than a large copy can. One
correction: XLA counts the whole operand of a fused ``gather`` (sampling 256 transitions
from a replay buffer counts the whole buffer); ``bytes`` counts the gathered rows instead
(``gather_overcount_bytes`` is what was taken off).

**Operations executed.** ``ops`` counts the optimized HLO's kernels per call: every
instruction of the entry and of loop bodies except free ones (parameters, constants,
tuples, ``get-tuple-element``, ``bitcast``), a fusion counting as one, loop bodies times
their trip counts. ``us_per_op`` = time / ops; ``op_floor_pct`` = ops x the small-product
chain's time per op / time, how much of the time running that many small ops would take.

**Bound (the rule).** *compute*-bound if the achieved GFLOP/s is at least 50% of the
measured float32 matmul peak (the "highest" precision peak; on a GPU the % of the TF32 peak
is reported beside it); else *memory*-bound if the achieved GB/s is at least 50% of the
bandwidth peak (the large copy's; for a program that moves more bytes per second than the
large copy, whose bytes then come mostly from cache, the in-cache copy's); else
*latency/overhead*-bound: neither roof is near, which the op count and the time per op show
(many small ops, each too small to use the machine). Arithmetic intensity below the machine
balance means a program could at best be memory-bound; above it, compute-bound.

Programs (the algorithms' own jitted code; shapes from the presets, as ``update_latency.py``):

* ``{npg,trpo}-update-pendulum``: ``jit(agent.update)`` on a 16 x 128 rollout, the
  ``tianshou-pendulum`` preset (obs 3, action 1, [64, 64] tanh, repeat 2, 5 critic steps);
  ``{npg,trpo}-update-mujoco``: the ``mujoco`` preset (obs 17, action 6 as HalfCheetah, 16 x 64
  rollout, repeat 1, 20 critic steps); ``trpo-update-pendulum-preset``: the ``pendulum`` preset
  of the main job (16 x 512 = 8,192 samples, 20 critic steps).
* TRPO's parts at the Pendulum and MuJoCo shapes: ``trpo-prepare-*`` (``prepare_batch``:
  values, GAE, return scaling, advantage normalization, old log-probs), ``trpo-critic-*`` (the
  critic's Adam steps, ``jaxrl.algorithms.on_policy.critic_steps``), ``trpo-actor-step-*``
  (one whole natural-gradient step, ``jaxrl.algorithms.natural_step.actor_step``: gradient,
  CG, line search),
  ``trpo-fvp-*`` (one Fisher-vector product), ``trpo-cg-*`` (conjugate gradients) and
  ``trpo-line-search-*`` (``trpo_rule``'s step: step length and backtracking line search). The
  last three are inner closures of ``actor_step``: they are rebuilt from the public core functions
  (``make_gauss_newton_vector_product``, ``conjugate_gradient``) with the update's shapes and
  its first actor step's inputs (the linearization, gradient, direction), as the notes say.
  NPG's parts are TRPO's: the same critic steps, Fisher-vector products and CG at the same
  shapes (NPG's step is one scaled add, with no line search).
* ``ddpg-update-mujoco``: DDPG's ``[256, 256]`` networks, batch 256 (the ``mujoco`` preset),
  ``jit(sample_batch + update)`` on a filled 100,000-transition buffer, as the drivers run
  it; ``ddpg-update-only-mujoco``: ``jit(agent.update)`` on one sampled batch;
  ``ddpg-update-pendulum``: the ``tianshou-pendulum`` shapes ([128, 128], batch 128, 3-step).
* ``trpo-period-pendulum-preset``: one whole training period of the jitted driver
  (``make_train_loop(...).run_period``, one seed: 4 collections of 16 x 512 env steps on gymnax
  Pendulum-v1, their updates, one 10-episode evaluation), the ``pendulum`` preset;
  ``ddpg-period-pendulum``: the ``tianshou-pendulum`` DDPG period (625 collections of 8 env
  steps, one update each, 10 evaluation episodes).
* ``ddpg-host-step``: one host-driver DDPG step with the ``mujoco`` preset (1 env, 1 update
  per env step, updates from the first step): send the action, step the environment
  (EnvPool or gymnasium Hopper-v5 when MuJoCo is installed, else gymnasium Pendulum-v1),
  observe (one jitted call, ``ddpg-host-observe``), add to the replay buffer, update and act
  with the updated policy (one jitted call, ``ddpg-host-learn``), timed as the driver runs it
  (``HostLoop._collect_and_learn``), and again with each jitted call blocked to split
  the step into the environment, act and learn.

    python benchmarks/roofline.py                     # every program (about 5 minutes on a CPU)
    python benchmarks/roofline.py --quick             # CI smoke run (small sizes, few programs)
    python benchmarks/roofline.py --programs 'trpo-*-pendulum' ddpg-update-mujoco
    python benchmarks/roofline.py --seeds 4096 --programs 'trpo-*-pendulum'   # on a GPU

**Seeds.** ``--seeds N`` (N > 1) measures every jitted program under ``jax.vmap`` over N
seeds, as a run of N vmapped seeds executes it (``jaxrl.training``'s seed axis): typed random
keys are split into N, every other input is repeated N times, so each seed does the same
arithmetic and the data-dependent loops run as one seed's (their trip counts are read from
seed 0). The rows are named ``<program>-x<N>`` and written to ``roofline_<backend>_x<N>.*``;
FLOPs and bytes are the N seeds'. The host step is one seed's and is left out.

On a GPU the same command (a CUDA jaxlib) measures the GPU: ``roofline_gpu.*``. Writes
``roofline_<backend>.{json,csv,png}`` (``results/`` or ``results/quick/``) and prints the
Markdown table. Measure on a quiet machine, outside the test suite (which turns XLA's
optimizations down and fixes the matmul precision: the script warns), and read the warning
that the peaks measured before and after the programs differ: then the machine was busy.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from common import (
    base_parser,
    calls_for,
    command_line,
    import_distributions,
    loadavg,
    machine_info,
    markdown_table,
    mujoco_available,
    output_dir,
    print_machine,
    pyplot,
    save_figure,
    summarize,
    write_csv,
    write_json,
)
from update_latency import spaces, synthetic

COMPUTE_BOUND_FRACTION = 0.5  # of the float32 matmul peak
MEMORY_BOUND_FRACTION = 0.5  # of the bandwidth peak
FREE_OPS = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "bitcast",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "partition-id",
        "replica-id",
    }
)
# Functions whose while loops stop on data (their trip counts come from the program's outputs).
CG_LOOP = "conjugate_gradient"
LINE_SEARCH_LOOP = "backtracking_line_search"


# ================================================================================ HLO analysis
@dataclasses.dataclass
class Instruction:
    name: str
    shape: str
    opcode: str
    operands: list[str]
    attributes: str


@dataclasses.dataclass
class Computation:
    name: str
    text: str
    instructions: list[Instruction]
    shapes: dict[str, str]


_COMMENT = re.compile(r"/\*.*?\*/")
_COMPUTATION_HEAD = re.compile(r"^(ENTRY )?%([\w.\-]+) ")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*)$")
_CALLEE = re.compile(
    r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%([\w.\-]+)"
)
_CALLEES = re.compile(r"\b(branch_computations|called_computations)=\{([^}]*)\}")
_DIMS = re.compile(r"^[a-z0-9]+\[([0-9,]*)\]")


def _balanced(text: str, start: int) -> int:
    """Index just past the parenthesis group opening at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _parse_instruction(line: str) -> Instruction | None:
    match = _INSTRUCTION.match(line)
    if match is None:
        return None
    name, rest = match.groups()
    if rest.startswith("("):  # a tuple type
        end = _balanced(rest, 0)
    else:
        end = rest.find(" ")
    shape, rest = rest[:end], rest[end + 1 :]
    opcode_match = re.match(r"([\w\-]+)\(", rest)
    if opcode_match is None:
        return None
    opcode = opcode_match.group(1)
    close = _balanced(rest, len(opcode))
    operands = re.findall(r"%([\w.\-]+)", rest[len(opcode) : close])
    return Instruction(name, shape, opcode, operands, rest[close:])


def _dims(shape: str) -> list[int]:
    """Dimensions of an array type ``f32[2048,64]{1,0}`` (the first array of a tuple)."""
    shape = shape.lstrip("(")
    match = _DIMS.match(shape)
    if match is None or not match.group(1):
        return []
    return [int(d) for d in match.group(1).split(",")]


_DTYPE_BYTES = {
    "pred": 1,
    "s8": 1,
    "u8": 1,
    "s16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "u64": 8,
    "f64": 8,
    "c64": 8,
}


def _bytes(shape: str) -> float:
    """Bytes of an array type (0 for what is not one)."""
    match = re.match(r"^([a-z0-9]+)\[([0-9,]*)\]", shape)
    if match is None or match.group(1) not in _DTYPE_BYTES:
        return 0.0
    dims = [int(d) for d in match.group(2).split(",") if d]
    return float(_DTYPE_BYTES[match.group(1)] * math.prod(dims))


class HloAnalysis:
    """The optimized HLO of one compiled program: its computations, while loops, operation
    counts and matrix-product FLOPs, and XLA's cost analysis of any computation (the
    computation as the entry of a module parsed from the same text)."""

    def __init__(self, text: str, client: Any, host_client: Any = None) -> None:
        self.text = _COMMENT.sub("", text)
        # Cost models to try, in order: the device's, then the host CPU's (a GPU's PJRT C
        # API client has none; the CPU's reads the same HLO). cost_model: the one that ran.
        self.clients = [("device", client)]
        if host_client is not None and host_client is not client:
            self.clients.append(("host CPU", host_client))
        self.cost_model = ""
        self.computations: dict[str, Computation] = {}
        self.entry = ""
        self.prefix, blocks = self._split(self.text)
        for entry, name, block in blocks:
            lines = block.splitlines()[1:]
            instructions = [i for i in map(_parse_instruction, lines) if i is not None]
            shapes = {i.name: i.shape for i in instructions}
            self.computations[name] = Computation(name, block, instructions, shapes)
            if entry:
                self.entry = name
        self.frames = self._frames(self.prefix)
        self._cost_cache: dict[str, dict[str, float]] = {}
        self._loops_by_name: dict[str, dict[str, Any]] | None = None

    @staticmethod
    def _split(text: str) -> tuple[str, list[tuple[bool, str, str]]]:
        lines = text.splitlines()
        prefix: list[str] = []
        blocks: list[tuple[bool, str, list[str]]] = []
        for line in lines[1:]:  # lines[0]: "HloModule name, ..."
            head = _COMPUTATION_HEAD.match(line)
            if head and line.rstrip().endswith("{"):
                blocks.append((bool(head.group(1)), head.group(2), [line]))
            elif blocks:
                blocks[-1][2].append(line)
            else:
                prefix.append(line)
        return "\n".join(prefix), [(e, n, "\n".join(b).strip()) for e, n, b in blocks]

    @staticmethod
    def _frames(prefix: str) -> dict[int, str]:
        """stack_frame_id -> the name of the function of that frame."""
        sections: dict[str, dict[int, str]] = {}
        current = None
        for line in prefix.splitlines():
            if line and not line[0].isdigit():
                current = line.strip()
                sections[current] = {}
            elif current and line.strip():
                key, _, value = line.partition(" ")
                sections[current][int(key)] = value.strip()
        functions = {k: v.strip('"') for k, v in sections.get("FunctionNames", {}).items()}
        locations = {
            k: int(m.group(1))
            for k, v in sections.get("FileLocations", {}).items()
            if (m := re.search(r"function_name_id=(\d+)", v))
        }
        frames = {}
        for k, v in sections.get("StackFrames", {}).items():
            m = re.search(r"file_location_id=(\d+)", v)
            if m:
                frames[k] = functions.get(locations.get(int(m.group(1)), -1), "?")
        return frames

    # ------------------------------------------------------------------ loops
    def loops(self) -> list[dict[str, Any]]:
        """Every while loop: its body, condition, XLA's known trip count (or None) and the
        function that built it."""
        found = []
        for computation in self.computations.values():
            for inst in computation.instructions:
                if inst.opcode != "while":
                    continue
                callees = dict(_CALLEE.findall(inst.attributes))
                trip = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', inst.attributes)
                frame = re.search(r"stack_frame_id=(\d+)", inst.attributes)
                op_name = re.search(r'op_name="([^"]*)"', inst.attributes)
                found.append(
                    {
                        "name": inst.name,
                        "in": computation.name,
                        "body": callees.get("body"),
                        "condition": callees.get("condition"),
                        "known_trip_count": int(trip.group(1)) if trip else None,
                        "function": self.frames.get(int(frame.group(1)), "?") if frame else "?",
                        "op_name": op_name.group(1) if op_name else "",
                    }
                )
        return found

    def trip_count(self, loop: dict[str, Any], dynamic: dict[str, float]) -> tuple[float, bool]:
        """``(trips, known)``: XLA's count, else the program's own count for the function
        that built the loop (``dynamic``), else 1 (unknown)."""
        if loop["known_trip_count"] is not None:
            return float(loop["known_trip_count"]), True
        for function, trips in dynamic.items():  # "f" matches f and "outer.<locals>.f"
            if loop["function"] == function or loop["function"].endswith("." + function):
                return float(trips), True
        return 1.0, False

    # ------------------------------------------------------------------ recursion
    def _callees(self, inst: Instruction) -> list[tuple[str, str]]:
        out = list(_CALLEE.findall(inst.attributes))
        for kind, names in _CALLEES.findall(inst.attributes):
            out += [(kind, n.strip().lstrip("%")) for n in names.split(",") if n.strip()]
        return out

    def _while_trips(self, inst: Instruction, dynamic: dict[str, float]) -> float:
        if self._loops_by_name is None:
            self._loops_by_name = {loop["name"]: loop for loop in self.loops()}
        return self.trip_count(self._loops_by_name[inst.name], dynamic)[0]

    def executed_ops(self, dynamic: dict[str, float], name: str | None = None) -> float:
        """Kernels (non-free instructions, a fusion as one) run per call, loops unrolled."""
        computation = self.computations[name or self.entry]
        total = 0.0
        for inst in computation.instructions:
            if inst.opcode in FREE_OPS:
                continue
            if inst.opcode == "while":
                callees = dict(_CALLEE.findall(inst.attributes))
                trips = self._while_trips(inst, dynamic)
                total += trips * self.executed_ops(dynamic, callees["body"])
                total += (trips + 1) * self.executed_ops(dynamic, callees["condition"])
            elif inst.opcode in ("call", "conditional"):
                counts = [
                    self.executed_ops(dynamic, callee)
                    for _, callee in self._callees(inst)
                    if callee in self.computations
                ]
                total += max(counts, default=1.0) if inst.opcode == "conditional" else sum(counts)
            else:
                total += 1
        return total

    def static_counts(self) -> dict[str, int]:
        """Instructions of the optimized HLO (each once, loops not unrolled) outside fused and
        applied computations: all non-free ones, fusions, while loops."""
        # Not ops of their own: fused computations, and those an op applies (a reduction's
        # adder, a sort's comparator).
        fused = {
            callee
            for c in self.computations.values()
            for inst in c.instructions
            for kind, callee in self._callees(inst)
            if inst.opcode == "fusion" or (kind == "to_apply" and inst.opcode != "call")
        }
        ops = fusions = loops = 0
        for c in self.computations.values():
            if c.name in fused:
                continue
            for inst in c.instructions:
                if inst.opcode in FREE_OPS:
                    continue
                ops += 1
                fusions += inst.opcode == "fusion"
                loops += inst.opcode == "while"
        return {"hlo_ops": ops, "hlo_fusions": fusions, "hlo_while_loops": loops}

    def _unrolled(
        self,
        dynamic: dict[str, float],
        name: str | None,
        own: Callable[[Computation, Instruction], float],
    ) -> float:
        """The sum of ``own(computation, instruction)`` over one call of ``name`` (default:
        the entry), loops unrolled: a while loop's body counted per trip, a call's callees
        once each, a conditional's costliest branch."""
        computation = self.computations[name or self.entry]
        total = 0.0
        for inst in computation.instructions:
            if inst.opcode == "while":
                body = dict(_CALLEE.findall(inst.attributes))["body"]
                total += self._while_trips(inst, dynamic) * self._unrolled(dynamic, body, own)
            elif inst.opcode in ("call", "conditional"):
                called = [
                    self._unrolled(dynamic, callee, own)
                    for _, callee in self._callees(inst)
                    if callee in self.computations
                ]
                total += max(called, default=0.0) if inst.opcode == "conditional" else sum(called)
            else:
                total += own(computation, inst)
        return total

    def dot_flops(self, dynamic: dict[str, float], name: str | None = None) -> float:
        """``2 x output size x contracted size`` of every matrix product, loops unrolled."""

        def own(computation: Computation, inst: Instruction) -> float:
            if inst.opcode == "dot" or (
                inst.opcode == "custom-call"
                and re.search(r'custom_call_target="__cublas\$(lt\$matmul|gemm)', inst.attributes)
            ):
                return self._product_flops(computation, inst)
            if inst.opcode in ("fusion", "async-start"):
                return sum(
                    self.dot_flops(dynamic, callee)
                    for kind, callee in self._callees(inst)
                    if kind in ("calls", "to_apply") and callee in self.computations
                )
            return 0.0

        return self._unrolled(dynamic, name, own)

    def gather_overcount(self, dynamic: dict[str, float], name: str | None = None) -> float:
        """Bytes XLA's cost model counts for whole arrays that a fusion only gathers from: a
        fused gather's operand counts in full (sampling 256 rows of a replay buffer counts the
        whole buffer), though only the gathered rows are read. Per call, loops unrolled."""

        def own(_: Computation, inst: Instruction) -> float:
            fused = dict(_CALLEE.findall(inst.attributes)).get("calls")
            if inst.opcode == "fusion" and fused in self.computations:
                return self._fused_gather_overcount(fused)
            return 0.0

        return self._unrolled(dynamic, name, own)

    def _fused_gather_overcount(self, fused: str) -> float:
        """Per parameter of a fused computation that only gathers read: its size less the
        gathered rows."""
        body = self.computations[fused]
        over = 0.0
        for param in body.instructions:
            if param.opcode != "parameter":
                continue
            users = [i for i in body.instructions if param.name in i.operands]
            gathers = [i for i in users if i.opcode == "gather" and i.operands[0] == param.name]
            if users and len(gathers) == len(users):
                read = sum(_bytes(g.shape) for g in gathers)
                over += max(0.0, _bytes(param.shape) - read)
        return over

    def library_call_bytes(self, dynamic: dict[str, float], name: str | None = None) -> float:
        """Operand and result bytes of every custom call (a GPU's cuBLAS products), loops
        unrolled: what the host CPU's cost model, which cannot see inside a custom call,
        leaves out when it costs a GPU's program."""

        def own(computation: Computation, inst: Instruction) -> float:
            if inst.opcode != "custom-call":
                return 0.0
            # Its operands and its first result: a cuBLAS call's tuple result also holds a
            # scratch workspace, which is not data it reads or writes in full.
            shapes = [inst.shape.lstrip("("), *(computation.shapes.get(o) for o in inst.operands)]
            return sum(_bytes(shape) for shape in shapes if shape)

        return self._unrolled(dynamic, name, own)

    def _product_flops(self, computation: Computation, inst: Instruction) -> float:
        out = math.prod(_dims(inst.shape))
        if not inst.operands:
            return 0.0
        lhs = _dims(computation.shapes.get(inst.operands[0], ""))
        contracting = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", inst.attributes)
        if contracting is None:
            contracting = re.search(r'"lhs_contracting_dimensions":\[([^\]]*)\]', inst.attributes)
        if contracting is None or not lhs:
            return 0.0
        dims = [int(d.strip('"')) for d in contracting.group(1).split(",") if d.strip('"')]
        return 2.0 * out * math.prod(lhs[d] for d in dims if d < len(lhs))

    # ------------------------------------------------------------------ XLA's cost model
    def xla_cost(self, name: str) -> dict[str, float]:
        """XLA's cost analysis of one computation (as the entry of a module built from this
        text; nested loop bodies counted once, as XLA does)."""
        if name not in self._cost_cache:
            from jax._src.lib import _jax, hlo

            parts = ["HloModule roofline_part", self.prefix]
            for other in self.computations.values():
                block = re.sub(r"^ENTRY ", "", other.text)
                parts.append(("ENTRY " + block) if other.name == name else block)
            module = hlo.hlo_module_from_text("\n\n".join(parts))
            for i, (model, client) in enumerate(self.clients):
                try:
                    cost = _jax.hlo_module_cost_analysis(client, module)
                except Exception:
                    if i == len(self.clients) - 1:
                        raise
                    continue
                self.clients, self.cost_model = self.clients[i:], model
                break
            self._cost_cache[name] = {
                "flops": float(cost.get("flops", 0.0)),
                "bytes": float(cost.get("bytes accessed", 0.0)),
                "transcendentals": float(cost.get("transcendentals", 0.0)),
            }
        return self._cost_cache[name]

    def _loops_reached(self, name: str) -> list[Instruction]:
        """While instructions in ``name`` or in what it calls other than through a loop or a
        fusion (those XLA's cost of ``name`` counts once)."""
        found = []
        for inst in self.computations[name].instructions:
            if inst.opcode == "while":
                found.append(inst)
            elif inst.opcode in ("call", "conditional"):
                for _, callee in self._callees(inst):
                    if callee in self.computations:
                        found += self._loops_reached(callee)
        return found

    def corrected_cost(
        self, dynamic: dict[str, float], name: str | None = None
    ) -> dict[str, float]:
        """XLA's cost of ``name`` with every loop body counted as often as the loop runs:
        ``raw(C) + sum over loops w of C [trips * corrected(body) + (trips + 1) *
        corrected(condition) - raw(body) - raw(condition)]``."""
        name = name or self.entry
        total = dict(self.xla_cost(name))
        for inst in self._loops_reached(name):
            callees = dict(_CALLEE.findall(inst.attributes))
            trips = self._while_trips(inst, dynamic)
            for part, times in ((callees["body"], trips), (callees["condition"], trips + 1)):
                once, full = self.xla_cost(part), self.corrected_cost(dynamic, part)
                for key in total:
                    total[key] += times * full[key] - once[key]
        return total

    def analyse(self, dynamic: dict[str, float]) -> dict[str, Any]:
        loops = []
        unknown = 0
        for loop in self.loops():
            trips, known = self.trip_count(loop, dynamic)
            unknown += not known
            loops.append(
                {
                    "function": loop["function"],
                    "trips": trips,
                    "source": "xla"
                    if loop["known_trip_count"] is not None
                    else ("program outputs" if known else "unknown: counted once"),
                }
            )
        result: dict[str, Any] = {
            **self.static_counts(),
            "ops": self.executed_ops(dynamic),
            "dot_flops": self.dot_flops(dynamic),
            "loops": loops,
            "loops_unknown_trips": unknown,
        }
        result["gather_overcount_bytes"] = self.gather_overcount(dynamic)
        try:
            cost = self.corrected_cost(dynamic)
            flops, moved, how = cost["flops"], cost["bytes"], "xla per body"
            if self.cost_model != "device":
                # The CPU's model does not look inside a GPU's library calls (cuBLAS custom
                # calls): their FLOPs are the products' own count, their bytes added here.
                flops = max(flops, result["dot_flops"])
                moved += self.library_call_bytes(dynamic)
                how = f"xla per body, the {self.cost_model}'s cost model (the device has none)"
            result.update(
                flops=flops,
                bytes=moved - result["gather_overcount_bytes"],
                transcendentals=cost["transcendentals"],
                loop_correction=how,
            )
        except Exception as error:  # private XLA bindings missing: XLA's figure as it comes
            result.update(loop_correction=f"unavailable ({type(error).__name__}: {error})")
        return result


def xla_cost_once(compiled: Any) -> dict[str, float]:
    """``compiled.cost_analysis()`` as it comes (loop bodies once)."""
    cost = compiled.cost_analysis()
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else {}
    cost = cost or {}
    return {
        "flops": float(cost.get("flops", 0.0)),
        "bytes": float(cost.get("bytes accessed", 0.0)),
        "transcendentals": float(cost.get("transcendentals", 0.0)),
    }


# ================================================================================ timing
def time_call(fn: Callable[[], Any], repetitions: int, seconds: float) -> dict[str, float]:
    """Median (and spread) seconds per call of ``fn`` (which blocks): two warm-up calls, then
    ``repetitions`` means of back-to-back calls lasting about ``seconds`` each."""
    for _ in range(2):
        fn()
    calls = calls_for(fn, seconds)
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return {**summarize(samples), "calls_per_repetition": calls}


# ================================================================================ peaks
CACHE_COPY_ITERATIONS = 200
SMALL_PRODUCTS = 500
# The products in the programs' layers: (name, batch, rows, inner, columns); a batch of
# products, each with its own matrices, is what seeds batched with ``vmap`` make.
LAYER_PRODUCTS = (
    ("Pendulum hidden layer", 1, 2048, 64, 64),
    ("Pendulum hidden layer, 16 seeds batched", 16, 2048, 64, 64),
    ("MuJoCo hidden layer", 1, 1024, 64, 64),
    ("DDPG MuJoCo hidden layer", 1, 256, 256, 256),
)
LAYER_PRODUCT_REPEATS = 100


def measure_peaks(quick: bool, repetitions: int, seconds: float) -> dict[str, Any]:
    """The peaks of this run (see the module docstring), and two references beside them:
    ``cache_gbs``, a copy whose array stays in cache (``CACHE_COPY_ITERATIONS`` passes over it
    in one program), and ``op_overhead_us``, the time per op of a chain of ``SMALL_PRODUCTS``
    dependent 16 x 16 matrix products (each its own kernel: the cost of running an op)."""
    gpu = jax.default_backend() != "cpu"
    if gpu:
        matmul_sizes = [4096] if quick else [4096, 8192]
        memory_size = 2**26 if quick else 2**28  # 256 MiB / 1 GiB
        cache_size = 2**22  # 16 MiB: in an H100's 50 MiB L2
    else:
        matmul_sizes = [512] if quick else [1024, 2048]
        memory_size = 2**22 if quick else 2**26  # 16 MiB / 256 MiB
        cache_size = 2**16  # 256 KiB: in a core's L2
    peaks: dict[str, Any] = {"matmul": [], "memory": []}

    def timed(fn: Callable[[], Any]) -> dict[str, float]:
        return {f"time_{k}": v for k, v in time_call(fn, repetitions, seconds).items()}

    for precision in ("default", "highest"):
        for n in matmul_sizes:
            a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
            b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)

            def matmul(x: jax.Array, y: jax.Array, precision: str = precision) -> jax.Array:
                if precision == "default":
                    return jnp.dot(x, y)
                with jax.default_matmul_precision(precision):
                    return jnp.dot(x, y)

            compiled = jax.jit(matmul).lower(a, b).compile()
            row = {"precision": precision, "size": n, "flops": 2.0 * n**3}
            row["xla_flops"] = xla_cost_once(compiled)["flops"]
            row.update(timed(lambda c=compiled, a=a, b=b: jax.block_until_ready(c(a, b))))
            row["gflops"] = row["flops"] / row["time_median"] / 1e9
            peaks["matmul"].append(row)
            del a, b, compiled

    def memory_row(kind: str, size: int, nbytes: float, fn: Callable[[], Any]) -> None:
        row = {"kind": kind, "elements": size, "bytes": nbytes, **timed(fn)}
        row["gbs"] = nbytes / row["time_median"] / 1e9
        peaks["memory"].append(row)

    # The copy writes over its input (donated): no fresh pages to fault in on every call.
    box = {"x": jnp.ones((memory_size,), jnp.float32)}
    copy = jax.jit(lambda v: v * 1.0000001, donate_argnums=0)

    def copy_once() -> None:
        box["x"] = jax.block_until_ready(copy(box["x"]))

    memory_row("copy", memory_size, 8.0 * memory_size, copy_once)
    reduce = jax.jit(jnp.sum)
    memory_row(
        "reduce", memory_size, 4.0 * memory_size, lambda: jax.block_until_ready(reduce(box["x"]))
    )
    del box["x"]

    def cache_copy(v: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, CACHE_COPY_ITERATIONS, lambda _, y: y * 1.0000001, v)

    small = jnp.ones((cache_size,), jnp.float32)
    compiled = jax.jit(cache_copy).lower(small).compile()
    memory_row(
        "cache copy",
        cache_size,
        8.0 * cache_size * CACHE_COPY_ITERATIONS,
        lambda: jax.block_until_ready(compiled(small)),
    )
    best = {
        p: max(r["gflops"] for r in peaks["matmul"] if r["precision"] == p)
        for p in ("default", "highest")
    }
    if not gpu:  # on a CPU both precisions are the same float32 products
        best["highest"] = best["default"] = max(best.values())
    peaks["matmul_gflops_highest"] = best["highest"]
    peaks["matmul_gflops_default"] = best["default"]
    peaks["bandwidth_gbs"] = max(r["gbs"] for r in peaks["memory"] if r["kind"] != "cache copy")
    peaks["cache_gbs"] = max(r["gbs"] for r in peaks["memory"] if r["kind"] == "cache copy")
    peaks["machine_balance"] = peaks["matmul_gflops_highest"] / peaks["bandwidth_gbs"]

    def small_products(v: jax.Array) -> jax.Array:
        w = jnp.eye(16, dtype=jnp.float32) * 0.5
        for _ in range(SMALL_PRODUCTS):
            v = jnp.dot(v, w) + 1.0
        return v

    v = jnp.ones((16, 16), jnp.float32)
    compiled = jax.jit(small_products).lower(v).compile()
    row = {"ops": analyse_compiled(compiled, {})["ops"]}
    row.update(timed(lambda: jax.block_until_ready(compiled(v))))
    row["us_per_op"] = row["time_median"] / row["ops"] * 1e6
    peaks["op_overhead"] = row
    peaks["op_overhead_us"] = row["us_per_op"]
    peaks["layer_products"] = [
        _layer_product(name, batch, m, k, n, timed) for name, batch, m, k, n in LAYER_PRODUCTS
    ]
    return peaks


def _layer_product(
    name: str,
    batch: int,
    m: int,
    k: int,
    n: int,
    timed: Callable[[Callable[[], Any]], dict[str, float]],
) -> dict[str, Any]:
    """``batch`` float32 ``(m, k) @ (k, n)`` products (``k == n``; each its own matrices, as
    seeds under ``vmap``), ``LAYER_PRODUCT_REPEATS`` times in one program (``y = y @ w`` in a
    loop, ``w`` identities passed in as data, so no call's dispatch is timed): the best rate a
    layer of that shape can reach here (``2 batch m k n`` FLOPs per product)."""
    if k != n:
        raise ValueError(f"layer product {name!r}: chained products need k == n, got {k}, {n}")
    y = jax.random.normal(jax.random.key(0), (batch, m, k), jnp.float32)
    w = jnp.broadcast_to(jnp.eye(k, dtype=jnp.float32), (batch, k, k))

    def chain(y: jax.Array, w: jax.Array) -> jax.Array:
        def product(_: int, v: jax.Array) -> jax.Array:
            return jnp.einsum("bmk,bkn->bmn", v, w)

        return jax.lax.fori_loop(0, LAYER_PRODUCT_REPEATS, product, y)

    compiled = jax.jit(chain).lower(y, w).compile()
    row: dict[str, Any] = {
        "name": name,
        "shape": [batch, m, k, n],
        "products_per_call": LAYER_PRODUCT_REPEATS,
        "flops": 2.0 * batch * m * k * n * LAYER_PRODUCT_REPEATS,
    }
    row.update(timed(lambda: jax.block_until_ready(compiled(y, w))))
    row["gflops"] = row["flops"] / row["time_median"] / 1e9
    return row


# ================================================================================ programs
@dataclasses.dataclass
class Program:
    """One jitted program to measure: ``fn(*args)``; ``trips(outputs)`` gives the trip
    counts of its data-dependent loops from what the call returned."""

    name: str
    group: str
    algo: str
    shape: str
    notes: str
    fn: Callable[..., Any]
    args: tuple
    trips: Callable[[Any], dict[str, float]] | None = None
    num_seeds: int = 1


SHAPE_PRESETS = {
    # shape name: (preset, observation dim, action dim, action bound)
    "pendulum": ("tianshou-pendulum", 3, 1, 2.0),
    "pendulum-preset": ("pendulum", 3, 1, 2.0),
    "mujoco": ("mujoco", 17, 6, 1.0),
}


def agent_for(algo: str, shape: str, **overrides: Any) -> tuple[Any, Any]:
    """The preset's agent and run settings (jaxrl's own preset machinery)."""
    from jaxrl.config.run_config import RunConfig

    preset = SHAPE_PRESETS[shape][0]
    config = RunConfig.from_preset(algo, "Pendulum-v1", preset, hyperparameters=overrides)
    return config.make_agent(), config


def shape_spaces(shape: str) -> tuple[Any, Any]:
    _, obs_dim, act_dim, high = SHAPE_PRESETS[shape]
    return spaces({"obs_dim": obs_dim, "act_dim": act_dim, "action_high": high})


def on_policy_inputs(algo: str, shape: str) -> tuple[Any, Any, Any, Any]:
    """``(agent, state, rollout, config)``: the preset's agent, its initial state and a
    synthetic rollout of the preset's shape (episodes truncate every 200 steps)."""
    from jaxrl.rollout import Rollout

    agent, config = agent_for(algo, shape)
    obs_space, act_space = shape_spaces(shape)
    state = agent.init(jax.random.key(0), obs_space, act_space)
    data = synthetic(config.num_steps, config.num_envs, obs_space.shape[0], act_space.shape[0], 0)
    rollout = Rollout(
        *(
            jnp.asarray(data[k])
            for k in ("obs", "act", "rew", "terminated", "truncated", "obs_next")
        )
    )
    return agent, state, rollout, config


def actor_steps_per_update(agent: Any, total: int) -> int:
    from jaxrl.algorithms.on_policy import minibatch_layout

    return agent.repeat * minibatch_layout(total, agent.batch_size)[0].shape[0]


def line_search_trips(
    backtracks: float, failures: float, steps: float, max_backtracks: int
) -> float:
    """Mean candidates tried per line search: ``index + 1`` when one is accepted,
    ``max_backtracks`` when none is."""
    return (backtracks + (steps - failures) + failures * max_backtracks) / steps


def update_trips(agent: Any, steps: int) -> Callable[[Any], dict[str, float]]:
    def trips(out: Any) -> dict[str, float]:
        _, stats = out
        result = {CG_LOOP: float(stats["cg_iterations"].mean)}
        if "backtracks" in stats:
            result[LINE_SEARCH_LOOP] = line_search_trips(
                float(stats["backtracks"]),
                float(stats["line_search_failures"]),
                steps,
                agent.max_backtracks,
            )
        return result

    return trips


def update_programs(algo: str, shape: str) -> list[Program]:
    agent, state, rollout, config = on_policy_inputs(algo, shape)
    total = config.num_envs * config.num_steps
    steps = actor_steps_per_update(agent, total)
    notes = (
        f"jit({type(agent).__name__}.update); {SHAPE_PRESETS[shape][0]} preset: "
        f"{config.num_envs} x {config.num_steps} = {total} samples, repeat {agent.repeat}, "
        f"{agent.optim_critic_iters} critic steps, hidden {list(agent.hidden_sizes)}"
    )
    return [
        Program(
            f"{algo}-update-{shape}",
            "update",
            algo,
            shape,
            notes,
            agent.update,
            (state, rollout, jax.random.key(1)),
            update_trips(agent, steps),
        )
    ]


def trpo_part_programs(shape: str) -> list[Program]:
    """TRPO's parts at one shape, from the inputs of the update's first actor step."""
    from jaxrl.algorithms import natural_step, on_policy
    from jaxrl.algorithms.natural_step import CG_RESIDUAL_TOL, TRUST_REGION_PRECISION, ActorStep
    from jaxrl.algorithms.on_policy import weighted_mean
    from jaxrl.core import distributions
    from jaxrl.core.trust_region import conjugate_gradient, make_gauss_newton_vector_product

    agent, state, rollout, _ = on_policy_inputs("trpo", shape)
    rule = agent.actor_rule()
    batch, _ = jax.jit(agent.prepare_batch)(state, rollout)
    weights = jnp.ones(batch.advantage.shape, jnp.float32)
    actor_apply = state.actor.apply_fn
    params = state.actor.params
    total = batch.advantage.shape[0]

    def policy(p: Any) -> Any:
        return actor_apply(p, batch.obs)

    def surrogate_at(dist: Any) -> jax.Array:
        return rule.surrogate(distributions.log_prob(dist, batch.action), batch, weights)

    def fvp_of(linearized: Any) -> Callable[[Any], Any]:
        old_dist = linearized[0]

        def output_kl(dist: Any) -> jax.Array:
            return weighted_mean(distributions.kl_divergence(old_dist, dist), weights)

        return make_gauss_newton_vector_product(
            policy, output_kl, params, agent.damping, linearized=linearized
        )

    def context(p: Any) -> dict[str, Any]:
        # The first lines of natural_step.actor_step: one linearization of the policy,
        # the surrogate's gradient through its transpose, then CG's direction.
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            linearized = jax.linearize(policy, p)
            old_dist = jax.lax.stop_gradient(linearized[0])
            loss, dist_grad = jax.value_and_grad(surrogate_at)(old_dist)
            (grad,) = jax.linear_transpose(linearized[1], p)(dist_grad)
            cg = conjugate_gradient(fvp_of(linearized), grad, agent.cg_iters, CG_RESIDUAL_TOL)
            curvature = jax.tree_util.tree_reduce(
                jnp.add,
                jax.tree_util.tree_map(lambda x, g, r: jnp.vdot(x, g - r), cg.x, grad, cg.residual),
            )
        return {
            "linearized": linearized,
            "grad": grad,
            "direction": jax.tree_util.tree_map(jnp.negative, cg.x),
            "curvature": curvature,
            "loss": loss,
        }

    ctx = jax.jit(context)(params)

    def fvp(linearized: Any, vector: Any) -> Any:
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            return fvp_of(linearized)(vector)

    def cg(linearized: Any, grad: Any) -> Any:
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            return conjugate_gradient(fvp_of(linearized), grad, agent.cg_iters, CG_RESIDUAL_TOL)

    def line_search(linearized: Any, direction: Any, curvature: jax.Array, loss: jax.Array) -> Any:
        old_dist = linearized[0]

        def surrogate(p: Any) -> jax.Array:
            return surrogate_at(policy(p))

        def mean_kl(p: Any) -> jax.Array:
            return weighted_mean(distributions.kl_divergence(old_dist, policy(p)), weights)

        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            step = ActorStep(
                params, direction, fvp_of(linearized), curvature, loss, surrogate, mean_kl
            )
            return rule.step(step)

    def actor_step(p: Any, minibatch: Any, w: jax.Array, key: jax.Array) -> Any:
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            return natural_step.actor_step(
                rule,
                actor_apply,
                p,
                minibatch,
                w,
                key,
                damping=agent.damping,
                cg_iters=agent.cg_iters,
                fvp_batch_size=agent.fvp_batch_size,
            )

    def search_trips(backtracks: Any, failed: Any) -> dict[str, float]:
        return {
            LINE_SEARCH_LOOP: line_search_trips(
                float(backtracks), float(failed), 1, agent.max_backtracks
            )
        }

    def line_search_stats_trips(out: Any) -> dict[str, float]:
        search = out.line_search  # the rule's StepResult
        return search_trips(jnp.where(search.accepted, search.index, 0), ~search.accepted)

    def actor_step_trips(out: Any) -> dict[str, float]:
        stats = out[1]
        trips = search_trips(stats["backtracks"], stats["line_search_failed"])
        return {CG_LOOP: float(stats["cg_iterations"]), **trips}

    size = f"{total} samples, obs {batch.obs.shape[1]}, action {batch.action.shape[1]}"
    rebuilt = "rebuilt from jaxrl.core with the update's shapes and first actor step's inputs"
    return [
        Program(
            f"trpo-prepare-{shape}",
            "part",
            "trpo",
            shape,
            f"TRPO.prepare_batch (values, GAE, scaling, old log-probs); {size}",
            agent.prepare_batch,
            (state, rollout),
        ),
        Program(
            f"trpo-critic-{shape}",
            "part",
            "trpo",
            shape,
            f"on_policy.critic_steps: {agent.optim_critic_iters} Adam steps; {size}",
            lambda critic, b, w: on_policy.critic_steps(critic, b, w, agent.optim_critic_iters),
            (state.critic, batch, weights),
        ),
        Program(
            f"trpo-actor-step-{shape}",
            "part",
            "trpo",
            shape,
            f"natural_step.actor_step (gradient, CG, line search), float32; {size}",
            actor_step,
            (params, batch, weights, jax.random.key(2)),
            actor_step_trips,
        ),
        Program(
            f"trpo-fvp-{shape}",
            "part",
            "trpo",
            shape,
            f"one Gauss-Newton Fisher-vector product (J^T M J v + damping v), float32; {rebuilt}",
            fvp,
            (ctx["linearized"], ctx["grad"]),
        ),
        Program(
            f"trpo-cg-{shape}",
            "part",
            "trpo",
            shape,
            f"conjugate_gradient over that product (<= {agent.cg_iters} iterations); {rebuilt}",
            cg,
            (ctx["linearized"], ctx["grad"]),
            lambda out: {CG_LOOP: float(out.iterations)},
        ),
        Program(
            f"trpo-line-search-{shape}",
            "part",
            "trpo",
            shape,
            f"TRPO._step: step length + backtracking_line_search (<= {agent.max_backtracks} "
            f"candidates, each a KL and a surrogate); {rebuilt}",
            line_search,
            (ctx["linearized"], ctx["direction"], ctx["curvature"], ctx["loss"]),
            line_search_stats_trips,
        ),
    ]


def ddpg_programs(shape: str, capacity: int) -> list[Program]:
    from jaxrl.replay import Transition

    agent, config = agent_for("ddpg", shape, buffer_size=capacity)
    obs_space, act_space = shape_spaces(shape)
    num_envs = 1 if shape == "mujoco" else config.num_envs
    state = agent.init(jax.random.key(0), obs_space, act_space, num_envs)
    buffer = agent.init_buffer(state, num_envs)
    data = synthetic(capacity // num_envs, num_envs, obs_space.shape[0], act_space.shape[0], 0)
    segment = Transition(
        *(
            jnp.asarray(data[k])
            for k in ("obs", "act", "rew", "terminated", "truncated", "obs_next")
        )
    )
    buffer = jax.jit(type(buffer).extend)(buffer, segment)

    def sample_and_update(state: Any, buffer: Any, key: jax.Array) -> Any:
        batch_key, update_key = jax.random.split(key)
        return agent.update(state, agent.sample_batch(buffer, batch_key), update_key)

    what = (
        f"{SHAPE_PRESETS[shape][0]} preset: hidden {list(agent.hidden_sizes)} "
        f"{agent.activation}, batch {agent.batch_size}, {agent.n_step_return_horizon}-step returns"
    )
    programs = [
        Program(
            f"ddpg-update-{shape}",
            "update",
            "ddpg",
            shape,
            f"jit(sample_batch + DDPG.update) on a filled {capacity:,}-transition buffer; {what}",
            sample_and_update,
            (state, buffer, jax.random.key(1)),
        ),
    ]
    if shape == "mujoco":
        batch = jax.jit(agent.sample_batch)(buffer, jax.random.key(3))
        programs.append(
            Program(
                "ddpg-update-only-mujoco",
                "part",
                "ddpg",
                shape,
                f"jit(DDPG.update) on one sampled batch (no sampling); {what}",
                agent.update,
                (state, batch, jax.random.key(1)),
            )
        )
    return programs


def period_program(algo: str, quick: bool) -> Program:
    from jaxrl.training import make_train_loop

    shape = "pendulum-preset" if algo == "trpo" else "pendulum"
    overrides = {}
    if quick:  # a short period: 2 collections and 2 evaluation episodes
        overrides = (
            dict(num_steps=64, eval_every=2048, total_steps=4096, eval_episodes=2)
            if algo == "trpo"
            else dict(eval_every=80, total_steps=160, eval_episodes=2)
        )
    from jaxrl.config.run_config import RunConfig

    config = RunConfig.from_preset(
        algo, "Pendulum-v1", SHAPE_PRESETS[shape][0], backend="jax", **overrides
    )
    agent = config.make_agent()
    loop = make_train_loop(agent, "Pendulum-v1", config)
    carry = jax.jit(loop.init)(jax.random.key(0))
    collections = loop.layout.collections_per_period
    per_collect = config.num_envs * config.num_steps

    def trips(out: Any) -> dict[str, float]:
        metrics = out[1]
        if algo == "ddpg":
            return {}
        steps = actor_steps_per_update(agent, per_collect)
        result = {CG_LOOP: float(np.mean(metrics["cg_iterations"]))}
        if "backtracks" in metrics:
            result[LINE_SEARCH_LOOP] = float(
                np.mean(
                    [
                        line_search_trips(b, f, steps, agent.max_backtracks)
                        for b, f in zip(
                            np.asarray(metrics["backtracks"]),
                            np.asarray(metrics["line_search_failures"]),
                            strict=True,
                        )
                    ]
                )
            )
        return result

    notes = (
        f"jit(make_train_loop(...).run_period), one seed, gymnax Pendulum-v1, "
        f"{SHAPE_PRESETS[shape][0]} preset: {collections} collections of {config.num_envs} x "
        f"{config.num_steps} env steps with their updates, then {config.eval_episodes} "
        f"evaluation episodes"
    )
    return Program(
        f"{algo}-period-{shape}", "driver", algo, shape, notes, loop.run_period, (carry,), trips
    )


def over_seeds(program: Program, num_seeds: int) -> Program:
    """``program`` vmapped over ``num_seeds`` seeds (see **Seeds** above): typed keys split,
    every other input repeated; loop trips read from seed 0's outputs."""
    if num_seeds == 1:
        return program

    def stack(x: Any) -> jax.Array:
        x = jnp.asarray(x)
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) and x.shape == ():
            return jax.random.split(x, num_seeds)
        return jnp.broadcast_to(x, (num_seeds, *x.shape))

    trips = program.trips
    return dataclasses.replace(
        program,
        name=f"{program.name}-x{num_seeds}",
        notes=f"jax.vmap over {num_seeds} seeds of: {program.notes}",
        fn=jax.vmap(program.fn),
        args=jax.tree_util.tree_map(stack, program.args),
        trips=None
        if trips is None
        else (lambda out: trips(jax.tree_util.tree_map(lambda x: x[0], out))),
        num_seeds=num_seeds,
    )


# ================================================================================ measuring
def memory_roof(gbs: float, peaks: dict[str, Any]) -> float:
    """The bandwidth a program's bytes are judged against: the large copy's, or the in-cache
    copy's for a program that moves more bytes per second than a large copy can (its bytes
    then come mostly from cache)."""
    return peaks["cache_gbs"] if gbs > peaks["bandwidth_gbs"] else peaks["bandwidth_gbs"]


def classify(row: dict[str, Any], peaks: dict[str, Any]) -> str:
    if row["gflops_s"] >= COMPUTE_BOUND_FRACTION * peaks["matmul_gflops_highest"]:
        return "compute"
    if row["gbs"] >= MEMORY_BOUND_FRACTION * memory_roof(row["gbs"], peaks):
        return "memory"
    return "latency/overhead"


def derived(row: dict[str, Any], peaks: dict[str, Any]) -> dict[str, Any]:
    seconds = row["time_median_s"]
    out = {
        "gflops_s": row["flops"] / seconds / 1e9,
        "gbs": row["bytes"] / seconds / 1e9,
        "intensity": row["flops"] / row["bytes"] if row["bytes"] else float("nan"),
        "us_per_op": seconds / row["ops"] * 1e6 if row["ops"] else float("nan"),
    }
    out["pct_matmul_peak"] = 100 * out["gflops_s"] / peaks["matmul_gflops_highest"]
    out["pct_matmul_peak_default"] = 100 * out["gflops_s"] / peaks["matmul_gflops_default"]
    out["pct_bandwidth_peak"] = 100 * out["gbs"] / peaks["bandwidth_gbs"]
    out["pct_cache_bandwidth"] = 100 * out["gbs"] / peaks["cache_gbs"]
    # The share of the time that the ops would take at the measured cost of a tiny op.
    out["op_floor_pct"] = 100 * row["ops"] * peaks["op_overhead_us"] / (seconds * 1e6)
    layer = layer_product_rate(row, peaks)
    out["pct_layer_product"] = 100 * out["gflops_s"] / layer if layer else float("nan")
    out["bound"] = classify(out, peaks)
    return out


def layer_product_rate(row: dict[str, Any], peaks: dict[str, Any]) -> float | None:
    """GFLOP/s of a product at the shape of the program's layers (``LAYER_PRODUCTS``), or
    None where no measured shape is the program's (DDPG at the Pendulum shapes, and programs
    over several seeds)."""
    if row.get("num_seeds", 1) > 1:
        return None
    if row.get("algo") in ("npg", "trpo"):
        name = "MuJoCo hidden layer" if row.get("shape") == "mujoco" else "Pendulum hidden layer"
    elif row.get("algo") == "ddpg" and row.get("shape") == "mujoco":
        name = "DDPG MuJoCo hidden layer"
    else:
        return None
    rates = [r["gflops"] for r in peaks.get("layer_products", []) if r["name"] == name]
    return max(rates) if rates else None


def analyse_compiled(compiled: Any, dynamic: dict[str, float]) -> dict[str, Any]:
    client = jax.devices()[0].client
    try:
        host = jax.devices("cpu")[0].client
    except RuntimeError:  # JAX_PLATFORMS without the CPU
        host = None
    analysis = HloAnalysis(compiled.as_text(), client, host).analyse(dynamic)
    once = xla_cost_once(compiled)
    analysis["xla_flops_once"] = once["flops"]
    analysis["xla_bytes_once"] = once["bytes"]
    if "flops" not in analysis:
        # No per-body cost analysis (XLA's private bindings changed): the matrix products'
        # FLOPs with loops counted, and XLA's bytes as they come (loop bodies once).
        print(f"warning: loops not counted by XLA's cost model: {analysis['loop_correction']}")
        analysis.update(
            flops=max(once["flops"], analysis["dot_flops"]),
            bytes=max(once["bytes"] - analysis["gather_overcount_bytes"], 1.0),
            transcendentals=once["transcendentals"],
        )
    return analysis


def measure_program(program: Program, peaks: dict[str, Any], args: Any) -> dict[str, Any]:
    load_before = loadavg()
    import_distributions()
    start = time.perf_counter()
    compiled = jax.jit(program.fn).lower(*program.args).compile()
    compile_s = time.perf_counter() - start
    out = jax.block_until_ready(compiled(*program.args))
    dynamic = program.trips(out) if program.trips else {}
    del out
    analysis = analyse_compiled(compiled, dynamic)
    timing = time_call(
        lambda: jax.block_until_ready(compiled(*program.args)), args.repetitions, args.seconds
    )
    row = {
        "program": program.name,
        "group": program.group,
        "algo": program.algo,
        "shape": program.shape,
        "num_seeds": program.num_seeds,
        "time_median_s": timing["median"],
        "time_q1_s": timing["q1"],
        "time_q3_s": timing["q3"],
        "repetitions": timing["n"],
        "calls_per_repetition": timing["calls_per_repetition"],
        "compile_s": compile_s,
        **{k: v for k, v in analysis.items() if k != "loops"},
        "data_dependent_trips": dynamic,
        "loops": analysis["loops"],
        "notes": program.notes,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }
    row.update(derived(row, peaks))
    return row


# ================================================================================ host step
def host_env(choice: str, quick: bool) -> tuple[str, str]:
    """``(env_id, env_backend)`` of the host step."""
    if choice != "auto":
        return choice, "auto"
    if quick or not mujoco_available():
        return "Pendulum-v1", "gymnasium"
    return "Hopper-v5", "auto"


def host_step_rows(peaks: dict[str, Any], args: Any) -> list[dict[str, Any]]:
    """One DDPG step of the host driver (``mujoco`` preset, updates from the first step),
    timed as the driver runs it and split into the environment and the two jitted calls."""
    from jaxrl.config.run_config import RunConfig
    from jaxrl.envs.host import resolve_env_backend
    from jaxrl.training import gymnasium_driver
    from jaxrl.training.gymnasium_driver import HostLoop

    env_id, env_backend = host_env(args.host_env, args.quick)
    capacity = 10_000 if args.quick else 1_000_000
    config = RunConfig.from_preset(
        "ddpg", env_id, "mujoco", hyperparameters={"warmup_steps": 0, "buffer_size": capacity}
    )
    agent = config.make_agent()
    backend = resolve_env_backend(env_id, env_backend)
    load_before = loadavg()
    rows = []
    settings = dataclasses.replace(config, seed=0, num_seeds=1, env_backend=env_backend)
    with HostLoop(agent, env_id, settings) as loop:
        carry = jax.tree_util.tree_map(jnp.copy, loop.start(loop.init(), 0))
        programs = loop._programs
        raw = gymnasium_driver.split_seeds(loop.env.reset(), 1)
        carry, loop._sample, loop._obs, _ = programs.observe_and_act(carry, raw, raw, 0)
        captured: dict[str, Any] = {}
        # One env step per collection: each step observes, then learns and acts.
        originals = {"observe": programs._observe_seeds, "learn": programs.learn}
        split: dict[str, list[float]] = {"observe": [], "learn": []}

        def spec(tree: Any) -> Any:
            return jax.tree_util.tree_map(
                lambda x: (
                    jax.ShapeDtypeStruct(np.shape(x), x.dtype)
                    if hasattr(x, "dtype") and hasattr(x, "shape")
                    else x
                ),
                tree,
            )

        def timed(name: str) -> Callable[..., Any]:
            def call(*a: Any) -> Any:
                captured.setdefault(name, spec(a))
                start = time.perf_counter()
                out = jax.block_until_ready(originals[name](*a))
                split[name].append(time.perf_counter() - start)
                return out

            return call

        box = {"carry": carry}

        def steps(count: int) -> None:
            for _ in range(count):
                box["carry"], _ = loop._collect_and_learn(box["carry"])
            jax.block_until_ready(box["carry"])

        start = time.perf_counter()
        steps(5)  # compile both programs and warm up
        first_steps_s = time.perf_counter() - start
        per_step = calls_for(lambda: steps(10), args.seconds) * 10
        whole = []
        for _ in range(args.repetitions):
            start = time.perf_counter()
            steps(per_step)
            whole.append((time.perf_counter() - start) / per_step)
        # The same steps with each jitted call blocked and timed: the step's parts.
        programs._observe_seeds, programs.learn = timed("observe"), timed("learn")
        blocked = []
        for _ in range(args.repetitions):
            split["observe"].clear()
            split["learn"].clear()
            start = time.perf_counter()
            steps(per_step)
            blocked.append((time.perf_counter() - start) / per_step)
            split.setdefault("observe_reps", []).append(float(np.mean(split["observe"])))
            split.setdefault("learn_reps", []).append(float(np.mean(split["learn"])))
        programs._observe_seeds, programs.learn = originals["observe"], originals["learn"]

    # The driver's programs as they were compiled (from the arguments of their first call).
    analyses = {
        name: analyse_compiled(fn.lower(*captured[name]).compile(), {})
        for name, fn in originals.items()
    }
    timing = {
        "step": summarize(whole),
        "step_blocked": summarize(blocked),
        "observe": summarize(split["observe_reps"]),
        "learn": summarize(split["learn_reps"]),
    }
    env_s = (
        timing["step_blocked"]["median"] - timing["observe"]["median"] - timing["learn"]["median"]
    )
    where = (
        f"{env_id} ({backend}), mujoco preset DDPG (hidden {list(agent.hidden_sizes)}, "
        f"batch {agent.batch_size}), 1 env, 1 update per env step, {capacity:,}-transition buffer"
    )
    parts = {
        "ddpg-host-step": (
            timing["step"],
            ("observe", "learn"),
            f"HostLoop._collect_and_learn, one env step + observe + add + update + act, "
            f"as the driver runs it; {where}; with each jitted call blocked: "
            f"{timing['step_blocked']['median'] * 1e3:.2f} ms = env and host "
            f"{env_s * 1e3:.2f} + observe {timing['observe']['median'] * 1e3:.2f} + learn "
            f"{timing['learn']['median'] * 1e3:.2f} ms",
        ),
        "ddpg-host-observe": (
            timing["observe"],
            ("observe",),
            f"the step's jitted observe (the observations as the agent sees them), blocked; "
            f"{where}",
        ),
        "ddpg-host-learn": (
            timing["learn"],
            ("learn",),
            f"the step's jitted add_and_learn (add to buffer, sample, update, act with the "
            f"updated policy), blocked; {where}",
        ),
    }
    summed = (
        "flops",
        "bytes",
        "transcendentals",
        "xla_flops_once",
        "xla_bytes_once",
        "ops",
        "dot_flops",
        "hlo_ops",
        "hlo_fusions",
        "hlo_while_loops",
        "loops_unknown_trips",
        "gather_overcount_bytes",
    )
    for name, (stats, which, notes) in parts.items():
        row = {
            "program": name,
            "group": "host",
            "algo": "ddpg",
            "shape": "mujoco",
            "time_median_s": stats["median"],
            "time_q1_s": stats["q1"],
            "time_q3_s": stats["q3"],
            "repetitions": stats["n"],
            "calls_per_repetition": per_step,
            "compile_s": None,  # compiled inside the driver's first steps
            "first_5_steps_s": first_steps_s,
            **{k: sum(analyses[w].get(k, 0.0) for w in which) for k in summed},
            "data_dependent_trips": {},
            "loops": [loop for w in which for loop in analyses[w]["loops"]],
            "notes": notes,
            "env_id": env_id,
            "env_backend": backend,
            "env_and_host_s": env_s,
            "loadavg_before": load_before,
            "loadavg_after": loadavg(),
        }
        row.update(derived(row, peaks))
        rows.append(row)
    return rows


# ================================================================================ main
ALL_PROGRAMS = (
    "npg-update-pendulum",
    "trpo-update-pendulum",
    "npg-update-mujoco",
    "trpo-update-mujoco",
    "trpo-update-pendulum-preset",
    *(
        f"trpo-{part}-{shape}"
        for shape in ("pendulum", "mujoco")
        for part in ("prepare", "critic", "actor-step", "fvp", "cg", "line-search")
    ),
    "ddpg-update-mujoco",
    "ddpg-update-only-mujoco",
    "ddpg-update-pendulum",
    "trpo-period-pendulum-preset",
    "ddpg-period-pendulum",
    "ddpg-host-step",
)
QUICK_PROGRAMS = (
    "trpo-update-pendulum",
    "trpo-fvp-pendulum",
    "trpo-cg-pendulum",
    "ddpg-update-mujoco",
    "trpo-period-pendulum-preset",
    "ddpg-host-step",
)


def build(name: str, quick: bool) -> list[Program]:
    """The program(s) called ``name`` (built lazily: inputs are made only for what runs)."""
    if name.startswith(("npg-update", "trpo-update")):
        algo, _, shape = name.split("-", 2)
        return update_programs(algo, shape)
    if name.startswith("trpo-") and name.rsplit("-", 1)[-1] in ("pendulum", "mujoco"):
        shape = name.rsplit("-", 1)[-1]
        return [p for p in trpo_part_programs(shape) if p.name == name]
    if name.startswith("ddpg-update"):
        shape = name.rsplit("-", 1)[-1]
        capacity = 20_000 if shape == "pendulum" else (10_000 if quick else 100_000)
        return [p for p in ddpg_programs(shape, capacity) if p.name == name]
    if name.startswith(("trpo-period", "ddpg-period")):
        return [period_program(name.split("-")[0], quick)]
    raise ValueError(f"unknown program {name}")


def selected(patterns: list[str] | None, quick: bool) -> list[str]:
    if not patterns:
        return list(QUICK_PROGRAMS if quick else ALL_PROGRAMS)
    names = [n for n in ALL_PROGRAMS if any(fnmatch.fnmatch(n, p) for p in patterns)]
    if not names:
        raise SystemExit(f"no program matches {patterns}; programs: {', '.join(ALL_PROGRAMS)}")
    return names


def fmt(value: float, digits: int = 1) -> str:
    if value != value:  # NaN
        return "-"
    return f"{value:,.{digits}f}"


def table(rows: list[dict[str, Any]], peaks: dict[str, Any]) -> str:
    """The Markdown table; a column of % of the default-precision peak where it differs from
    the float32 one (GPUs: TF32)."""
    tf32 = jax.default_backend() != "cpu"
    headers = ["program", "ms (q1-q3)", "GFLOP", "MB", "GFLOP/s", "% matmul peak"]
    headers += ["% default-precision peak"] if tf32 else []
    headers += ["% layer-shape product"]
    headers += ["GB/s", "% BW peak", "% in-cache BW", "FLOP/B", "ops", "us/op"]
    headers += ["bound"]
    lines = []
    for r in rows:
        line = [
            r["program"],
            f"{r['time_median_s'] * 1e3:.2f} "
            f"({r['time_q1_s'] * 1e3:.2f}-{r['time_q3_s'] * 1e3:.2f})",
            fmt(r["flops"] / 1e9, 3),
            fmt(r["bytes"] / 1e6, 1),
            fmt(r["gflops_s"], 1),
            fmt(r["pct_matmul_peak"], 1),
        ]
        line += [fmt(r["pct_matmul_peak_default"], 1)] if tf32 else []
        line += [fmt(r.get("pct_layer_product", float("nan")), 1)]
        line += [
            fmt(r["gbs"], 1),
            fmt(r["pct_bandwidth_peak"], 1),
            fmt(r["pct_cache_bandwidth"], 1),
            fmt(r["intensity"], 1),
            fmt(r["ops"], 0),
            fmt(r["us_per_op"], 1),
            r["bound"],
        ]
        lines.append(line)
    return markdown_table(headers, lines)


def _peak_lines(peaks: dict[str, Any]) -> list[tuple[str, float, str]]:
    """``(what, ms, rate)`` of every peak measurement of one :func:`measure_peaks`."""
    lines = [
        (
            f"matmul {r['size']}x{r['size']}, {r['precision']} precision",
            r["time_median"],
            f"{r['gflops']:,.1f} GFLOP/s",
        )
        for r in peaks["matmul"]
    ]
    for r in peaks["memory"]:
        size = r["elements"] * 4 / 2**20
        what = f"{size:,.0f} MiB" if size >= 1 else f"{size * 1024:,.0f} KiB"
        if r["kind"] == "cache copy":
            what += f", {CACHE_COPY_ITERATIONS} passes in one program"
        lines.append((f"{r['kind']} of {what}", r["time_median"], f"{r['gbs']:,.1f} GB/s"))
    floor = peaks["op_overhead"]
    lines.append(
        (
            f"small ops: a chain of {SMALL_PRODUCTS} dependent 16 x 16 products "
            f"({floor['ops']:,.0f} ops executed)",
            floor["time_median"],
            f"{floor['us_per_op']:.2f} us per op",
        )
    )
    for r in peaks.get("layer_products", []):
        batch, m, k, n = r["shape"]
        times = f"{batch} x " if batch > 1 else ""
        lines.append(
            (
                f"a layer's product: {r['name']}, {times}{m} x {k} by {k} x {n} "
                f"({r['products_per_call']} in one program)",
                r["time_median"],
                f"{r['gflops']:,.1f} GFLOP/s",
            )
        )
    return lines


def peaks_table(peaks: dict[str, Any]) -> str:
    """The peaks measured before the programs and, where measured, again after them."""
    start = _peak_lines(peaks.get("start", peaks))
    if "end" not in peaks:
        return markdown_table(
            ["peak", "ms", "rate"], [[w, f"{t * 1e3:.2f}", r] for w, t, r in start]
        )
    end = _peak_lines(peaks["end"])
    rows = [
        [w, f"{t * 1e3:.2f}", r, f"{t2 * 1e3:.2f}", r2]
        for (w, t, r), (_, t2, r2) in zip(start, end, strict=True)
    ]
    return markdown_table(
        ["peak", "ms (before)", "rate (before)", "ms (after)", "rate (after)"], rows
    )


PEAK_KEYS = ("matmul_gflops_highest", "matmul_gflops_default", "bandwidth_gbs", "cache_gbs")


def combine_peaks(start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    """The better of the two measurements of each peak (the machine's capability; a busy
    moment only lowers a rate), with both kept; ``unsteady`` names the peaks that differ by
    more than 15% (the machine was not quiet)."""
    peaks: dict[str, Any] = {"start": start, "end": end}
    for key in PEAK_KEYS:
        peaks[key] = max(start[key], end[key])
    peaks["op_overhead_us"] = min(start["op_overhead_us"], end["op_overhead_us"])
    peaks["op_overhead"] = min(
        start["op_overhead"], end["op_overhead"], key=lambda r: r["us_per_op"]
    )
    peaks["machine_balance"] = peaks["matmul_gflops_highest"] / peaks["bandwidth_gbs"]
    peaks["layer_products"] = [
        max(a, b, key=lambda r: r["gflops"])
        for a, b in zip(start["layer_products"], end["layer_products"], strict=True)
    ]
    peaks["unsteady"] = [
        key for key in PEAK_KEYS if abs(start[key] - end[key]) > 0.15 * max(start[key], end[key])
    ]
    return peaks


def plot(rows: list[dict[str, Any]], peaks: dict[str, Any], path: Path, backend: str) -> None:
    """Log-log roofline: each program a numbered point (the list on the right names them),
    the crowd near the roofs magnified in an inset."""
    plt = pyplot()
    if plt is None:
        return
    fig, (ax, side) = plt.subplots(
        1, 2, figsize=(13, 6.5), gridspec_kw={"width_ratios": [2.6, 1.4]}
    )
    points = [r for r in rows if r["gflops_s"] > 0 and r["intensity"] == r["intensity"]]
    peak = peaks["matmul_gflops_highest"]
    crowd = [r for r in points if r["gflops_s"] >= peak / 30]
    inset = ax.inset_axes([0.55, 0.08, 0.43, 0.5]) if len(crowd) > 3 else None
    intensities = [r["intensity"] for r in points]
    low = min([peaks["machine_balance"] / 10, *intensities]) / 2
    high = max([peaks["machine_balance"] * 10, *intensities]) * 2
    x = np.logspace(math.log10(low), math.log10(high), 400)
    bandwidth = peaks["bandwidth_gbs"]
    roofs = [("matmul_gflops_highest", "-", "float32 matmul peak")]
    if backend != "cpu":  # on a CPU the default precision is float32 too
        roofs.append(("matmul_gflops_default", "--", "default-precision (TF32) matmul peak"))
    colors = {"update": "tab:blue", "part": "tab:orange", "driver": "tab:green", "host": "tab:red"}
    numbers = {id(r): n for n, r in enumerate(points, 1)}
    for axes in (ax, inset) if inset is not None else (ax,):
        for key, style, label in roofs:
            axes.plot(
                x,
                np.minimum(peaks[key], bandwidth * x),
                style,
                color="black",
                lw=1.2,
                label=f"{label} {peaks[key]:,.0f} GFLOP/s; large copy {bandwidth:,.1f} GB/s",
            )
        axes.plot(
            x,
            np.minimum(peak, peaks["cache_gbs"] * x),
            ":",
            color="gray",
            lw=1,
            label=f"in-cache copy {peaks['cache_gbs']:,.0f} GB/s",
        )
        for group, color in colors.items():
            chosen = [r for r in points if r["group"] == group]
            if chosen:
                axes.scatter(
                    [r["intensity"] for r in chosen],
                    [r["gflops_s"] for r in chosen],
                    color=color,
                    label=group,
                    zorder=3,
                    s=22,
                )
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
        labelled = (
            crowd if axes is inset else [r for r in points if inset is None or r not in crowd]
        )
        for r in labelled:
            number = numbers[id(r)]
            offset = [(4, 3), (4, -9), (-12, 3), (-12, -9)][number % 4]
            axes.annotate(
                str(number),
                (r["intensity"], r["gflops_s"]),
                fontsize=7,
                xytext=offset,
                textcoords="offset points",
            )
    if inset is not None:
        xs, ys = [r["intensity"] for r in crowd], [r["gflops_s"] for r in crowd]
        inset.set_xlim(min(xs) / 1.4, max(xs) * 1.4)
        inset.set_ylim(min(ys) / 1.4, max(peak, max(ys)) * 1.3)
        inset.tick_params(which="both", labelsize=6)
        from matplotlib.ticker import FuncFormatter

        plain = FuncFormatter(lambda value, _: f"{value:g}")
        for axis in (inset.xaxis, inset.yaxis):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(plain)
        ax.indicate_inset_zoom(inset, edgecolor="gray")
    ax.set_xlabel("arithmetic intensity (FLOPs / byte accessed, XLA cost analysis)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(f"jaxrl's programs against the peaks measured in the same run ({backend})")
    ax.legend(fontsize=7, loc="upper left")
    legend = [
        f"{numbers[id(r)]:>2} {r['program']:<29} {r['pct_matmul_peak']:5.1f}% {r['bound']}"
        for r in points
    ]
    side.axis("off")
    side.text(
        0,
        1,
        "   program                       % peak bound\n" + "\n".join(legend),
        va="top",
        family="monospace",
        fontsize=7,
        transform=side.transAxes,
    )
    save_figure(plt, fig, path)


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """The issue's two checks: TRPO's update at the Pendulum shapes and DDPG's at MuJoCo's."""
    lines = []
    for name in ("trpo-update-pendulum", "ddpg-update-mujoco"):
        row = next((r for r in rows if r["program"] == name), None)
        if row is None:
            continue
        lines.append(
            f"{name}: {row['pct_matmul_peak']:.1f}% of the float32 matmul peak "
            f"({'>=' if row['pct_matmul_peak'] >= 35 else '<'} 35%), "
            f"{row['pct_bandwidth_peak']:.1f}% of the bandwidth peak, "
            f"{row['pct_layer_product']:.1f}% of a product at its layers' shape, "
            f"{row['ops']:,.0f} ops at {row['us_per_op']:.1f} us/op: {row['bound']}-bound"
        )
    return lines


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=0.5, help="per repetition and program")
    parser.add_argument(
        "--programs",
        nargs="+",
        default=None,
        help="names or shell patterns (default: all; --quick: a few)",
    )
    parser.add_argument(
        "--host-env",
        default="auto",
        help="environment of ddpg-host-step (auto: Hopper-v5 with MuJoCo, "
        "EnvPool if installed; Pendulum-v1 without, and in --quick)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="measure the jitted programs vmapped over this many seeds (default 1)",
    )
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.quick:
        args.repetitions, args.seconds = 3, 0.05
    names = selected(args.programs, args.quick)
    if args.seeds > 1 and "ddpg-host-step" in names:
        names.remove("ddpg-host-step")
        print("ddpg-host-step left out: one seed's host step (--seeds vmaps jitted programs)")
        if not names:
            parser.error("--seeds > 1 needs a jitted program; ddpg-host-step is one seed's")
    out = output_dir(args)
    info = machine_info()
    info["jax_settings"] = {
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
        "jax_disable_most_optimizations": jax.config.values["jax_disable_most_optimizations"],
        "jax_default_matmul_precision": jax.config.values["jax_default_matmul_precision"],
    }
    print_machine(info)
    if info["jax_settings"]["jax_disable_most_optimizations"] or info["jax_settings"]["XLA_FLAGS"]:
        print(
            f"WARNING: not JAX's defaults ({info['jax_settings']}): the figures are not the "
            "machine's (the test suite sets these; measure outside it)."
        )
    backend = jax.default_backend()
    print(f"Measuring peaks ({backend}) ...", flush=True)
    peaks = measure_peaks(args.quick, args.repetitions, args.seconds)
    print(peaks_table(peaks))
    print(f"machine balance: {peaks['machine_balance']:.1f} FLOP/byte\n", flush=True)

    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name in names:
        print(f"[{time.perf_counter() - started:5.0f} s] {name} ...", end=" ", flush=True)
        if name == "ddpg-host-step":
            new = host_step_rows(peaks, args)
        else:
            new = [
                measure_program(over_seeds(p, args.seeds), peaks, args)
                for p in build(name, args.quick)
            ]
        for row in new:
            rows.append(row)
            print(
                f"{row['program']}: {row['time_median_s'] * 1e3:.2f} ms, "
                f"{row['gflops_s']:.1f} GFLOP/s ({row['pct_matmul_peak']:.0f}%), "
                f"{row['gbs']:.1f} GB/s ({row['pct_bandwidth_peak']:.0f}%), "
                f"{row['ops']:,.0f} ops, {row['bound']} | load {row['loadavg_after'][0]:.2f}",
                flush=True,
            )

    print("\nMeasuring the peaks again ...", flush=True)
    peaks = combine_peaks(peaks, measure_peaks(args.quick, args.repetitions, args.seconds))
    for row in rows:  # against the better measurement of each peak
        row.update(derived(row, peaks))
    markdown = table(rows, peaks)
    print()
    print(peaks_table(peaks))
    print()
    print(markdown)
    print()
    for line in verdicts(rows):
        print(line)
    if peaks["unsteady"]:
        print(
            f"WARNING: {', '.join(peaks['unsteady'])} differ by more than 15% before and after "
            "the programs: the machine was not quiet, the percentages are not reliable."
        )
    stem = f"roofline_{backend}" + (f"_x{args.seeds}" if args.seeds > 1 else "")
    write_json(
        out / f"{stem}.json",
        {
            "command": command_line(),
            "machine": {**info, "loadavg_end": loadavg()},
            "rule": {
                "compute_bound_fraction_of_matmul_peak": COMPUTE_BOUND_FRACTION,
                "memory_bound_fraction_of_bandwidth_peak": MEMORY_BOUND_FRACTION,
                "matmul_peak_used": "float32 ('highest' precision)",
            },
            "peaks": peaks,
            "repetitions": args.repetitions,
            "seconds_per_repetition": args.seconds,
            "rows": rows,
            "table": markdown,
            "peaks_table": peaks_table(peaks),
            "verdicts": verdicts(rows),
        },
    )
    write_csv(
        out / f"{stem}.csv",
        [{k: v for k, v in r.items() if k not in ("loops", "data_dependent_trips")} for r in rows],
    )
    plot(rows, peaks, out / f"{stem}.png", backend)


if __name__ == "__main__":
    main()
