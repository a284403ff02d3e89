"""Episode seeds: the environment seeds a sample is evaluated with.

They are a pure function of (seed, generation, sample, tag), so a run repeats
and resumes bit for bit, and an evaluator needs nothing but the seeds. The tag
keeps the seeds of different uses apart; each use has its own, listed here.
The rule is the core's (``cpp/include/evokit/episode_seeds.h``), which C++
programs call too (``demo/cpp/online_sampling.cc``).
"""

from __future__ import annotations

from typing import List

import numpy as np

from .. import _core

__all__ = ["EVAL_TAG", "SAMPLER_TAG", "SAMPLE_TAG", "episode_seed_table", "episode_seeds"]

#: :func:`evokit.train`: the episodes of the population's samples.
SAMPLE_TAG: int = _core.SAMPLE_EPISODE_TAG  # 0
#: :func:`evokit.train`: the centre policy's evaluation episodes.
EVAL_TAG: int = _core.EVAL_EPISODE_TAG  # 1
#: ``evokit sample`` (the online sampler): the episodes of its samples.
SAMPLER_TAG: int = _core.SAMPLER_EPISODE_TAG  # 2


def episode_seeds(seed: int, generation: int, index: int, count: int, tag: int) -> List[int]:
    """Episode seeds of sample ``index`` of ``generation``: a pure function of
    its arguments (``tag`` separates sample episodes from centre evaluations)."""
    return episode_seed_table(seed, generation, [index], count, tag)[0].tolist()


def episode_seed_table(seed: int, generation: int, indices, count: int, tag: int) -> np.ndarray:
    """:func:`episode_seeds` of every sample in ``indices``, as one
    ``(len(indices), count)`` int64 array (row i: sample ``indices[i]``)."""
    return _core.episode_seed_table(seed, generation, np.asarray(indices, dtype=np.int64), tag, count)
