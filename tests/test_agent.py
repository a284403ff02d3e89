"""ESAgent: EvoKit's API, checked against the NumPy OpenAI-ES oracle."""

import os

import numpy as np
import onnxruntime as ort
import pytest

import es_oracle
from helpers import count_calls
import evokit
from evokit import ConfigError, ESAgent, ModelError, SolverFileError, parse_config
from evokit import evokit_pb2 as pb
from evokit.statefile import seal

from conftest import SEED_EXAMPLE

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def make_agent(mlp_path, text=SEED_EXAMPLE):
    agent = ESAgent()
    agent.load_config(parse_config(text))
    agent.load_inference_model(mlp_path)
    agent.init_solver()
    return agent


def config_text(optimizer="type: ADAM base_lr: 0.05", sampling="std: 0.5 cached: true seed: 7 cache_size: 5000",
                extra=""):
    return (f"solver {{ optimizer {{ {optimizer} }} sampling {{ gaussian_sampling {{ {sampling} }} }} {extra} }}")


def test_evokit_flow_and_shared_session(mlp_path, obs_batch):
    agent = make_agent(mlp_path)
    clones = [agent.clone() for _ in range(4)]
    assert all(c.policy is agent.policy for c in clones)  # one ONNX session for all
    infos = [c.add_noise() for c in clones]
    assert all(isinstance(i, evokit.SamplingInfo) and len(i.key) == 1 for i in infos)
    # antithetic by default: clones (0, 1) and (2, 3) share keys with opposite signs
    assert infos[0].key == infos[1].key and infos[2].key == infos[3].key
    assert [i.mirrored for i in infos] == [False, True, False, True]
    assert infos[0].key != infos[2].key
    # clone params are theta + s * sigma * eps(key), eps rebuilt from the key alone
    sampler = agent.sampler
    for c, info in zip(clones, infos):
        s = -1.0 if info.mirrored else 1.0
        expected = agent.params + np.float32(s * 0.5) * sampler.noise(info.key[0])
        np.testing.assert_allclose(c.params, expected, rtol=0, atol=1e-6)
        np.testing.assert_allclose(c.predict(obs_batch), agent.policy.run(obs_batch, c.params), rtol=1e-6)
    assert not np.allclose(clones[0].predict(obs_batch), agent.predict(obs_batch))


@pytest.mark.parametrize("optimizer, kind, kwargs", [
    ("type: SGD base_lr: 0.1", "SGD", {}),
    ("type: MOMENTUM base_lr: 0.1 momentum { momentum: 0.8 }", "MOMENTUM", {"momentum": 0.8}),
    ("type: ADAM base_lr: 0.05 adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 }", "ADAM", {}),
])
@pytest.mark.parametrize("cached", [True, False])
def test_update_matches_numpy_oracle(mlp_path, optimizer, kind, kwargs, cached):
    text = config_text(optimizer, f"std: 0.3 cached: {str(cached).lower()} seed: 11 cache_size: 5000",
                       "weight_decay: 0.01 population_size: 6")
    agent = make_agent(mlp_path, text)
    theta = agent.params.astype(np.float64)
    state = {}
    rng = np.random.default_rng(1)
    for step in range(3):
        clones = [agent.clone() for _ in range(6)]
        infos = [c.add_noise() for c in clones]
        rewards = rng.normal(size=6)
        rewards[2] = rewards[4]  # a tie
        eps = np.stack([agent.sampler.noise(i.key[0]) for i in infos])
        signs = np.array([-1.0 if i.mirrored else 1.0 for i in infos])
        d = es_oracle.es_direction(theta, eps, signs, es_oracle.centered_ranks(rewards), 0.3, 0.01)
        theta, state = es_oracle.optimizer_step(theta, d, state, kind, 0.1 if kind != "ADAM" else 0.05, **kwargs)
        stats = agent.update(infos, rewards)
        assert stats["model_iter_id"] == step + 1 == agent.model_iter_id
        np.testing.assert_allclose(agent.params, theta, rtol=1e-5, atol=1e-6)


def test_clones_follow_updates(mlp_path, obs_batch):
    agent = make_agent(mlp_path)
    clone, partner = agent.clone(), agent.clone()
    info = clone.add_noise()
    before = agent.params.copy()
    agent.update([info, partner.add_noise()], [1.0, 0.0])
    assert not np.array_equal(agent.params, before)
    # the clone's stale noise is dropped: it predicts with the new centre until add_noise
    assert clone.sampling_info is None
    np.testing.assert_array_equal(clone.predict(obs_batch), agent.predict(obs_batch))
    info2 = clone.add_noise()
    assert info2.model_iter_id == 1 and info2.key != info.key


