"""PARL EvoKit's own config layout (seed, gaussian_sampling, optimizer,
async_es at the top level) loads, mapped onto EvoKitConfig with one note;
mixed layouts and PARL fields without an EvoKit meaning are refused naming
the field (evokit/parl_config.py; the C++ io component: test_config.cc)."""

import os
import subprocess
import sys
import warnings

import pytest
from google.protobuf import text_format

import evokit
from evokit import ConfigError, load_config, parse_config
from evokit import evokit_pb2 as pb
from evokit.errors import ConfigLayoutWarning

from helpers import ROOT

PARL_DEMO = os.path.join(ROOT, "cpp", "io", "tests", "data", "parl_cartpole_config.prototxt")

#: What PARL's demo config means in EvoKit's layout (docs/migrating_from_parl.md).
PARL_DEMO_AS_EVOKIT = """
solver {
  optimizer { type: ADAM base_lr: 0.05 momentum { momentum: 0.9 }
              adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
  sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 cached: true seed: 1024 cache_size: 100000 } }
  antithetic: false
}
async_es { max_to_keep: 5 }
"""


def note(source):
    return (f"{source}: read in PARL EvoKit's flat layout (seed, gaussian_sampling, optimizer, async_es at "
            f"the top level) and mapped onto EvoKit's solver {{ ... }} (docs/migrating_from_parl.md)")


def parl(text, source="p.prototxt"):
    with pytest.warns(ConfigLayoutWarning) as record:
        config = parse_config(text, source=source)
    assert [str(w.message) for w in record] == [note(source)]
    return config


def test_parl_s_demo_config_loads_with_one_note():
    with pytest.warns(ConfigLayoutWarning) as record:
        config = load_config(PARL_DEMO)
    assert [str(w.message) for w in record] == [note(PARL_DEMO)]
    assert config == text_format.Parse(PARL_DEMO_AS_EVOKIT, pb.EvoKitConfig())


def test_fields_left_out_take_parl_s_defaults():
    config = parl("seed: 7\n")
    expected = text_format.Parse("""
        solver {
          optimizer { type: MOMENTUM base_lr: 0.001 momentum { momentum: 0.9 }
                      adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
          sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 1 cached: false seed: 7 cache_size: 100000 } }
          antithetic: false
        }
        async_es { max_to_keep: 5 }""", pb.EvoKitConfig())
    assert config == expected
    # PARL compares the optimizer type in lower case
    assert parl('optimizer { type: "sgd" momentum: 0 }').solver.optimizer.type == pb.OptimizerConfig.MOMENTUM
    assert parl('optimizer { type: "ADAM" }').solver.optimizer.type == pb.OptimizerConfig.ADAM


def test_parl_s_test_config_with_commas_loads():
    # PARL's evo_kit/test/prototxt/torch_sin_config.prototxt (Apache-2.0, PaddlePaddle Authors)
    text = ('seed : 1024\n\ngaussian_sampling {\n  std: 0.005\n  cached: false\n}\n\noptimizer {\n'
            '  type: "Adam",\n  base_lr: 0.005,\n  momentum: 0.9,\n  beta1: 0.9,\n  beta2: 0.999,\n'
            '  epsilon: 1e-8,\n}\n')
    config = parl(text)
    g = config.solver.sampling.gaussian_sampling
    assert (g.seed, g.std, g.cached) == (1024, pytest.approx(0.005), False)
    assert config.solver.optimizer.base_lr == pytest.approx(0.005)


