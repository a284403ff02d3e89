"""Training a policy with ES on a gymnasium environment (``evokit train``).

- :mod:`~evokit.training.loop`: :func:`train`, the synchronous loop (sample,
  evaluate, update; evaluate the centre when due), and :class:`TrainResult`;
- :mod:`~evokit.training.checkpoint`: ``RUN_DIR/checkpoint.pb``, from which
  a stopped run resumes bit for bit;
- :mod:`~evokit.training.metrics`: the per-generation metrics (CSV, JSONL,
  TensorBoard);
- :mod:`~evokit.training.progress`: what the person at the terminal sees;
- :mod:`~evokit.training.plot`: the learning curve of a run.
"""
