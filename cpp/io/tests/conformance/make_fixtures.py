#!/usr/bin/env python3
"""The fixtures of the cross-language conformance test (ctest ``conformance``).

    python make_fixtures.py OUT_DIR

writes into OUT_DIR (created; it must be empty or missing) every fixture the
test runs through Python and through the C++ io component, and
``OUT_DIR/manifest.tsv``, which lists them, one per line, tab-separated::

    config  NAME  PATH
    model   NAME  PATH  PARAM_PATTERN
    log     NAME  PATH
    state   NAME  CONFIG  MODEL  DIR  STREAM  CLONES  REWARDS

Paths are relative to OUT_DIR (both sides run from there, so messages name
the same paths). A state fixture is loaded as ``ESAgent.load_solver(DIR)``
after ``load_config(CONFIG)``, ``load_inference_model(MODEL)``,
``init_solver()`` and ``sampling_stream = STREAM``; then CLONES clones draw a
member each and the agent is updated with REWARDS (comma-separated).

The fixtures are written at test time, not committed: they are a pure
function of this script, the committed models in cpp/io/tests/data and
tests/fixtures, and the installed evokit package (which writes the solver
states and the sampling logs), so a change to either language's copy is
exercised on the next run and no binary file has to be kept in sync.
Nothing here draws from a global or time-seeded RNG: two runs write the
same bytes (the solver states and logs hold no time stamps).

What is written:

- configs: every file of configs/ and cpp/io/tests/data/adam.prototxt; valid
  configs exercising the option walk (defaults, uint64 seeds above 2**63,
  enums by number, octal and hex integers, float suffixes, string escapes);
  one config per validation refusal of the core's registry (population 0,
  an odd antithetic population, CMA or GA with antithetic, every GA range,
  std / sigma0 / learning-rate / Adam bounds, the cache size, which needs the
  model's size); the checks only Python makes (train.*, solver.backend,
  solver.param_pattern); parse errors (unknown fields and enum values, the
  unknown sampling type, bad literals, overflows, repeated singular fields,
  broken braces, non-UTF-8 bytes); a missing file and a directory.
- models: cartpole_h8.onnx, the obs-norm-trained obs_norm_h8.onnx, iter1,
  iter2, fingerprint_attributes.onnx, tests/fixtures/torch_mlp.onnx and every
  native_cases/*.onnx of cpp/io/tests/data, with some param_patterns; models
  made here for the fingerprint (typed initializers of every data type,
  renamed and documented copies, float8 and sparse data, non-tensor outputs)
  and for refusals (corrupt, empty, missing, a directory, no float
  initializers, two inputs, external data, observation inputs the native
  forward pass cannot take, the ONNX checker).
- logs: written by evokit.online.samplelog, then clean, empty, torn at the
  end, damaged in the middle (payload, header, magic), foreign bytes, a
  crafted resync log (a frame inside a payload, false magics, lengths past
  the end and past the maximum), and one log per crafted payload (framed with
  good checksums) that probes the two protobuf runtimes' parsers.
- states: solver.pb + model.onnx of ESAgents written by Python (Gaussian
  SGD / momentum / Adam with their draw counters, cached and not, with the
  obs-norm model; CMA full and separable; GA with and without elite
  re-evaluation; each saved mid-generation), state version 1 files, and
  damaged ones (wrong family, missing entry, wrong size, unknown element type,
  state version 3, v1 CMA / GA, another noise version, a model of another
  fingerprint or size, another optimizer, ...), each under a sound sha256
  trailer; and damage to the bytes as stored (a bit flipped in the body or
  the digest, the trailer cut short, missing or alone, a bit flipped inside
  a parameter of the model beside the state).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import sys
from typing import List, Optional, Sequence

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))

#: The parameter count of cartpole_h8.onnx (the model of most state fixtures).
NUM_PARAMS = 58


class Manifest:
    def __init__(self, out: str):
        self.out = out
        self.lines: List[str] = []
        self.names = set()

    def add(self, kind: str, name: str, *fields) -> None:
        key = (kind, name)
        if key in self.names:
            raise ValueError(f"fixture {kind} {name} listed twice")
        self.names.add(key)
        items = [kind, name, *[str(f) for f in fields]]
        for item in items:
            if "\t" in item or "\n" in item:
                raise ValueError(f"manifest field {item!r} holds a tab or a newline")
        self.lines.append("\t".join(items))

    def write(self) -> None:
        with open(os.path.join(self.out, "manifest.tsv"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in self.lines))


def write_bytes(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def rewards_for(n: int) -> List[float]:
    """Fixed rewards (exact in binary, with ties) for n samples."""
    return [((i * 7) % 13 - 6) * 0.5 for i in range(n)]


# ---------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------

GAUSS = """solver {{
  optimizer {{ type: {opt} base_lr: {lr}{opt_extra} }}
  sampling {{
    type: GAUSSIAN_SAMPLING
    gaussian_sampling {{ std: {std} cached: {cached} seed: 7 cache_size: {cache} }}
  }}
  population_size: {n}
  antithetic: {anti}
{extra}}}
"""

CMA = """solver {{
  sampling {{ type: CMA_SAMPLING cma_sampling {{ sigma0: {sigma0} separable: {sep} seed: 11 }} }}
  population_size: {n}
  antithetic: {anti}
}}
"""

GA = """solver {{
  sampling {{
    type: GA_SAMPLING
    ga_sampling {{ truncation_size: {trunc} num_elites: {elites} mutation_power: {mp} init_sigma: {sigma}
                  elite_candidates: {cand} elite_evaluations: {evals} seed: 13 }}
  }}
  population_size: {n}
  antithetic: {anti}
}}
"""


def gauss(opt="SGD", lr="0.05", std="0.1", cached="true", cache="10000", n="6", anti="true", extra="",
          opt_extra="") -> str:
    return GAUSS.format(opt=opt, lr=lr, opt_extra=opt_extra and " " + opt_extra, std=std, cached=cached,
                        cache=cache, n=n, anti=anti, extra=extra)


def cma(sigma0="0.3", sep="false", n="6", anti="false") -> str:
    return CMA.format(sigma0=sigma0, sep=sep, n=n, anti=anti)


def ga(trunc="4", elites="1", mp="0.05", sigma="0.1", cand="2", evals="0", n="8", anti="false") -> str:
    return GA.format(trunc=trunc, elites=elites, mp=mp, sigma=sigma, cand=cand, evals=evals, n=n, anti=anti)


def config_fixtures():
    """(name, text or bytes) of every config fixture."""
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
        if name.endswith(".prototxt"):
            out.append(("repo_" + name[:-len(".prototxt")], read_bytes(os.path.join(ROOT, "configs", name))))
    out.append(("data_adam", read_bytes(os.path.join(DATA, "adam.prototxt"))))
    out += [
        # ---- valid: the option walk --------------------------------------------
        ("empty", ""),
        ("only_comments", "# nothing but a comment\n\n   # and another\n"),
        ("gauss_all_fields", gauss(opt="ADAM", extra="  fitness_shaping: Z_SCORE weight_decay: 0.125 num_threads: 2\n"
                                   "  param_pattern: \"layer0\\\\..*\" backend: \"native\" type: BASIC_ES\n")),
        ("seed_uint64_max", "solver { sampling { gaussian_sampling { seed: 18446744073709551615 } } }"),
        ("seed_2_63", "solver { sampling { gaussian_sampling { seed: 9223372036854775808 } } }"),
        ("seed_hex", "solver { sampling { gaussian_sampling { seed: 0xFFFFFFFFFFFF } } }"),
        ("population_octal", "solver { population_size: 010 }"),
        ("population_hex", "solver { population_size: 0x10 }"),
        ("enum_by_number", "solver { sampling { type: 1 } antithetic: false optimizer { type: 2 } fitness_shaping: 2 }"),
        ("bool_forms", "solver { antithetic: t sampling { gaussian_sampling { cached: True } } }"),
        ("bool_numbers", "solver { antithetic: 0 sampling { gaussian_sampling { cached: 1 } } }"),
        ("float_suffix", "solver { sampling { gaussian_sampling { std: 0.25f } } optimizer { base_lr: 1e-3F } }"),
        ("float_from_int", "solver { sampling { gaussian_sampling { std: 1 } } weight_decay: 0 }"),
        ("float_rounding", "solver { sampling { gaussian_sampling { std: 0.1 } }\n"
                           "         optimizer { adam { epsilon: 1e-45 } } }"),
        ("angle_brackets_separators", "solver < optimizer < type: MOMENTUM; momentum { momentum: 0.5 }, >; "
                                      "population_size: 4, >\n"),
        ("message_colon", "solver: { sampling: { type: GA_SAMPLING } antithetic: false population_size: 30 }"),
        ("string_single_quotes", "solver { param_pattern: 'layer0.*' }"),
        ("string_escape_hex_octal", "solver { param_pattern: \"layer0.w\\x65ight|\\150ead.*\" }"),
        ("string_escape_backslash", "solver { param_pattern: \"layer0\\\\..*\" }"),
        ("string_escape_unknown", "solver { param_pattern: \"layer0\\.weight\" }"),
        ("string_concatenation", "solver { backend: \"na\" 'tive' }"),
        ("string_utf8", "solver { param_pattern: \"caf\u00e9|.*\" }\n# \u00e9t\u00e9\n"),
        ("async_es_zero", "async_es { max_to_keep: 0 }"),
        ("cache_small_uncached", gauss(cached="false", cache="10")),
        ("cma_separable", cma(sep="true")),
        ("ga_elite", ga(evals="2", cand="2")),
        ("ga_elite_off_bad_candidates", ga(evals="0", cand="50")),  # candidates unchecked while evaluations is 0
        ("train_all_fields", "train { env_id: \"Hopper-v5\" hidden_sizes: 8 hidden_sizes: [4, 2] activation: \"relu\" "
                             "max_generations: 3 observation_normalization: true observation_clip: 10 }"),
        # ---- the core's validation refusals -----------------------------------
        ("population_zero", gauss(n="0")),
        ("population_negative", gauss(n="-3")),
        ("antithetic_odd_population", gauss(n="7")),
        ("cma_antithetic", cma(anti="true")),
        ("cma_population_1", cma(n="1")),
        ("cma_sigma0_zero", cma(sigma0="0")),
        ("cma_sigma0_negative", cma(sigma0="-0.5")),
        ("cma_sigma0_nan", cma(sigma0="nan")),
        ("cma_sigma0_inf", cma(sigma0="inf")),
        ("ga_antithetic", ga(anti="true")),
        ("ga_population_1", ga(n="1", trunc="1")),
        ("ga_truncation_zero", ga(trunc="0")),
        ("ga_truncation_over", ga(trunc="9")),
        ("ga_elites_zero", ga(elites="0")),
        ("ga_elites_population", ga(elites="8")),
        ("ga_mutation_zero", ga(mp="0")),
        ("ga_init_sigma_negative", ga(sigma="-0.1")),
        ("ga_elite_evaluations_negative", ga(evals="-1")),
        ("ga_elite_candidates_below_elites", ga(evals="1", elites="3", cand="2")),
        ("ga_elite_candidates_over", ga(evals="1", cand="9")),
        ("ga_elite_evaluations_too_many", ga(evals="3", cand="2")),
        ("std_zero", gauss(std="0")),
        ("std_negative", gauss(std="-0.5")),
        ("std_nan", gauss(std="nan")),
        ("std_minus_nan", gauss(std="-nan")),
        ("std_inf", gauss(std="inf")),
        ("std_infinity_word", gauss(std="Infinity")),
        ("std_denormal", gauss(std="1e-45")),
        ("cache_size_zero", gauss(cache="0")),
        ("cache_size_negative", gauss(cache="-5")),
        ("cache_size_below_model", gauss(cache="10")),  # refused only with the model's size
        ("cache_size_equal_model", gauss(cache=str(NUM_PARAMS))),
        ("lr_zero", gauss(lr="0")),
        ("lr_negative", gauss(lr="-1e-3")),
        ("momentum_one", gauss(opt="MOMENTUM", opt_extra="momentum { momentum: 1 }")),
        ("adam_beta1_one", gauss(opt="ADAM", opt_extra="adam { beta1: 1.0 }")),
        ("adam_beta2_negative", gauss(opt="ADAM", opt_extra="adam { beta2: -0.1 }")),
        ("adam_epsilon_zero", gauss(opt="ADAM", opt_extra="adam { epsilon: 0 }")),
        ("optimizer_checked_for_cma", "solver { sampling { type: CMA_SAMPLING } antithetic: false "
                                      "optimizer { base_lr: 0 } }"),
        ("weight_decay_negative", gauss(extra="  weight_decay: -0.01\n")),
        ("num_threads_zero", gauss(extra="  num_threads: 0\n")),
        ("two_refusals_first_wins", gauss(n="0", std="0")),
        # ---- refused only by Python (see conformance.py's allowlist) -------------
        ("train_generations_zero", "train { max_generations: 0 }"),
        ("train_activation_unknown", "train { activation: \"swish\" }"),
        ("train_hidden_zero", "train { hidden_sizes: [8, 0] }"),
        ("train_clip_zero", "train { observation_clip: 0 }"),
        ("backend_unknown", "solver { backend: \"gpu\" }"),
        ("param_pattern_invalid", "solver { param_pattern: \"([\" }"),
        # ---- parse errors -------------------------------------------------------
        ("unknown_field", "solver {\n  population: 5\n}\n"),
        ("unknown_section", "trainer { }\n"),
        ("unknown_sampling_type", "solver {\n  sampling { type: BAYESIAN_SAMPLING }\n}\n"),
        ("unknown_sampling_type_number", "solver {\n  sampling { type: 99 }\n}\n"),
        ("unknown_optimizer", "solver {\n  optimizer { type: RMSPROP base_lr: 0.1 }\n}\n"),
        ("unknown_fitness_shaping", "solver { fitness_shaping: RANKS }"),
        ("missing_close_brace", "solver {\n  population_size: 4\n"),
        ("extra_close_brace", "solver { }\n}\n"),
        ("string_for_int", "solver { population_size: \"ten\" }"),
        ("float_for_int", "solver { population_size: 1.5 }"),
        ("int32_overflow", "solver {\n  population_size: 3000000000\n}"),
        ("int64_overflow", "solver { sampling { gaussian_sampling { cache_size: 9223372036854775808 } } }"),
        ("uint64_negative", "solver { sampling { gaussian_sampling { seed: -1 } } }"),
        ("uint64_overflow", "solver { sampling { gaussian_sampling { seed: 18446744073709551616 } } }"),
        ("repeated_singular_field", "solver {\n  population_size: 4\n  population_size: 6\n}\n"),
        ("repeated_singular_message", "solver { } solver { }"),
        ("bad_bool", "solver { antithetic: maybe }"),
        ("bool_two", "solver { antithetic: 2 }"),
        ("unterminated_string", "solver { param_pattern: \"abc\n}\n"),
        ("scalar_without_colon", "solver { population_size 4 }"),
        ("value_without_field", "solver { 4 }"),
        ("float_overflow", "solver { sampling { gaussian_sampling { std: 1e40 } } }"),
        ("float_word_inff", "solver { sampling { gaussian_sampling { std: inff } } }"),
        ("float_word_nanf", "solver { sampling { gaussian_sampling { std: nanf } } }"),
        ("float_hex", "solver { sampling { gaussian_sampling { std: 0x1p-3 } } }"),
        ("int_with_plus", "solver { population_size: +4 }"),
        ("enum_quoted", "solver { sampling { type: \"CMA_SAMPLING\" } }"),
        ("non_utf8_comment", b"# caf\xe9\nsolver { population_size: 4 }\n"),
        ("non_utf8_string", b"solver { param_pattern: \"\xff.*\" }\n"),
        ("nul_byte", b"solver { population_size: 4 }\x00\n"),
        ("missing_file", None),
        ("directory", "DIRECTORY"),
        # ---- the rest of Python's validation (the C++ io checks it too) -----------
        ("train_eval_every_zero", "train {\n  eval_every: 0\n}\n"),
        ("train_eval_episodes_over", "train { eval_episodes: 1000001 }"),
        ("train_num_workers_zero", "train { num_workers: 0 }"),
        ("train_num_workers_over", "train { num_workers: 5000 }"),
        ("train_episodes_per_sample_zero", "train { episodes_per_sample: 0 }"),
        ("train_clip_nan", "train { observation_clip: nan }"),
        ("train_target_return_inf", "train { target_return: -inf }"),
        ("train_max_env_steps_negative", "train { max_env_steps: -1 }"),
        ("train_alive_bonus_negative", "train { alive_bonus_offset: -0.5 }"),
        ("train_alive_bonus_nan", "train { alive_bonus_offset: -nan }"),
        ("backend_empty", "solver {\n  backend: \"\"\n}\n"),
        ("validation_line_of_enclosing_message", "solver {\n  antithetic: true\n}\n"),  # population 50: ok
        ("odd_population_line", "solver {\n  sampling { type: GAUSSIAN_SAMPLING }\n  population_size: 7\n}\n"),
        # ---- PARL EvoKit's flat layout: mapped, or refused naming the field -------
        ("parl_demo", read_bytes(os.path.join(DATA, "parl_cartpole_config.prototxt"))),
        ("parl_defaults", "seed: 7\n"),
        ("parl_sgd_lower_case", 'optimizer { type: "sgd" momentum: 0.5 base_lr: 0.01 }\n'),
        ("parl_commas", 'seed : 3\noptimizer {\n  type: "Adam",\n  base_lr: 0.005,\n}\n'),
        ("parl_buffer_size", "seed: 1\nbuffer_size: 10\n"),
        ("parl_model_warehouse", 'async_es {\n  model_warehouse: "./w"\n}\nseed: 2\n'),
        ("parl_model_md5", 'seed: 1\nasync_es { model_md5: "abc" }\n'),
        ("parl_model_iter_id", "seed: 1\nasync_es {\n  model_iter_id: 3\n}\n"),
        ("parl_model_iter_id_zero", "seed: 1\nasync_es { model_iter_id: 0 max_to_keep: 2 }\n"),
        ("parl_seed_negative", "seed: -5\n"),
        ("parl_optimizer_unknown", 'optimizer {\n  type: "RMSProp"\n}\n'),
        ("parl_std_zero", "gaussian_sampling {\n  std: 0\n}\n"),
        ("parl_max_to_keep_zero", "seed: 1\nasync_es {\n  max_to_keep: 0\n}\n"),
        ("parl_unknown_field", "gaussian_sampling { stdev: 1 }\n"),
        ("parl_bad_value", "gaussian_sampling {\n  cache_size: 1e3\n}\n"),
        ("mixed_evokit_first", "solver { population_size: 4 }\nseed: 3\n"),
        ("mixed_parl_first", "seed: 3\ngaussian_sampling { std: 0.1 }\ntrain { max_generations: 3 }\n"),
    ]
    out += damaged_configs()
    out += random_configs()
    return out


#: Bad tokens for damaged_configs: every kind of parse error a value can
#: have, and values the validation refuses.
BAD_TOKENS = ["-inf", "abc", '"text"', "1.5", "}", "99999999999999999999", "0x1g", "nan"]


#: Literals that one protobuf runtime or the other reads its own way (the
#: core's check_literals refuses those both would not read alike), and fields
#: of every kind to put them in: random_configs() combines them.
RANDOM_LITERALS = [
    "1e5", "0x10", "-0", "1.", "0.5", ".5", "inf", "-inf", "nan", "-nan", "Inf", "INFINITY", "1f", "1.5f", "01",
    "08", "1e+5", "1E-5", "true", "True", "t", "f", "False", "1", "0", "2", '"a"', "'b'", '"a\\x41"', '"\\101"',
    '"a" "b"', '"\\u00e9"', '"\\n\\t"', '"\\?"', '"\\."', "-1", "- 1", "0X1f", "9223372036854775808",
    "18446744073709551615", "4294967296", "-2147483649", "1e400", "-0.0", "CMA_SAMPLING", "ADAM", '""', "1.5e",
    "0b1", "1_0", "+1", "+inf", "inff", "nanf", "0xg", "[1, 2]", "[]", '"tanh"', "1.8e308"]
RANDOM_FIELDS = [
    "solver.population_size", "solver.param_pattern", "solver.antithetic", "solver.weight_decay",
    "solver.fitness_shaping", "solver.sampling.type", "solver.sampling.gaussian_sampling.std",
    "solver.sampling.gaussian_sampling.seed", "solver.optimizer.base_lr", "train.hidden_sizes",
    "train.activation", "train.seed", "train.target_return", "async_es.max_to_keep"]


def random_configs(count: int = 300, seed: int = 7):
    """Configs of one to three fields, each set to a literal of RANDOM_LITERALS
    (a fixed seed): both runtimes must accept the same ones with the same
    values and refuse the others at the same place."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(count):
        items = []
        for _ in range(rng.randint(1, 3)):
            *messages, name = rng.choice(RANDOM_FIELDS).split(".")
            body = f"{name}{rng.choice([': ', ':', ' : '])}{rng.choice(RANDOM_LITERALS)}"
            for message in reversed(messages):
                body = f"{message} {{ {body} }}"
            items.append(body)
        out.append((f"random_{i}", "\n".join(items)))
    return out


