"""After training, as a new user: two runs trained from the command line (the session's tiny
TRPO run on Pendulum-v1, jitted driver, and a tiny NPG run on Hopper-v5 with observation
normalization, host driver), loaded with :func:`load`, acting on fresh observations,
evaluated with :func:`evaluate_policy` (the numbers of ``jaxrl evaluate``), exported
with ``jaxrl export`` to ONNX and to JAX's serialized program, whose actions in onnxruntime
and in a fresh process without jaxrl are the policy's; :func:`make_config` builds the
command's run; the export of NPG, TRPO and DDPG, each on a gymnax task and on MuJoCo with
observation normalization."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxrl import (
    NPG,
    TRPO,
    Policy,
    evaluate_policy,
    export_policy,
    load,
    make_agent,
    make_config,
)
from jaxrl.config import RunConfig
from jaxrl.core import RunningMeanStd
from jaxrl.runs import CheckpointError, train_run

from .helpers import TINY, Result, single_error_line

HOPPER_RUN = ["train", "npg", "--env", "Hopper-v5", *TINY, "--total-steps", "256"]

# Reads every exported file in a fresh interpreter, jaxrl never imported: argv[1] is a JSON
# list of [exported file, observations .npy, actions .npy to write].
_OUTSIDE = """
import json, sys
import jax, numpy as np, onnxruntime
for path, obs, out in json.loads(sys.argv[1]):
    x = np.load(obs)
    if path.endswith(".onnx"):
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        (action,) = session.run(None, {"obs": x})
    else:
        with open(path, "rb") as f:
            action = jax.export.deserialize(bytearray(f.read())).call(x)
    np.save(out, np.asarray(action))
assert "jaxrl" not in sys.modules, "the exported policy needed jaxrl"
print("ok")
"""


@pytest.fixture(scope="module")
def hopper_run(run_once: Callable[..., tuple[Path, Result]]) -> Path:
    """A tiny NPG run on Hopper-v5 (host driver, observation normalization, 2 seeds)."""
    run_dir, result = run_once("npg-hopper-tiny", *HOPPER_RUN)
    result.check()
    return run_dir


def _observations(policy: Policy, count: int, seed: int = 1) -> np.ndarray:
    """Fresh observations, spread wider than the run's."""
    rng = np.random.default_rng(seed)
    return (2.0 * rng.normal(size=(count, *policy.observation_shape))).astype(np.float32)


