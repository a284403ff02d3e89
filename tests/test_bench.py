"""bench/run.py's building blocks, small: the sections CI's `--quick` run
executes, their JSON shape and values, and the Markdown report; the result
files every bench script writes (bench/results.py), with their header. No
timing is asserted (timings never go into pass/fail tests), only that the
figures are there, positive and consistent (the same episodes as EvoKit's
evaluator)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bench_module(name: str):
    spec = importlib.util.spec_from_file_location(f"evokit_bench_{name}", os.path.join(ROOT, "bench", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def unload_bench_modules(names) -> None:
    """Takes bench/ off sys.path and drops the modules imported from there."""
    bench_dir = os.path.join(ROOT, "bench")
    while bench_dir in sys.path:
        sys.path.remove(bench_dir)
    for name in [*names, "results", "judge", "run", "numpy_reference"]:
        sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def bench():
    module = load_bench_module("run")
    yield module
    unload_bench_modules([module.__name__])


@pytest.fixture
def bench_module(monkeypatch):
    """Loads bench/<name>.py with sys.argv as if it ran as a script (the
    result files record the command)."""
    loaded = []

    def load(name: str, *args: str):
        monkeypatch.setattr(sys, "argv", [os.path.join(ROOT, "bench", f"{name}.py"), *args])
        module = load_bench_module(name)
        loaded.append(module.__name__)
        return module

    yield load
    unload_bench_modules(loaded)


def assert_result_files(directory, name: str, command_has: str) -> dict:
    """<directory>/<name>.json and .md exist and carry the header: machine
    (CPU, cores), versions (Python, numpy, EvoKit and its commit), date,
    command and load average."""
    with open(os.path.join(directory, f"{name}.json")) as f:
        data = json.load(f)
    h = data["header"]
    assert h["machine"]["cpu"] and h["machine"]["cores"] == os.cpu_count()
    assert h["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert h["versions"]["numpy"] == np.__version__ and h["versions"]["evokit"]
    assert "evokit_commit" in h["versions"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", h["date"]), h["date"]
    assert command_has in h["command"] and h["command"].startswith("python ")
    assert len(h["load_average_start"]) == 3 and len(h["load_average_end"]) == 3 and h["wall_s"] >= 0
    with open(os.path.join(directory, f"{name}.md")) as f:
        md = f.read()
    for field in ("- machine: ", "- versions: Python ", "- date: ", "- command: `python ", "- load average"):
        assert field in md, (field, md)
    assert f"{h['machine']['cores']} cores" in md and h["date"] in md
    return data


def test_report_writes_both_files_with_the_header(bench_module, tmp_path, capsys, monkeypatch):
    results = bench_module("results")
    monkeypatch.setattr(sys, "argv", [os.path.join(ROOT, "bench", "fake.py"), "--seeds", "2"])
    report = results.Report("fake", "A fake bench")
    report.print("| a | b |")
    report.say("progress, not kept")
    json_path, md_path = report.write(str(tmp_path / "out"), {"rows": [1, 2]})
    data = assert_result_files(tmp_path / "out", "fake", "python bench/fake.py --seeds 2")
    assert data["results"] == {"rows": [1, 2]}
    md = Path(md_path).read_text()
    assert md.startswith("# A fake bench\n") and "| a | b |" in md and "progress" not in md
    assert "progress, not kept" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "out")) == ["fake.json", "fake.md"]  # no temporary file left


def test_crafted_logs_writes_its_result_files(bench_module, tmp_path):
    args = ["--sizes-mib", "1", "--kinds", "magics", "torn", "--out", str(tmp_path)]
    crafted = bench_module("crafted_logs", *args)
    assert crafted.main(args) == 0
    data = assert_result_files(tmp_path, "crafted_logs", "python bench/crafted_logs.py --sizes-mib 1")
    assert [r["kind"] for r in data["results"]] == ["magics", "torn"]
    assert all(r["mib"] == 1 and r["examined_per_byte"] > 0 for r in data["results"])


def test_online_pipeline_writes_its_result_files(bench_module, tmp_path):
    args = ["--num-samples", "200", "--out", str(tmp_path)]
    online = bench_module("online_pipeline", *args)
    assert online.main(args) == 0
    data = assert_result_files(tmp_path, "online_pipeline", "python bench/online_pipeline.py --num-samples 200")
    rows = data["results"]
    assert rows["update"]["duplicates_dropped"] == 0 and rows["update"]["records"] == 200
    assert "update 0 -> 1: used 200 samples" in rows["update"]["report"]
    for name in ("sample, iteration 0", "sample, trained"):
        assert rows[name]["env_steps"] >= 200 * 8 and rows[name]["peak_mib"] > 0
    assert rows["sample, trained"]["env_steps"] > rows["sample, iteration 0"]["env_steps"]


def test_update_scale_writes_its_result_files(bench_module, tmp_path):
    args = ["--records", "300", "600", "--shards", "2", "--out", str(tmp_path)]
    scale = bench_module("update_scale", *args)
    assert scale.main(args) == 0
    data = assert_result_files(tmp_path, "update_scale", "python bench/update_scale.py --records 300 600 --shards 2")
    rows = data["results"]
    assert [(r["records"], r["shards"]) for r in rows.values()] == [(300, 1), (600, 2)]
    for r in rows.values():
        assert f"used {r['records']} samples" in r["report"] and "dropped" not in r["report"]
        assert r["peak_mib"] > 0 and r["log_mib"] > 0


def test_serial_share_writes_its_result_files(bench_module, tmp_path):
    args = ["--tasks", "Hopper-v5", "--generations", "1", "--threads", "2", "--out", str(tmp_path)]
    share = bench_module("serial_share", *args)
    assert share.main(args) == 0
    data = assert_result_files(tmp_path, "serial_share", "python bench/serial_share.py --tasks Hopper-v5")
    rows = data["results"]
    assert [(r["task"], r["threads"]) for r in rows] == [("Hopper-v5", 1), ("Hopper-v5", 2)]
    assert rows[0]["env_steps"] == rows[1]["env_steps"] > 0  # the same episodes on any thread count
    assert all(0 < r["rollout_s"] < r["wall_s"] and 0 < r["serial_share"] < 1 for r in rows)


def test_numpy_reference_is_gymnasium(bench):
    """The NumPy CartPole and seeding equal gymnasium's step for step."""
    import gymnasium

    npref = bench.npref
    seeds = [0, 5, 77]
    state = npref.reset_states(seeds)
    envs = [gymnasium.make("CartPole-v1") for _ in seeds]
    try:
        for env, s, row in zip(envs, seeds, state):
            obs, _ = env.reset(seed=s)
            np.testing.assert_array_equal(obs, row.astype(np.float32))
        actions = np.random.default_rng(0).integers(0, 2, size=(8, len(seeds)))
        for a in actions:
            state, terminated = npref.cartpole_step(state, a)
            for env, row, act, term in zip(envs, state, a, terminated):
                env.step(int(act))
                np.testing.assert_array_equal(env.unwrapped.state, row)
                assert not term
    finally:
        for env in envs:
            env.close()


