"""Many seeds over many devices and processes: the seed axis sharded with ``jax.sharding``.

A job of several processes (one per GPU, per host, or several on one CPU) starts with
:func:`initialize_distributed` in every process, before any other JAX call: it joins the job
that the launch settings (:class:`jaxrl.config.settings.RunSettings`'s
``coordinator_address``, ``num_processes``, ``process_id``) or a cluster manager's
environment (SLURM's ``srun``, Open MPI's ``mpirun``, which ``jax.distributed.initialize``
reads) describe. From then on ``jax.devices()`` lists every process's devices, and:

- :class:`SeedPlacement` keeps a run's arrays split along their leading seed axis over all
  of them (a ``NamedSharding`` over a one-axis mesh, :func:`seed_mesh`), and runs a per-seed
  program on each device's block of seeds: the single-device program, compiled as a
  single-process run compiles it (batched or one seed after another,
  :func:`jaxrl.training.over_seeds`), and no device talks to another. So each seed's numbers
  are bitwise those of a single-process run with the same per-device batch (an XLA program
  partitioned over several devices, ``jax.shard_map``, compiles with other float
  simplifications: its results differ in the last bits, and training amplifies them).
- :func:`gather_seeds` brings such arrays, whose shards live in several processes, to every
  process as NumPy arrays (``jax.experimental.multihost_utils.process_allgather``;
  ``jax.device_get`` reads only this process's shards).
- :func:`processes_agree`, :func:`primary_value` and :func:`barrier` keep the processes in
  step where only one of them writes or reads the files (process 0 writes the run or sweep
  directory; :func:`is_primary`).

On a CPU the processes exchange data through JAX's CPU collectives (gloo), so the same code
runs as several processes on one machine. :func:`train_sharded` trains a whole ``train``
function's seeds over every device of a mesh as one program (``jax.shard_map``), each device
its block of seeds: several GPUs of one process, or a CPU made several devices
(``jax_num_cpu_devices``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrl.algorithms.protocol import Agent
from jaxrl.config.settings import SettingError
from jaxrl.core.prng import is_key
from jaxrl.training.programs import Same, compiled

if TYPE_CHECKING:
    from jaxrl.config.settings import RunSettings

SEED_AXIS = "seeds"

# What a cluster manager sets in each process it launches, as JAX's own detection
# (jax._src.clusters) reads it: SLURM inside a job step (srun), Open MPI (mpirun).
_CLUSTER_PROCESS_COUNTS = (
    (("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_PROCID", "SLURM_LOCALID"), "SLURM_NTASKS"),
    (("OMPI_MCA_orte_hnp_uri",), "OMPI_COMM_WORLD_SIZE"),
)


def seed_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis mesh named ``"seeds"`` over ``devices`` (default: all global devices)."""
    devices = list(jax.devices() if devices is None else devices)
    return Mesh(np.asarray(devices), (SEED_AXIS,))


# ---------------------------------------------------------------------------------------------
# Joining a job of several processes
# ---------------------------------------------------------------------------------------------


def cluster_process_count() -> int | None:
    """The number of processes a cluster manager launched this process with (SLURM's
    ``srun``: ``SLURM_NTASKS``; Open MPI's ``mpirun``: ``OMPI_COMM_WORLD_SIZE``), or None
    outside one."""
    for present, count in _CLUSTER_PROCESS_COUNTS:
        if all(name in os.environ for name in (*present, count)):
            try:
                return int(os.environ[count])
            except ValueError:
                return None
    return None


def several_processes() -> bool:
    """Whether this process belongs to a job of several processes (after
    :func:`initialize_distributed`). Starts no backend before the job is joined."""
    return jax.distributed.is_initialized() and jax.process_count() > 1


def is_primary() -> bool:
    """Whether this process writes what the job writes once (process 0; the only process
    of a single-process run)."""
    return not several_processes() or jax.process_index() == 0


