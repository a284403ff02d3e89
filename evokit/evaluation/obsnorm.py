"""Observation normalisation (Salimans et al. 2017, "Evolution Strategies as a
Scalable Alternative to Reinforcement Learning", sec. 2.2 and the es-distributed
code): the policy sees ``clip((obs - mean) / std, -c, c)`` with the running
mean and standard deviation of the observations of the sampled episodes.

- :class:`ObsStats`: what evaluators return, per sample: the count, sum and
  sum of squares (float64) of the raw observations its episodes fed to the
  policy. Per sample, so that the merged totals do not depend on how the
  population was split over workers (chunks are joined in sample order).
- :class:`RunningStat`: the training run's totals, merged from the samples of
  each generation (parallel merge: counts, sums and sums of squares add up);
  ``mean = sum / count``, and in the ``"openai_es"`` style
  ``std = sqrt(max(sumsq / count - mean^2, 1e-2))`` (the variance floor of
  es-distributed), clipped to +-clip; in the ``"ars"`` style (Mania et al.
  2018, ARS V2: the diagonal of the states' covariance) ``std = sqrt(var)``
  with the unbiased variance, a coordinate whose variance is below 1e-8
  ignored (std = inf: it is normalised to 0), and no clipping. Mean 0 and
  std 1 before any data (and, for ``"ars"``, std 1 until two observations).
- :class:`ObsNorm`: the normaliser of one generation (float32 mean and std,
  clip bound), applied by the evaluators with the float32 arithmetic the
  exported graph uses, so a saved policy gives the same actions.
- :func:`with_obs_norm`: the ONNX policy with the normaliser as explicit first
  nodes ``Sub(mean) -> Div(std) -> Clip(-c, c)`` whose operands are
  ``Constant`` nodes, not initializers: they are never trainable parameters
  (:class:`~evokit.policy.onnx_policy.OnnxPolicy` trains initializers only), the parameter
  vector is unchanged, and onnxruntime and the native backend run it alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .. import evokit_pb2 as pb

__all__ = ["ObsNorm", "ObsStats", "RunningStat", "with_obs_norm", "merged_stats",
           "OBS_NORM_FILE",
           "VAR_FLOOR"]

#: Where :func:`evokit.train` saves the statistics, beside model.onnx.
OBS_NORM_FILE = "obs_norm.pb"
#: Lower bound of the variance (es-distributed's RunningStat).
VAR_FLOOR = 1e-2
#: ARS: a coordinate with a variance below this is ignored (std = inf).
ARS_VAR_MIN = 1e-8
#: The normalisation styles of :class:`RunningStat`.
STYLES = ("openai_es", "ars")
_MARK = "evokit.obs_norm"


@dataclass(frozen=True)
class ObsNorm:
    """``clip((obs - mean) / std, -clip, clip)`` in float32 (clip may be inf)."""

    mean: np.ndarray
    std: np.ndarray
    clip: float

    def __call__(self, obs) -> np.ndarray:
        x = (np.asarray(obs, dtype=np.float32) - self.mean) / self.std
        c = np.float32(self.clip)
        return np.clip(x, -c, c)


class ObsStats:
    """Per-sample observation statistics of one evaluation: ``count[i]``,
    ``sum[i]`` and ``sumsq[i]`` over the observations of sample i."""

    def __init__(self, num_samples: int, obs_size: int):
        self.count = np.zeros(num_samples, np.int64)
        self.sum = np.zeros((num_samples, obs_size), np.float64)
        self.sumsq = np.zeros((num_samples, obs_size), np.float64)

    def add(self, index: int, obs) -> None:
        """One observation of sample ``index``."""
        o = np.asarray(obs, dtype=np.float32).reshape(-1).astype(np.float64)
        self.sum[index] += o
        self.sumsq[index] += o * o
        self.count[index] += 1

    def add_rows(self, mask: np.ndarray, obs: np.ndarray) -> None:
        """One observation for each sample where ``mask`` is set (row i of
        ``obs`` is sample i's); the same bits as :meth:`add` row by row."""
        o = np.asarray(obs, dtype=np.float32).reshape(len(mask), -1)[mask].astype(np.float64)
        self.sum[mask] += o
        self.sumsq[mask] += o * o
        self.count[mask] += 1

    @classmethod
    def concat(cls, parts: Sequence["ObsStats"]) -> "ObsStats":
        """The parts' samples, in order."""
        out = cls(0, parts[0].sum.shape[1] if parts else 0)
        if parts:
            out.count = np.concatenate([p.count for p in parts])
            out.sum = np.concatenate([p.sum for p in parts])
            out.sumsq = np.concatenate([p.sumsq for p in parts])
        return out

    def __len__(self) -> int:
        return len(self.count)


class RunningStat:
    """Running count, sum and sum of squares of observations of ``obs_size``
    values; see the module doc for the mean and std of each ``style``."""

    def __init__(self, obs_size: int, style: str = "openai_es"):
        if obs_size < 1:
            raise ValueError(f"obs_size must be >= 1, got {obs_size}")
        if style not in STYLES:
            raise ValueError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
        self.style = style
        self.count = 0
        self.sum = np.zeros(obs_size, np.float64)
        self.sumsq = np.zeros(obs_size, np.float64)

    @property
    def obs_size(self) -> int:
        return len(self.sum)

    def update(self, stats: ObsStats) -> None:
        """Merge an evaluation's per-sample statistics (in sample order)."""
        if stats.sum.shape[1:] != (self.obs_size,):
            raise ValueError(f"observation statistics of {stats.sum.shape[1:]} values per "
                             f"observation, expected ({self.obs_size},)")
        self.count += int(stats.count.sum())
        self.sum += stats.sum.sum(axis=0)
        self.sumsq += stats.sumsq.sum(axis=0)

    @property
    def mean(self) -> np.ndarray:
        return self.sum / self.count if self.count else np.zeros(self.obs_size)

    @property
    def std(self) -> np.ndarray:
        if self.style == "ars":
            if self.count < 2:
                return np.ones(self.obs_size)
            var = np.maximum(self.sumsq - self.count * np.square(self.mean), 0.0) / (self.count - 1)
            return np.where(var < ARS_VAR_MIN, np.inf, np.sqrt(var))
        if not self.count:
            return np.ones(self.obs_size)
        return np.sqrt(np.maximum(self.sumsq / self.count - np.square(self.mean), VAR_FLOOR))

    def normalizer(self, clip: float) -> ObsNorm:
        """The normaliser of the statistics so far; ``clip`` is the bound of
        the ``"openai_es"`` style (the ``"ars"`` style does not clip)."""
        if not clip > 0:
            raise ValueError(f"clip must be > 0, got {clip}")
        if self.style == "ars":
            clip = float("inf")
        return ObsNorm(self.mean.astype(np.float32), self.std.astype(np.float32), float(clip))

    def to_proto(self, clip: float) -> pb.ObservationStats:
        msg = pb.ObservationStats(count=self.count, clip=self.normalizer(clip).clip)
        msg.sum.extend(self.sum.tolist())
        msg.sumsq.extend(self.sumsq.tolist())
        return msg

    @classmethod
    def from_proto(cls, msg: pb.ObservationStats, source: str = "observation statistics",
                   style: str = "openai_es"):
        if len(msg.sum) != len(msg.sumsq) or not msg.sum:
            raise ValueError(f"{source}: sum has {len(msg.sum)} values and sumsq "
                             f"{len(msg.sumsq)}; expected the same number, >= 1")
        stat = cls(len(msg.sum), style)
        stat.count = int(msg.count)
        stat.sum[:] = msg.sum
        stat.sumsq[:] = msg.sumsq
        return stat


def _obs_input(graph: onnx.GraphProto) -> onnx.ValueInfoProto:
    inits = {t.name for t in graph.initializer}
    for value in graph.input:
        if value.name not in inits:
            return value
    raise ValueError("the model has no observation input (every graph input is an initializer)")


def with_obs_norm(model: onnx.ModelProto, norm: ObsNorm) -> onnx.ModelProto:
    """A copy of ``model`` whose observation input goes through ``norm``
    first, as nodes ``obs_norm/{Sub,Div,Clip}`` on ``Constant`` operands.
    Raises ValueError for a model that has them already or whose input does
    not hold ``len(norm.mean)`` values per observation."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if any(p.key == _MARK for p in out.metadata_props):
        raise ValueError("the model already normalises its observations (metadata "
                         f"{_MARK!r} is set)")
    graph = out.graph
    x = _obs_input(graph)
    dims = [d.dim_value if d.HasField("dim_value") else None for d in x.type.tensor_type.shape.dim]
    size = len(norm.mean)
    if len(dims) != 2 or dims[1] not in (None, size):
        raise ValueError(f"observation input {x.name!r} has shape {dims}, expected "
                         f"[batch, {size}]")
    normed = "obs_norm/output"
    for node in graph.node:
        node.input[:] = [normed if name == x.name else name for name in node.input]
    for value in graph.output:
        if value.name == x.name:
            raise ValueError(f"observation input {x.name!r} is also a graph output")

    def constant(name, array):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(np.asarray(array, np.float32), name))

    c = np.float32(norm.clip)
    clip = not np.isinf(c)  # the "ars" style does not clip
    scaled = "obs_norm/scaled" if clip else normed
    prefix = [constant("obs_norm/mean", norm.mean), constant("obs_norm/std", norm.std)]
    if clip:
        prefix += [constant("obs_norm/min", -c), constant("obs_norm/max", c)]
    prefix += [
        helper.make_node("Sub", [x.name, "obs_norm/mean"], ["obs_norm/centred"], name="obs_norm/sub"),
        helper.make_node("Div", ["obs_norm/centred", "obs_norm/std"], [scaled], name="obs_norm/div"),
    ]
    if clip:
        prefix.append(helper.make_node("Clip", ["obs_norm/scaled", "obs_norm/min", "obs_norm/max"],
                                       [normed], name="obs_norm/clip"))
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(prefix + nodes)
    meta = out.metadata_props.add()
    meta.key, meta.value = _MARK, f"clip={norm.clip:g}"
    onnx.checker.check_model(out)
    return out


def merged_stats(parts: Sequence[Optional[ObsStats]]) -> Optional[ObsStats]:
    """The chunks' statistics joined in order, or None if they carry none."""
    if not parts or parts[0] is None:
        return None
    return ObsStats.concat(list(parts))