def test_throughput_section(bench):
    res = bench.throughput_section(population=8, repeats=1, threads=2, runners=("evokit", "numpy"),
                                   policy="fresh")
    assert res["population"] == 8 and res["network"] == "4-64-64-2 tanh"
    runners = res["runners"]
    assert set(runners) == {"evokit_1", "evokit_2", "numpy"}
    steps = {name: r["counted_steps"] for name, r in runners.items()}
    # Same parameter rows and episode seeds: the NumPy reference plays the same episodes.
    assert steps["evokit_1"] == steps["evokit_2"] == steps["numpy"]
    assert 8 <= steps["numpy"][0] <= 8 * 500
    assert runners["numpy"]["returns_equal_evokit"] == 8
    for r in runners.values():
        assert r["steps_per_s"] > 0 and math.isfinite(r["evokit_ratio"])
    assert runners["evokit_2"]["evokit_ratio"] == 1.0
    json.dumps(res)


def test_solve_section(bench):
    res = bench.solve_section(seeds=1, runners=("evokit", "numpy", "no_such_peer_runner"))
    s = res["settings"]
    assert (s["population"], s["sigma"], s["lr"], s["target"]) == (40, pytest.approx(0.1), pytest.approx(0.05), 490)
    for name in ("evokit", "numpy"):
        r = res["runners"][name]
        assert r["solved"] == 1 and r["seeds"] == 1, r
        assert r["runs"][0]["centre"] >= 490 and r["median_env_steps"] > 0 and r["median_wall_s"] > 0
    assert res["runners"]["evokit"]["vs_evokit"] == 1.0
    assert res["runners"]["no_such_peer_runner"]["runs"][0]["error"]
    json.dumps(res)