@pytest.mark.parametrize("text, message", [
    ("seed: 1\nbuffer_size: 10\n", "p.prototxt:2: buffer_size has no EvoKit meaning (PARL EvoKit reads it nowhere)"),
    ('async_es {\n  model_warehouse: "./w"\n}\nseed: 2\n',
     "p.prototxt:2: async_es.model_warehouse has no EvoKit meaning: the warehouse is the directory given to "
     "`evokit init-solver --warehouse` (io::Warehouse in C++)"),
    ('seed: 1\nasync_es { model_md5: "abc" }\n',
     "p.prototxt:2: async_es.model_md5 has no EvoKit meaning: EvoKit checks models by the fingerprint in "
     "solver.pb"),
    ("seed: 1\nasync_es {\n  model_iter_id: 3\n}\n",
     "p.prototxt:3: async_es.model_iter_id has no EvoKit meaning but 0: EvoKit's warehouse numbers its "
     "iterations itself (model_iter_id-k directories)"),
    ("seed: -5\n", "p.prototxt:1: seed must be >= 0 (EvoKit's seed is unsigned), got -5"),
    ('optimizer {\n  type: "RMSProp"\n}\n',
     'p.prototxt:2: optimizer.type must be "SGD" or "Adam" (in any case), got "RMSProp"'),
    ("gaussian_sampling {\n  std: 0\n}\n",
     "p.prototxt:2: gaussian_sampling.std (solver.sampling.gaussian_sampling.std) must be > 0, got 0"),
    ("optimizer {\n  base_lr: -1\n}\n",
     "p.prototxt:2: optimizer.base_lr (solver.optimizer.base_lr) must be > 0, got -1"),
    ("gaussian_sampling { stdev: 1 }\n",
     'p.prototxt:1:21: gaussian_sampling.stdev: Message type "evokit.proto.ParlGaussianSamplingConfig" has '
     'no field named "stdev".'),
])
def test_parl_fields_without_an_evokit_meaning_and_bad_values_are_refused_naming_the_field(text, message):
    with pytest.raises(ConfigError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigLayoutWarning)  # a value out of range is refused after the note
        parse_config(text, source="p.prototxt")
    assert str(info.value) == message


@pytest.mark.parametrize("text, message", [
    ("solver { population_size: 4 }\nseed: 3\n",
     "m.prototxt:2:1: seed: a field of PARL EvoKit's flat layout in a config of EvoKit's layout ('solver' at "
     "line 1); write the config in one layout (docs/migrating_from_parl.md)"),
    ("seed: 3\ngaussian_sampling { std: 0.1 }\ntrain { max_generations: 3 }\n",
     "m.prototxt:3:1: train: a field of EvoKit's layout in a config of PARL EvoKit's flat layout ('seed' at "
     "line 1); write the config in one layout (docs/migrating_from_parl.md)"),
])
def test_a_config_mixing_both_layouts_is_refused_naming_the_field(text, message):
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="m.prototxt")
    assert str(info.value) == message


def test_an_agent_trains_from_parl_s_demo_config(tmp_path):
    """PARL's demo loop (clones add noise, the agent updates) on EvoKit's
    ESAgent: the parameters move, and an update is the same as the one of
    the equivalent EvoKit config."""
    model = evokit.init_model("CartPole-v1", str(tmp_path / "m.onnx"), hidden_sizes=(4,))
    centres = []
    for source in ("parl", "evokit"):
        agent = evokit.ESAgent()
        if source == "parl":
            with pytest.warns(ConfigLayoutWarning):
                agent.load_config(PARL_DEMO)
        else:
            agent.load_config(text_format.Parse(PARL_DEMO_AS_EVOKIT, pb.EvoKitConfig()))
        agent.load_inference_model(model)
        agent.init_solver()
        before = agent.center.copy()
        clones = [agent.clone() for _ in range(10)]
        infos = [c.add_noise() for c in clones]
        assert not any(i.mirrored for i in infos)  # PARL's clones draw independent noise
        agent.update(infos, [float(i) for i in range(10)])
        assert (agent.center != before).any()
        centres.append(agent.center.copy())
    assert (centres[0] == centres[1]).all()


def test_check_config_prints_the_note_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "evokit.cli", "check-config", PARL_DEMO], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{PARL_DEMO}: ok\n"
    assert out.stderr == f"evokit: warning: {note(PARL_DEMO)}\n"
