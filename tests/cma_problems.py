"""The benchmark functions of the CMA-ES convergence tests and of bench/cma_vs_pycma.py.

Each takes one solution [n] or a population [lambda, n] and returns a float or
[lambda] floats; minimum 0. PROBLEMS gives the start point and step size used
for each, the same for EvoKit and its peers.
"""

import numpy as np


def sphere(x):
    x = np.asarray(x, dtype=np.float64)
    return np.sum(x * x, axis=-1)


def ellipsoid(x):
    """sum_i 10^(6 i / (n - 1)) x_i^2: condition number 1e6."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    scales = 1e6 ** (np.arange(n) / (n - 1))
    return np.sum(scales * x * x, axis=-1)


def rosenbrock(x):
    x = np.asarray(x, dtype=np.float64)
    a, b = x[..., :-1], x[..., 1:]
    return np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2, axis=-1)


# name -> (function, x0 value (every coordinate), sigma0)
PROBLEMS = {
    "sphere": (sphere, 1.0, 0.5),
    "ellipsoid": (ellipsoid, 1.0, 0.5),
    "rosenbrock": (rosenbrock, 0.0, 0.5),
}

TARGET = 1e-8