def _outside_jaxrl(jobs: list[tuple[Path, np.ndarray]], where: Path) -> list[np.ndarray]:
    """The actions of each exported file on its observations, in a fresh interpreter that
    never imports jaxrl."""
    triples = []
    for index, (path, obs) in enumerate(jobs):
        np.save(where / f"obs{index}.npy", obs)
        triples.append([str(path), str(where / f"obs{index}.npy"), str(where / f"act{index}.npy")])
    done = subprocess.run(
        [sys.executable, "-c", _OUTSIDE, json.dumps(triples)],
        capture_output=True,
        text=True,
        cwd=where,
        env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"},
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    return [np.load(out) for _, _, out in triples]


def _assert_same_actions(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, (what, got, want)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:  # float32 arithmetic in another order: 1e-5, whatever the matmul precision default
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=what)


# Cost: ~10 s, after the module's Hopper run (~15 s, once a session; the TRPO run is the
# session's shared one): 6 evaluations, 3 exports, 1 process reading them.
def test_a_new_user_loads_acts_evaluates_and_exports(
    trpo_run: tuple[Path, Result], hopper_run: Path, jaxrl: Callable[..., Result], tmp_path: Path
):
    pendulum, _ = trpo_run
    policy = load(pendulum)  # seed 0, last checkpoint
    every = load(pendulum, seed=None)
    assert (policy.seed, policy.step, policy.observation_shape) == (0, 4, (3,))
    assert repr(policy) == (
        "Policy(TRPO on Pendulum-v1, seed 0, checkpoint 4 (512 env steps per seed), obs [3])"
    )
    assert repr(every).startswith("Policy(TRPO on Pendulum-v1, 2 seeds, checkpoint 4 ")
    assert policy.config.env == "Pendulum-v1" and isinstance(policy.agent, TRPO)
    obs = _observations(policy, 5)
    one, batch = policy(obs[0]), policy(obs)
    assert one.shape == (1,) and batch.shape == (5, 1)
    np.testing.assert_array_equal(batch[0], one)
    np.testing.assert_array_equal(policy.act(obs), batch)  # deterministic
    assert np.all(np.abs(batch) <= 2.0)  # Pendulum's torque bounds
    np.testing.assert_array_equal(every(obs).shape, (2, 5, 1))
    np.testing.assert_array_equal(every(obs)[0], batch)
    assert not np.array_equal(every(obs)[1], batch)  # the other seed's policy
    with pytest.raises(ValueError, match=r"observations must have shape \[3\] or \[B, 3\]"):
        policy(obs[:, :2])
    with pytest.raises(TypeError, match=r"^observations must be numbers, got <U3"):
        policy(["0.1", "0.2", "0.3"])  # read from a text file, not converted
    # Sampling takes a key each call: a default one would draw the same sample every call.
    with pytest.raises(TypeError, match=r"deterministic=False\) samples: give it key="):
        policy.act(obs, deterministic=False)
    with pytest.raises(TypeError, match=r"^Policy.act: key must be a PRNG key .*got int 0"):
        policy.act(obs, deterministic=False, key=0)
    refused = r"^Policy.act: deterministic must be True or False, got 'no'"
    with pytest.raises(TypeError, match=refused):
        policy.act(obs, deterministic="no", key=jax.random.key(0))
    keys = jax.random.split(jax.random.key(0))
    samples = [policy.act(obs, deterministic=False, key=key) for key in keys]
    assert not np.array_equal(*samples) and not np.array_equal(samples[0], batch)
    # Another environment must have the run's spaces (its actions were taken as Pendulum's).
    spaces = r"Box\(shape \(4,\)\) and Discrete\(2\), the policy's \(Pendulum-v1\) are Box"
    with pytest.raises(ValueError, match=rf"^env CartPole-v1 has the spaces {spaces}"):
        evaluate_policy(policy, 1, env="CartPole-v1")

    # evaluate_policy: the numbers of jaxrl evaluate, every seed, and each seed alone.
    for run_dir in (pendulum, hopper_run):
        command = json.loads(
            jaxrl("evaluate", run_dir, "--episodes", "2", "--seed", "3", "--json").check().stdout
        )
        returns = evaluate_policy(load(run_dir, seed=None), episodes=2, seed=3)
        assert returns.tolist() == command["returns"], run_dir
        alone = evaluate_policy(load(run_dir, seed=1), episodes=2, seed=3)
        np.testing.assert_allclose(alone, returns[1:], rtol=1e-6)

    # The Hopper run normalizes observations: its statistics are in the policy.
    hopper = load(hopper_run, seed=1)
    assert hopper.config.normalize_obs and hopper.obs_stats is not None
    assert float(hopper.obs_stats.count) > 1
    obs = _observations(hopper, 6)
    actions = hopper(obs)
    assert actions.shape == (6, 3) and np.all(np.abs(actions) <= 1.0)

    onnx_file, jax_file = tmp_path / "hopper.onnx", tmp_path / "hopper.jax"
    said = jaxrl("export", hopper_run, "--seed-index", "1", "--out", onnx_file).check().stdout
    assert str(onnx_file) in said and "obs [batch, 11]" in said
    jaxrl("export", hopper_run, "--seed-index", "1", "--out", jax_file).check()  # by the suffix
    jaxrl("export", pendulum, "--format", "jax").check()  # RUN_DIR/policy.jax by default
    got = _outside_jaxrl(
        [(onnx_file, obs), (jax_file, obs), (pendulum / "policy.jax", obs[:4, :3])], tmp_path
    )
    _assert_same_actions(got[0], actions, "onnxruntime")
    _assert_same_actions(got[1], actions, "jax.export")
    _assert_same_actions(got[2], policy(obs[:4, :3]), "jax.export, Pendulum")


# Cost: ~1 s (configurations only).
def test_make_config_is_the_run_the_command_trains(trpo_run, hopper_run):
    tiny = dict(num_envs=4, num_steps=32, eval_every=128, eval_episodes=2, num_seeds=2)
    for run_dir, algo, env, steps, extra in (
        (trpo_run[0], "trpo", "Pendulum-v1", 512, {"checkpoint_every": 2}),
        (hopper_run, "npg", "Hopper-v5", 256, {}),
    ):
        config = make_config(
            algo, env, hyperparameters={"hidden_sizes": [8]}, total_steps=steps, **tiny, **extra
        )
        trained = RunConfig.load(run_dir / "config.json")
        assert config.to_dict() == trained.to_dict(), run_dir
        assert config.make_agent() == trained.make_agent()
    # The mujoco preset: its learning-rate schedule is sized by the run's updates.
    config = make_config("npg", "Hopper-v5", total_steps=40_960)
    assert config.preset == "mujoco" and config.normalize_obs and config.backend == "gymnasium"
    agent = make_agent("npg", "Hopper-v5", total_steps=40_960)
    assert agent == config.make_agent() and agent != NPG()
    with pytest.raises(TypeError, match="unknown trpo hyperparameter max_kll; did you mean max_kl"):
        make_config("trpo", "Pendulum-v1", hyperparameters={"max_kll": 0.1})
    with pytest.raises(TypeError, match=r"hyperparameters must be a dict .* got list \[\('max_kl'"):
        make_agent("trpo", "Pendulum-v1", hyperparameters=[("max_kl", 0.1)])
    with pytest.raises(TypeError, match="unknown run setting total_step; did you mean total_steps"):
        make_config("trpo", "Pendulum-v1", total_step=512)
    # Checked before a default replaces them (0 seeds is not "the default number").
    with pytest.raises(ValueError, match="num_seeds must be a positive integer, got 0"):
        make_config("trpo", "Pendulum-v1", num_seeds=0)
    with pytest.raises(ValueError, match="total_steps must be a positive integer, got '8k'"):
        make_config("trpo", "Pendulum-v1", total_steps="8k")
    with pytest.raises(TypeError, match=r"config must be a RunConfig .*, got str 'trpo'"):
        train_run("trpo", "runs/x")
    with pytest.raises(TypeError, match="resume must be True or False, got 'yes'"):
        train_run(config, "runs/x", resume="yes")  # was truthy
    with pytest.raises(TypeError, match="run_dir must be a path, got int 3"):
        train_run(config, 3)
    with pytest.raises(TypeError, match=r"algo must be .* got RunConfig; .* config.make_agent"):
        make_agent(config)
    with pytest.raises(TypeError, match=r"env must be an env id .*, got int"):
        make_config("trpo", 3)
    # A driver is named exactly, and never overruled by the host library named beside it
    # (both once chose the host driver without a word).
    with pytest.raises(ValueError, match="backend must be 'auto', 'jax' or 'gymnasium', got 'JAX'"):
        make_config("trpo", "Pendulum-v1", backend="JAX")
    with pytest.raises(ValueError, match=r"env_backend='gymnasium' runs host .* backend='jax'"):
        make_config("trpo", "Pendulum-v1", backend="jax", env_backend="gymnasium")
    assert make_config("trpo", "Pendulum-v1", env_backend="gymnasium").backend == "gymnasium"


# Cost: 2-3 s (a copy of a run directory, two restores, an evaluation of 1 episode per seed).
def test_best_loads_the_best_evaluation_s_checkpoint_or_says_it_is_not_kept(
    trpo_run, tmp_path, jaxrl
):
    run_dir = tmp_path / "run"
    shutil.copytree(trpo_run[0], run_dir)
    lines = (run_dir / "evals.csv").read_text().splitlines()
    header = lines[0].split(",")
    period, value = header.index("period"), header.index("eval_return")

    def best_at(best: int) -> None:
        rows = [line.split(",") for line in lines[1:]]
        for row in rows:
            row[value] = "100.0" if int(row[period]) == best else "-100.0"
        (run_dir / "evals.csv").write_text("\n".join([lines[0], *map(",".join, rows)]) + "\n")

    best_at(2)
    assert load(run_dir, checkpoint="best").step == 2
    assert load(run_dir, checkpoint="last").step == 4
    said = jaxrl("evaluate", run_dir, "--checkpoint", "best", "--episodes", "1").check().stdout
    assert said.startswith("TRPO on Pendulum-v1: policy of the best evaluation during training")
    best_at(3)
    with pytest.raises(CheckpointError, match=r"period 3\) has no checkpoint.*periods 2, 4"):
        load(run_dir, checkpoint="best")
    with pytest.raises(CheckpointError, match="no finished checkpoint at period 3"):
        load(run_dir, checkpoint=3)
    with pytest.raises(ValueError, match="one of the run's 2 seeds"):
        load(run_dir, seed=2)
    with pytest.raises(TypeError, match="seed must be an integer or None, got '0'"):
        load(run_dir, seed="0")
    with pytest.raises(TypeError, match="episodes must be a positive integer, got '2'"):
        evaluate_policy(run_dir, episodes="2")
    with pytest.raises(TypeError, match=r"policy must be a jaxrl.Policy \(jaxrl.load"):
        export_policy(str(run_dir), tmp_path / "policy.onnx")
    # Once Python's own "expected str, bytes or os.PathLike object, not int", and "yes" read
    # as True.
    with pytest.raises(TypeError, match="a run directory must be a path, got int 3"):
        evaluate_policy(3, episodes=1)
    with pytest.raises(TypeError, match="deterministic must be True, False or None, got 'yes'"):
        evaluate_policy(run_dir, episodes=1, deterministic="yes")


# Cost: 18 s measured on the 2-core CPU under a load of 6 from other jobs (a 5-period tiny
# TRPO run of one seed: its compilations, mostly; one load).
def test_the_best_evaluated_checkpoint_outlives_the_rotation(tmp_path, monkeypatch):
    """A run whose first period's policy evaluates best, four checkpoints after it: the
    rotation keeps the newest two and that one, and ``"best"`` loads the policy saved then."""
    from jaxrl.runs import CheckpointStore, RunDir
    from jaxrl.runs.bookkeeping import RunBook

    end_period, save = RunBook.end_period, CheckpointStore.save
    saved = {}

    def scored(book: RunBook, metrics: dict, first_update: int) -> None:
        # The first period's evaluation is the best; the later ones fall.
        returns = np.full_like(metrics["eval/return"], 0.0 if book.period == 0 else -999.0)
        end_period(book, {**metrics, "eval/return": returns - book.period}, first_update)

    def kept(store: CheckpointStore, step: int, tree: object, metadata: dict) -> object:
        saved[step] = _plain_leaves(tree.state)  # [S, ...] each: every seed's
        return save(store, step, tree, metadata)

    monkeypatch.setattr(RunBook, "end_period", scored)
    monkeypatch.setattr(CheckpointStore, "save", kept)
    run = dict(num_envs=4, num_steps=32, total_steps=640, eval_every=128, eval_episodes=1)
    config = make_config("trpo", "Pendulum-v1", hyperparameters={"hidden_sizes": [8]},
                         num_seeds=1, checkpoint_every=1, **run)  # fmt: skip
    run_dir = RunDir.create(tmp_path / "run")
    train_run(config, run_dir, progress=False)

    assert sorted(saved) == [1, 2, 3, 4, 5]
    assert CheckpointStore(run_dir.checkpoints).steps() == [1, 4, 5]
    best = load(run_dir.path, checkpoint="best")
    assert best.step == 1 and best.metadata["env_steps"] == 128
    for got, want in zip(_plain_leaves(best.state), saved[1], strict=True):
        np.testing.assert_array_equal(got, want[0])
    assert load(run_dir.path).step == 5


# Cost: about 1 s (two copies of the kept run directory of an earlier jaxrl, two loads).
def test_a_checkpoint_written_on_a_gpu_loads_and_acts_on_this_machine(tmp_path):
    """orbax records each array's device (``tree/_sharding``); a restore reads the arrays
    onto this process's device whatever it names: here a CUDA device this machine lacks."""
    fixture = Path(__file__).parents[1] / "fixtures" / "old_run" / "stopped"
    here, gpu = tmp_path / "here", tmp_path / "gpu"
    shutil.copytree(fixture, here)
    shutil.copytree(fixture, gpu)
    sharding = gpu / "checkpoints" / "2" / "tree" / "_sharding"
    written = sharding.read_text()
    assert '\\"device_str\\": \\"cpu:0\\"' in written
    sharding.write_text(written.replace("cpu:0", "cuda:0"))
    assert not any(device.platform == "gpu" for device in jax.devices())

    policy, reference = load(gpu, seed=None), load(here, seed=None)
    assert policy.step == reference.step == 2
    for got, want in zip(_plain_leaves(policy.state), _plain_leaves(reference.state), strict=True):
        np.testing.assert_array_equal(got, want)
    obs = _observations(policy, 5)
    np.testing.assert_array_equal(policy(obs), reference(obs))
    assert policy(obs).shape == (2, 5, 1) and np.isfinite(policy(obs)).all()


def _plain_leaves(tree: object) -> list[np.ndarray]:
    """A pytree's leaves as NumPy copies (typed PRNG keys as their key data)."""
    return [
        np.array(
            jax.random.key_data(leaf)
            if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
            else leaf
        )
        for leaf in jax.tree.leaves(tree)
    ]


def _fresh_policy(algo: str, env: str) -> Policy:
    """An initial policy of ``algo`` on ``env`` with the settings ``jaxrl train`` would use
    (MuJoCo: with observation normalization), its observation statistics, where it has
    some, of spread-out means and variances (the export must fold them in)."""
    mujoco = {"normalize_obs": True} if env == "Hopper-v5" else {}  # DDPG's preset has none
    config = make_config(algo, env, hyperparameters={"hidden_sizes": [8, 8]}, **mujoco)
    agent = config.make_agent()
    if env == "Hopper-v5":
        import gymnasium

        spaces = gymnasium.make(env)
        spaces = spaces.observation_space, spaces.action_space
    else:
        from jaxrl.envs import make_env

        gymnax_env, params = make_env(env)
        spaces = gymnax_env.observation_space(params), gymnax_env.action_space(params)
    state, _ = agent.init_training(jax.random.key(0), *spaces, 1)
    shape = tuple(spaces[0].shape)
    stats = None
    if config.normalize_obs:
        rng = np.random.default_rng(0)
        stats = RunningMeanStd.create(shape).replace(
            mean=rng.normal(size=shape).astype(np.float32),
            var=rng.uniform(0.1, 5.0, size=shape).astype(np.float32),
        )
    return Policy(agent, state, stats, config, 0, 0, {}, shape)


CASES = [
    ("npg", "CartPole-v1"),
    ("trpo", "Pendulum-v1"),
    ("ddpg", "Pendulum-v1"),
    ("npg", "Hopper-v5"),
    ("trpo", "Hopper-v5"),
    ("ddpg", "Hopper-v5"),
]


# Cost: ~12-16 s on a 2-core CPU (6 initial policies, 12 exports,
# 1 process reading them).
def test_the_export_of_each_algorithm_acts_as_its_policy(tmp_path):
    jobs, wanted = [], []
    for algo, env in CASES:
        policy = _fresh_policy(algo, env)
        obs = _observations(policy, 9)
        assert policy.config.normalize_obs == (policy.obs_stats is not None)
        with jax.default_matmul_precision("highest"):
            want = policy(obs)
        for fmt in ("onnx", "jax"):
            path = export_policy(policy, tmp_path / f"{algo}-{env}.{fmt}")
            jobs.append((path, obs))
            wanted.append((want, f"{algo} {env} {fmt}"))
    for got, (want, what) in zip(_outside_jaxrl(jobs, tmp_path), wanted, strict=True):
        _assert_same_actions(got, want, what)


def test_onnx_export_names_a_primitive_it_cannot_translate():
    from jaxrl.runs.jaxpr_onnx import UnsupportedPrimitive, to_onnx

    example = jax.ShapeDtypeStruct((3, 4), np.float32)
    with pytest.raises(UnsupportedPrimitive, match="'cumsum'"):
        to_onnx(lambda x: jax.numpy.cumsum(x, axis=1), example)


# Cost: <1 s (every error comes before a checkpoint is restored).
def test_export_errors_are_one_line(trpo_run, jaxrl, tmp_path):
    run_dir, _ = trpo_run
    (tmp_path / "sweep" / "runs").mkdir(parents=True)
    shutil.copy(run_dir / "config.json", tmp_path / "sweep" / "runs")
    cases = [
        ([run_dir, "--checkpoint", "first"], "--checkpoint must be last, best or an evaluation"),
        (
            [run_dir, "--checkpoint", "3"],
            "no finished checkpoint at period 3 (its checkpoints: 2, 4)",
        ),
        (
            [run_dir, "--seed-index", "2"],
            "--seed-index: seed 2 is not one of the run's 2 seeds (0 to 1)",
        ),
        ([tmp_path / "sweep"], "holds 1 run (a sweep or a tune): load one of them, runs"),
        ([tmp_path / "none"], "does not exist"),
        # A file's suffix names its format, or --format does; never the other one.
        ([run_dir, "--out", "p.xyz"], "--out p.xyz: name a .onnx or .jax file, or give --format"),
        (
            [run_dir, "--format", "onnx", "--out", "p.jax"],
            "--format onnx with --out p.jax: its suffix names jax, not onnx",
        ),
    ]
    for args, expected in cases:
        line = single_error_line(jaxrl("export", *args, cwd=tmp_path))
        assert expected in line, line
    assert not (tmp_path / "p.xyz").exists() and not (tmp_path / "p.jax").exists()
    policy = load(run_dir)
    with pytest.raises(ValueError, match=r"p.xyz: name a .onnx or .jax file, or give the format"):
        export_policy(policy, tmp_path / "p.xyz")
    with pytest.raises(ValueError, match=r"p.onnx: its suffix names onnx, not jax"):
        export_policy(policy, tmp_path / "p.onnx", "jax")


def test_an_output_the_system_refuses_or_no_image_is_one_line(
    trpo_run, jaxrl, tmp_path, tmp_path_factory
):
    """An output path through a file, or a folder given for a file: one line naming the path
    and the reason, exit status 1, nothing written; an image name matplotlib has no format
    for: a usage error (exit status 2) before anything is drawn."""
    run_dir, _ = trpo_run
    (tmp_path / "a-file").write_text("")
    in_file = tmp_path / "a-file"
    refused = [
        (["export", run_dir, "--out", in_file / "p.onnx"], "a file is there, where a folder is"),
        (["export", run_dir, "--out", tmp_path], "this is a folder; name a file"),
        (["plot", run_dir, "--output", in_file / "c.png"], "a file is there, where a folder is"),
        (["plot", run_dir, "--output", in_file / "x" / "c.png"], "part of this path is a file"),
    ]
    for argv, expected in refused:
        result = jaxrl(*argv)
        assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("jaxrl: error: ") and expected in line, line
    assert sorted(tmp_path.iterdir()) == [in_file]
    other = tmp_path_factory.mktemp("other") / "run"  # compare takes two runs
    shutil.copytree(run_dir, other)
    images = [
        (["plot", run_dir, "--output", tmp_path / "c.txt"], "--output"),
        (["compare", run_dir, other, "--profile", tmp_path / "profile"], "--profile"),
    ]
    for argv, flag in images:
        line = single_error_line(jaxrl(*argv))
        assert f"{flag} {argv[-1]}: name an image file: .png, or one of .avif" in line, line
    assert sorted(tmp_path.iterdir()) == [in_file]