def test_keys_are_reproducible_across_agents(mlp_path):
    a, b = make_agent(mlp_path), make_agent(mlp_path)
    ka = [a.clone().add_noise() for _ in range(4)]
    kb = [b.clone().add_noise() for _ in range(4)]
    assert ka == kb
    c = make_agent(mlp_path)
    c.sampling_stream = 1
    assert [c.clone().add_noise() for _ in range(4)] != ka


def test_save_inference_model_is_plain_onnx(mlp_path, tmp_path, obs_batch):
    agent = make_agent(mlp_path)
    clones = [agent.clone() for _ in range(2)]
    agent.update([c.add_noise() for c in clones], [1.0, 0.0])
    path = agent.save_inference_model(tmp_path / "out")
    assert path == os.path.join(str(tmp_path / "out"), "model.onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {sess.get_inputs()[0].name: obs_batch})
    np.testing.assert_allclose(out, agent.predict(obs_batch), rtol=1e-6, atol=1e-6)
    # and it loads back as the new starting point (directory or file)
    again = ESAgent()
    again.load_config(parse_config(SEED_EXAMPLE))
    again.load_inference_model(tmp_path / "out")
    np.testing.assert_array_equal(again.params, agent.params)


def test_save_and_load_solver_continue_identically(mlp_path, tmp_path):
    a = make_agent(mlp_path)
    for _ in range(2):
        cl = [a.clone() for _ in range(4)]
        a.update([c.add_noise() for c in cl], [1.0, 2.0, 3.0, 0.5])
    a.save_inference_model(tmp_path)
    a.save_solver(tmp_path)
    b = ESAgent()
    b.load_config(parse_config(SEED_EXAMPLE))
    b.load_inference_model(tmp_path)
    b.init_solver()
    b.load_solver(tmp_path)
    assert b.model_iter_id == a.model_iter_id == 2
    np.testing.assert_array_equal(a.params, b.params)
    for _ in range(2):  # the same samples move both to the same bits (optimizer state restored)
        infos = [c.add_noise() for c in [b.clone() for _ in range(4)]]
        for agent in (a, b):
            agent.update(infos, [0.1, 0.7, 0.3, 0.2])
    np.testing.assert_array_equal(a.params, b.params)
    assert a.model_iter_id == b.model_iter_id == 4


def test_load_solver_without_init_solver_continues_identically(mlp_path, tmp_path):
    """PARL EvoKit's online programs: load_config, load_inference_model,
    load_solver, no init_solver. The solver load_solver builds is the one
    init_solver + load_solver give, and continues as the saved agent would."""
    a = make_agent(mlp_path)
    cl = [a.clone() for _ in range(4)]
    a.update([c.add_noise() for c in cl], [1.0, 2.0, 3.0, 0.5])
    a.save_inference_model(tmp_path)
    a.save_solver(tmp_path)

    def load(init: bool) -> ESAgent:
        agent = ESAgent()
        agent.load_config(parse_config(SEED_EXAMPLE))
        agent.load_inference_model(tmp_path)
        if init:
            agent.init_solver()
        agent.load_solver(tmp_path)
        return agent

    plain, inited = load(False), load(True)
    assert plain.model_iter_id == 1
    np.testing.assert_array_equal(plain.params, a.params)
    assert (plain.solver_state().SerializeToString()
            == inited.solver_state().SerializeToString() == a.solver_state().SerializeToString())
    infos = [c.add_noise() for c in [plain.clone() for _ in range(4)]]
    assert infos == [c.add_noise() for c in [inited.clone() for _ in range(4)]]
    for agent in (plain, inited, a):
        agent.update(infos, [0.1, 0.7, 0.3, 0.2])
    np.testing.assert_array_equal(plain.params, a.params)
    assert plain.solver_state().SerializeToString() == inited.solver_state().SerializeToString()


def test_a_refused_solver_file_leaves_the_agent_without_a_solver(mlp_path, tmp_path):
    make_agent(mlp_path).save_solver(tmp_path)
    agent = ESAgent()
    agent.load_config(parse_config(config_text(optimizer="type: SGD base_lr: 0.05")))
    agent.load_inference_model(mlp_path)
    with pytest.raises(SolverFileError, match=r"solver.pb: solver state is for optimizer ADAM, the "
                                              r"config asks for SGD"):
        agent.load_solver(tmp_path)
    with pytest.raises(RuntimeError, match=r"^clone\(\) needs the solver: call init_solver\(\) or "
                                           r"load_solver\(\) first$"):
        agent.clone()
    assert agent.model_iter_id == 0


def test_solver_file_from_another_model(mlp_path, tmp_path):
    from evokit.policy.mlp import init_mlp

    a = make_agent(mlp_path)
    a.save_solver(tmp_path)
    other = tmp_path / "other.onnx"
    other.write_bytes(init_mlp(4, 2, hidden_sizes=(5,), seed=0).SerializeToString())
    b = make_agent(str(other))
    with pytest.raises(SolverFileError, match=r"solver.pb: solver state is for a model with 58 parameters, "
                                              r"the loaded model has 37"):
        b.load_solver(tmp_path)
    (tmp_path / "solver.pb").write_bytes(b"\x00garbage\xff" * 3)
    with pytest.raises(SolverFileError, match=r"solver.pb: no sha256 trailer at its end \(of 27 bytes\)"):
        a.load_solver(tmp_path)
    (tmp_path / "solver.pb").write_bytes(seal(b"\x00garbage\xff" * 3))  # a sound trailer over garbage
    with pytest.raises(SolverFileError, match=r"solver.pb: not a solver state file \(Error parsing"):
        a.load_solver(tmp_path)
    with pytest.raises(SolverFileError, match=r"no such solver file"):
        a.load_solver(tmp_path / "missing")


def test_torch_exported_model_trains_a_step_and_saves(tmp_path):
    ref = np.load(os.path.join(FIXTURES, "torch_mlp_reference.npz"))
    agent = ESAgent()
    agent.load_config(parse_config(config_text()))
    agent.load_inference_model(os.path.join(FIXTURES, "torch_mlp.onnx"))
    agent.init_solver()
    assert agent.num_params == int(ref["num_params"])
    np.testing.assert_allclose(agent.predict(ref["inputs"]), ref["outputs"], rtol=1e-5, atol=1e-5)
    before = agent.params.copy()
    clones = [agent.clone() for _ in range(2)]
    agent.update([c.add_noise() for c in clones], [1.0, -1.0])
    assert np.abs(agent.params - before).max() > 0
    path = agent.save_inference_model(tmp_path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {sess.get_inputs()[0].name: ref["inputs"]})
    np.testing.assert_allclose(out, agent.predict(ref["inputs"]), rtol=1e-5, atol=1e-6)


# ---- bad input: a clear error, nothing lost ------------------------------------

def test_missing_and_corrupt_onnx(tmp_path, seed_config):
    agent = ESAgent()
    agent.load_config(seed_config)
    with pytest.raises(ModelError, match=r"missing.onnx: no such file"):
        agent.load_inference_model(tmp_path / "missing.onnx")
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(os.urandom(64))
    with pytest.raises(ModelError, match=r"corrupt.onnx"):
        agent.load_inference_model(bad)


def test_model_without_float_initializers(tmp_path, seed_config):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])])
    path = tmp_path / "noparams.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    agent = ESAgent()
    agent.load_config(seed_config)
    with pytest.raises(ModelError, match=r"noparams.onnx.*no float32? initializers"):
        agent.load_inference_model(path)


