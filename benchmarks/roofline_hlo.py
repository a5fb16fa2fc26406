"""FLOPs, bytes and operations of a compiled JAX program from its optimized HLO, loops counted.

**Loops.** XLA's ``cost_analysis()`` counts the body of every ``while`` loop once, whatever
its trip count (checked: a ``lax.scan`` of 10 matrix products reports the FLOPs of one).
jaxrl's updates are loops: ``repeat`` passes (a scan), the critic's Adam steps (a scan),
conjugate gradients and TRPO's line search (``while_loop`` s that stop early). So
:class:`HloAnalysis` takes XLA's cost analysis of every loop body separately (the body as the
entry of a module parsed from the optimized HLO text, analysed by the same XLA cost model) and
scales it by the loop's trip count: known trip counts from XLA's own annotation
(``known_trip_count``, scans); data-dependent ones (``conjugate_gradient``,
``backtracking_line_search``, told apart by the function that built the loop, from the HLO's
stack frames) from what the same call did, read from the program's outputs (``dynamic``).
Both figures are in the records: ``xla_flops_once`` (XLA's figure as it comes) and ``flops``
(loops counted). ``dot_flops`` is a cross-check: ``2 x output size x contracted size`` of
every matrix product in the optimized HLO (cuBLAS calls included), with the same trip counts.
A loop whose trip count is neither known nor read is counted once and flagged
(``loops_unknown_trips``).

**Bytes.** XLA's "bytes accessed" adds up every operand and result of every op, wherever
it is served from: a program whose arrays stay in cache can move more bytes per second than
a large copy can. One correction: XLA counts the whole operand of a fused ``gather``
(sampling 256 transitions from a replay buffer counts the whole buffer); ``bytes`` counts the
gathered rows instead (``gather_overcount_bytes`` is what was taken off).

**Operations executed.** ``ops`` counts the optimized HLO's kernels per call: every
instruction of the entry and of loop bodies except free ones (parameters, constants,
tuples, ``get-tuple-element``, ``bitcast``), a fusion counting as one, loop bodies times
their trip counts.

The roofline (``roofline.py``) reads these figures for every program it measures.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

import jax

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
