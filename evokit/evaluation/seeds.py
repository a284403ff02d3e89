"""Episode seeds: the environment seeds a sample is evaluated with.

They are a pure function of (seed, generation, sample, tag), so a run repeats
and resumes bit for bit, and an evaluator needs nothing but the seeds. The tag
keeps the seeds of different uses apart; each use has its own, listed here.
"""

from __future__ import annotations

from typing import List

from .. import _core

__all__ = ["EVAL_TAG", "SAMPLER_TAG", "SAMPLE_TAG", "episode_seeds"]

#: :func:`evokit.train`: the episodes of the population's samples.
SAMPLE_TAG = 0
#: :func:`evokit.train`: the centre policy's evaluation episodes.
EVAL_TAG = 1
#: ``evokit sample`` (the online sampler): the episodes of its samples.
SAMPLER_TAG = 2


def episode_seeds(seed: int, generation: int, index: int, count: int, tag: int) -> List[int]:
    """Episode seeds of sample ``index`` of ``generation``: a pure function of
    its arguments (``tag`` separates sample episodes from centre evaluations)."""
    return [int(_core.hash_draw(seed, generation, index, tag * 1_000_003 + j) & 0x7FFFFFFF)
            for j in range(count)]
