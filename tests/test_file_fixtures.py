"""The committed legacy file fixtures (tests/fixtures/files) read by today's
public API, and continued bit for bit as when they were written.

tests/fixtures/files/make_files.py wrote the files once and recorded, in
expected.json, what each step of file_fixture_steps gave on them. Here the
same steps run on the committed files and must give the same results: the
files are intact, configs parse to the same config, models have the same
fingerprints and outputs, state files keep their trailers, every solver
family's solver.pb loads and its next generation draws the same members and
updates to the same bytes, the sampling logs read the same, the warehouse's
next `evokit update` and the resumed training runs write the same files.
A failure means the file layer reads or continues an old file differently.
Do not regenerate the fixtures to make it pass (make_files.py's doc).
"""

import json

import pytest

import file_fixture_steps as steps
from file_fixture_steps import fixture

with open(fixture("expected.json")) as _f:
    EXPECTED = json.load(_f)


def test_the_header_says_what_made_the_files():
    header = EXPECTED["header"]
    for name in ("evokit_version", "git_commit", "date", "command", "noise_version"):
        assert header[name], name
    assert header["command"] == "python tests/fixtures/files/make_files.py"


def test_every_fixture_file_is_listed_and_intact():
    assert list(steps.fixture_files()) == sorted(EXPECTED["files"])
    changed = [rel for rel, digest in EXPECTED["files"].items() if steps.sha256_file(fixture(rel)) != digest]
    assert changed == []


def test_expected_txt_is_expected_json_flattened():
    with open(fixture("expected.txt")) as f:
        assert f.read() == steps.expected_txt(EXPECTED)


@pytest.mark.parametrize("rel", sorted(EXPECTED["configs"]))
def test_config_reads_as_before(rel):
    assert steps.config_text(fixture(rel)) == EXPECTED["configs"][rel]


@pytest.mark.parametrize("rel", sorted(EXPECTED["fingerprints"]))
def test_model_fingerprints_as_before(rel):
    assert steps.fingerprints(fixture(rel)) == EXPECTED["fingerprints"][rel]


def test_the_observations_are_those_the_steps_use():
    assert EXPECTED["obs"] == steps.float_bits(steps.OBS)


@pytest.mark.parametrize("rel", sorted(EXPECTED["predict"]))
def test_model_outputs_as_before(rel):
    assert steps.predictions(fixture(rel)) == EXPECTED["predict"][rel]


@pytest.mark.parametrize("rel", sorted(EXPECTED["state_files"]))
def test_state_file_trailer_and_body_as_before(rel):
    result = steps.state_file(fixture(rel))
    assert result == EXPECTED["state_files"][rel]
    assert result["reserialized_equal"]


def test_every_sampling_family_and_gaussian_optimizer_has_a_solver_fixture():
    from evokit import _core
    from evokit import evokit_pb2 as pb

    assert sorted({family for family, _ in steps.SOLVERS.values()}) == sorted(_core.solver_families())
    assert sorted(pb.SamplingConfig.Type.keys()) == sorted(_core.solver_families())
    gaussian = {opt for family, opt in steps.SOLVERS.values() if family == "GAUSSIAN_SAMPLING"}
    assert gaussian == set(pb.OptimizerConfig.Type.keys())
    assert sorted(EXPECTED["solvers"]) == sorted(steps.SOLVERS)


@pytest.mark.parametrize("name", sorted(steps.SOLVERS))
def test_solver_continues_bit_for_bit(name, tmp_path):
    want = EXPECTED["solvers"][name]
    family, optimizer = steps.SOLVERS[name]
    assert (want["family"], want["optimizer"], want["stream"]) == (family, optimizer, steps.STREAM)
    got = steps.continue_solver(fixture("solvers", name), str(tmp_path))
    want = want["continuation"]
    assert got["loaded_iteration"] == want["loaded_iteration"]
    assert got["infos"] == want["infos"]      # the same members drawn
    assert got["rewards"] == want["rewards"]
    assert got["after"] == want["after"]      # the same update, model.onnx and solver.pb


@pytest.mark.parametrize("rel", sorted(EXPECTED["logs"]))
def test_sampling_log_reads_as_before(rel):
    assert steps.log_contents(fixture(rel)) == EXPECTED["logs"][rel]


def test_parl_offline_update_from_the_raw_log(tmp_path):
    assert steps.continue_parl(str(tmp_path)) == EXPECTED["parl"]


def test_warehouse_iterations_as_before():
    assert steps.warehouse_iterations(fixture("warehouse", "W")) == EXPECTED["warehouse"]["iterations"]


def test_warehouse_draws_the_logged_members():
    draws = steps.warehouse_draws(fixture("warehouse", "W"), 2, 0, 8)
    assert draws == EXPECTED["warehouse"]["draws_2_stream_0"]
    # sample_2.log holds what sampler 0 drew at iteration 2
    logged = EXPECTED["logs"]["warehouse/logs/sample_2.log"]["records"]
    assert [r["info"] for r in logged] == draws


def test_warehouse_next_update_as_before(tmp_path):
    assert steps.continue_warehouse(str(tmp_path)) == EXPECTED["warehouse"]["next_update"]


@pytest.mark.parametrize("name", steps.TRAIN_RUNS)
def test_training_checkpoint_reads_as_before(name):
    assert steps.checkpoint_summary(name) == EXPECTED["train_runs"][name]["checkpoint"]


@pytest.mark.parametrize("name", steps.TRAIN_RUNS)
def test_training_run_resumes_bit_for_bit(name, tmp_path):
    assert steps.continue_train_run(name, str(tmp_path)) == EXPECTED["train_runs"][name]["resume"]


def test_observation_statistics_as_before():
    stats = steps.read_obs_stats(fixture("train_obsnorm", "obs_norm.pb"))
    assert steps.obs_stats_json(stats) == EXPECTED["obs_norm"]
    # the checkpoint holds the same statistics as obs_norm.pb
    assert EXPECTED["train_runs"]["train_obsnorm"]["checkpoint"]["obs_stats"] == EXPECTED["obs_norm"]