def damaged_configs():
    """configs/cartpole.prototxt with each value (each `name: value` of it)
    replaced in turn by each of BAD_TOKENS: (name, text). Both languages must
    name the same line, column and field for each."""
    text = read_bytes(os.path.join(ROOT, "configs", "cartpole.prototxt")).decode("utf-8")
    lines = text.split("\n")
    out = []
    for number, line in enumerate(lines, 1):
        m = re.fullmatch(r"( *)(\w+): (\S+)", line)
        if not m:
            continue
        for i, token in enumerate(BAD_TOKENS):
            if token != m.group(3):
                copy = list(lines)
                copy[number - 1] = f"{m.group(1)}{m.group(2)}: {token}"
                out.append((f"damaged_{number}_{m.group(2)}_{i}", "\n".join(copy)))
    return out


def write_configs(out: str, manifest: Manifest) -> None:
    for name, content in config_fixtures():
        path = f"configs/{name}.prototxt"
        full = os.path.join(out, path)
        if content is None:
            pass  # missing on purpose
        elif content == "DIRECTORY":
            os.makedirs(full)
        else:
            write_bytes(full, content if isinstance(content, bytes) else content.encode("utf-8"))
        manifest.add("config", name, path)


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------


def _model(nodes, inputs, outputs, initializers=(), opset=17, ir_version=8, check=True, **graph_fields):
    import onnx
    from onnx import helper
    graph = helper.make_graph(nodes, "conformance", inputs, outputs, initializer=list(initializers))
    for key, value in graph_fields.items():
        getattr(graph, key).extend(value)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="make_fixtures")
    model.ir_version = ir_version
    if check:
        onnx.checker.check_model(model)
    return model


