"""Every code example of the docs runs: each ```python block and each `biaslens …` command of README.md and docs/*.md.

Each block runs in-process (`biaslens.cli.main.main`, `exec` for Python), in a fresh folder that is its current
directory, with a fresh cache. The examples name real hub models and datasets, which this machine cannot download,
and a test must be quick, so the test substitutes, openly:

- models: a hub id in `MODELS` (a command's word, or a string literal in Python) becomes the suite's tiny
  random-weight model of the same family (tests/conftest.py's `model_dirs`, `causal_dirs`), and so does the default model
  (bert-base-cased) of a command in `MODEL_COMMANDS` that names none; any other hub id fails, offline;
- data: `BIASLENS_DATA_DIR` is the hand-written fixture data (tests/fixtures/data: every dataset, WEAT and flag
  file under its real name), and the hub is offline;
- files: the attribute lists the Kurita examples name and the texts the `score` examples read (`ATTRIBUTE_LISTS`) are
  written into the block's folder;
- the cache: `BIASLENS_CACHE_DIR` is the block's own, and `~/.cache/biaslens` in a command means it; `<hash>` in a
  path is the one folder there that matches;
- the bias lab: `lab` commands train on a quick recipe (`LAB_QUICK` appended) and `lab sweep` on a 2 x 2 x 1 grid
  (`SWEEP_GRID` appended). Blocks that train lab models are marked slow, and so are those that run a zoo's jobs
  (`zoo run`, `run_plan`: a process with torch per model);
- files a page shows: a ```toml block whose first line is `# <name>.toml` (a zoo plan) is written into the folder of
  every later block of its page, with the hub ids of `MODELS` replaced as in Python.

A block that cannot run here has `<!-- not-run: the reason -->` on the line above it; at most 10% of the blocks may.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import FIXTURE_DATA, REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]

#: Hub id -> the tiny model family that stands in for it.
MODELS = {
    "bert-base-cased": "bert-cased",
    "bert-base-uncased": "bert-cased",
    "roberta-base": "roberta",
    "roberta-large": "roberta",
    "albert-base-v2": "albert",
    "albert-large-v2": "albert",
    # causal models: the suite's tiny causal families (tests/conftest.py's `causal_dirs`)
    "gpt2": "gpt2",
    "EleutherAI/pythia-160m": "pythia",
    "EleutherAI/pythia-1.4b": "pythia",
    "TinyLlama/TinyLlama_v1.1": "llama",
}
#: Files the Kurita examples name -> their lines (the fixture's lists, and a few jobs).
ATTRIBUTE_LISTS = {
    "positive_traits.txt": (FIXTURE_DATA / "kurita" / "positive_traits").read_text(encoding="utf-8"),
    "negative_traits.txt": (FIXTURE_DATA / "kurita" / "negative_traits").read_text(encoding="utf-8"),
    "jobs.txt": "nurse\nengineer\nteacher\ncarpenter\n",
    # the texts the `biaslens score` examples read
    "texts.txt": "Women don't know how to drive.\nMen don't know how to drive.\nThe nurse was tired.\n",
    "texts.csv": 'id,sentence\n1,"Women don\'t know how to drive."\n2,"Men don\'t know how to drive."\n',
}
#: The commands whose --model defaults to bert-base-cased.
MODEL_COMMANDS = {"evaluate", "compare", "inspect", "report", "shuffle", "kurita"}
LAB_QUICK = ["--corpus-size", "600", "--steps", "12", "--batch-size", "32"]
SWEEP_GRID = ["--associations", "0.5,1", "--ratios", "1,3", "--seeds", "0"]
MAX_NOT_RUN = 0.10

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
NOT_RUN = re.compile(r"<!-- not-run: (\S.*?) -->\n\Z")
SHELLS = ("bash", "sh", "shell", "console")
TRAINS = re.compile(r"\b(run_sweep|run_lab|train_lab_model|default_lab_model|run_plan)\(")
#: A page's file: a ```toml block that names itself on its first line.
FILE_BLOCK = re.compile(r"\A# ([\w.-]+\.toml)\n")


@dataclass(frozen=True)
class Block:
    """A fenced code block of a docs page."""

    path: Path
    line: int
    lang: str
    code: str
    not_run: str | None  # the reason given in the marker above it, if any

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO).as_posix()}:{self.line}"

    def commands(self) -> list[list[str]]:
        """The biaslens commands of a shell block, as words (continuations joined, comments dropped)."""
        if self.lang not in SHELLS:
            return []
        text = self.code.replace("\\\n", " ")
        return [words for line in text.splitlines() if _is_biaslens(words := shlex.split(line, comments=True))]

    @property
    def is_example(self) -> bool:
        return self.lang == "python" or bool(self.commands())

    @property
    def trains(self) -> bool:
        """Whether it trains lab models or runs a zoo's jobs (slow)."""
        slow = any(_argv(words)[:1] == ["lab"] or _argv(words)[:2] == ["zoo", "run"] for words in self.commands())
        return slow or bool(TRAINS.search(self.code))

    @property
    def file_name(self) -> str | None:
        """The file a ```toml block stands for (its first line names it), else None."""
        found = FILE_BLOCK.match(self.code) if self.lang == "toml" else None
        return found.group(1) if found else None


