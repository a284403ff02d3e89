"""The ``evokit`` command line.

    evokit train CONFIG [--env ID] [--seed S] [--out DIR] [--model M] [--workers N]
    evokit init-model --env ID [--hidden 16 16] [--activation tanh] [--seed S] -o MODEL
    evokit check-config CONFIG [CONFIG ...]

Errors a user can cause print one line, ``evokit: error: ...``, and exit 1
(2 for bad usage); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

__all__ = ["main"]


def _cmd_train(args) -> int:
    from .training import train

    log = (lambda s: None) if args.quiet else None
    result = train(args.config, env_id=args.env, seed=args.seed, out_dir=args.out,
                   model=args.model, num_workers=args.workers,
                   max_generations=args.max_generations, log=log)
    return 0 if result.solved or not args.require_solved else 1


def _cmd_init_model(args) -> int:
    from .evaluation import make_env
    from .model import policy_for_spaces
    from .util import atomic_write_bytes

    env = make_env(args.env)
    model = policy_for_spaces(env.observation_space, env.action_space,
                              hidden_sizes=tuple(args.hidden), activation=args.activation,
                              seed=args.seed)
    env.close()
    atomic_write_bytes(args.output, model.SerializeToString())
    print(f"wrote {args.output}: MLP {args.hidden or 'linear'} ({args.activation}) for {args.env}")
    return 0


def _cmd_check_config(args) -> int:
    from .config import config_to_text, load_config

    for path in args.config:
        cfg = load_config(path)
        print(f"{path}: ok")
        if args.show:
            print(config_to_text(cfg))
    return 0


def _workers(text: str) -> int:
    if text == "auto":
        return os.cpu_count() or 1
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="evokit", description="EvoKit: fast evolution strategies.")
    p.add_argument("--version", action="version", version=f"evokit {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    t = sub.add_parser("train", help="train a policy on a gymnasium environment",
                       description="Train a policy with ES (synchronous loop). Writes model.onnx, "
                                   "solver.pb, config.prototxt and metrics.csv to --out.")
    t.add_argument("config", help="config file (.prototxt), e.g. configs/cartpole.prototxt")
    t.add_argument("--env", help="gymnasium environment id (default: the config's train.env_id)")
    t.add_argument("--seed", type=int, help="seed of the run (default: the config's train.seed)")
    t.add_argument("--out", help="output directory (default: runs/ENV-seedS)")
    t.add_argument("--model", help="initial ONNX policy (default: a fresh MLP of train.hidden_sizes)")
    t.add_argument("--workers", type=_workers,
                   help="evaluation processes, or 'auto' for one per core (default: train.num_workers)")
    t.add_argument("--max-generations", type=int, help="override train.max_generations")
    t.add_argument("--quiet", action="store_true", help="no progress lines")
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
    m.add_argument("--activation", default="tanh", choices=["tanh", "relu", "sigmoid", "identity"])
    m.add_argument("--seed", type=int, default=0, help="seed of the initial weights (default: 0)")
    m.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    m.set_defaults(func=_cmd_init_model)

    c = sub.add_parser("check-config", help="validate config files",
                       description="Parse and validate config files; print the first problem.")
    c.add_argument("config", nargs="+", help="config files (.prototxt)")
    c.add_argument("--show", action="store_true", help="print each config with its defaults")
    c.set_defaults(func=_cmd_check_config)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("evokit: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError, RuntimeError, IndexError, TypeError) as exc:
        if args.debug:
            raise
        print(f"evokit: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
