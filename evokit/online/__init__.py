"""Online sampling, offline update: EvoKit's production loop.

- :mod:`~evokit.online.samplelog`: sampling logs, append-only files of framed
  ``SampleRecord`` messages that any number of samplers share;
- :mod:`~evokit.online.warehouse`: the model warehouse, one directory per kept
  iteration, committed crash-safely;
- :mod:`~evokit.online.pipeline`: ``sample`` and ``update``, the steps of the
  shell loop (``evokit sample``, ``evokit update``).
"""