def _is_biaslens(words: list[str]) -> bool:
    return bool(words) and (words[0] == "biaslens" or any(a == "-m" and b.split(".")[0] == "biaslens" for a, b in zip(words, words[1:])))


def _argv(words: list[str]) -> list[str]:
    """The arguments of `biaslens …` / `<python> -m biaslens …`; [] for what cannot run in-process (another module, a launcher)."""
    if words[0] == "biaslens":
        return words[1:]
    if words[0].split("/")[-1].startswith("python") and words[1:3] == ["-m", "biaslens"]:
        return words[3:]
    return []


def parse(path: Path, text: str | None = None) -> list[Block]:
    text = path.read_text(encoding="utf-8") if text is None else text
    found = []
    for m in FENCE.finditer(text):
        marker = NOT_RUN.search(text[: m.start()])
        found.append(Block(path, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2), marker.group(1) if marker else None))
    return found


ALL_BLOCKS = [b for path in DOCS for b in parse(path)]
EXAMPLES = [b for b in ALL_BLOCKS if b.is_example]
RUNNABLE = [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.trains else []) for b in EXAMPLES if not b.not_run]


# ---------------------------------------------------------------------------------------
# running a block
# ---------------------------------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh folder, the current directory, with its own cache, the fixture data and the attribute lists."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(FIXTURE_DATA))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name, text in ATTRIBUTE_LISTS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _word(word: str, models: dict[str, Path], cache: Path) -> str:
    if word in MODELS:
        return str(models[MODELS[word]])
    if word.startswith("~/.cache/biaslens"):
        word = str(cache) + word[len("~/.cache/biaslens") :]
        if "<hash>" in word:
            matches = sorted(Path(word).parent.glob(Path(word).name.replace("<hash>", "*")))
            assert len(matches) == 1, f"{word}: {len(matches)} folders match"
            word = str(matches[0])
    return word


def command_argv(words: list[str]) -> list[str]:
    """The command's arguments and the test's additions: the default model named, the bias lab's quick recipe."""
    argv = _argv(words)
    assert argv, f"`{shlex.join(words)}` cannot run in-process here: mark its block <!-- not-run: why -->"
    if argv[0] in MODEL_COMMANDS and "--model" not in argv:
        argv += ["--model", "bert-base-cased"]
    if argv[0] == "lab":
        argv += LAB_QUICK + (SWEEP_GRID if argv[1:2] == ["sweep"] else [])
    return argv


def run_command(words: list[str], models: dict[str, Path], cache: Path) -> None:
    from biaslens.cli.main import main

    argv = [_word(w, models, cache) for w in command_argv(words)]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: an unknown option, a bad value
        code = exc.code
    assert code == 0, f"`{shlex.join(words)}` exited with status {code}"


def run_block(block: Block, models: dict[str, Path], cache: Path) -> None:
    if block.lang != "python":
        for words in block.commands():
            run_command(words, models, cache)
        return
    code = block.code
    for hub_id, family in MODELS.items():
        code = re.sub(rf"([\"']){re.escape(hub_id)}\1", repr(str(models[family])), code)
    exec(compile(code, block.id, "exec"), {"__name__": "__docs__"})