def initialize_distributed(settings: RunSettings | None = None, **overrides: Any) -> bool:
    """Join the job of several processes that ``settings``' launch settings describe.

    Call it in every process before any other JAX computation (``jaxrl train`` calls it
    first). ``coordinator_address`` (``host:port`` of process 0), ``num_processes`` and
    ``process_id`` come from ``settings`` (a :class:`jaxrl.config.settings.RunSettings`
    or :class:`jaxrl.config.RunConfig`), replaced by ``overrides`` of the same names (and
    ``coordinator_timeout``); any left None is read by ``jax.distributed.initialize`` from a
    cluster manager's environment (SLURM's ``srun``, Open MPI's ``mpirun``). With none given
    and no cluster manager that launched several processes, this process is a job of its
    own and nothing happens (where JAX's own detection finds a job that this does not, e.g.
    a Cloud TPU pod, call ``jax.distributed.initialize()`` first: this then returns True).
    On a CPU the processes use JAX's CPU collectives (gloo).

    Returns:
      True if this process is now part of a job of several processes (also if it already
      was), False for a single process.

    Raises:
      SettingError: a launch setting out of range (``process_id >= num_processes``).
      ValueError: ``num_processes`` without a ``coordinator_address`` outside a cluster
        manager.
      TypeError: an override that is not a launch setting.

    A process that cannot join the job within ``coordinator_timeout`` seconds (process 0
    waits for the others, the others for process 0's coordinator) exits with status 1 and a
    message naming the coordinator: JAX would abort it later without one.
    """
    from jaxrl.config.settings import RunSettings, launch_settings

    names = launch_settings()
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise TypeError(f"not launch settings: {', '.join(unknown)} (they are {names})")
    base = settings if settings is not None else RunSettings()
    values = {name: getattr(base, name) for name in names}
    values.update(overrides)
    RunSettings.validate(values)
    address, processes = values["coordinator_address"], values["num_processes"]
    process, timeout = values["process_id"], int(values["coordinator_timeout"])
    if jax.distributed.is_initialized():
        return jax.process_count() > 1
    launched = cluster_process_count()
    given = address is not None or processes is not None or process is not None
    if processes == 1 or (not given and (launched or 1) <= 1):
        return False  # a job of one process: nothing to join
    if address is None and launched is None:
        raise ValueError(
            "coordinator_address is needed to join a job of several processes outside a "
            "cluster manager (host:port of process 0)"
        )
    if not jax.config.jax_cpu_collectives_implementation:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    watchdog = threading.Timer(timeout, _give_up, (address, processes, process, timeout))
    watchdog.daemon = True
    watchdog.start()
    try:
        # JAX's own deadline comes later: it aborts the process without saying why.
        jax.distributed.initialize(address, processes, process, initialization_timeout=timeout + 30)
        _connect_collectives()
    finally:
        watchdog.cancel()
    return jax.process_count() > 1


def _connect_collectives() -> None:
    """Connect the processes' collectives now (a barrier over every device), with what the
    CPU collectives print on connecting (gloo: one line on stdout) sent to stderr, where it
    does not mix with the command's report."""
    sys.stdout.flush()
    stdout = os.dup(1)
    try:
        os.dup2(2, 1)
        barrier("jaxrl-joined")
    finally:
        os.dup2(stdout, 1)
        os.close(stdout)


def _give_up(address: str | None, processes: int | None, process: int | None, timeout: int) -> None:
    where = f"at {address}" if address else "at its coordinator"
    count = f" of {processes}" if processes else ""
    if process == 0:
        problem = (
            f"process 0{count} waited {timeout} s {where} for the other processes to join: start "
            "them with the same --coordinator-address and --num-processes, each with its "
            "--process-id"
        )
    else:
        who = f"process {process}{count}" if process is not None else "this process"
        problem = (
            f"{who} could not join the job {where} within {timeout} s: is process 0 "
            f"(--process-id 0) running, and is {address or 'the coordinator'} reachable from "
            "this host?"
        )
    leave_job(f"jaxrl: error: {problem} (--coordinator-timeout sets the wait)")


def leave_job(message: str) -> None:
    """Write ``message`` to stderr and end this process at once (status 1), without JAX's
    shutdown barrier, at which a failed process of a job would wait for the others while they
    wait for it in their next collective; the others then stop when the job's coordination
    service or their collectives miss this one."""
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(1)


def processes_agree(ok: bool) -> bool:
    """Whether every process of the job says ``ok`` (a collective: every process calls it
    at the same point); ``ok`` itself for a single process. Lets all processes stop together
    where one of them failed (process 0 could not create the run directory)."""
    if not several_processes():
        return ok
    from jax.experimental import multihost_utils

    flags = multihost_utils.process_allgather(np.asarray([bool(ok)]))
    return bool(np.all(flags))


def primary_value(value: Any) -> np.ndarray:
    """Process 0's ``value`` (an array, or a tree of them, of the same shapes in every
    process) on every process, as NumPy: what every process must agree on where only
    process 0 reads the files that decide it (a collective: every process calls it at the
    same point). ``value`` itself, as NumPy, for a single process."""
    if not several_processes():
        return jax.tree_util.tree_map(np.asarray, value)
    from jax.experimental import multihost_utils

    shared = multihost_utils.broadcast_one_to_all(jax.tree_util.tree_map(np.asarray, value))
    return jax.tree_util.tree_map(np.asarray, shared)


def barrier(name: str) -> None:
    """Wait until every process of the job reaches the barrier ``name`` (no-op for one)."""
    if several_processes():
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


# ---------------------------------------------------------------------------------------------
# Seeds over devices
# ---------------------------------------------------------------------------------------------