def test_kernels_section(bench, tmp_path):
    missing = bench.kernels_section(True, script=str(tmp_path / "kernels.py"))
    assert missing["skipped"].startswith("skipped: ") and missing["skipped"].endswith("is not on this branch")
    script = tmp_path / "fake_kernels.py"
    script.write_text("import json, sys\n"
                      "assert sys.argv[1] == '--json' and sys.argv[3:] == ['--quick']\n"
                      "json.dump({'perturb': {'P': 100000, 'N': 256}}, open(sys.argv[2], 'w'))\n")
    assert bench.kernels_section(True, script=str(script)) == {"results": {"perturb": {"P": 100000, "N": 256}}}
    script.write_text("import sys\nsys.exit('broken')\n")
    assert "broken" in bench.kernels_section(False, script=str(script))["error"]


def test_machine_and_report(bench):
    q = bench.quiet_check(max_load=1e9, wait=0)
    assert len(q["calibration_ms"]) == 5 and min(q["calibration_ms"]) > 0 and q["calibration_spread"] >= 1
    assert len(q["load_average"]) == 3
    b = bench.bandwidth_section(8, 2)
    assert b["read_GB_per_s"] > 0
    res = {"machine": bench.machine_info(2), "quiet": q, "kernels": {"skipped": "skipped: no kernels"},
           "throughput": {"env": "CartPole-v1", "population": 4, "repeats": 1, "policy": "fresh",
                          "network": "4-64-64-2 tanh", "load_after": [1.0, 1.0, 1.0],
                          "runners": {"evokit_2": {"label": "EvoKit", "threads": 2, "steps_per_s": 2e6,
                                                   "evokit_ratio": 1.0},
                                      "numpy": {"label": "NumPy", "threads": 1, "steps_per_s": 1e5,
                                                "evokit_ratio": 20.0, "returns_equal_evokit": 4},
                                      "evotorch": {"skipped": "not installed: evotorch"}}},
           "solve": {"settings": {"population": 40, "sigma": 0.1, "lr": 0.05, "hidden": [16], "target": 475,
                                  "eval_episodes": 20}, "load_after": [1.0, 1.0, 1.0],
                     "runners": {"evokit": {"solved": 1, "seeds": 1, "median_wall_s": 0.5, "max_wall_s": 0.5,
                                            "median_env_steps": 1000, "vs_evokit": 1.0}}},
           "bandwidth": b}
    md = bench.render_markdown(res)
    assert "skipped: no kernels" in md
    assert "| EvoKit | 2 | 2,000,000 | 1.0x |" in md
    assert "| NumPy | 1 | 100,000 | 20.0x | returns equal EvoKit's for 4/4 |" in md
    assert "| evotorch | not installed: evotorch | - | - | - |" in md
    assert "| evokit | 1/1 | 0.50 | 0.50 | 1,000 | 1.00x |" in md
    assert "4-16-2 tanh" in md and "GB/s" in md


def test_kernel_table_reports_the_target_ratios(bench):
    def row(kernel, impl, p, threads, ms, gbps=None, ratio=None, **extra):
        return {"kernel": kernel, "impl": impl, "P": p, "N": 256 if kernel != "bandwidth" else None,
                "threads": threads, "median_s": None if ms is None else ms / 1e3, "gbps": gbps,
                "ratio_to_bandwidth": ratio, **extra}

    rows = [row("bandwidth", "evokit_read", 64, 1, 10.0, 12.5), row("bandwidth", "evokit_read", 64, 2, 5.0, 25.0),
            row("gradient_cached", "evokit", 1000, 2, 40.0, 20.0, 0.8, bandwidth_gbps=25.0),
            row("gradient_cached", "numpy_accumulate", 1000, 1, 200.0, 4.0, 0.16),
            row("gradient_uncached", "evokit", 1000, 2, 100.0, 8.0, 0.32),
            row("clone_rss", "evokit", 1000, 2, None, rss_bytes=3 * 2**20, rss_bytes_after_add_noise=0)]
    md = "\n".join(bench.kernel_table(rows))
    assert "1 thread 12.5 GB/s, 2 threads 25.0 GB/s" in md
    assert "| gradient_cached | 1,000 | 256 | 40.00 | 20.0 | 0.80 | 25.0 | 200.00 | 5.0x | - | - |" in md
    assert "| gradient_uncached | 1,000 | 256 | 100.00 | 8.0 | 0.32 | - | - | - | - | 2.5x |" in md
    assert "timed alternately with the kernel" in md
    assert "add 3 MiB resident beyond the agent (0 MiB after add_noise alone)" in md


