"""The ``evokit`` command line.

    evokit train CONFIG [--env ID] [--seed S] [--out DIR] [--model M] [--workers N] [--evaluator KIND]
                        [-q | -v] [--metrics FILE] [--metrics-format csv|jsonl] [--tensorboard [DIR]]
                        [--checkpoint-every K] [--backend local|ray] [--address ADDR]
    evokit train [CONFIG] --resume RUN_DIR
    evokit plot RUN_DIR [-o FILE]
    evokit init-model --env ID [--hidden 16 16] [--activation tanh] [--recurrent lstm|gru] [--seed S] -o MODEL
    evokit check-config CONFIG [CONFIG ...]
    evokit check-native ENV [ENV ...] [--episodes N]
    evokit init-solver --config C --model M --warehouse W
    evokit sample --warehouse W --env ID --num-samples N --log L [--seed S]
    evokit update --warehouse W --log L [L ...]
    evokit seal FILE|DIR [...]

Errors a user can cause print one line, ``evokit: error: ...``, and exit 1
(2 for bad usage); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import List, Optional

from . import __version__
from .config import config_with_defaults, load_config
from .evaluation.envs import init_model
from .evaluation.factory import EVALUATOR_KINDS
from .online.pipeline import evaluate, sample, update
from .online.warehouse import Warehouse
from .policy.mlp import ACTION_MAPPINGS, ACTIVATIONS, RECURRENT_CELLS
from .statefile import seal_file, state_files
from .training.loop import EVALUATION_BACKENDS, TrainingInterrupted, train
from .training.metrics import FORMATS as METRICS_FORMATS
from .training.plot import plot_run
from .training.progress import NORMAL, QUIET, VERBOSE, Progress
from .util import install_hint

__all__ = ["main"]


def _cmd_train(args) -> int:
    if args.resume is not None:
        if args.out is not None and os.path.abspath(args.out) != os.path.abspath(args.resume):
            raise ValueError(f"--out {args.out} and --resume {args.resume} name different run "
                             f"directories: a resumed run writes to its own")
    elif args.config is None:
        raise ValueError("a config file is needed (it may be left out only with --resume RUN_DIR)")
    verbosity = QUIET if args.quiet else VERBOSE if args.verbose else NORMAL
    try:
        result = train(args.config, env_id=args.env, seed=args.seed, out_dir=args.resume or args.out,
                       model=args.model, num_workers=args.workers,
                       max_generations=args.max_generations, evaluator_kind=args.evaluator,
                       progress=Progress(verbosity), metrics_path=args.metrics,
                       metrics_format=args.metrics_format,
                       tensorboard=True if args.tensorboard == "" else args.tensorboard,
                       checkpoint_every=args.checkpoint_every,
                       checkpoint_seconds=args.checkpoint_seconds, resume=args.resume is not None,
                       backend=args.backend, address=args.address, overwrite=args.overwrite)
    except TrainingInterrupted as stop:
        print(f"evokit: interrupted; continue with `evokit train --resume {stop.out_dir}`",
              file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        run_dir = args.resume or args.out or "RUN_DIR"
        print(f"evokit: interrupted; continue with `evokit train --resume {run_dir}`", file=sys.stderr)
        return 130
    return 0 if result.solved or not args.require_solved else 1


def _cmd_plot(args) -> int:
    path = plot_run(args.run_dir, args.output)
    print(f"wrote {path}")
    return 0


def _cmd_init_model(args) -> int:
    if args.recurrent is not None and not args.hidden:
        print(f"evokit init-model: --recurrent {args.recurrent} needs --hidden with at least one "
              f"size (the cell's hidden size)", file=sys.stderr)
        return 2
    init_model(args.env, args.output, hidden_sizes=args.hidden, activation=args.activation,
               seed=args.seed, action_mapping=args.action_mapping, recurrent=args.recurrent)
    kind = "MLP" if args.recurrent is None else f"{args.recurrent.upper()} + MLP"
    print(f"wrote {args.output}: {kind} {args.hidden or 'linear'} ({args.activation}) for {args.env}")
    return 0


def _cmd_init_solver(args) -> int:
    wh = Warehouse.create(args.warehouse, args.config, args.model)
    print(f"created warehouse {wh.path}: iteration 0 ({wh.policy(0).num_params} parameters)")
    return 0


def _cmd_sample(args) -> int:
    report = sample(args.warehouse, args.env, args.num_samples, args.log, seed=args.seed,
                    iteration=args.iteration, num_workers=args.workers,
                    episodes_per_sample=args.episodes)
    if not args.quiet:
        print(report)
    return 0


def _cmd_update(args) -> int:
    report = update(args.warehouse, args.log, config=args.config)
    for line in report.lines():
        print(line, file=sys.stdout if report.to_iteration is not None else sys.stderr)
    return 0 if report.to_iteration is not None else 1


def _cmd_evaluate(args) -> int:
    report = evaluate(args.model, args.env, args.episodes, seed=args.seed, num_workers=args.workers)
    print(report)
    if args.min_return is not None and report.mean < args.min_return:
        return 1
    return 0


def _cmd_check_config(args) -> int:
    for path in args.config:
        cfg = load_config(path)
        print(f"{path}: ok")
        if args.show:
            print(config_with_defaults(cfg))
    return 0


def _cmd_check_native(args) -> int:
    from .errors import EnvError
    from .evaluation.envs import check_native

    failed = 0
    for env_id in args.env:
        try:
            print(check_native(env_id, episodes=args.episodes))
        except EnvError as exc:
            print(f"evokit: error: {' '.join(str(exc).split())}", file=sys.stderr)
            failed = 1
    return failed


def _cmd_seal(args) -> int:
    for path in args.path:
        for f in state_files(path) if os.path.isdir(path) else [path]:
            print(seal_file(f))
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text}")
    return value


def _whole(text: str, expected: str = "a whole number") -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None


def _positive(text: str, expected: str = "a whole number") -> int:
    n = _whole(text, expected)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def _seed(text: str) -> int:
    n = _whole(text)
    if not 0 <= n < 2**64:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**64), got {n}")
    return n


def _workers(text: str) -> int:
    if text == "auto":
        return os.cpu_count() or 1
    return _positive(text, "a number or 'auto'")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evokit", description="EvoKit: fast evolution strategies.")
    p.add_argument("--version", action="version", version=f"evokit {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    t = sub.add_parser("train", help="train a policy on a gymnasium environment",
                       description="Train a policy with ES (synchronous loop). Writes model.onnx, "
                                   "solver.pb, config.prototxt, checkpoint.pb and metrics.csv to "
                                   "--out; --resume continues a run that was stopped.")
    t.add_argument("config", nargs="?",
                   help="config file (.prototxt), e.g. configs/cartpole.prototxt (with --resume: "
                        "optional, and it may differ from the run's only in train.num_workers and "
                        "train.max_generations)")
    t.add_argument("--env", help="gymnasium environment id (default: the config's train.env_id)")
    t.add_argument("--seed", type=_seed, help="seed of the run (default: the config's train.seed)")
    t.add_argument("--out", help="output directory (default: runs/ENV-seedS, or runs/ENV-seedS-2, "
                                 "-3, ... if that holds a run); one that holds a run is refused "
                                 "without --overwrite")
    t.add_argument("--overwrite", action="store_true",
                   help="let the run replace the run in --out")
    t.add_argument("--model", help="initial ONNX policy (default: a fresh MLP of train.hidden_sizes)")
    t.add_argument("--workers", type=_workers,
                   help="evaluation workers (processes, or the threads of the batched policy call on "
                        "a vectorised env), or 'auto' for one per core (default: train.num_workers)")
    t.add_argument("--max-generations", type=int, help="override train.max_generations")
    t.add_argument("--evaluator", choices=EVALUATOR_KINDS, default="auto",
                   help="how the population is evaluated: 'vector' runs it in lockstep on a vector "
                        "env with one batched native policy call per step; 'auto' (default) does "
                        "that when the policy runs natively, else uses worker processes")
    t.add_argument("--backend", choices=EVALUATION_BACKENDS, default="local",
                   help=f"'ray' evaluates on --workers Ray actors ({install_hint('ray')}); "
                        "same model as 'local' (default)")
    t.add_argument("--address", help="with --backend ray: join the Ray cluster at ADDR (HOST:PORT of "
                                     "the head, or 'auto'); default: start a local Ray instance")
    level = t.add_mutually_exclusive_group()
    level.add_argument("-q", "--quiet", action="store_true", help="print nothing while training")
    level.add_argument("-v", "--verbose", action="store_true",
                       help="one line per generation with the time spent sampling, updating and "
                            "evaluating the centre (default: on a terminal, one line refreshed in "
                            "place and a line per centre evaluation; elsewhere a line per generation)")
    t.add_argument("--metrics", metavar="FILE",
                   help="per-generation metrics file (default: OUT/metrics.csv)")
    t.add_argument("--metrics-format", choices=METRICS_FORMATS,
                   help="format of --metrics (default: from its extension, .csv or .jsonl)")
    t.add_argument("--tensorboard", nargs="?", const="", metavar="DIR",
                   help="also write TensorBoard event files, to DIR (default: OUT/tensorboard); "
                        "needs tensorboardX (" + install_hint("tensorboard") + ")")
    t.add_argument("--checkpoint-every", type=_positive, metavar="K",
                   help="write OUT/checkpoint.pb every K generations (default: by time, see "
                        "--checkpoint-seconds)")
    t.add_argument("--checkpoint-seconds", type=_seconds, default=10.0, metavar="S",
                   help="without --checkpoint-every: write OUT/checkpoint.pb once S seconds "
                        "(default 10), and at least 20 times the last checkpoint's duration, have "
                        "passed since the last one; always at the start, the end and on "
                        "SIGINT/SIGTERM")
    t.add_argument("--resume", metavar="RUN_DIR",
                   help="continue the run in RUN_DIR from its checkpoint; the result is the one "
                        "the run would have reached uninterrupted")
    t.add_argument("--require-solved", action="store_true",
                   help="exit 1 unless the target return was reached")
    t.set_defaults(func=_cmd_train)

    m = sub.add_parser("init-model", help="write a fresh MLP policy as ONNX",
                       description="Write a fresh MLP policy for an environment's spaces as ONNX: "
                                   "input [batch, obs_dim] float32; output one score per action "
                                   "(discrete) or the action (continuous).")
    m.add_argument("--env", required=True, help="gymnasium environment id")
    m.add_argument("--hidden", type=int, nargs="*", default=[16],
                   help="hidden layer sizes (default: 16; none for a linear policy)")
    m.add_argument("--activation", default="tanh", choices=ACTIVATIONS)
    m.add_argument("--seed", type=_seed, default=0, help="seed of the initial weights (default: 0)")
    m.add_argument("--action-mapping", default="clip", choices=ACTION_MAPPINGS,
                   help="continuous actions: how the output is mapped into the action bounds, as "
                        "nodes of the model (default: clip)")
    m.add_argument("--recurrent", choices=RECURRENT_CELLS, default=None,
                   help="make the first hidden layer an LSTM or GRU of that size, its state "
                        "carried through each episode (inputs h0[, c0], outputs hn[, cn])")
    m.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    m.set_defaults(func=_cmd_init_model)

    i = sub.add_parser("init-solver", help="create a model warehouse (iteration 0)",
                       description="Create a model warehouse: the initial ONNX model and a fresh "
                                   "solver as W/model_iter_id-0/ (model.onnx, solver.pb).")
    i.add_argument("--config", required=True, help="config file (.prototxt)")
    i.add_argument("--model", required=True, help="initial ONNX policy (see `evokit init-model`)")
    i.add_argument("--warehouse", required=True, help="directory to create (must not exist or be empty)")
    i.set_defaults(func=_cmd_init_solver)

    s = sub.add_parser("sample", help="evaluate perturbed models and append them to a log",
                       description="The reference online sampler: load the newest model of the "
                                   "warehouse, clone agents, add noise, evaluate them as `evokit "
                                   "train` does and append one record per sample to the log, in "
                                   "chunks appended whole. Run again after an interruption, it "
                                   "resumes where the log ends.")
    s.add_argument("--warehouse", required=True, help="model warehouse (from `evokit init-solver`)")
    s.add_argument("--env", required=True, help="gymnasium environment id")
    s.add_argument("--num-samples", type=int, required=True, help="samples to draw (even if antithetic)")
    s.add_argument("--log", required=True, help="sampling log to append to (created if missing)")
    s.add_argument("--seed", type=_seed, default=0,
                   help="this sampler's id: samplers running at once need distinct seeds (default: 0)")
    s.add_argument("--iteration", type=int, help="sample this kept iteration instead of the newest")
    s.add_argument("--workers", type=_workers,
                   help="evaluation workers as `evokit train` uses them (processes, or the threads of the "
                        "batched native path), or 'auto' for one per core (default: train.num_workers)")
    s.add_argument("--episodes", type=int, default=1, help="episodes averaged per sample (default: 1)")
    s.add_argument("--quiet", action="store_true", help="print nothing on success")
    s.set_defaults(func=_cmd_sample)

    u = sub.add_parser("update", help="update the warehouse from sampling logs",
                       description="Read the logs (never modifying them), rebuild the noise from the "
                                   "keys, update, and write iteration k+1. Reports the samples used, "
                                   "those from older iterations (corrected) and those dropped, and "
                                   "why. Exits 1 only when no usable sample remained.")
    u.add_argument("--warehouse", required=True, help="model warehouse")
    u.add_argument("--log", required=True, nargs="+", help="sampling logs")
    u.add_argument("--config", help="a new config for this and later iterations (key fields must not "
                                    "change)")
    u.set_defaults(func=_cmd_update)

    e = sub.add_parser("evaluate", help="evaluate a policy's mean return",
                       description="Run episodes of an ONNX policy (or a warehouse's newest model) "
                                   "and print the mean return.")
    e.add_argument("model", help="an .onnx policy, or a model warehouse directory")
    e.add_argument("--env", required=True, help="gymnasium environment id")
    e.add_argument("--episodes", type=int, default=20, help="episodes (default: 20)")
    e.add_argument("--seed", type=_seed, default=0, help="seed of the first episode (default: 0)")
    e.add_argument("--workers", type=_workers,
                   help="evaluation workers as `evokit train` uses them, or 'auto' for one per core "
                        "(default: train.num_workers)")
    e.add_argument("--min-return", type=float,
                   help="exit 1 unless the mean return reaches this value")
    e.set_defaults(func=_cmd_evaluate)

    pl = sub.add_parser("plot", help="draw the learning curve of a training run",
                        description="Draw the learning curve of a run of `evokit train` (its "
                                    "metrics.csv or metrics.jsonl): the population's mean reward "
                                    "with its min-max band and the centre policy's evaluations, "
                                    "against env steps and against wall time. Needs matplotlib "
                                    "(" + install_hint("plot") + ").")
    pl.add_argument("run_dir", metavar="RUN_DIR", help="run directory (or a metrics file)")
    pl.add_argument("-o", "--output", help="PNG file to write (default: RUN_DIR/learning_curve.png)")
    pl.set_defaults(func=_cmd_plot)

    c = sub.add_parser("check-config", help="validate config files",
                       description="Parse and validate config files; print the first problem.")
    c.add_argument("config", nargs="+", help="config files (.prototxt)")
    c.add_argument("--show", action="store_true", help="print each config with its defaults")
    c.set_defaults(func=_cmd_check_config)
    cn = sub.add_parser("check-native", help="check that environments run natively here",
                        description="Load each environment as `evokit train` does (natively, in "
                                    "EvoKit's core: CartPole, Pendulum and the MuJoCo tasks) and "
                                    "compare whole episodes with gymnasium's step for step; for a "
                                    "MuJoCo task print the MuJoCo release, its library and the "
                                    "release of the headers EvoKit was built with; or the reason "
                                    "the environment would run on gymnasium's (exit 1).")
    cn.add_argument("env", nargs="+", help="gymnasium environment ids, e.g. Hopper-v5, Pendulum-v1")
    cn.add_argument("--episodes", type=int, default=3,
                    help="episodes compared with gymnasium's (default: 3)")
    cn.set_defaults(func=_cmd_check_native)
    se = sub.add_parser("seal", help="add the sha256 trailer to state files of an older EvoKit",
                        description="State files (solver.pb, warehouse.pb, consumed.pb, "
                                    "checkpoint.pb, obs_norm.pb) end with a sha256 trailer, checked "
                                    "on every load; files written by an EvoKit before it are refused. "
                                    "This adds the trailer to such files (a directory: the state "
                                    "files in it and in its subdirectories, e.g. a warehouse's "
                                    "iterations), after checking that each parses. It cannot tell "
                                    "an old file that was damaged: seal only files you trust.")
    se.add_argument("path", nargs="+", help="state files, warehouses or run directories")
    se.set_defaults(func=_cmd_seal)
    for command in sub.choices.values():  # `evokit COMMAND ... --debug` works too
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show tracebacks on errors")
    return p


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as the CLI shows them: one line, no Python source line."""
    print(f"evokit: warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    shown = warnings.showwarning
    if not args.debug:
        warnings.showwarning = _one_line_warning
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("evokit: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError, RuntimeError, IndexError, TypeError, ImportError) as exc:
        if args.debug:
            raise
        print(f"evokit: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = shown


if __name__ == "__main__":
    sys.exit(main())
