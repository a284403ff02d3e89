"""Every code block of README.md and docs/**/*.md runs as written
(docs/testing.md, "Every code block runs").

The ```python and ```bash blocks of a page run in order, each in a fresh
process, in a temporary directory of the page's own that has the checkout's
configs/, with EVOKIT_DOCS_BUDGET=small (the docs' small-budget switch) and
the installed evokit. ```prototxt blocks are parsed and validated as configs.
A block that does not run as written carries a marker on the line before it,
``<!-- docs-test: KIND ... -->``; the markers are counted by kind below, so
that no block is left out silently."""

import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from typing import Optional

import pytest

from evokit import parl_config
from evokit.config import load_config, parse_config

from helpers import ROOT

#: A fenced block, with the marker comment on the line before it if any.
FENCE = re.compile(r"^(?:<!-- docs-test: (?P<marker>[^\n]*?) -->\n)?```(?P<info>[^\n]*)\n(?P<body>.*?)^```[ \t]*$",
                   re.S | re.M)
RUNNABLE = ("python", "bash")
#: Marker kinds whose block the test does not run, each with what the block is.
NOT_RUN = {
    "ci": "a setup command CI runs itself (the README's two)",
    "setup": "installs packages, builds for minutes or needs a cluster",
    "output": "printed output, messages or formulas",
    "figure": "a diagram: the layers, the repository's layout",
    "listing": "a fragment of a program shown whole elsewhere",
    "quote": "another project's code",
}
#: How many blocks of each kind the docs hold (every block the test does not
#: run or check is here); a new exception is a deliberate change of this table.
EXPECTED_KINDS = {
    "ci": 2, "setup": 13, "output": 5, "figure": 3, "listing": 4, "quote": 1,
    "file": 2, "compile": 2, "after-compile": 1, "requires": 4,
}
BUDGET = {"EVOKIT_DOCS_BUDGET": "small"}


@dataclass(frozen=True)
class Block:
    page: str           # path relative to the repository
    line: int           # line of the opening fence
    lang: str
    body: str
    kind: Optional[str]  # the marker's kind, None without a marker
    arg: str            # the rest of the marker: a reason, a path or a module

    def __str__(self):
        return f"{self.page}:{self.line} ({self.lang})"


def _pages():
    pages = ["README.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return pages


def _blocks(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    found = []
    for m in FENCE.finditer(text):
        kind, _, arg = (m.group("marker") or "").partition(" ")
        line = text.count("\n", 0, m.start("info")) + 1
        found.append(Block(page, line, m.group("info").strip(), m.group("body"), kind or None, arg.strip()))
    return found


PAGES = _pages()
BLOCKS = [b for page in PAGES for b in _blocks(page)]


def _runs(block):
    return block.lang in RUNNABLE and block.kind in (None, "requires")


def test_every_block_has_a_language_and_a_known_marker():
    assert len(BLOCKS) > 60 and sum(map(_runs, BLOCKS)) > 35
    problems = []
    for b in BLOCKS:
        if not b.lang:
            problems.append(f"{b}: a block without a language")
        known = set(NOT_RUN) | {"file", "compile", "after-compile", "requires"}
        if b.kind is not None and b.kind not in known:
            problems.append(f"{b}: unknown marker {b.kind!r} (known: {sorted(known)})")
        if b.kind in NOT_RUN and not re.fullmatch(r"\(.+\)", b.arg):
            problems.append(f"{b}: a {b.kind} marker gives its reason in parentheses, got {b.arg!r}")
        if b.kind is None and b.lang not in RUNNABLE + ("prototxt",):
            problems.append(f"{b}: a {b.lang} block is neither run nor marked")
        if b.kind == "requires" and b.lang not in RUNNABLE:
            problems.append(f"{b}: requires marks a block that runs")
    assert problems == []


def test_the_blocks_not_run_as_written_are_the_expected_ones():
    kinds = collections.Counter(b.kind for b in BLOCKS if b.kind is not None)
    assert dict(kinds) == EXPECTED_KINDS
    ci = [b for b in BLOCKS if b.kind == "ci"]
    assert [b.page for b in ci] == ["README.md", "README.md"]
    assert all(b.kind == "compile" for b in BLOCKS if b.lang in ("cpp", "cmake") and b.kind not in
               ("listing", "quote", "file"))
    assert {b.arg for b in BLOCKS if b.kind == "requires"} == {"torch"}


def _page_ids():
    return [p for p in PAGES if any(_runs(b) and b.kind != "after-compile" for b in _blocks(p))]


def _environment():
    env = dict(os.environ, **BUDGET)
    env["MPLBACKEND"] = "Agg"
    # evokit and the interpreter of this pytest, never another one first on PATH
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def _run(block, cwd, env):
    name = f"block_{block.line}.{'py' if block.lang == 'python' else 'sh'}"
    script = os.path.join(cwd, name)
    with open(script, "w", encoding="utf-8") as f:
        f.write(block.body)
    command = [sys.executable, script] if block.lang == "python" else ["bash", "-eo", "pipefail", script]
    out = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (f"{block} failed (exit {out.returncode}):\n{block.body}\n"
                                 f"--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}")
    # what the docs show runs on EvoKit's native paths (the policy, MuJoCo)
    assert "NativeFallbackWarning" not in out.stderr, f"{block}:\n{out.stderr[-3000:]}"
    return out


def _skip_unless_importable(blocks):
    for module in sorted({b.arg for b in blocks if b.kind == "requires"}):
        pytest.importorskip(module, reason=f"{blocks[0].page} needs {module}, which is not installed "
                                           f"(pip install '.[{module}]')")


@pytest.mark.parametrize("page", _page_ids())
def test_the_page_s_blocks_run_in_order(page, tmp_path):
    blocks = [b for b in _blocks(page) if _runs(b)]
    _skip_unless_importable(blocks)
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    env = _environment()
    for block in blocks:
        _run(block, str(tmp_path), env)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "prototxt" and b.kind is None], ids=str)
