"""Network initialization: the orthogonal initializer is flax's, and never a batched QR;
ensembles apply each copy."""

from __future__ import annotations

import subprocess
import sys
import typing

import flax.linen as nn
import jax
import jax.extend.core
import numpy as np

import jaxrl
from jaxrl import networks
from jaxrl.networks import Ensemble, QCritic, apply_copies, orthogonal


def qr_operand_shapes(jaxpr: jax.extend.core.ClosedJaxpr) -> list[tuple[int, ...]]:
    """Operand shapes of every QR in a jaxpr, nested jaxprs (scan, while, pjit) included."""
    shapes = []

    def visit(inner):
        for eqn in inner.eqns:
            if "qr" in eqn.primitive.name or "geqrf" in eqn.primitive.name:
                shapes.append(tuple(eqn.invars[0].aval.shape))
            for sub in jax.extend.core.jaxprs_in_params(eqn.params):
                visit(sub)

    visit(jaxpr.jaxpr)
    return shapes


def test_orthogonal_equals_flax_per_key_and_under_vmap():
    keys = jax.random.split(jax.random.key(0), 4)
    reference = np.stack([nn.initializers.orthogonal(1.4)(k, (5, 7)) for k in keys])
    batched = jax.jit(jax.vmap(lambda k: orthogonal(1.4)(k, (5, 7))))(keys)
    np.testing.assert_array_equal(batched, reference)
    nested = jax.vmap(jax.vmap(lambda k: orthogonal(1.4)(k, (5, 7))))(keys.reshape(2, 2))
    np.testing.assert_array_equal(nested.reshape(4, 5, 7), reference)


def test_vmapped_init_has_no_batched_qr():
    """jaxlib's batched CPU QR can deadlock XLA's thread pool when several run at once (seen
    hanging a vmapped 8-seed run on 2 cores); every QR in a vmapped init is unbatched."""
    import gymnasium as gym

    obs = gym.spaces.Box(-1.0, 1.0, (3,))
    act = gym.spaces.Box(-2.0, 2.0, (1,))
    agent = jaxrl.TRPO(hidden_sizes=(8, 8))
    keys = jax.random.split(jax.random.key(0), 8)
    jaxpr = jax.make_jaxpr(jax.vmap(lambda k: agent.init(k, obs, act).actor.params))(keys)
    shapes = qr_operand_shapes(jaxpr)
    assert shapes, "expected the orthogonal initializer's QR in the jaxpr"
    assert all(len(shape) == 2 for shape in shapes), shapes


HANG_SCRIPT = """
import jax
from jaxrl.networks import Ensemble, QCritic, apply_copies, orthogonal

def layers(key):
    keys = jax.random.split(key, 6)
    return [orthogonal(1.0)(k, (64, 64)) for k in keys]

jax.block_until_ready(jax.jit(jax.vmap(layers))(jax.random.split(jax.random.key(0), 16)))
print("finished")
"""


def test_vmapped_orthogonal_init_does_not_hang():
    """With flax's initializer this program hangs on a 2-core machine (6 batched QRs, 16 seeds:
    both pool threads wait inside jaxlib's ParallelBatchMap); ours finishes in seconds."""
    result = subprocess.run(
        [sys.executable, "-c", HANG_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "finished" in result.stdout, result.stderr[-2000:]


def test_applying_a_network_traces_each_layer_initializer_once(monkeypatch):
    """flax re-runs a layer's initializer under ``jax.eval_shape`` at every ``apply`` (its
    shape check); jaxrl's initializer is traced once per layer shape, not once per apply."""
    import jaxrl.networks as networks

    traced = []
    flax_orthogonal = nn.initializers.orthogonal

    def counting(scale):
        inner = flax_orthogonal(scale)

        def init(key, shape, dtype):
            traced.append(tuple(shape))
            return inner(key, shape, dtype)

        return init

    monkeypatch.setattr(networks.nn.initializers, "orthogonal", counting)
    critic = networks.ValueCritic(hidden_sizes=(7, 5), gain=0.37)  # shapes no other test uses
    obs = np.zeros((2, 3), np.float32)
    params = critic.init(jax.random.key(0), obs)

    def applied_often(params, obs):
        return sum(critic.apply(params, obs * i) for i in range(6))

    jax.make_jaxpr(applied_often)(params, obs)
    assert sorted(set(traced)) == [(3, 7), (5, 1), (7, 5)]
    assert len(traced) == 3, f"initializer traced {len(traced)} times for 3 layers: {traced}"


def test_an_ensemble_is_its_copies_one_by_one_jitted_and_vmapped():
    """``Ensemble(QCritic, 3)`` gives ``[3, B]``: exactly each copy applied alone (``member``),
    the copies different; jitted and vmapped over seeds the same; and the batched form
    (accelerators) equals the one-after-another form (CPU) up to rounding."""
    critic, obs_dim, batch = QCritic((8, 8)), 3, 5
    ensemble = Ensemble(critic, 3)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2, batch, obs_dim)).astype(np.float32)  # 2 seeds
    action = rng.uniform(-1, 1, (2, batch, 1)).astype(np.float32)
    keys = jax.random.split(jax.random.key(0), 2)
    variables = jax.vmap(lambda k: ensemble.init(k, obs[0], action[0]))(keys)
    with jax.default_matmul_precision("highest"):
        q = jax.jit(jax.vmap(ensemble.apply))(variables, obs, action)
        for seed in range(2):
            own = jax.tree_util.tree_map(lambda x, s=seed: x[s], variables)
            alone = [ensemble.member(own, k)(obs[seed], action[seed]) for k in range(3)]
            np.testing.assert_allclose(q[seed], np.stack(alone), rtol=1e-6, atol=1e-6)
            assert np.asarray(ensemble.apply(own, obs[seed], action[seed])).shape == (3, batch)
            stacked = own["params"]["module"]
            forms = [
                apply_copies(critic.apply, stacked, obs[seed], action[seed], batched=batched)
                for batched in (True, False)
            ]
            np.testing.assert_allclose(forms[0], forms[1], rtol=1e-5, atol=1e-6)
    assert np.all(np.abs(np.diff(np.asarray(q), axis=1)) > 0)  # copies from different keys


def test_the_activation_type_names_every_activation():
    assert set(typing.get_args(networks.Activation)) == set(networks.ACTIVATIONS)
