"""The documentation site (mkdocs.yml, docs/) builds with warnings as
errors: a broken link or anchor, a page missing from the navigation, or a
docstring mkdocstrings cannot render fails the build. The test extra
installs the docs extra for it."""

import os
import re
import subprocess
import sys

from helpers import ROOT


def test_the_docs_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    # NO_MKDOCS_2_WARNING: mkdocs-material's banner about its own end of life.
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert not re.search(r"^(WARNING|ERROR)\b", out.stderr, flags=re.M), out.stderr
    for page in ("index.html", "api/index.html", "tutorials/cartpole/index.html",
                 "tutorials/pytorch/index.html"):
        assert (site / page).is_file(), page
    # The API reference is generated: ESAgent's methods are on its page.
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "load_solver" in api and "add_noise" in api