def test_wrong_observation_shape(mlp_path):
    agent = make_agent(mlp_path)
    with pytest.raises(ModelError, match=r"observation has shape \(3,\), expected \(4,\) or \(batch, 4\)"):
        agent.predict(np.zeros(3, np.float32))


def test_update_argument_errors_leave_params_unchanged(mlp_path):
    agent = make_agent(mlp_path)
    clones = [agent.clone() for _ in range(2)]
    infos = [c.add_noise() for c in clones]
    before = agent.params.copy()
    steps = agent.model_iter_id
    cases = [
        ((infos, [1.0]), ValueError, r"update\(\) got 2 sampling infos but 1 rewards"),
        (([], []), ValueError, r"update\(\) needs at least one sample, got none"),
        (([pb.SamplingInfo()], [1.0]), ValueError, r"sampling info 0 has no key"),
        (([infos[0], pb.SamplingInfo(key=[99990])], [1.0, 2.0]), IndexError,
         r"sampling info 1: key 99990 is outside the noise table"),
        (([infos[0], pb.SamplingInfo(key=[-1])], [1.0, 2.0]), IndexError, r"sampling info 1: key -1"),
        ((infos, [1.0, float("nan")]), ValueError, r"reward of sample 1 is nan"),
        ((infos, [float("inf"), 1.0]), ValueError, r"reward of sample 0 is inf"),
    ]
    for args, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            agent.update(*args)
        np.testing.assert_array_equal(agent.params, before)
        assert agent.model_iter_id == steps