def _obs(dims=("N", 3), elem=None):
    from onnx import TensorProto, helper
    return helper.make_tensor_value_info("obs", TensorProto.FLOAT if elem is None else elem, list(dims))


def _out(name="y", dims=("N", 4)):
    from onnx import TensorProto, helper
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


def _w(name="w", rows=3, cols=4):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.linspace(-1, 1, rows * cols, dtype=np.float32).reshape(rows, cols), name)


def _matmul(inp="obs", w="w", out="y"):
    from onnx import helper
    return helper.make_node("MatMul", [inp, w], [out], name=out)


def _typed(name, data_type, dims, field, values):
    """A TensorProto with typed (not raw) data in `field`."""
    from onnx import TensorProto
    t = TensorProto(name=name, data_type=data_type, dims=list(dims))
    getattr(t, field).extend(values)
    return t


def typed_initializers_model():
    """obs [N, 3] -> MatMul w -> y, and fixed initializers of every data
    type with typed storage (the fingerprint's narrow-type rules)."""
    from onnx import TensorProto as T
    fixed = [
        _typed("int16", T.INT16, [3], "int32_data", [-1, 2, -32768]),
        _typed("uint16", T.UINT16, [2], "int32_data", [65535, 1]),
        _typed("float16", T.FLOAT16, [2], "int32_data", [0x3E00, 0xC000]),
        _typed("bfloat16", T.BFLOAT16, [2], "int32_data", [0x3FC0, 0xC000]),
        _typed("int8", T.INT8, [3], "int32_data", [-1, 0, 127]),
        _typed("uint8", T.UINT8, [2], "int32_data", [255, 3]),
        _typed("bool", T.BOOL, [2], "int32_data", [1, 0]),
        _typed("int32", T.INT32, [2], "int32_data", [-7, 2147483647]),
        _typed("int64", T.INT64, [2], "int64_data", [-9, 9223372036854775807]),
        _typed("uint32", T.UINT32, [2], "uint64_data", [4294967295, 1]),
        _typed("uint64", T.UINT64, [2], "uint64_data", [18446744073709551615, 2]),
        _typed("double", T.DOUBLE, [2], "double_data", [0.1, -0.0]),
        _typed("complex64", T.COMPLEX64, [1], "float_data", [1.0, -2.0]),
        _typed("complex128", T.COMPLEX128, [1], "double_data", [0.5, 3.0]),
        _typed("string", T.STRING, [2], "string_data", [b"ab", b"\xff\x00"]),
        _typed("float_typed", T.FLOAT, [2], "float_data", [1.5, -0.0]),
    ]
    return _model([_matmul()], [_obs()], [_out()], [_w()] + fixed)