def test_locomotion_runs_a_seed_and_judges_its_model_in_onnxruntime(bench_module, tmp_path):
    loco = bench_module("locomotion")
    task = loco.TASKS["cartpole"]
    r = loco.run_seed("cartpole", task, 3, str(tmp_path))
    assert r["judged_episodes"] == 100 and r["generations"] >= 1 and r["env_steps"] > 0
    # the judge: plain onnxruntime, episodes seeded from 2**31 (never a training seed)
    returns = loco.judge(str(tmp_path / "cartpole" / "seed3" / "model.onnx"), "CartPole-v1", 3)
    assert len(returns) == 3 and all(1 <= x <= 500 for x in returns)
    assert r["reached"] == (r["judged_mean"] >= 475)
    text = loco.table("cartpole", task, [r])
    assert "| 3 |" in text and f"{r['judged_mean']:.1f}" in text
    loco.plot("cartpole", task, [r], str(tmp_path / "c.png"))
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_blackbox_bench_runs_every_strategy_small(bench_module, tmp_path, capsys):
    """bench/blackbox.py with EvoKit alone (no peer installed in CI; a peer
    that is installed adds its column): every strategy's rows, EvoKit's
    evaluations reaching the target on the sphere (CEM, which can stall,
    with at least one of the two seeds), a time per generation."""
    strategies = ["CMA-ES", "SNES", "CR-FM-NES", "LM-MA-ES", "CEM"]
    args = ["--quick", "--strategies", *strategies, "--functions", "sphere", "--seeds", "1", "--out", str(tmp_path)]
    module = bench_module("blackbox", *args)
    module.LIBRARIES = ("evokit",)
    module.main(args)
    out = capsys.readouterr().out
    data = assert_result_files(tmp_path, "blackbox", "python bench/blackbox.py --quick")
    assert {r["strategy"] for r in data["results"]["convergence"]} == set(strategies)
    assert (tmp_path / "blackbox.md").read_text().count("| CMA-ES |") == 3
    for strategy in strategies:
        rows = [line for line in out.splitlines() if line.startswith(f"| {strategy} |")]
        assert len(rows) == 3, (strategy, out)  # sphere, ellipsoid (quick), overhead
        convergence = [r for r in rows if "| sphere | 10 |" in r][0]
        # reached 1e-8: "median (reached/4)", or with some seeds missed
        # "median (reached/4, ERT e)" (4 seeds at n = 10 with --seeds 1)
        cell = re.fullmatch(r"[\d,]+ \(([1-4])/4(, ERT [\d,]+)?\)", convergence.split("|")[4].strip())
        assert cell, convergence
        assert (cell.group(2) is None) == (cell.group(1) == "4"), convergence
        overhead = rows[-1].split("|")
        assert overhead[4].strip().endswith(("us", "ms")), rows[-1]


