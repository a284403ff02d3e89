"""Observation normalisation: running statistics, the evaluators' per-sample
statistics, the ONNX prefix on both backends, and training with it."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import evokit
from evokit import evokit_pb2 as pb
from evokit.config import parse_config
from evokit.errors import ConfigError, NotSupportedError
from evokit.evaluation.obsnorm import OBS_NORM_FILE, VAR_FLOOR, ObsNorm, ObsStats, RunningStat, with_obs_norm
from evokit.evaluation.processes import ProcessEvaluator
from evokit.evaluation.serial import SerialEvaluator
from evokit.evaluation.vector import VectorEvaluator
from evokit.policy.mlp import init_mlp
from evokit.policy.onnx_policy import OnnxPolicy
from evokit.statefile import read_state_file

from helpers import CARTPOLE, mlp_agent, quiet, read  # noqa: E402


def ort_run(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


# ---- statistics ---------------------------------------------------------------------


def test_running_stat_matches_numpy_for_any_split():
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(500, 6)) * [1, 10, 0.01, 3, 0, 2] + [0, -5, 1, 2, 7, 0]).astype(np.float32)
    bounds = [0, 37, 38, 200, 500]
    whole = RunningStat(6)
    per_chunk = RunningStat(6)
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        s = ObsStats(1, 6)
        for row in data[a:b]:
            s.add(0, row)
        parts.append(s)
        per_chunk.update(s)
    whole.update(ObsStats.concat(parts))
    x = data.astype(np.float64)
    np.testing.assert_allclose(whole.mean, x.mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(whole.std, np.sqrt(np.maximum(x.var(axis=0), VAR_FLOOR)), rtol=1e-9)
    assert whole.std[4] == np.sqrt(VAR_FLOOR)  # a constant feature: the floor, not 0
    assert whole.count == per_chunk.count == 500
    np.testing.assert_allclose(per_chunk.mean, whole.mean, rtol=1e-12)


def test_ars_style_is_the_unbiased_std_with_tiny_variances_ignored():
    rng = np.random.default_rng(3)
    data = (rng.normal(size=(300, 4)) * [2, 0.5, 0, 1e-5] + [1, 2, 3, 4]).astype(np.float32)
    stat = RunningStat(4, "ars")
    assert stat.std.tolist() == [1, 1, 1, 1]  # before two observations: the identity
    s = ObsStats(1, 4)
    for row in data:
        s.add(0, row)
    stat.update(s)
    x = data.astype(np.float64)
    np.testing.assert_allclose(stat.std[:2], x[:, :2].std(axis=0, ddof=1), rtol=1e-9)
    assert np.isinf(stat.std[2:]).all()  # variance < 1e-8: the coordinate is ignored
    norm = stat.normalizer(5.0)
    assert norm.clip == float("inf")  # ARS does not clip
    far = np.array([1e4, -1e4, 3.0, 9.0], np.float32)
    out = norm(far)
    assert out[0] > 1000 and out[1] < -1000 and out[2:].tolist() == [0.0, 0.0]
    model = init_mlp(4, 2, hidden_sizes=(), seed=1)
    normed = with_obs_norm(model, norm)
    assert [n.op_type for n in normed.graph.node[:4]] == ["Constant", "Constant", "Sub", "Div"]
    assert "Clip" not in [n.op_type for n in normed.graph.node]
    batch = np.stack([far, data[0], data[1]])
    assert np.array_equal(ort_run(normed, batch), ort_run(model, norm(batch)))
    back = RunningStat.from_proto(pb.ObservationStats.FromString(
        stat.to_proto(5.0).SerializeToString()), style="ars")
    assert back.to_proto(5.0).clip == float("inf")
    np.testing.assert_array_equal(back.std, stat.std)
    with pytest.raises(ValueError, match="style must be one of openai_es, ars, got 'z'"):
        RunningStat(4, "z")


def test_empty_stat_is_the_identity():
    s = RunningStat(3)
    norm = s.normalizer(5.0)
    assert norm.mean.tolist() == [0, 0, 0] and norm.std.tolist() == [1, 1, 1]
    x = np.array([0.5, -7.0, 2.0], np.float32)
    assert norm(x).tolist() == [0.5, -5.0, 2.0]  # clipped at 5


def test_add_rows_equals_add_row_by_row():
    rng = np.random.default_rng(1)
    a, b = ObsStats(4, 3), ObsStats(4, 3)
    for _ in range(20):
        obs = rng.normal(size=(4, 3)).astype(np.float32)
        mask = rng.integers(0, 2, 4).astype(bool)
        a.add_rows(mask, obs)
        for i in np.flatnonzero(mask):
            b.add(i, obs[i])
    assert np.array_equal(a.sum, b.sum) and np.array_equal(a.sumsq, b.sumsq)
    assert np.array_equal(a.count, b.count)


def test_proto_round_trip_and_bad_proto():
    s = RunningStat(2)
    st = ObsStats(1, 2)
    st.add(0, [1.0, 2.0])
    st.add(0, [3.0, -2.0])
    s.update(st)
    back = RunningStat.from_proto(pb.ObservationStats.FromString(s.to_proto(5.0).SerializeToString()))
    assert back.count == 2 and back.sum.tolist() == [4.0, 0.0] and back.sumsq.tolist() == [10.0, 8.0]
    with pytest.raises(ValueError, match=r"^obs_norm.pb: sum has 2 values and sumsq 1; expected "
                                         r"the same number, >= 1$"):
        RunningStat.from_proto(pb.ObservationStats(count=1, sum=[1, 2], sumsq=[1]), "obs_norm.pb")


def test_update_with_wrong_size_is_an_error():
    with pytest.raises(ValueError, match=r"^observation statistics of \(4,\) values per "
                                         r"observation, expected \(3,\)$"):
        RunningStat(3).update(ObsStats(2, 4))


def test_config_clip_must_be_positive():
    with pytest.raises(ConfigError, match=r"^<string>:1: train.observation_clip must be finite "
                                          r"and > 0, got -1$"):
        parse_config("train { observation_normalization: true observation_clip: -1 }")
    assert not evokit.EvoKitConfig().train.observation_normalization  # off by default


# ---- the ONNX prefix ------------------------------------------------------------------


def norm_for(dim, seed=0, clip=3.0):
    rng = np.random.default_rng(seed)
    return ObsNorm(rng.normal(size=dim).astype(np.float32),
                   rng.uniform(0.1, 4, size=dim).astype(np.float32), clip)


def test_prefix_on_onnxruntime_and_native_equals_normalised_input():
    model = init_mlp(5, 3, hidden_sizes=(16, 8), seed=4)
    norm = norm_for(5)
    normed = with_obs_norm(model, norm)
    assert [n.op_type for n in normed.graph.node[:7]] == ["Constant"] * 4 + ["Sub", "Div", "Clip"]
    assert len(normed.graph.initializer) == len(model.graph.initializer)
    x = (np.random.default_rng(2).normal(size=(64, 5)) * 8).astype(np.float32)
    want = ort_run(model, norm(x))
    assert np.array_equal(ort_run(normed, x), want)  # the same float32 ops, the same bits
    native = OnnxPolicy.from_model(normed, backend="native")
    on_ort = OnnxPolicy.from_model(normed, backend="onnxruntime")
    plain = OnnxPolicy.from_model(model)
    assert native.num_params == on_ort.num_params == plain.num_params  # constants are no parameters
    params = plain.initial_params()
    assert np.array_equal(native.initial_params(), params)
    np.testing.assert_allclose(native.run(x, params), on_ort.run(x, params), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(native.run(x, params), want, rtol=1e-5, atol=1e-6)


def test_prefix_errors():
    model = init_mlp(5, 3, hidden_sizes=(4,), seed=4)
    normed = with_obs_norm(model, norm_for(5))
    with pytest.raises(ValueError, match=r"^the model already normalises its observations"):
        with_obs_norm(normed, norm_for(5))
    with pytest.raises(ValueError, match=r"^observation input 'obs' has shape \[None, 5\], "
                                         r"expected \[batch, 4\]$"):
        with_obs_norm(model, norm_for(4))


@pytest.mark.parametrize("op, shape_b, swap", [
    ("Sub", (3,), False), ("Sub", (3,), True), ("Mul", (1, 3), False), ("Div", (2, 3), False),
    ("Div", (2, 1), True), ("Sub", (2, 1), False), ("Mul", (1, 2, 3), True)])
def test_native_elementwise_ops_match_onnxruntime_bit_for_bit(op, shape_b, swap):
    """Sub, Mul, Div of a (batch, 2, 3) input and a parameter b (every
    broadcast: same shape, b per row, b first, general), then Clip: native
    vs onnxruntime, bit for bit."""
    rng = np.random.default_rng(len(shape_b) + 3 * swap)
    b = rng.uniform(0.5, 2, size=shape_b).astype(np.float32)
    ins = ["b", "obs"] if swap else ["obs", "b"]
    nodes = [helper.make_node(op, ins, ["y"]),
             helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(np.float32(-0.75), "lo")),
             helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.float32(1.5), "hi")),
             helper.make_node("Clip", ["y", "lo", "hi"], ["z"])]
    graph = helper.make_graph(nodes, "ew", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 2, 3])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 2, 3])],
                              initializer=[numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    native = OnnxPolicy.from_model(model, backend="native")
    x = rng.permutation(np.linspace(-6, 6, 24, dtype=np.float32)).reshape(4, 2, 3)
    x[x == 0] = 0.5  # no division by zero
    params = native.initial_params() * np.float32(1.25)
    got = native.run(x, params)
    want = OnnxPolicy.from_model(model, backend="onnxruntime").run(x, params)
    assert got.shape == (4, 2, 3)
    assert np.array_equal(got, want)
    assert got.min() == np.float32(-0.75) and got.max() == np.float32(1.5)  # both bounds bite
    assert ((got > -0.75) & (got < 1.5)).any()


def test_native_clip_needs_constant_bounds():
    nodes = [helper.make_node("Clip", ["obs", "lo"], ["z"], name="clip")]
    graph = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 3])],
                              initializer=[numpy_helper.from_array(np.array([0.5], np.float32), "lo")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(NotSupportedError,
                       match=r"^<memory>: native backend: node 'clip' \(Clip\): min 'lo' must be a "
                             r"constant with one element, got a non-constant of shape \(1,\)$"):
        OnnxPolicy.from_model(model, backend="native")


# ---- evaluators -------------------------------------------------------------------------


def agent_for(tmp_path, backend="native"):
    cfg = evokit.load_config(CARTPOLE)
    cfg.solver.population_size = 6
    cfg.solver.backend = backend
    return mlp_agent(tmp_path, cfg)


def test_every_evaluator_gives_the_same_rewards_and_statistics(tmp_path):
    agent = agent_for(tmp_path)
    infos = [c.add_noise() for c in [agent.clone() for _ in range(6)]] + [None]
    seeds = [[10 + i, 20 + i] for i in range(7)]
    norm = ObsNorm(np.array([0.1, -0.2, 0.05, 0.3], np.float32),
                   np.array([0.5, 2.0, 0.1, 1.5], np.float32), 5.0)
    results = {}
    for name, ev in [("serial", SerialEvaluator("CartPole-v1")),
                     ("process", ProcessEvaluator("CartPole-v1", 2)),
                     ("vector", VectorEvaluator("CartPole-v1", 1)),
                     ("native-2", VectorEvaluator("CartPole-v1", 2, vectorization_mode="native")),
                     ("sync", VectorEvaluator("CartPole-v1", 2, vectorization_mode="sync"))]:
        with ev:
            ev.obs_norm = norm
            results[name] = ev.evaluate(agent, infos, seeds)
    ref = results["serial"]
    assert int(ref.obs_stats.count.sum()) == ref.steps  # one observation per step
    with SerialEvaluator("CartPole-v1") as plain:
        unnormalised = plain.evaluate(agent, infos, seeds)
    assert unnormalised.obs_stats is None
    assert not np.array_equal(unnormalised.rewards, ref.rewards)  # the policy saw other inputs
    for name, res in results.items():
        np.testing.assert_array_equal(res.rewards, ref.rewards, err_msg=name)
        assert res.steps == ref.steps, name
        np.testing.assert_array_equal(res.obs_stats.count, ref.obs_stats.count, err_msg=name)
        for field in ("sum", "sumsq"):
            got, want = getattr(res.obs_stats, field), getattr(ref.obs_stats, field)
            if name in ("vector", "native-2"):
                # The core's episodes (native mode) sum per episode, then per
                # sample: the same values up to rounding.
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
            else:
                assert np.array_equal(got, want), name


# ---- training -----------------------------------------------------------------------------


def short_config(workers=1):
    cfg = evokit.load_config(CARTPOLE)
    cfg.train.max_generations = 3
    cfg.train.num_workers = workers
    cfg.train.eval_every = 3
    cfg.train.eval_episodes = 2
    cfg.train.observation_normalization = True
    cfg.solver.population_size = 10
    return cfg


def test_train_saves_a_self_contained_normalised_policy(tmp_path):
    res = evokit.train(short_config(), out_dir=str(tmp_path / "a"), evaluator_kind="serial", log=quiet)
    stats = pb.ObservationStats.FromString(read(tmp_path / "a" / OBS_NORM_FILE))
    # every observation of the sampled episodes, none of the centre evaluation's
    assert len(stats.sum) == 4 and stats.clip == 5
    assert res.history[1]["env_steps"] < stats.count < res.env_steps
    model = onnx.load(str(tmp_path / "a" / "model.onnx"))
    assert [n.op_type for n in model.graph.node[4:7]] == ["Sub", "Div", "Clip"]
    stat = RunningStat.from_proto(stats)
    mean = onnx.numpy_helper.to_array(model.graph.node[0].attribute[0].t)
    assert np.array_equal(mean, stat.mean.astype(np.float32))
    # The exported model = the trained parameters behind the normaliser.
    agent = evokit.ESAgent()
    agent.load_config(tmp_path / "a" / "config.prototxt")
    agent.load_inference_model(tmp_path / "a" / "init_model.onnx")
    agent.init_solver()
    plain = onnx.load(str(tmp_path / "a" / "init_model.onnx"))
    assert len(OnnxPolicy.from_model(model).initial_params()) == agent.num_params
    x = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    trained = OnnxPolicy.from_model(model, backend="onnxruntime")
    raw = OnnxPolicy.from_model(plain, backend="onnxruntime")
    p = trained.initial_params()
    assert np.array_equal(trained.run(x, p), raw.run(stat.normalizer(5.0)(x), p))
    # Another evaluator, the same run, bit for bit.
    evokit.train(short_config(2), out_dir=str(tmp_path / "b"), log=quiet)
    assert read(tmp_path / "b" / "model.onnx") == read(tmp_path / "a" / "model.onnx")
    assert read(tmp_path / "b" / OBS_NORM_FILE) == read(tmp_path / "a" / OBS_NORM_FILE)


def test_resumed_run_keeps_the_statistics(tmp_path):
    """Stop after 2 generations, resume to 4: the model and statistics of an
    uninterrupted 4-generation run (the checkpoint carries the statistics)."""
    cfg = short_config()
    cfg.train.max_generations = 4
    evokit.train(cfg, out_dir=str(tmp_path / "whole"), log=quiet)
    evokit.train(cfg, out_dir=str(tmp_path / "parts"), max_generations=2, log=quiet)
    assert pb.TrainCheckpoint.FromString(read(tmp_path / "parts" / "checkpoint.pb")).obs_stats.count > 0
    evokit.train(None, out_dir=str(tmp_path / "parts"), resume=True, max_generations=4, log=quiet)
    for name in ("model.onnx", "solver.pb", OBS_NORM_FILE):
        assert read(tmp_path / "parts" / name) == read(tmp_path / "whole" / name), name


class _StopAt(SerialEvaluator):
    """Stops the run (as Ctrl-C would) at the evaluation of generation ``stop``."""

    def __init__(self, stop):
        super().__init__("CartPole-v1")
        self.calls, self.stop = 0, stop

    def evaluate(self, agent, infos, seeds):
        self.calls += 1
        if self.calls == self.stop:
            raise KeyboardInterrupt
        return super().evaluate(agent, infos, seeds)


def test_a_run_that_stops_early_leaves_the_complete_policy(tmp_path):
    cfg = short_config()
    cfg.train.max_generations = 10
    with pytest.raises(KeyboardInterrupt), _StopAt(3) as evaluator:
        evokit.train(cfg, out_dir=str(tmp_path / "a"), evaluator=evaluator, log=quiet,
                     checkpoint_every=1)
    model = onnx.load(str(tmp_path / "a" / "model.onnx"))  # generation 2's checkpoint
    assert [n.op_type for n in model.graph.node[4:7]] == ["Sub", "Div", "Clip"]
    stats = pb.ObservationStats.FromString(read(tmp_path / "a" / OBS_NORM_FILE))
    mean = numpy_helper.to_array(model.graph.node[0].attribute[0].t)
    assert np.array_equal(mean, RunningStat.from_proto(stats).mean.astype(np.float32))
    # What a run of 2 generations saves: the same files, bit for bit (the
    # solver states differ only in the config they record: max_generations).
    cfg.train.max_generations = 2
    evokit.train(cfg, out_dir=str(tmp_path / "b"), evaluator_kind="serial", log=quiet)
    for name in ("model.onnx", OBS_NORM_FILE):
        assert read(tmp_path / "a" / name) == read(tmp_path / "b" / name), name
    states = [read_state_file(tmp_path / d / "solver.pb", pb.SolverState()) for d in "ab"]
    for state in states:
        state.ClearField("config")
    assert states[0] == states[1]