def gather_seeds(tree: Any) -> Any:
    """``tree`` with every array whole on every process: NumPy arrays (typed PRNG keys as key
    arrays on this process's first device). Arrays whose shards live in other processes are
    gathered with ``process_allgather`` (a collective: every process calls it); the others
    are read with ``jax.device_get``."""

    def one(x: Any) -> Any:
        if not isinstance(x, jax.Array) or x.is_fully_addressable:
            return x if is_key(x) else jax.device_get(x)
        from jax.experimental import multihost_utils

        if is_key(x):
            data = multihost_utils.process_allgather(jax.random.key_data(x), tiled=True)
            return jax.device_put(
                jax.random.wrap_key_data(np.asarray(data), impl=jax.random.key_impl(x)),
                jax.local_devices()[0],
            )
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))

    return jax.tree_util.tree_map(one, tree)


@dataclasses.dataclass(frozen=True)
class SeedPlacement:
    """Where the seeds of a run live, and how its per-seed programs run over them.

    Attributes:
      mesh: a one-axis mesh (:func:`seed_mesh`) the leading seed axis of every array is
        split over, each device running its block of seeds; None: every array on this
        process's first device, the programs plainly jitted (a single process, as before
        there were several).
    """

    mesh: Mesh | None = None

    @classmethod
    def for_job(cls) -> SeedPlacement:
        """Sharded over every device of the job in a job of several processes
        (:func:`initialize_distributed`), else on one device."""
        return cls(seed_mesh()) if several_processes() else cls()

    @property
    def num_devices(self) -> int:
        """Devices the seeds are split over."""
        return 1 if self.mesh is None else int(self.mesh.devices.size)

    def check(self, num_seeds: int) -> None:
        """Raise :class:`jaxrl.config.settings.SettingError` (naming ``num_seeds``) unless
        every device gets the same number of seeds."""
        if num_seeds % self.num_devices:
            processes = jax.process_count()
            raise SettingError(
                "RunSettings",
                "num_seeds",
                f"a multiple of the job's {self.num_devices} devices ({processes} processes; "
                "every device trains as many seeds)",
                num_seeds,
            )

    def jit(self, fn: Callable[..., Any], split: Sequence[bool] | None = None) -> Callable:
        """``fn`` (a function of arrays with a leading seed axis, e.g.
        ``over_seeds(loop.run_period)``), jitted. With a mesh, the jitted ``fn`` runs on each
        of this process's devices with that device's block of seeds (the arguments' shards;
        the devices run concurrently), and the outputs are assembled into arrays split the
        same way. ``split``: per argument, whether it has the seed axis (default: all); the
        others (plain values such as a flag) go to every device as they are. Traced
        arguments (``jax.eval_shape``) trace ``fn`` over all seeds."""
        program = jax.jit(fn)
        if self.mesh is None:
            return program
        sharding = NamedSharding(self.mesh, PartitionSpec(SEED_AXIS))
        here = jax.process_index()
        devices = [d for d in self.mesh.devices.flat if d.process_index == here]
        total = self.num_devices

        def run(*args: Any) -> Any:
            if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(args)):
                return program(*args)
            splits = [True] * len(args) if split is None else list(split)
            outputs = []
            for device in devices:
                local = [
                    jax.tree_util.tree_map(
                        lambda x, d=device, cut=cut: _shard_on(x, d) if cut else _on(x, d), arg
                    )
                    for arg, cut in zip(args, splits, strict=True)
                ]
                outputs.append(program(*local))

            def assemble(*blocks: Any) -> Any:
                shape = (blocks[0].shape[0] * total, *blocks[0].shape[1:])
                return jax.make_array_from_single_device_arrays(shape, sharding, list(blocks))

            return jax.tree_util.tree_map(assemble, *outputs)

        run.program = program  # the jitted per-device program (for inspection)
        return run

    def put(self, tree: Any) -> Any:
        """``tree`` (NumPy, this process's or already placed arrays, each with a leading seed
        axis holding every seed) placed: strongly typed (so fresh, continued and restored
        carries call the same compiled programs), on this process's first device or split
        over the mesh (every process passing the same values)."""
        if self.mesh is None:
            tree = jax.tree_util.tree_map(_strong, tree)
            return jax.device_put(tree, jax.local_devices()[0])
        sharding = NamedSharding(self.mesh, PartitionSpec(SEED_AXIS))

        def one(x: Any) -> Any:
            if isinstance(x, jax.Array) and x.sharding == sharding:
                return _strong(x)  # placed already (a program's output)
            if is_key(x):
                data = one(jax.random.key_data(x))
                return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
            host = np.asarray(x)
            return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

        return jax.tree_util.tree_map(one, tree)

    def gather(self, tree: Any) -> Any:
        """``tree`` whole on every process (:func:`gather_seeds`)."""
        return gather_seeds(tree) if self.mesh is not None else jax.device_get(tree)