def test_model_larger_than_cache_size(mlp_path):
    agent = ESAgent()
    agent.load_config(parse_config(config_text(sampling="std: 0.1 cached: true seed: 1 cache_size: 40")))
    agent.load_inference_model(mlp_path)
    with pytest.raises(ConfigError, match=r"cache_size \(40\) is smaller than the model \(58 parameters\): "
                                          r"raise solver.sampling.gaussian_sampling.cache_size to at least 58"):
        agent.init_solver()


def test_add_noise_on_original_and_update_on_clone(mlp_path):
    agent = make_agent(mlp_path)
    with pytest.raises(RuntimeError, match=r"add_noise\(\) is for sampling agents: call it on agent.clone\(\)"):
        agent.add_noise()
    clone = agent.clone()
    info = clone.add_noise()
    with pytest.raises(RuntimeError, match=r"update\(\) must be called on the agent that owns the solver"):
        clone.update([info], [1.0])


def test_calls_out_of_order(mlp_path, tmp_path):
    make_agent(mlp_path).save_solver(tmp_path)
    agent = ESAgent()
    with pytest.raises(RuntimeError, match=r"init_solver\(\) needs a config"):
        agent.init_solver()
    with pytest.raises(RuntimeError, match=r"^load_solver\(\) needs a config: call load_config\(\) "
                                           r"first$"):
        agent.load_solver(tmp_path)
    agent.load_config(parse_config(SEED_EXAMPLE))
    with pytest.raises(RuntimeError, match=r"^load_solver\(\) needs a model: call "
                                           r"load_inference_model\(\) first$"):
        agent.load_solver(tmp_path)
    agent.load_inference_model(mlp_path)
    with pytest.raises(RuntimeError, match=r"^clone\(\) needs the solver: call init_solver\(\) or "
                                           r"load_solver\(\) first$"):
        agent.clone()
    agent.load_solver(tmp_path)
    assert len(agent.clone().add_noise().key) == 1


def test_stale_sample_is_refused(mlp_path):
    agent = make_agent(mlp_path)
    clones = [agent.clone() for _ in range(2)]
    infos = [c.add_noise() for c in clones]
    agent.update(infos, [1.0, 2.0])
    before = agent.params.copy()
    with pytest.raises(ValueError, match=r"sampling info 0 was drawn at model iteration 0, which is not available"):
        agent.update(infos, [1.0, 2.0])
    np.testing.assert_array_equal(agent.params, before)


def test_config_validated_once_and_solver_options_checked_against_the_model(mlp_path, monkeypatch):
    calls = count_calls(monkeypatch, evokit.config.validate_config)
    agent = ESAgent()
    agent.load_config(parse_config(SEED_EXAMPLE, validate=False))
    agent.load_inference_model(mlp_path)
    agent.init_solver()
    assert len(calls) == 1  # load_config's; init_solver leaves the model check to the core
    # a config the caller vouches for: still the core's check of the solver options
    unchecked = ESAgent()
    text = config_text(sampling="std: -0.5 cached: true seed: 1 cache_size: 100")
    unchecked.load_config(parse_config(text, validate=False), validate=False)
    unchecked.load_inference_model(mlp_path)
    with pytest.raises(ConfigError, match=r"^config: solver.sampling.gaussian_sampling.std "
                                          r"must be > 0, got -0.5$"):
        unchecked.init_solver()
    assert len(calls) == 1


def test_fingerprint_computed_once_per_model(mlp_path, tmp_path, monkeypatch):
    import evokit.policy.onnx_policy as onnx_policy

    computed = []
    real = onnx_policy.model_fingerprint
    monkeypatch.setattr(onnx_policy, "model_fingerprint",
                        lambda *a, **k: computed.append(a) or real(*a, **k))
    agent = make_agent(mlp_path)
    for _ in range(3):
        agent.save_solver(tmp_path)
        agent.load_solver(tmp_path)
    assert agent.policy.fingerprint() == real(agent.policy.model, agent.policy.param_names)
    assert len(computed) == 1
    v1 = agent.policy.fingerprint(1)
    assert agent.policy.fingerprint(1) == v1 != agent.policy.fingerprint()
    with pytest.raises(ModelError, match=r"fingerprint version 3 is not known"):
        agent.policy.fingerprint(3)
    # a pickled copy (an evaluation worker's) computes its own
    import pickle

    assert pickle.loads(pickle.dumps(agent.policy)).fingerprint() == agent.policy.fingerprint()
    assert len(computed) == 2