def test_bbob_runner_runs_a_cell_resumes_and_summarises(bench_module, tmp_path, capsys):
    """bench/bbob.py small: f1 (sphere), D = 2, instance 1, budget 200 x D,
    EvoKit's BIPOP CMA-ES beside pycma's (in the test extra): both reach
    COCO's final target, COCO's observer wrote its data folder, a second run
    skips the cells, and the summary writes its tables, figure and timing."""
    data, out = tmp_path / "exdata", tmp_path / "results"
    common = ["--data", str(data), "--libraries", "evokit-bipop,pycma-bipop"]
    run = ["run", *common, "--functions", "1", "--dims", "2", "--instances", "1", "--budget", "200"]
    module = bench_module("bbob", *run)
    module.main(run)
    assert "2 cells run, 0 already done" in capsys.readouterr().out
    for lib in ("evokit-bipop", "pycma-bipop"):
        with open(data / "bbob" / lib / "cells" / "bbob_f001_d02_x01.json") as f:
            rec = json.load(f)
        assert rec["problem"] == "bbob_f001_i01_d02" and rec["solved"] is True
        assert 0 < rec["evaluations"] < 400 and rec["best_delta"] < 1e-8
        hits = rec["target_hits"]  # the first evaluation reaching each of the 51 targets
        assert len(hits) == 51 and all(h is not None for h in hits) and hits == sorted(hits)
        coco = data / "bbob" / lib / "coco" / "exdata" / "bbob_f001_d02_x01"
        assert (coco / "bbobexp_f1.info").exists()
        assert (coco / "data_f1" / "bbobexp_f1_DIM2.dat").stat().st_size > 0
    module.main(run)  # resumed: nothing left to run
    assert "0 cells run, 2 already done" in capsys.readouterr().out
    module.main(["timing", *common, "--dims", "2", "--budget", "5"])
    module.main(["summary", *common, "--out", str(out)])
    results = assert_result_files(out, "bbob", "python bench/bbob.py")["results"]
    d2 = results["comparison"]["dimensions"]["2"]
    assert d2["groups"]["separable"]["solved"] == {"evokit-bipop": 1, "pycma-bipop": 1}
    assert d2["fisher_p_less"]["pycma-bipop"] == 1.0
    assert 0 < d2["groups"]["all"]["ert_ratio"]["pycma-bipop"] < 10
    assert (out / "bbob_ecdf_d2.png").stat().st_size > 0
    runs = (data / "bbob" / "runs.jsonl").read_text().splitlines()  # the resumed run ran nothing: not logged
    assert len(runs) == 1 and json.loads(runs[0])["cells_run"] == 2
    md = (out / "bbob.md").read_text()
    assert "- run `python bench/bbob.py run --data" in md and "CPU seconds per library: evokit-bipop" in md
    assert results["timing"]["evokit-bipop"]["2"]["evaluations"] >= 24 * 10  # every function, 5 x D each


def test_bbob_shards_cover_every_cell_once_with_each_problem_whole(bench_module):
    module = bench_module("bbob")
    cells = module.cells("bbob", [1, 2, 3], [2, 5], [1, 2], ["a", "b", "c"])
    shards = [module.shard_of(cells, f"{i}/3") for i in range(3)]
    assert sorted(c for s in shards for c in s) == sorted(cells)
    for s in shards:  # every library of a problem in the same shard
        assert {c[:4] for c in s} and all(sum(c[:4] == p for c in s) == 3 for p in {c[:4] for c in s})
    with pytest.raises(SystemExit, match="--shard must be i/k"):
        module.shard_of(cells, "3/3")


@pytest.mark.parametrize("table, p", [((8, 2, 1, 5), 0.9991258741258742), ((300, 60, 341, 19), 5.697760242057033e-07),
                                      ((10, 0, 10, 0), 1.0), ((0, 5, 5, 0), 0.003968253968253969)])
def test_bbob_fisher_test_is_scipys_one_sided(bench_module, table, p):
    """The values of scipy.stats.fisher_exact(table, alternative='less')."""
    assert bench_module("bbob").fisher_less(*table) == pytest.approx(p, rel=1e-12)