def _shard_on(x: Any, device: jax.Device) -> Any:
    """The block of ``x`` (an array split by :class:`SeedPlacement`) on ``device``."""
    for shard in x.addressable_shards:
        if shard.device == device:
            return shard.data
    raise ValueError(f"no shard of an array on {device}")


def _on(x: Any, device: jax.Device) -> Any:
    """``x`` as a program on ``device`` takes it: a JAX array moved there (weak type kept),
    anything else (a Python number, a NumPy array) as it is."""
    return jax.device_put(x, device) if isinstance(x, jax.Array) else x


def _strong(x: Any) -> Any:
    return jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x


def train_sharded(
    train: Callable[[jax.Array], Any],
    keys: jax.Array,
    mesh: Mesh | None = None,
    seed_axis: str = "auto",
    agent: Agent | None = None,
) -> Any:
    """Run ``train`` on every seed of ``keys``, the seed axis split over the devices of
    ``mesh``: one program (``jax.shard_map``), compiled once, each device training its
    block of seeds (batched or one after another, :func:`jaxrl.training.over_seeds`), all
    devices at once.

    On a CPU this is how a run uses several cores for small programs: with
    ``jax.config.update("jax_num_cpu_devices", N)`` (or
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N``) before JAX starts, the CPU is N
    devices, each executing its own stream of operations: the latency-bound NPG/TRPO update
    leaves cores idle, and 16 TRPO seeds on Pendulum ran 1.3x faster on two devices of a
    2-core CPU (``docs/benchmarks/scaling.md``, "Several devices or processes for one run").
    Each seed's numbers are those of a run with the same number of devices (a program
    partitioned over several devices compiles with other float rounding than a
    single-device program, so they differ from a one-device run in the last bits, which
    training amplifies).

    Args:
      train: a pure ``train(key) -> outputs`` (e.g. from :func:`jaxrl.training.make_train`).
      keys: ``[S]`` PRNG keys, one per seed; ``S`` must be a multiple of the number of
        devices in the mesh.
      mesh: the device mesh (default :func:`seed_mesh` over all devices).
      seed_axis: how a device runs its block of seeds: ``"vmap"``, ``"map"`` or ``"auto"``
        (:func:`jaxrl.training.resolve_seed_axis`, which consults ``agent``; without one,
        ``auto`` batches them).
      agent: the algorithm, for ``seed_axis="auto"``.

    Returns:
      ``outputs`` with a leading seed axis, sharded the same way: :func:`gather_seeds`
      brings them whole to every process (``jax.device_get`` does within one process).
    """
    mesh = seed_mesh() if mesh is None else mesh
    num_devices = mesh.devices.size
    num_seeds = keys.shape[0]
    if num_seeds % num_devices:
        raise ValueError(
            f"keys: the number of seeds ({num_seeds}) must be a multiple of the number of "
            f"devices ({num_devices})"
        )
    typed = is_key(keys)
    build = lambda: sharded_program(train, mesh, seed_axis, agent, typed_keys=typed)  # noqa: E731
    program = compiled(("sharded", Same(train), mesh, seed_axis, Same(agent), typed), build)[0]
    return program(shard_key_data(keys, mesh))


def shard_key_data(keys: jax.Array, mesh: Mesh) -> jax.Array:
    """The data of ``[S]`` PRNG keys (typed or raw), split over ``mesh``'s seed axis: what
    :func:`sharded_program` takes."""
    typed = is_key(keys)
    key_data = np.asarray(jax.random.key_data(keys) if typed else keys)
    sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))
    # Built from a callback so every process of a multi-host job supplies its own shards.
    return jax.make_array_from_callback(key_data.shape, sharding, lambda i: key_data[i])


def sharded_program(
    train: Callable[[jax.Array], Any],
    mesh: Mesh,
    seed_axis: str = "auto",
    agent: Agent | None = None,
    typed_keys: bool = True,
) -> Callable[[jax.Array], Any]:
    """The jitted program of :func:`train_sharded`: ``key data [S, ...]`` split over
    ``mesh`` (:func:`shard_key_data`) to ``train``'s outputs with a leading seed axis, one
    block of seeds per device (``over_seeds(train, seed_axis, agent)`` on each). Jitted,
    so ``.lower(data).compile()`` measures its compilation."""
    from jaxrl.training.seeds import over_seeds

    per_device = over_seeds(train, seed_axis, agent)

    def block(data: jax.Array) -> Any:
        return per_device(jax.random.wrap_key_data(data) if typed_keys else data)

    spec = PartitionSpec(SEED_AXIS)
    # The devices' seeds are independent (no value is shared across devices), so the
    # program is not checked for per-device variance: check_vma=False lets a seed's loop
    # carries start from constants, as in a single-device program.
    return jax.jit(jax.shard_map(block, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))
