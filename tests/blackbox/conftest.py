"""Hypothesis profiles of the property tests (tests/blackbox/test_properties.py).

- ``ci`` (the default): few examples, derandomized (the same examples every
  run, so CI cannot flake), a deadline per example generous enough for a
  loaded 2-core machine, no example database written into the checkout;
- ``thorough`` (``HYPOTHESIS_PROFILE=thorough pytest tests/blackbox/test_properties.py``):
  many random examples, for a search before a release or after a strategy
  changes.
"""

import os
from datetime import timedelta

from hypothesis import settings

settings.register_profile("ci", max_examples=20, derandomize=True, deadline=timedelta(seconds=10),
                          database=None, print_blob=True)
settings.register_profile("thorough", max_examples=1000, deadline=timedelta(seconds=10), database=None,
                          print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