def test_bbob_biobj_runs_a_cell_per_library_and_summarises(bench_module, tmp_path, capsys):
    """bench/bbob.py on bbob-biobj, small: f1 (sphere/sphere), D = 2, instance
    1, budget 300 x D, EvoKit's NSGA2, pymoo's and COMO-CMA-ES: each uses the
    budget to the evaluation, COCO's observer logged every evaluation (its
    indicator equals the one recomputed from the evaluated objective
    vectors), the indicator only decreases and ends small, and the summary
    writes its tables and figures."""
    pytest.importorskip("pymoo")
    pytest.importorskip("comocma")
    data, out = tmp_path / "exdata", tmp_path / "results"
    libs = "evokit-nsga2,pymoo-nsga2,comocma"
    common = ["--data", str(data), "--suite", "bbob-biobj", "--libraries", libs]
    run = ["run", *common, "--functions", "1", "--dims", "2", "--instances", "1", "--budget", "300"]
    module = bench_module("bbob", *run)
    module.main(run)
    assert "3 cells run, 0 already done" in capsys.readouterr().out
    for lib in libs.split(","):
        with open(data / "bbob-biobj" / lib / "cells" / "bbob-biobj_f001_d02_x01.json") as f:
            rec = json.load(f)
        assert rec["problem"] == "bbob-biobj_f01_i01_d02" and rec["evaluations"] == rec["budget"] == 600
        assert 0.5 < rec["reference_value"] < 1 and rec["nondominated"] >= 2
        assert rec["indicator"] == pytest.approx(rec["indicator_here"], abs=1e-9)
        assert rec["indicator"] == pytest.approx(rec["reference_value"] - rec["hypervolume"], abs=1e-9)
        values = [v for _, v in rec["trace"]]
        evaluations = [e for e, _ in rec["trace"]]
        assert values == sorted(values, reverse=True) and evaluations == sorted(evaluations)
        assert 0 < rec["indicator"] <= values[-1] < values[0] and rec["indicator"] < 0.2
        hits = rec["target_hits"]  # the first evaluation reaching each of cocopp's 58 targets
        assert len(hits) == 58 and hits[0] is not None and hits[-1] is None
        reached = [h for h in hits if h is not None]
        assert reached == sorted(reached) and all(h is None for h in hits[len(reached):])
        coco = data / "bbob-biobj" / lib / "coco" / "exdata" / "bbob-biobj_f001_d02_x01"
        assert (coco / "1-separable_1-separable_hyp.info").exists()
    with pytest.raises(SystemExit, match="two objectives"):
        module.main(["run", *common[:-1], "evokit-bipop", "--functions", "1", "--dims", "2", "--instances", "1"])
    module.main(["summary", *common, "--out", str(out), "--target", "1e-1,1e-2"])
    results = assert_result_files(out, "bbob_biobj", "python bench/bbob.py")["results"]
    assert set(results["reached_by_target"]) == {"0.1", "0.01"}
    assert all(0 <= n <= 1 for n in results["reached_by_target"]["0.01"]["2"]["reached"].values())
    d2 = results["comparison"]["dimensions"]["2"]
    row = d2["groups"]["all"]
    assert row["cells"] == 1 and set(row["median_indicator"]) == set(libs.split(","))
    for peer in ("pymoo-nsga2", "comocma"):
        assert row["better"][peer] + row["worse"][peer] <= 1 and 0 < d2["sign_test_p"][peer] <= 1
    assert results["indicator_recomputed_max_difference"] < 1e-9
    assert (out / "bbob_biobj_ecdf_d2.png").stat().st_size > 0
    assert "| 2 | all | 1 |" in (out / "bbob_biobj.md").read_text()


def test_bbob_biobj_groups_and_targets(bench_module):
    module = bench_module("bbob")
    assert len(module.BIOBJ_PAIRS) == 55 and module.BIOBJ_PAIRS[1] == (1, 2) and module.BIOBJ_PAIRS[-1] == (21, 21)
    assert len(module.BIOBJ_GROUPS) == 15
    assert sorted(f for g in module.BIOBJ_GROUPS.values() for f in g) == list(range(1, 56))
    assert module.BIOBJ_GROUPS["separable/separable"] == [1, 2, 11]
    assert len(module.BIOBJ_TARGETS) == 58 and module.BIOBJ_TARGETS[0] == 1 and module.BIOBJ_TARGETS[51] == 0
    assert module.biobj_target_index(1e-3) == 30 and module.sign_test(5, 0) == pytest.approx(0.0625)
    # the NSGA-II variants of the diagnostics: population and box
    assert module.nsga2_variant("evokit-nsga2") == ("evokit", 100, None, ())
    assert module.nsga2_variant("pymoo-nsga2-p20-b5") == ("pymoo", 20, 5.0, ())
    assert module.nsga2_variant("pymoo-nsga2-rank-pm1-dup") == ("pymoo", 100, None, ("rank", "pm1", "dup"))
    assert module.nsga2_variant("comocma") is None and module.is_biobj_library("comocma")
    assert not module.is_biobj_library("evokit-bipop")
    with pytest.raises(SystemExit, match="even"):
        module.nsga2_variant("evokit-nsga2-p21")
    with pytest.raises(SystemExit, match="pymoo"):
        module.nsga2_variant("evokit-nsga2-rank")
    # the normalised hypervolume: two points inside the box, one beyond the nadir
    ideal, nadir = np.array([0.0, 0.0]), np.array([2.0, 2.0])
    hv, nd = module.biobj_hypervolume([[0.0, 1.0], [1.0, 0.0], [3.0, 3.0], [1.0, 1.0]], ideal, nadir)
    assert hv == pytest.approx(0.5 * 0.5 + 0.5 * 1.0) and nd == 2  # (0, .5) and (.5, 0) normalised, reference (1, 1)
    hv, nd = module.biobj_hypervolume([[4.0, 2.0]], ideal, nadir)  # (2, 1) normalised: 1 beyond the box
    assert hv == pytest.approx(-1.0) and nd == 1