def write_files(block: Block, models: dict[str, Path], folder: Path) -> None:
    """The files the page shows before `block` (```toml blocks naming themselves), written into `folder`."""
    for earlier in parse(block.path):
        if earlier.line >= block.line:
            break
        if earlier.file_name:
            text = earlier.code
            for hub_id, family in MODELS.items():
                text = text.replace(f'"{hub_id}"', f'"{models[family]}"')
            (folder / earlier.file_name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("block", RUNNABLE)
def test_example_runs(block, model_dirs, causal_dirs, workdir):
    models = {**model_dirs, **causal_dirs}
    write_files(block, models, workdir)
    run_block(block, models, workdir / "cache")


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in EXAMPLES if b.trains and not b.not_run])
def test_an_example_that_trains_imports_and_parses(block):
    """The fast set's look at the blocks that train (the slow set runs them): their imports resolve, their commands parse."""
    if block.lang == "python":
        imports = [node for node in ast.parse(block.code).body if isinstance(node, (ast.Import, ast.ImportFrom))]
        exec(compile(ast.Module(imports, type_ignores=[]), block.id, "exec"), {})
        return
    from biaslens.cli.main import build_parser

    for words in block.commands():
        argv = command_argv(words)
        build_parser(argv[:1]).parse_args(argv)  # an unknown option or a bad value: SystemExit


# ---------------------------------------------------------------------------------------
# the harness itself
# ---------------------------------------------------------------------------------------


def test_the_docs_have_examples_and_few_are_not_run():
    assert len(EXAMPLES) >= 25 and sum(b.lang == "python" for b in EXAMPLES) >= 8, [b.id for b in EXAMPLES]
    assert any(b.path.name == "README.md" for b in EXAMPLES)
    from biaslens.cli.common import COMMANDS

    shown = {argv[0] for b in EXAMPLES for words in b.commands() if (argv := _argv(words))}
    assert set(COMMANDS) <= shown, f"commands without an example in the docs: {sorted(set(COMMANDS) - shown)}"
    stale = [b.id for b in ALL_BLOCKS if b.not_run and not b.is_example]
    assert not stale, f"not-run markers above blocks with no example: {stale}"
    not_run = [b.id for b in EXAMPLES if b.not_run]
    assert len(not_run) <= MAX_NOT_RUN * len(EXAMPLES), f"{len(not_run)} of {len(EXAMPLES)} blocks not run: {not_run}"


def test_commands_are_read_as_a_shell_reads_them():
    text = (
        "<!-- not-run: a reason -->\n```bash\n.venv/bin/python -m biaslens inspect 'A # b.' \\\n    \"C d.\"  # a comment\n"
        "bash scripts/app.sh\nbiaslens metrics\n```\n\n```bash\naccelerate launch -m biaslens evaluate --model x\n```\n"
    )
    first, second = parse(REPO / "docs" / "x.md", text)
    assert first.not_run == "a reason" and first.line == 2 and second.not_run is None
    assert [_argv(w) for w in first.commands()] == [["inspect", "A # b.", "C d."], ["metrics"]]
    assert second.is_example and _argv(second.commands()[0]) == []  # a launcher: only a not-run block may hold it


def test_a_broken_example_fails(model_dirs, causal_dirs, workdir):
    """The harness fails on an option that does not exist, a command that exits 2, a Python error, a launcher."""
    text = (
        "```bash\nbiaslens evaluate --model bert-base-cased --no-such-option\n```\n\n"
        "```bash\nbiaslens inspect 'Same.' 'Same.'\n```\n\n"
        "```python\nfrom biaslens import load_model\n\nload_model('bert-base-cased').no_such_method()\n```\n\n"
        "```bash\naccelerate launch -m biaslens metrics\n```\n"
    )
    blocks = parse(REPO / "docs" / "broken.md", text)
    assert len(blocks) == 4
    for block, error in zip(blocks, [AssertionError, AssertionError, AttributeError, AssertionError]):
        with pytest.raises(error):
            run_block(block, {**model_dirs, **causal_dirs}, workdir / "cache")
    shutil.rmtree(workdir / "cache", ignore_errors=True)