def renamed_copy(path: str):
    """The model at `path` with every name the fingerprint ignores changed."""
    import onnx
    m = onnx.load(path)
    m.graph.name = "another name"
    m.graph.doc_string = "a doc string"
    m.doc_string = "model doc"
    m.producer_name = "someone else"
    m.ir_version = 8
    for i, node in enumerate(m.graph.node):
        node.name = f"renamed_{i}"
        node.doc_string = "node doc"
    m.metadata_props.add(key="k", value="v")
    return m


def relu_copy(path: str):
    """The model at `path` with Tanh replaced by Relu: the same parameters,
    another graph (another fingerprint)."""
    import onnx
    m = onnx.load(path)
    for node in m.graph.node:
        if node.op_type == "Tanh":
            node.op_type = "Relu"
    onnx.checker.check_model(m)
    return m


def model_fixtures(out: str):
    """(name, path, param_pattern) of every model fixture, writing those made here."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    def save(name: str, model) -> str:
        path = f"models/{name}.onnx"
        write_bytes(os.path.join(out, path), model.SerializeToString())
        return path

    def copy(src: str, name: str) -> str:
        path = f"models/{name}.onnx"
        os.makedirs(os.path.join(out, "models"), exist_ok=True)
        shutil.copyfile(src, os.path.join(out, path))
        return path

    cartpole = os.path.join(DATA, "cartpole_h8.onnx")
    fx = []
    # committed models
    fx.append(("cartpole_h8", copy(cartpole, "cartpole_h8"), ".*"))
    fx.append(("cartpole_h8_weights", "models/cartpole_h8.onnx", ".*weight"))
    fx.append(("cartpole_h8_layer0", "models/cartpole_h8.onnx", "layer0\\..*|head\\.bias"))
    fx.append(("cartpole_h8_no_match", "models/cartpole_h8.onnx", "nothing"))
    fx.append(("cartpole_h8_partial_match", "models/cartpole_h8.onnx", "layer0"))  # a full match is needed
    fx.append(("cartpole_h8_bad_pattern", "models/cartpole_h8.onnx", "(["))
    fx.append(("cartpole_h8_python_only_syntax", "models/cartpole_h8.onnx", "(?i).*WEIGHT"))
    fx.append(("cartpole_h8_named_group", "models/cartpole_h8.onnx", "(?P<w>.*)weight"))
    fx.append(("cartpole_h8_lookahead", "models/cartpole_h8.onnx", "(?!head).*"))
    fx.append(("obs_norm_h8", copy(os.path.join(DATA, "obs_norm_h8.onnx"), "obs_norm_h8"), ".*"))
    fx.append(("iter1", copy(os.path.join(DATA, "iter1", "model.onnx"), "iter1"), ".*"))
    fx.append(("iter2", copy(os.path.join(DATA, "iter2_model.onnx"), "iter2"), ".*"))
    fx.append(("fingerprint_attributes",
               copy(os.path.join(DATA, "fingerprint_attributes.onnx"), "fingerprint_attributes"), ".*"))
    fx.append(("torch_mlp", copy(os.path.join(ROOT, "tests", "fixtures", "torch_mlp.onnx"), "torch_mlp"), ".*"))
    for stem in ("recurrent_lstm", "recurrent_gru", "recurrent_lstm_bf", "recurrent_gru_bf"):
        fx.append((stem, copy(os.path.join(ROOT, "tests", "fixtures", stem + ".onnx"), stem), ".*"))
    # PyTorch exports in training mode (an active Dropout): both refuse, naming the node
    for opset in (17, 20):
        fx.append((f"torch_dropout_train{opset}", copy(os.path.join(
            ROOT, "tests", "fixtures", "torch_ops", f"dropout_train-opset{opset}.onnx"),
            f"torch_dropout_train{opset}"), ".*"))
    cases = os.path.join(DATA, "native_cases")
    for name in sorted(os.listdir(cases)):
        if name.endswith(".onnx"):
            stem = name[:-len(".onnx")]
            fx.append(("native_" + stem, copy(os.path.join(cases, name), "native_" + stem), ".*"))

    # the fingerprint
    fx.append(("fp_renamed_copy", save("fp_renamed_copy", renamed_copy(cartpole)), ".*"))
    # a string that is not UTF-8 (a damaged byte): hashed as stored
    m = onnx.load(cartpole)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "zzbatch"
    raw = m.SerializeToString()
    assert raw.count(b"zzbatch") == 1
    path = "models/fp_dim_param_not_utf8.onnx"
    write_bytes(os.path.join(out, path), raw.replace(b"zzbatch", b"zz\xffatch"))
    fx.append(("fp_dim_param_not_utf8", path, ".*"))
    fx.append(("fp_relu_copy", save("fp_relu_copy", relu_copy(cartpole)), ".*"))
    fx.append(("fp_typed_initializers", save("fp_typed_initializers", typed_initializers_model()), ".*"))
    m = _model([_matmul()], [_obs()], [_out()], [_w()], check=False,
               ir_version=99)  # no checker knows IR 99: both skip it
    m.opset_import.add(domain="com.example", version=3)
    m.opset_import.add(domain="ai.onnx", version=17)  # "" and "ai.onnx" are one domain
    fx.append(("fp_opsets_ir99", save("fp_opsets_ir99", m), ".*"))
    fx.append(("fp_float8_typed_ir99", save("fp_float8_typed_ir99", _model(
        [_matmul()], [_obs()], [_out()], [_w(), _typed("f8", 17, [2], "int32_data", [1, 2])],
        check=False, ir_version=99)), ".*"))
    f8raw = onnx.TensorProto(name="f8", data_type=17, dims=[2], raw_data=b"\x01\x02")
    fx.append(("fp_float8_raw_ir99", save("fp_float8_raw_ir99", _model(
        [_matmul()], [_obs()], [_out()], [_w(), f8raw], check=False, ir_version=99)), ".*"))
    sparse = onnx.SparseTensorProto(
        values=numpy_helper.from_array(np.array([1.0], np.float32), "sp"),
        indices=numpy_helper.from_array(np.array([0], np.int64), "sp_idx"), dims=[4])
    fx.append(("fp_sparse_initializer_ir99", save("fp_sparse_initializer_ir99", _model(
        [_matmul()], [_obs()], [_out()], [_w()], check=False, ir_version=99,
        sparse_initializer=[sparse])), ".*"))
    seq_out = helper.make_tensor_sequence_value_info("seq", T.FLOAT, None)
    fx.append(("fp_sequence_output_ir99", save("fp_sequence_output_ir99", _model(
        [_matmul(), helper.make_node("SequenceConstruct", ["y"], ["seq"], name="seq")],
        [_obs()], [_out(), seq_out], [_w()], check=False, ir_version=99)), ".*"))
    type_attr = helper.make_attribute("t", helper.make_tensor_type_proto(T.FLOAT, [1]))
    node = helper.make_node("Custom", ["y"], ["z"], name="custom", domain="com.example")
    node.attribute.append(type_attr)
    fx.append(("fp_type_proto_attribute_ir99", save("fp_type_proto_attribute_ir99", _model(
        [_matmul(), node], [_obs()], [_out("z")], [_w()], check=False, ir_version=99)), ".*"))
    no_type = helper.make_tensor_value_info("y", T.FLOAT, ["N", 4])
    no_type.ClearField("type")
    fx.append(("fp_output_without_type_ir99", save("fp_output_without_type_ir99", _model(
        [_matmul()], [_obs()], [no_type], [_w()], check=False, ir_version=99)), ".*"))

    # refusals on loading
    write_bytes(os.path.join(out, "models/garbage.onnx"), bytes(range(256)) * 3)
    fx.append(("garbage", "models/garbage.onnx", ".*"))
    write_bytes(os.path.join(out, "models/empty.onnx"), b"")
    fx.append(("empty", "models/empty.onnx", ".*"))
    fx.append(("missing", "models/missing.onnx", ".*"))
    os.makedirs(os.path.join(out, "models/directory.onnx"))
    fx.append(("directory", "models/directory.onnx", ".*"))
    write_bytes(os.path.join(out, "models/truncated.onnx"), read_bytes(cartpole)[:200])
    fx.append(("truncated", "models/truncated.onnx", ".*"))
    fx.append(("no_float_initializers", save("no_float_initializers", _model(
        [helper.make_node("Identity", ["obs"], ["y"], name="y")], [_obs()], [_out(dims=("N", 3))],
        [numpy_helper.from_array(np.array([1, 2], np.int64), "k")])), ".*"))
    fx.append(("no_initializers", save("no_initializers", _model(
        [helper.make_node("Identity", ["obs"], ["y"], name="y")], [_obs()], [_out(dims=("N", 3))]
    )), ".*"))
    fx.append(("two_inputs", save("two_inputs", _model(
        [helper.make_node("Add", ["obs", "obs2"], ["s"], name="s"), _matmul("s")],
        [_obs(), helper.make_tensor_value_info("obs2", T.FLOAT, ["N", 3])], [_out()], [_w()])), ".*"))
    fx.append(("no_observation_input", save("no_observation_input", _model(
        [helper.make_node("Identity", ["w"], ["y"], name="y")], [], [_out(dims=(3, 4))], [_w()])), ".*"))
    fx.append(("duplicate_initializer_ir99", save("duplicate_initializer_ir99", _model(
        [_matmul()], [_obs()], [_out()], [_w(), _w()], check=False, ir_version=99)), ".*"))
    fx.append(("checker_rejects_unknown_op", save("checker_rejects_unknown_op", _model(
        [_matmul("obs", "w", "h"), helper.make_node("NoSuchOp", ["h"], ["y"], name="y")],
        [_obs()], [_out()], [_w()], check=False)), ".*"))
    fx.append(("no_nodes", save("no_nodes", _model(
        [], [_obs()], [_out("obs", ("N", 3))], [_w()], check=False)), ".*"))
    ext_dir = os.path.join(out, "models", "external")
    ext = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[3, 4], data_location=T.EXTERNAL)
    ext.external_data.add(key="location", value="w.bin")
    write_bytes(os.path.join(ext_dir, "w.bin"), np.linspace(-1, 1, 12, dtype="<f4").tobytes())
    write_bytes(os.path.join(ext_dir, "model.onnx"), _model(
        [_matmul()], [_obs()], [_out()], [ext], check=False).SerializeToString())
    fx.append(("external_data", "models/external/model.onnx", ".*"))
    m = onnx.load(os.path.join(ext_dir, "model.onnx"), load_external_data=False)
    m.ir_version = 99
    write_bytes(os.path.join(ext_dir, "model_ir99.onnx"), m.SerializeToString())
    fx.append(("external_data_ir99", "models/external/model_ir99.onnx", ".*"))
    ext_missing = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[3, 4], data_location=T.EXTERNAL)
    ext_missing.external_data.add(key="location", value="absent.bin")
    fx.append(("external_data_missing", save("external_data_missing", _model(
        [_matmul()], [_obs()], [_out()], [ext_missing], check=False)), ".*"))
    wrong_raw = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[3, 4], raw_data=b"\0" * 44)
    fx.append(("raw_data_wrong_size_ir99", save("raw_data_wrong_size_ir99", _model(
        [_matmul()], [_obs()], [_out()], [wrong_raw], check=False, ir_version=99)), ".*"))

    # observation inputs and graphs the native forward pass refuses
    fx.append(("obs_no_shape_ir99", save("obs_no_shape_ir99", _model(
        [_matmul()], [helper.make_tensor_value_info("obs", T.FLOAT, None)], [_out()], [_w()],
        check=False, ir_version=99)), ".*"))
    fx.append(("obs_no_shape_checked", save("obs_no_shape_checked", _model(
        [_matmul()], [helper.make_tensor_value_info("obs", T.FLOAT, None)], [_out()], [_w()],
        check=False)), ".*"))
    fx.append(("obs_symbolic_feature", save("obs_symbolic_feature", _model(
        [_matmul()], [_obs(("N", "F"))], [_out()], [_w()])), ".*"))
    fx.append(("obs_scalar", save("obs_scalar", _model(
        [helper.make_node("Mul", ["obs", "w"], ["y"], name="y")], [_obs(())], [_out(dims=(3, 4))], [_w()])),
        ".*"))
    fx.append(("obs_double", save("obs_double", _model(
        [helper.make_node("Cast", ["obs"], ["f"], name="f", to=T.FLOAT), _matmul("f")],
        [_obs(elem=T.DOUBLE)], [_out()], [_w()])), ".*"))
    fx.append(("obs_fixed_batch", save("obs_fixed_batch", _model(
        [_matmul()], [_obs((2, 3))], [_out(dims=(2, 4))], [_w()])), ".*"))
    fx.append(("custom_domain_node", save("custom_domain_node", _model(
        [_matmul("obs", "w", "h"), helper.make_node("Relu", ["h"], ["y"], name="y", domain="com.example")],
        [_obs()], [_out()], [_w()], check=False)), ".*"))
    fx.append(("string_attribute", save("string_attribute", _model(
        [_matmul("obs", "w", "h"), helper.make_node("Softmax", ["h"], ["y"], name="y", axis=-1)],
        [_obs()], [_out()], [_w()])), ".*"))
    m = onnx.load(os.path.join(out, "models/string_attribute.onnx"))
    m.graph.node[1].attribute.append(helper.make_attribute("note", "text"))
    fx.append(("unknown_attribute_checked", save("unknown_attribute_checked", m), ".*"))
    m.ir_version = 99
    fx.append(("unknown_attribute_ir99", save("unknown_attribute_ir99", m), ".*"))
    fx.append(("unnamed_nodes", save("unnamed_nodes", _model(
        [helper.make_node("Constant", [], ["c"], value_float=2.0),
         helper.make_node("MatMul", ["obs", "w"], ["h"]),
         helper.make_node("Sin", ["h"], ["y"])],
        [_obs()], [_out()], [_w()])), ".*"))
    fx.append(("matmul_shape_mismatch", save("matmul_shape_mismatch", _model(
        [_matmul("obs", "w5")], [_obs()], [_out()], [_w("w5", 5, 4)], check=False)), ".*"))
    return fx


def write_models(out: str, manifest: Manifest) -> None:
    for name, path, pattern in model_fixtures(out):
        manifest.add("model", name, path, pattern)


# ---------------------------------------------------------------------------
# sampling logs
# ---------------------------------------------------------------------------

def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _len(field: int, data: bytes) -> bytes:
    return _tag(field, 2) + _varint(len(data)) + data


def sample_records():
    from evokit import evokit_pb2 as pb
    return [
        pb.SampleRecord(info=pb.SamplingInfo(key=[11], model_iter_id=3, mirrored=False), reward=10.5,
                        config_fingerprint="c" * 64, model_fingerprint="m" * 64, sampler_id=5,
                        env_steps=100, time=1700000000.25),
        pb.SampleRecord(info=pb.SamplingInfo(key=[11], model_iter_id=3, mirrored=True), reward=-0.0,
                        config_fingerprint="c" * 64, model_fingerprint="m" * 64, sampler_id=5,
                        env_steps=101, time=1700000000.5),
        pb.SampleRecord(info=pb.SamplingInfo(key=[1, 2, 3, 2 ** 62, -5], model_iter_id=0), reward=float("nan"),
                        config_fingerprint="", model_fingerprint="m" * 64,
                        sampler_id=2 ** 64 - 1, env_steps=-1, time=-0.0),
        pb.SampleRecord(info=pb.SamplingInfo(key=[]), reward=float("-inf")),
        pb.SampleRecord(),
        pb.SampleRecord(info=pb.SamplingInfo(key=[7], model_iter_id=2 ** 63 - 1), reward=5e-324,
                        config_fingerprint="\u00e9t\u00e9", sampler_id=0, env_steps=2 ** 63 - 1, time=1e300),
    ]


def _frame(payload: bytes) -> bytes:
    from evokit import _core
    return _core.frame_record(payload)


def _good(i: int) -> bytes:
    from evokit import evokit_pb2 as pb
    r = pb.SampleRecord(info=pb.SamplingInfo(key=[100 + i], model_iter_id=1), reward=float(i),
                        config_fingerprint="c" * 64, model_fingerprint="m" * 64, sampler_id=9, env_steps=i)
    return _frame(r.SerializeToString(deterministic=True))


def crafted_payloads():
    """(name, payload) framed with good checksums: what each protobuf runtime
    makes of bytes that are or are not a SampleRecord."""
    good = _good(0)[16:]
    group = _tag(20, 3) + _tag(1, 0) + _varint(5) + _tag(20, 4)
    deep64 = _tag(20, 3) * 64 + _tag(20, 4) * 64
    deep200 = _tag(20, 3) * 200 + _tag(20, 4) * 200
    return [
        ("empty_payload", b""),
        ("unknown_varint_field", good + _tag(99, 0) + _varint(12345)),
        ("unknown_length_field", good + _len(1000, b"\xff" * 5)),
        ("unknown_group", good + group),
        ("unknown_fixed32", good + _tag(50, 5) + b"\x01\x02\x03\x04"),
        ("known_field_wrong_wire_type", _tag(2, 0) + _varint(5) + _tag(5, 0) + _varint(3)),
        ("info_as_varint", _tag(1, 0) + _varint(7)),
        ("info_as_group", _tag(1, 3) + _tag(1, 0) + _varint(9) + _tag(1, 4)),
        ("lone_end_group", good + _tag(20, 4)),
        ("mismatched_end_group", _tag(20, 3) + _tag(21, 4)),
        ("unclosed_group", _tag(20, 3) + _tag(1, 0) + _varint(5)),
        ("truncated_varint", _tag(5, 0) + b"\xff"),
        ("truncated_length", _tag(3, 2) + _varint(5) + b"ab"),
        ("truncated_fixed64", _tag(2, 1) + b"\x00\x00\x00"),
        ("wire_type_6", _tag(2, 6) + b"\x00"),
        ("wire_type_7", _tag(1, 7)),
        ("field_number_zero", _tag(0, 0) + _varint(1)),
        ("field_number_max", good + _tag((1 << 29) - 1, 0) + _varint(1)),
        ("field_number_over_max", _varint(((1 << 29) << 3) | 0) + _varint(1)),
        ("varint_11_bytes", _tag(5, 0) + b"\xff" * 10 + b"\x01"),
        ("varint_10th_byte_high", _tag(5, 0) + b"\xff" * 9 + b"\x7f"),
        ("varint_overlong_zero", _tag(6, 0) + b"\x80\x80\x80\x00"),
        ("int64_from_overlong", _tag(6, 0) + b"\xff" * 9 + b"\x01"),
        ("info_garbage", _len(1, b"\xff\xff\xff")),
        ("info_key_packed", _len(1, _len(1, _varint(1) + _varint(2) + _varint(300)))),
        ("info_key_unpacked", _len(1, _tag(1, 0) + _varint(1) + _tag(1, 0) + _varint(2))),
        ("info_key_mixed", _len(1, _tag(1, 0) + _varint(4) + _len(1, _varint(5) + _varint(6)))),
        ("info_key_packed_truncated", _len(1, _len(1, _varint(1) + b"\xff"))),
        ("info_key_negative_10_bytes", _len(1, _tag(1, 0) + _varint((1 << 64) - 2))),
        ("info_twice_merged", _len(1, _tag(1, 0) + _varint(4) + _tag(2, 0) + _varint(1))
         + _len(1, _tag(1, 0) + _varint(8) + _tag(3, 0) + _varint(1))),
        ("mirrored_varint_2", _len(1, _tag(3, 0) + _varint(2))),
        ("mirrored_large_varint", _len(1, _tag(3, 0) + _varint(1 << 40))),
        ("scalar_twice_last_wins", _tag(5, 0) + _varint(1) + _tag(5, 0) + _varint(2)),
        ("string_invalid_utf8", _len(3, b"\xff\xfe") + _len(4, b"ok")),
        ("string_overlong_utf8", _len(3, b"\xc0\xaf")),
        ("string_surrogate_utf8", _len(3, b"\xed\xa0\x80")),
        ("string_nul", _len(3, b"a\x00b")),
        ("deep_groups_64", good + deep64),
        ("deep_groups_200", good + deep200),
        ("length_past_end_of_message", _tag(3, 2) + _varint(1 << 20) + b"x"),
        ("negative_length", _tag(3, 2) + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
    ]


def write_logs(out: str, manifest: Manifest) -> None:
    from evokit.online.samplelog import append_records

    def add(name: str, data: Optional[bytes]) -> None:
        path = f"logs/{name}.log"
        if data is not None:
            write_bytes(os.path.join(out, path), data)
        manifest.add("log", name, path)

    clean_path = os.path.join(out, "logs", "clean.log")
    os.makedirs(os.path.dirname(clean_path), exist_ok=True)
    append_records(clean_path, sample_records())
    manifest.add("log", "clean", "logs/clean.log")
    clean = read_bytes(clean_path)
    # record boundaries
    offsets, at = [], 0
    while at < len(clean):
        offsets.append(at)
        at += 16 + struct.unpack_from("<I", clean, at + 4)[0]
    r2, r3 = offsets[2], offsets[3]

    extra = _good(1)
    noise = bytes((i * 167 + 13) % 251 for i in range(700))  # no b"EKR1" inside
    assert b"EKR1" not in noise
    add("empty", b"")
    add("torn_end", clean + extra[:30])
    add("torn_header", clean + extra[:10])
    add("torn_magic_only", clean + b"EKR1")
    add("payload_flipped_middle", flip(clean, r2 + 20))
    add("payload_crc_flipped_middle", flip(clean, r2 + 9))
    add("header_length_flipped_middle", flip(clean, r2 + 4, 0x40))
    add("header_crc_flipped_middle", flip(clean, r2 + 13))
    add("magic_flipped_middle", flip(clean, r2 + 1))
    add("garbage_prefix", noise[:100] + clean)
    add("garbage_middle", clean[:r3] + noise[:333] + clean[r3:])
    add("garbage_suffix", clean + noise[:57])
    add("zeros_middle", clean[:r2] + b"\0" * 64 + clean[r2:])
    add("foreign_onnx_file", read_bytes(os.path.join(DATA, "cartpole_h8.onnx")))
    add("all_garbage", noise * 6)
    add("duplicate_records", clean + clean)
    # crafted resync: a whole frame inside the payload of another record
    from evokit import evokit_pb2 as pb
    inner = _good(2)
    outer = _frame(pb.SampleRecord(config_fingerprint="x", model_fingerprint="y",
                                   reward=1.0).SerializeToString() + _len(3, inner))
    add("frame_inside_payload", _good(3) + outer + _good(4))
    add("frame_inside_damaged_payload", _good(3) + flip(outer, 18) + _good(4))
    add("frame_inside_damaged_header", _good(3) + flip(outer, 13) + _good(4))
    # false magics and headers whose checksum holds but whose claims do not
    fake_header = b"EKR1" + b"\x10\x00\x00\x00" + b"\0" * 8  # bad header CRC
    add("false_magic_between_records", _good(5) + fake_header + b"EKR1EKR1" + _good(6))
    long_claim = _frame(b"\x08" * 40)
    long_claim = long_claim[:4] + struct.pack("<I", 1 << 20) + long_claim[8:]
    long_claim = _fix_header(long_claim)
    add("length_past_end_then_records", _good(7) + long_claim + _good(8) + _good(9))
    add("length_past_end_at_end", _good(7) + long_claim)
    over_max = _fix_header(b"EKR1" + struct.pack("<I", (16 << 20) + 1) + b"\0" * 8)
    add("length_over_max", _good(10) + over_max + _good(11))
    add("torn_then_whole_records", _good(12) + _good(13)[:25] + _good(14) + _good(15))
    add("overlapping_claims", _good(16)[:20] + _good(17) + _good(18)[:-3] + _good(19))
    for name, payload in crafted_payloads():
        add("payload_" + name, _good(20) + _frame(payload) + _good(21))
    add("missing", None)
    os.makedirs(os.path.join(out, "logs", "directory.log"))
    manifest.add("log", "directory", "logs/directory.log")


def flip(data: bytes, at: int, mask: int = 0x01) -> bytes:
    """``data`` with the bits of ``mask`` flipped in byte ``at``."""
    b = bytearray(data)
    b[at] ^= mask
    return bytes(b)


def _fix_header(frame: bytes) -> bytes:
    """The frame with its header checksum recomputed over its first 12 bytes
    (CRC-32 as zlib computes it; the payload checksum is left as it is)."""
    import zlib
    return frame[:12] + struct.pack("<I", zlib.crc32(frame[:12]) & 0xFFFFFFFF) + frame[16:]


# ---------------------------------------------------------------------------
# solver states
# ---------------------------------------------------------------------------

STATE_CONFIGS = {
    "g_sgd": gauss(opt="SGD", n="6"),
    "g_momentum": gauss(opt="MOMENTUM", cached="false", n="4",
                        opt_extra="momentum { momentum: 0.75 }"),
    "g_adam": gauss(opt="ADAM", n="5", anti="false",
                    extra="  fitness_shaping: Z_SCORE weight_decay: 0.01\n"),
    "g_adam_wrong_optimizer": gauss(opt="SGD", n="5", anti="false",
                                    extra="  fitness_shaping: Z_SCORE weight_decay: 0.01\n"),
    "g_raw_two_threads": gauss(opt="SGD", n="4", extra="  fitness_shaping: RAW num_threads: 2\n"),
    "cma_full": cma(n="6"),
    "cma_sep": cma(sep="true", n="6", sigma0="0.2"),
    "ga": ga(),
    "ga_elite": ga(evals="2", cand="2"),
    "adam_data": None,  # cpp/io/tests/data/adam.prototxt
}


def _agent(config: str, model: str):
    import evokit
    agent = evokit.ESAgent()
    agent.load_config(config)
    agent.load_inference_model(model)
    agent.init_solver()
    return agent


def _generation(agent, offset: int) -> None:
    """One update: a Gaussian population, or as many draws as complete the
    CMA / GA generation (its members in turn); rewards_for() from `offset`."""
    def rewards(n):
        return rewards_for(n + offset)[offset:]
    if agent.sampling_type == "GAUSSIAN_SAMPLING":
        clones = [agent.clone() for _ in range(agent.config.solver.population_size)]
        infos = [c.add_noise() for c in clones]
    else:
        infos = []
        while not infos or agent.shortfall(infos, rewards(len(infos))) is not None:
            if len(infos) >= 1000:
                raise RuntimeError("no update after 1000 draws")
            infos.append(agent.clone().add_noise())
    agent.update(infos, rewards(len(infos)))


def _members_needed(config: str, model: str, state_dir: str, stream: int) -> int:
    """The number of clones whose draws complete the next update of the
    state in state_dir (CMA / GA: every member; Gaussian: the population)."""
    agent = _agent(config, model)
    agent.sampling_stream = stream
    agent.load_solver(state_dir)
    if agent.sampling_type == "GAUSSIAN_SAMPLING":
        return agent.config.solver.population_size
    infos = []
    for n in range(1, 1000):
        infos.append(agent.clone().add_noise())
        if agent.shortfall(infos, rewards_for(n)) is None:
            return n
    raise RuntimeError(f"{state_dir}: no update after 1000 draws")


def write_states(out: str, manifest: Manifest) -> None:
    from evokit import evokit_pb2 as pb
    import onnx
    from evokit.statefile import TRAILER_SIZE, read_state_file, seal

    cfg_dir = os.path.join(out, "states", "configs")
    os.makedirs(cfg_dir)
    configs = {}
    for name, text in STATE_CONFIGS.items():
        path = f"states/configs/{name}.prototxt"
        write_bytes(os.path.join(out, path),
                    read_bytes(os.path.join(DATA, "adam.prototxt")) if text is None else text.encode())
        configs[name] = path
    cartpole = "models/cartpole_h8.onnx"
    obs_norm = "models/obs_norm_h8.onnx"
    if not os.path.exists(os.path.join(out, cartpole)):
        raise RuntimeError("write_models() first")

    good = {}  # name -> (config, state dir, stream)

    def add(name, config, model, state_dir, stream, clones=None):
        if clones is None:
            clones = _members_needed(os.path.join(out, config), os.path.join(out, model),
                                     os.path.join(out, state_dir), stream)
        manifest.add("state", name, config, model, state_dir, stream, clones,
                     ",".join(repr(r) for r in rewards_for(clones)))

    def make(name, config_name, model, stream, generations, extra_draws):
        config = configs[config_name]
        agent = _agent(os.path.join(out, config), os.path.join(out, model))
        agent.sampling_stream = stream
        for g in range(generations):
            _generation(agent, g)
        # mid-generation: clones have drawn, the update has not come yet
        clones = [agent.clone() for _ in range(extra_draws)]
        for c in clones:
            c.add_noise()
        if clones:
            clones[0].add_noise()  # clone 0 twice: its counter differs from the others'
        state_dir = f"states/{name}"
        full = os.path.join(out, state_dir)
        agent.save_inference_model(full)
        agent.save_solver(full)
        good[name] = (config, state_dir, stream)
        add(name, config, f"{state_dir}/model.onnx", state_dir, stream)

    make("gauss_sgd", "g_sgd", cartpole, 3, generations=2, extra_draws=4)
    make("gauss_momentum_uncached", "g_momentum", cartpole, 0, generations=1, extra_draws=2)
    make("gauss_adam", "g_adam", cartpole, 5, generations=3, extra_draws=3)
    make("gauss_raw_two_threads", "g_raw_two_threads", cartpole, 1, generations=1, extra_draws=0)
    make("gauss_obs_norm", "g_sgd", obs_norm, 2, generations=1, extra_draws=2)
    make("gauss_fresh", "g_sgd", cartpole, 0, generations=0, extra_draws=0)
    make("cma_full", "cma_full", cartpole, 0, generations=2, extra_draws=3)
    make("cma_sep", "cma_sep", cartpole, 4, generations=1, extra_draws=5)
    make("cma_obs_norm", "cma_full", obs_norm, 0, generations=1, extra_draws=2)
    make("ga", "ga", cartpole, 0, generations=2, extra_draws=3)
    make("ga_elite_fitness_phase", "ga_elite", cartpole, 0, generations=2, extra_draws=1)
    make("ga_elite_candidate_phase", "ga_elite", cartpole, 0, generations=1, extra_draws=2)

    # committed files of older EvoKits: state version 1 (fingerprint 2), and
    # fingerprint version 1 (C++ refuses it by design; README "Fingerprints")
    for name, src in (("v1_adam", os.path.join(DATA, "iter1", "solver.pb")),
                      ("fingerprint_v1_adam", os.path.join(DATA, "solver_v1.pb"))):
        state_dir = f"states/{name}"
        write_bytes(os.path.join(out, state_dir, "solver.pb"), read_bytes(src))
        add(name, configs["adam_data"], "models/iter1.onnx", state_dir, 7, clones=4)

    # ---- damaged copies ---------------------------------------------------------
    def load_state(name) -> pb.SolverState:
        return read_state_file(os.path.join(out, good[name][1], "solver.pb"), pb.SolverState())

    def damaged(name, base, edit=None, config=None, model=None, data=None, clones=6):
        """states/NAME/solver.pb: the state of `base` after edit(state) (or
        `data` as the file's bytes, or no file when data is False)."""
        config_path, base_dir, stream = good[base]
        state_dir = f"states/{name}"
        full = os.path.join(out, state_dir)
        os.makedirs(full)
        if data is None:
            s = load_state(base)
            if edit is not None:
                edit(s)
            data = seal(s.SerializeToString())  # a sound file: the edit is what is refused
        if data is not False:
            write_bytes(os.path.join(full, "solver.pb"), data)
        add(name, config or config_path, model or f"{base_dir}/model.onnx", state_dir, stream, clones=clones)

    def vector(s, name) -> pb.NamedVector:
        for v in s.vectors:
            if v.name == name:
                return v
        raise KeyError(name)

    def remove(s, name):
        kept = [v for v in s.vectors if v.name != name]
        if len(kept) == len(s.vectors):
            raise KeyError(name)
        del s.vectors[:]
        s.vectors.extend(kept)

    def set_values(s, name, values, dtype):
        vector(s, name).data = np.asarray(values, dtype=dtype).tobytes()

    def unknown_type(s, name):
        v = vector(s, name)
        v.ClearField("type")
        raw = v.SerializeToString() + _tag(3, 0) + _varint(7)  # ElementType 7: a newer EvoKit's
        v.Clear()
        v.ParseFromString(raw)

    def field(name, value):
        return lambda s: setattr(s, name, value)

    def clear(name):
        return lambda s: s.ClearField(name)

    def also(*edits):
        def run(s):
            for e in edits:
                e(s)
        return run

    # whose state for which solver
    damaged("gaussian_state_for_cma", "gauss_sgd", config=configs["cma_full"])
    damaged("cma_state_for_gaussian", "cma_full", config=configs["g_sgd"])
    damaged("cma_state_for_ga", "cma_full", config=configs["ga"])
    damaged("ga_state_for_cma", "ga", config=configs["cma_full"])
    damaged("separable_state_for_full_cma", "cma_sep", config=configs["cma_full"])
    damaged("full_state_for_separable_cma", "cma_full", config=configs["cma_sep"])
    damaged("ga_elite_state_for_plain_ga", "ga_elite_candidate_phase", config=configs["ga"])
    damaged("family_renamed", "cma_full", field("family", "GA_SAMPLING"))
    damaged("family_cleared", "cma_full", clear("family"))
    damaged("family_unknown", "gauss_sgd", field("family", "PSO_SAMPLING"))
    # entries
    damaged("missing_entry_adam", "gauss_adam", lambda s: remove(s, "optimizer.v"))
    damaged("missing_entry_counters", "gauss_sgd", lambda s: remove(s, "draws.counters"))
    damaged("missing_entry_cma", "cma_full", lambda s: remove(s, "cma.p_c"))
    damaged("missing_entry_cma_sigma", "cma_sep", lambda s: remove(s, "cma.sigma"))
    damaged("missing_entry_ga", "ga", lambda s: remove(s, "ga.order"))
    damaged("missing_entry_draws", "ga", lambda s: remove(s, "draws"))
    damaged("wrong_size_adam", "gauss_adam", lambda s: set_values(s, "optimizer.m", np.zeros(57), "<f4"))
    damaged("wrong_size_cma_cov", "cma_full",
            lambda s: set_values(s, "cma.cov", np.zeros(NUM_PARAMS * NUM_PARAMS - 1), "<f8"))
    damaged("wrong_size_ga_x0", "ga", lambda s: set_values(s, "ga.x0", np.zeros(NUM_PARAMS + 1), "<f4"))
    damaged("wrong_size_scalar", "cma_full", lambda s: set_values(s, "cma.sigma", [0.5, 0.5], "<f8"))
    damaged("not_whole_elements", "cma_full", lambda s: setattr(vector(s, "cma.mean"), "data", b"\0" * 7))
    damaged("not_whole_elements_int", "ga", lambda s: setattr(vector(s, "ga.order"), "data", b"\0" * 12))
    damaged("unknown_element_type", "cma_full", lambda s: unknown_type(s, "cma.p_sigma"))
    damaged("no_element_type", "gauss_adam", lambda s: vector(s, "optimizer.m").ClearField("type"))
    damaged("entry_of_other_type", "gauss_adam", lambda s: setattr(vector(s, "optimizer.m"), "type",
                                                                  pb.NamedVector.FLOAT64))
    damaged("duplicate_entry", "ga", lambda s: s.vectors.add().CopyFrom(vector(s, "ga.elites")))
    damaged("unknown_optimizer_entry", "gauss_sgd",
            lambda s: s.vectors.add(name="optimizer.zzz", type=pb.NamedVector.FLOAT32, data=b"\0" * 4))
    damaged("unknown_int_entry_ignored", "cma_full",
            lambda s: s.vectors.add(name="zz.extra", type=pb.NamedVector.INT64, data=b"\0" * 8))
    damaged("negative_draw_counter", "gauss_sgd", lambda s: set_values(s, "draws.counters", [1, -1], "<i8"))
    damaged("negative_draws", "cma_full", lambda s: set_values(s, "draws", [-2], "<i8"))
    damaged("draws_past_generation", "cma_full", lambda s: set_values(s, "draws", [1000], "<i8"))
    damaged("negative_steps", "cma_full", field("steps", -1))
    damaged("negative_steps_gauss", "gauss_sgd", field("steps", -1))
    damaged("ga_lengths_run_past", "ga", lambda s: set_values(
        s, "ga.population.lengths", np.r_[np.frombuffer(vector(s, "ga.population.lengths").data, "<i8")[:-1], 99],
        "<i8"))
    damaged("ga_negative_order", "ga", lambda s: set_values(s, "ga.order", [-1], "<i8"))
    damaged("cma_negative_sigma", "cma_full", lambda s: set_values(s, "cma.sigma", [-1.0], "<f8"))
    damaged("cma_nan_mean", "cma_sep", lambda s: set_values(
        s, "cma.mean", np.r_[np.nan, np.zeros(NUM_PARAMS - 1)], "<f8"))
    # versions
    damaged("state_version_3", "gauss_sgd", field("state_version", 3))
    damaged("state_version_0", "cma_full", field("state_version", 0))
    damaged("v1_cma", "cma_full", also(clear("state_version"), clear("vectors"),
                                        lambda s: s.cma.SetInParent(), field("family", "")))
    damaged("v1_ga", "ga", also(clear("state_version"), clear("vectors"), lambda s: s.ga.SetInParent()))
    damaged("v1_gaussian_odd_bytes", "gauss_adam", also(
        clear("state_version"), lambda s: setattr(vector(s, "optimizer.m"), "data", b"\0" * 5)))
    damaged("noise_version_3_cma", "cma_full", field("noise_version", 3))
    damaged("noise_version_3_ga", "ga", field("noise_version", 3))
    damaged("noise_version_3_gauss", "gauss_sgd", field("noise_version", 3))
    damaged("noise_version_absent_cma", "cma_full", clear("noise_version"))
    damaged("fingerprint_version_3", "gauss_sgd", field("fingerprint_version", 3))
    damaged("fingerprint_version_absent", "gauss_sgd", clear("fingerprint_version"))
    # another model, optimizer, file
    damaged("other_model_same_size", "gauss_sgd", model="models/fp_relu_copy.onnx")
    damaged("other_model_renamed_same_fingerprint", "gauss_sgd", model="models/fp_renamed_copy.onnx")
    damaged("other_model_size", "gauss_sgd", model="models/torch_mlp.onnx")
    damaged("obs_norm_state_for_cartpole", "gauss_obs_norm", model=cartpole)
    damaged("fingerprint_edited", "cma_full", field("model_fingerprint", "0" * 64))
    damaged("other_optimizer", "gauss_adam", config=configs["g_adam_wrong_optimizer"])
    damaged("num_params_cleared", "gauss_sgd", clear("num_params"))
    damaged("num_params_wrong", "cma_full", field("num_params", NUM_PARAMS + 1))
    damaged("garbage_file", "gauss_sgd", data=seal(bytes(range(256)) * 2))
    damaged("empty_file", "gauss_sgd", data=b"")
    damaged("truncated_file", "cma_full", data=read_bytes(os.path.join(out, "states/cma_full/solver.pb"))[:300])
    damaged("no_file", "gauss_sgd", data=False)
    # damage to the bytes as stored: the sha256 trailer (proto "State files")
    sound = read_bytes(os.path.join(out, "states/gauss_adam/solver.pb"))
    damaged("trailer_body_bit_flip", "gauss_adam", data=flip(sound, len(sound) // 2, 0x10))
    damaged("trailer_digest_byte_changed", "gauss_adam", data=flip(sound, len(sound) - 1, 0xFF))
    damaged("trailer_cut_short", "gauss_adam", data=sound[:-1])
    damaged("trailer_missing", "gauss_adam", data=sound[:-TRAILER_SIZE])  # as an older EvoKit wrote it
    damaged("trailer_only", "gauss_adam", data=sound[-TRAILER_SIZE:])
    damaged("trailer_tag_changed", "gauss_adam", data=flip(sound, len(sound) - TRAILER_SIZE, 0x02))
    # model.onnx with one bit flipped inside a parameter: solver.pb's params_fingerprint
    model = onnx.load_from_string(read_bytes(os.path.join(out, "states/gauss_adam/model.onnx")))
    weights = model.graph.initializer[0]
    weights.raw_data = flip(weights.raw_data, 5, 0x01)
    write_bytes(os.path.join(out, "states/model_param_bit_flip.onnx"), model.SerializeToString())
    damaged("model_param_bit_flip", "gauss_adam", data=sound, model="states/model_param_bit_flip.onnx")


def write_fixtures(out: str) -> Manifest:
    if os.path.exists(out) and os.listdir(out):
        raise ValueError(f"{out}: not empty")
    os.makedirs(out, exist_ok=True)
    manifest = Manifest(out)
    write_configs(out, manifest)
    write_models(out, manifest)
    write_logs(out, manifest)
    write_states(out, manifest)
    manifest.write()
    return manifest


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: make_fixtures.py OUT_DIR", file=sys.stderr)
        return 2
    manifest = write_fixtures(argv[0])
    kinds = {}
    for line in manifest.lines:
        kinds[line.split("\t", 1)[0]] = kinds.get(line.split("\t", 1)[0], 0) + 1
    print(f"wrote {len(manifest.lines)} fixtures to {argv[0]}: "
          + ", ".join(f"{n} {k}s" for k, n in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
