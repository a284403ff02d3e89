"""Configs: every file in configs/ loads; bad configs name file, line and field."""

import glob
import os

import pytest

import evokit
from evokit import ConfigError, load_config, parse_config
from evokit import evokit_pb2 as pb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "configs", "*.prototxt")))

SEED_EXAMPLE = """solver {
  type: BASIC_ES
  optimizer { type: ADAM base_lr: 0.05 adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
  sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 cached: true seed: 1024 cache_size: 100000 } }
}
"""


def test_configs_dir_is_not_empty():
    names = {os.path.basename(p) for p in CONFIGS}
    assert {"cartpole.prototxt", "evokit_minimal.prototxt"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_every_shipped_config_loads(path):
    cfg = load_config(path)
    assert isinstance(cfg, evokit.EvoKitConfig)
    assert cfg.solver.sampling.gaussian_sampling.std > 0


def test_seed_example_loads_unchanged(tmp_path):
    path = tmp_path / "config.prototxt"
    path.write_text(SEED_EXAMPLE)
    cfg = load_config(path)
    assert cfg.solver.type == pb.SolverConfig.BASIC_ES
    assert cfg.solver.optimizer.type == pb.OptimizerConfig.ADAM
    assert cfg.solver.optimizer.base_lr == pytest.approx(0.05)
    assert cfg.solver.optimizer.adam.beta2 == pytest.approx(0.999)
    assert cfg.solver.optimizer.adam.epsilon == pytest.approx(1e-8)
    g = cfg.solver.sampling.gaussian_sampling
    assert (g.std, g.cached, g.seed, g.cache_size) == (0.5, True, 1024, 100000)
    # defaults are explicit values, not sentinels
    assert cfg.solver.population_size == 50
    assert cfg.solver.antithetic is True
    assert cfg.solver.fitness_shaping == pb.CENTERED_RANK
    assert cfg.solver.num_threads == 1
    assert cfg.train.seed == 0 and cfg.train.env_id == "CartPole-v1"


def test_load_config_accepts_a_message_and_copies_it():
    msg = parse_config(SEED_EXAMPLE)
    loaded = load_config(msg)
    assert loaded == msg and loaded is not msg


def _error(tmp_path, text, name="bad.prototxt"):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return info.value, str(path)


def test_syntax_error_names_file_and_line(tmp_path):
    text = SEED_EXAMPLE.replace("optimizer {", "optimizer", 1)
    err, path = _error(tmp_path, text)
    assert str(err).startswith(f"{path}:3:")
    assert err.line == 3


def test_unknown_field_names_field_and_line(tmp_path):
    err, path = _error(tmp_path, SEED_EXAMPLE.replace("cached:", "cachd:"))
    assert str(err).startswith(f"{path}:4:")
    assert 'no field named "cachd"' in str(err)
    assert err.field == "solver.sampling.gaussian_sampling.cachd"


def test_negative_std_names_field_and_line(tmp_path):
    err, path = _error(tmp_path, SEED_EXAMPLE.replace("std: 0.5", "std: -0.5"))
    assert str(err) == f"{path}:4: solver.sampling.gaussian_sampling.std must be > 0, got -0.5"


def test_unknown_optimizer_type(tmp_path):
    err, path = _error(tmp_path, SEED_EXAMPLE.replace("type: ADAM", "type: RMSPROP"))
    assert str(err).startswith(f"{path}:3:")
    assert "solver.optimizer.type: unknown value RMSPROP, expected one of SGD, MOMENTUM, ADAM" in str(err)


def test_unknown_sampling_type(tmp_path):
    # CMA_SAMPLING and GA_SAMPLING exist now (tests/test_policy_samplers.py)
    err, _ = _error(tmp_path, SEED_EXAMPLE.replace("GAUSSIAN_SAMPLING", "PSO_SAMPLING"))
    assert ("solver.sampling.type: unknown value PSO_SAMPLING, expected one of GAUSSIAN_SAMPLING, "
            "CMA_SAMPLING, GA_SAMPLING") in str(err)


def test_cache_size_too_small_for_the_model():
    cfg = parse_config(SEED_EXAMPLE)
    with pytest.raises(ConfigError, match=r"cache_size \(100000\) is smaller than the model "
                                          r"\(200000 parameters\): raise "
                                          r"solver.sampling.gaussian_sampling.cache_size"):
        evokit.config.validate_config(cfg, num_params=200000)


@pytest.mark.parametrize("replace, field, message", [
    ("base_lr: 0.05", "solver.optimizer.base_lr", "must be > 0, got -1"),
    ("beta1: 0.9", "solver.optimizer.adam.beta1", "must be in [0, 1), got 1"),
    ("epsilon: 1e-08", "solver.optimizer.adam.epsilon", "must be > 0, got 0"),
    ("cache_size: 100000", "solver.sampling.gaussian_sampling.cache_size", "must be >= 1, got 0"),
])
def test_out_of_range_values(tmp_path, replace, field, message):
    key = replace.split(":")[0]
    bad = {"base_lr": "-1", "beta1": "1", "epsilon": "0", "cache_size": "0"}[key]
    err, path = _error(tmp_path, SEED_EXAMPLE.replace(replace, f"{key}: {bad}"))
    assert str(err) == f"{path}:{3 if 'optimizer' in field else 4}: {field} {message}"


def test_extended_fields_are_validated(tmp_path):
    err, path = _error(tmp_path, SEED_EXAMPLE.replace("}\n}", "}\n  population_size: 7\n}"))
    assert str(err) == (f"{path}:5: solver.population_size must be even when solver.antithetic "
                        f"is true, got 7")
    err, path = _error(tmp_path, SEED_EXAMPLE + 'train { activation: "softplus" }\n')
    assert str(err) == (f"{path}:6: train.activation must be one of tanh, relu, sigmoid, identity, "
                        f"got 'softplus'")
    err, path = _error(tmp_path, SEED_EXAMPLE.replace("}\n}", "}\n  num_threads: 0\n}"))
    assert str(err) == f"{path}:5: solver.num_threads must be >= 1, got 0"
    err, path = _error(tmp_path, SEED_EXAMPLE + "async_es { max_to_keep: -2 }\n")
    assert str(err) == f"{path}:6: async_es.max_to_keep must be >= 1, got -2"


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ConfigError, match=r"nope.prototxt: no such config file"):
        load_config(tmp_path / "nope.prototxt")
    with pytest.raises(ConfigError, match=r"is a directory"):
        load_config(tmp_path)


