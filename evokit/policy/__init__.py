"""Policies: ONNX models whose float initializers are the parameters.

- :mod:`~evokit.policy.onnx_policy`: :class:`OnnxPolicy`, a policy loaded
  from ONNX and run on a flat parameter vector (natively or on onnxruntime);
- :mod:`~evokit.policy.native`: :class:`NativePolicy`, the graph on the C++
  core, one member or a whole perturbed population per call;
- :mod:`~evokit.policy.mlp`: fresh MLP policies (:func:`init_mlp`,
  :func:`policy_for_spaces`);
- :mod:`~evokit.policy.fingerprint`: the model fingerprint that Python and
  C++ compute alike.
"""