def test_the_config_blocks_parse_and_validate(block):
    parse_config(block.body, source=str(block))


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "file"], ids=str)
def test_a_file_block_is_the_file(block):
    with open(os.path.join(ROOT, block.arg), encoding="utf-8") as f:
        text = f.read()
    if block.arg.endswith(".prototxt"):
        text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
    assert block.body == text


def _io_library():
    build = os.path.join(ROOT, "build-py", "cmake")
    if not glob.glob(os.path.join(build, "cpp", "io", "libevokit_io*")):
        pytest.skip("the C++ io library is not built in build-py/cmake "
                    "(pip install '.[test]' -C cmake.define.EVOKIT_BUILD_TESTS=ON builds it)")
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("no cmake on PATH to build the C++ blocks with")
    return build, cmake


@pytest.mark.parametrize("page", sorted({b.page for b in BLOCKS if b.kind == "compile"}))
def test_the_cpp_blocks_compile_and_run(page, tmp_path):
    build, cmake = _io_library()
    blocks = _blocks(page)
    prefix = tmp_path / "prefix"
    subprocess.run([cmake, "--install", build, "--prefix", str(prefix)], check=True, capture_output=True)
    sources = [b for b in blocks if b.kind == "compile"]
    for b in sources:
        path = tmp_path / b.arg
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(b.body)
    (project,) = {os.path.dirname(b.arg) for b in sources}
    for command in ([cmake, "-S", project, "-B", f"{project}/build", f"-DCMAKE_PREFIX_PATH={prefix}"],
                    [cmake, "--build", f"{project}/build"]):
        out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
        assert out.returncode == 0, f"{page}: {' '.join(command)}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    env = _environment()
    runs = [b for b in blocks if b.kind == "after-compile"]
    assert runs, f"{page}: nothing runs the compiled program"
    for block in runs:
        out = _run(block, str(tmp_path), env)
    # every sample the C++ service logged was used by `evokit update`
    assert re.findall(r"used (\d+) samples", out.stdout) == ["40"] * 4, out.stdout


# docs/migrating_from_parl.md: PARL's code and config, and the mapping.

PARL = "docs/migrating_from_parl.md"


def _parl_blocks(lang):
    return [b for b in _blocks(PARL) if b.lang == lang]


def test_the_parl_python_block_prints_as_parl_s_demo_and_notes_the_layout(tmp_path):
    (block,) = _parl_blocks("python")
    script = tmp_path / "parl_cartpole.py"
    script.write_text(block.body)
    # the one note is a warning: as an error it stops the script at load_config
    out = subprocess.run([sys.executable, "-W", "error::UserWarning", str(script)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "ConfigLayoutWarning: cartpole_config.prototxt: read in PARL" in out.stderr
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"(Epoch: \d Reward: \d+\n){10}", out.stdout), out.stdout


def test_the_cpp_block_is_the_example_program_ctest_builds():
    quote, ours = _parl_blocks("cpp")
    assert quote.kind == "quote" and "agent->update(noisy_keys, noisy_rewards)" in quote.body
    assert ours.kind == "file" and ours.arg == "demo/cpp/parl_cartpole.cc"
    with open(os.path.join(ROOT, "cpp", "io", "CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    assert "add_test(NAME parl_migration_example" in cmake and "demo/cpp/parl_cartpole.cc" in cmake


def test_the_parl_config_means_the_evokit_config_shown():
    (parl_file,) = [b for b in _blocks(PARL) if b.kind == "file" and b.arg.endswith(".prototxt")]
    (evokit_layout,) = _parl_blocks("prototxt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", parl_config.ConfigLayoutWarning)
        mapped = load_config(os.path.join(ROOT, parl_file.arg))
    assert mapped == parse_config(evokit_layout.body, validate=False)


def test_the_mapping_table_is_the_code_s():
    with open(os.path.join(ROOT, PARL), encoding="utf-8") as f:
        text = f.read()
    rows = re.findall(r"^\| `([\w.]+)` \([^)]*\) \| `([\w.]+)` \|", text, flags=re.M)
    assert dict(rows) == parl_config.FIELDS
    refused = re.findall(r"^\| `([\w.]+)` \| refused", text, flags=re.M)
    assert sorted(refused) == sorted(parl_config.REFUSED)


def test_the_readme_links_every_docs_page_it_names():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    links = re.findall(r"\]\(((?:docs|bench)/[^)#]+)", readme)
    assert "docs/migrating_from_parl.md" in links and "bench/README.md" in links
    assert [link for link in links if not os.path.exists(os.path.join(ROOT, link))] == []
    # the site's navigation names every page of docs/
    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        nav = set(re.findall(r":\s+(\S+\.md)$", f.read(), flags=re.M))
    assert nav == {os.path.relpath(p, "docs") for p in PAGES if p.startswith("docs/")}