def test_binary_file_is_rejected(tmp_path):
    path = tmp_path / "bin.prototxt"
    path.write_bytes(b"\xff\xfe\x00solver")
    with pytest.raises(ConfigError, match=r"bin.prototxt: not a text file \(byte offset 0"):
        load_config(path)


def test_overrides_are_set_and_validated_once(tmp_path, monkeypatch):
    path = tmp_path / "config.prototxt"
    path.write_text(SEED_EXAMPLE + "train { num_workers: 2 }\n")
    calls = []
    real = evokit.config.validate_config
    monkeypatch.setattr(evokit.config, "validate_config",
                        lambda *a, **k: calls.append(k) or real(*a, **k))
    cfg = load_config(path, overrides={"train.num_workers": 3, "train.env_id": "Pendulum-v1"})
    assert (cfg.train.num_workers, cfg.train.env_id) == (3, "Pendulum-v1")
    assert len(calls) == 1
    again = load_config(cfg, overrides={"train.seed": 5})  # a message: copied, then set
    assert (again.train.seed, cfg.train.seed) == (5, 0) and len(calls) == 2


def test_an_error_in_an_override_names_the_command_line_and_elsewhere_the_file(tmp_path):
    path = tmp_path / "config.prototxt"
    path.write_text(SEED_EXAMPLE + "train {\n  max_generations: 0\n}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides={"train.num_workers": 2})
    assert str(info.value) == f"{path}:7: train.max_generations must be >= 1, got 0"
    path.write_text(SEED_EXAMPLE + "train {\n  num_workers: 4\n}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides={"train.num_workers": 0})
    assert str(info.value) == ("config (with command-line overrides): train.num_workers must be "
                               "in [1, 4,096], got 0")
    assert info.value.field == "train.num_workers"


def test_unvalidated_config_is_left_to_the_caller(tmp_path):
    path = tmp_path / "config.prototxt"
    path.write_text(SEED_EXAMPLE.replace("std: 0.5", "std: -0.5"))
    assert load_config(path, validate=False).solver.sampling.gaussian_sampling.std == -0.5
    with pytest.raises(ConfigError, match=r"std must be > 0, got -0.5"):
        load_config(path)


def test_check_config_show_prints_every_field_with_its_default(capsys):
    from evokit.cli import main as cli
    from evokit.config import config_with_defaults

    path = os.path.join(ROOT, "configs", "evokit_minimal.prototxt")
    assert cli(["check-config", "--show", path]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: ok\n")
    text = out.split("\n", 1)[1]
    # set fields as they are, unset ones with their defaults, marked
    assert "    base_lr: 0.05\n" in text and "  population_size: 50  # default\n" in text
    assert '  env_id: "CartPole-v1"  # default\n' in text
    assert "      epsilon: 1e-08\n" in text and "  observation_normalizer: OPENAI_ES  # default\n" in text
    # every field of every message is there, and the text means the same config
    fields = {f.name for m in (pb.SolverConfig, pb.TrainConfig, pb.ARSSamplingConfig)
              for f in m.DESCRIPTOR.fields if not f.is_repeated}  # hidden_sizes: none listed
    assert [name for name in fields if f" {name}" not in text] == []
    cfg = evokit.load_config(path)
    again = parse_config(text)
    for message in (again.solver.sampling.ars_sampling, again.train):
        for f in message.DESCRIPTOR.fields:
            if not f.is_repeated:
                assert message.HasField(f.name)  # written out, not left to the default
    assert config_with_defaults(again).replace("  # default", "") == text.rstrip("\n").replace(
        "  # default", "")
    assert again.solver.optimizer.base_lr == cfg.solver.optimizer.base_lr


@pytest.mark.parametrize("field", ["eval_episodes", "episodes_per_sample"])
def test_episode_counts_that_cannot_fit_in_memory_are_refused_up_front(field):
    with pytest.raises(ConfigError, match=rf"^<string>:1: train.{field} must be in \[1, 1,000,000\], "
                                          rf"got 2,147,483,647$"):
        parse_config(f"train {{ {field}: 2147483647 }}")
