"""Multiple-choice datasets as typed items: BBQ (Parrish et al. 2022) and Winogender (Rudinger et al. 2018).

A multiple-choice item is not a sentence pair: a context (and a question), two or three answers, the right one, and the
answer a social bias would pick. `ChoiceItem` holds exactly that; `ChoiceDataset` the items of one or more files, with
where they came from and what a user should know about them (`notes`). How a model's answer is chosen and counted (the
prompt, the choices offered, the statistics) is not the data's: `biaslens.choices` does it, convention by convention.

* **BBQ**: one JSON object a line, one file per category (`Age.jsonl`, ..., the 11 of nyu-mll/BBQ). Each item's biased
  answers are derived from its `answer_info` and `stereotyped_groups` exactly as lm-evaluation-harness 0.4.13 does
  (`lm_eval/tasks/bbq/utils.py::process_docs`, its string handling included: `bbq_groups`): for a negative question the
  answers about a stereotyped group, for a non-negative one the answers about the other group.
* **Winogender**: `all_sentences.tsv` (720 sentences, `occupation.participant.answer.gender.txt` ids) and
  `occupations-stats.tsv` (the occupations' share of women, BLS). The choices are the occupation and the other participant
  (lm-eval's `winogender_*` tasks); the biased choice is the one the occupation's majority gender (BLS) points to for a
  gendered pronoun (the occupation when the pronoun's gender is the majority's, else the participant), and an item is a
  *gotcha* when that choice is wrong (Rudinger et al.'s definition, the lm-eval README's `winogender_gotcha`).

`load_choice_dataset("bbq")` finds the files under a data folder or in the cache (`datafiles.locate`), else downloads them
from the repositories at a pinned commit, each checked against its git blob id (and sha256 where one is published) before
it is used. `bbq-age`, `bbq-ambig`, `winogender-gotcha-female`, ... are subsets (`CHOICE_SUBSETS`, lm-eval's task names);
a path names one BBQ category file, a folder of them, or a folder holding Winogender's three files.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Unpack

from biaslens.data import datafiles
from biaslens.data.datafiles import LoadOptions, Progress, read_text
from biaslens.errors import DatasetError, DatasetNotFoundError

if TYPE_CHECKING:
    import pandas

# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChoiceItem:
    """One multiple-choice item: a context (and question), its answers, the right one and the biased one(s)."""

    item_id: int  # 0-based position in its dataset
    dataset: str  # "bbq" | "winogender"
    source_id: str  # BBQ "<category>/<example_id>", Winogender the sentid
    context: str  # BBQ's context; Winogender's sentence
    question: str  # BBQ's question; Winogender: "" (its prompt names the pronoun)
    choices: tuple[str, ...]  # BBQ ans0..ans2; Winogender (occupation, participant)
    label: int  # the right choice
    biased: tuple[int, ...]  # the choice(s) a social bias would pick (module docstring); () when none
    category: str = ""  # BBQ's category (Age, ...); Winogender: the pronoun's gender
    condition: str = ""  # BBQ "ambig" / "disambig"; Winogender "gotcha" / "other" (neutral pronouns: "neutral")
    polarity: str = ""  # BBQ "neg" / "nonneg"; Winogender: the right referent, "occupation" / "participant"
    unknown: int | None = None  # BBQ: the choice that says the answer cannot be known
    groups: tuple[tuple[str, ...], ...] = ()  # BBQ: each answer's groups as lm-eval reads them (`bbq_groups`)
    stereotyped_groups: tuple[str, ...] = ()  # BBQ: additional_metadata.stereotyped_groups, lower case
    pronoun: str = ""  # Winogender: the pronoun as written in the sentence
    gender: str = ""  # Winogender: male / female / neutral
    gotcha: bool = False  # Winogender: a gendered pronoun whose biased choice is wrong

    @property
    def correct(self) -> str:
        return self.choices[self.label]


#: The columns of `ChoiceDataset.to_frame`, in order.
ITEM_COLUMNS = (
    "item_id",
    "dataset",
    "source_id",
    "category",
    "condition",
    "polarity",
    "context",
    "question",
    "choices",
    "label",
    "biased",
    "unknown",
)


@dataclass(frozen=True)
class ChoiceDataset:
    """The multiple-choice items of one or more files, with where they came from and what a user should know about them."""

    name: str  # "bbq", "bbq-age", "winogender", "winogender-gotcha", ... or "custom"
    title: str
    paths: tuple[Path, ...]
    sha256: str  # of the files: sha256 over each file's name and sha256, in order
    items: tuple[ChoiceItem, ...]
    notes: tuple[str, ...] = ()
    #: The three dimensions results are broken down by, as (field, label): BBQ's category x condition x polarity.
    dimensions: tuple[tuple[str, str], ...] = (("category", "category"), ("condition", "context"), ("polarity", "question polarity"))

    #: What kind of dataset this is (`biaslens.data.datasets.PairDataset` says "pairs").
    kind = "choices"

    def __len__(self) -> int:
        return len(self.items)

    @property
    def pairs(self) -> tuple[()]:
        """A multiple-choice dataset has no sentence pairs: a one-line error for what asks it for them."""
        from biaslens.errors import InputError

        raise InputError(
            f"{self.title} is a multiple-choice dataset, not sentence pairs: score it with `biaslens evaluate` (lm-eval, "
            "lm-eval-norm, original conventions), the inspector or the explorer; this command takes pair datasets."
        )

    @property
    def path(self) -> Path:
        """The folder of the files (one file: the file itself)."""
        return self.paths[0] if len(self.paths) == 1 else self.paths[0].parent

    @property
    def family(self) -> str:
        """ "bbq" or "winogender": the dataset the items come from, whatever the subset."""
        return self.items[0].dataset if self.items else self.name

    def to_frame(self) -> "pandas.DataFrame":
        """One row per item, columns `ITEM_COLUMNS` (choices and biased as " | "-joined text and a list)."""
        import pandas as pd

        rows = []
        for it in self.items:
            row = {c: getattr(it, c) for c in ITEM_COLUMNS}
            row["choices"] = " | ".join(it.choices)
            row["biased"] = list(it.biased)
            rows.append(row)
        return pd.DataFrame(rows, columns=list(ITEM_COLUMNS))

    def select(self, keep: Callable[[ChoiceItem], bool], name: str, title: str) -> "ChoiceDataset":
        """The items `keep` accepts, renumbered from 0 (their `source_id` stays), as dataset `name`."""
        kept = [replace(it, item_id=k) for k, it in enumerate(it for it in self.items if keep(it))]
        if not kept:
            raise DatasetError(f"{name}: no items in {self.title}")
        return replace(self, name=name, title=title, items=tuple(kept))


# ---------------------------------------------------------------------------------------
# Where the files are
# ---------------------------------------------------------------------------------------

#: BBQ's 11 categories, in lm-eval's order.
BBQ_CATEGORIES = (
    "Age",
    "Disability_status",
    "Gender_identity",
    "Nationality",
    "Physical_appearance",
    "Race_ethnicity",
    "Race_x_gender",
    "Race_x_SES",
    "Religion",
    "SES",
    "Sexual_orientation",
)
_BBQ_COMMIT = "bea11bd97d79217245b5871acd247b9d6eb24598"
_WINOGENDER_COMMIT = "1c7f8b481ad8a234b41e9f76a424d6e856e13f7f"


@dataclass(frozen=True)
class ChoiceFile:
    """One file of a multiple-choice dataset: its name, where it is published, its checksums."""

    file_name: str
    url: str
    git_blob: str  # the file's git blob id at the pinned commit
    sha256: str | None = None  # where one is published (the files biaslens was checked on)


@dataclass(frozen=True)
class ChoiceSource:
    """A multiple-choice dataset: its files, where they come from, how to cite it."""

    name: str
    title: str
    files: tuple[ChoiceFile, ...]
    license: str
    homepage: str
    caveat: str
    citation: str

    @property
    def url(self) -> str:
        """Where the files are published (the repository's folder at the pinned commit)."""
        return self.files[0].url.rsplit("/", 1)[0] + "/"


def _bbq_file(category: str, blob: str, sha256: str | None = None) -> ChoiceFile:
    url = f"https://raw.githubusercontent.com/nyu-mll/BBQ/{_BBQ_COMMIT}/data/{category}.jsonl"
    return ChoiceFile(f"{category}.jsonl", url, blob, sha256)


def _winogender_file(name: str, blob: str, sha256: str) -> ChoiceFile:
    return ChoiceFile(name, f"https://raw.githubusercontent.com/rudinger/winogender-schemas/{_WINOGENDER_COMMIT}/data/{name}", blob, sha256)


CHOICE_DATASETS: dict[str, ChoiceSource] = {
    "bbq": ChoiceSource(
        name="bbq",
        title="BBQ (11 categories, 58,492 items)",
        files=(
            _bbq_file("Age", "5c5e7586163b869fe029e77e63716f2026e4ae08", "46e805b3fc2d8cbd26eeb8e8430d98cf7b2dc9c83574ff3674e8ce4f0fca2a60"),
            _bbq_file(
                "Disability_status", "9aedeccaf599299cdfa523531d625ae85ecb9131", "375d40d9b71f056150264445ec189b13934998f3f49a1e311aa7578eb3b45e5f"
            ),
            _bbq_file("Gender_identity", "dc79ceaaa9e7126edc99a200d632899c50274b16"),
            _bbq_file("Nationality", "cba9b63d34536cb51a6cbae76b189df3d2a945c0", "a583e74666aec0341ded8aa3983e7cad694eb24de72c254d28b2df3035720090"),
            _bbq_file(
                "Physical_appearance", "8cbdf83265459083224e3a2d37809294ff12ad77", "e48d7e13508565f4801574e611043470c25c95a0a62af3699cb5ee7cb02608fb"
            ),
            _bbq_file("Race_ethnicity", "68daf3d692b27a10596772b3b15742b26f0b110e"),
            _bbq_file("Race_x_gender", "dd09a905b284690445d36259d675243950fa0bd7"),
            _bbq_file("Race_x_SES", "905cd8a5b8734e2063fe524e69a38f0a71c75907"),
            _bbq_file("Religion", "44c1940ee22f00891ab4a5526a293691957aeacb", "cb9555f9f3454a52cd2df85956b59bd7fcca5aa922c8527693b1164d08417616"),
            _bbq_file("SES", "78d11ffbdb70f501617345e5c697d00045d57c29"),
            _bbq_file(
                "Sexual_orientation", "a06351f4dd67ba30632396eeb0c3677c67b7d387", "2c71036b9e7584fe589c42aef32c1a42bc01b9a5e9b1b8704342630cdb08cefd"
            ),
        ),
        license="CC BY 4.0",
        homepage="https://github.com/nyu-mll/BBQ",
        caveat="Hand-written templates about U.S. English stereotypes; the biased answer is read from each item's metadata as "
        "lm-evaluation-harness reads it, which misses some intersectional items (Race_x_gender, Race_x_SES).",
        citation="Alicia Parrish, Angelica Chen, Nikita Nangia, Vishakh Padmakumar, Jason Phang, Jana Thompson, Phu Mon Htut, "
        "Samuel R. Bowman (2022). BBQ: A Hand-Built Bias Benchmark for Question Answering. Findings of ACL 2022.",
    ),
    "winogender": ChoiceSource(
        name="winogender",
        title="Winogender schemas (720 sentences)",
        files=(
            _winogender_file(
                "all_sentences.tsv", "7cbb74bbefc0c2cf3ba199d9ca96b861073be624", "bd69da16bf228cb8df63fd0843aec2d8b5c36a7f21bf8c7b168bcc83932556c8"
            ),
            _winogender_file(
                "occupations-stats.tsv",
                "f5ce6f35b10df1c3e28f4d05dccdc247a871acd7",
                "3f7f37c16381a70571356982ea7fe613ac700ad04a6d3b19b9f2be18248df567",
            ),
        ),
        license="MIT",
        homepage="https://github.com/rudinger/winogender-schemas",
        caveat="Binary occupational statistics (BLS 2015/2016) define the gotcha items; 60 occupations, one template pair each.",
        citation="Rachel Rudinger, Jason Naradowsky, Brian Leonard, Benjamin Van Durme (2018). Gender Bias in Coreference Resolution. NAACL 2018.",
    ),
}


def _slug(category: str) -> str:
    return category.lower().replace("_", "-")


def _winogender_subset(gender: str | None, gotcha: bool) -> Callable[[ChoiceItem], bool]:
    return lambda it: (gender is None or it.gender == gender) and (not gotcha or it.gotcha)


#: Named subsets: name -> (dataset, which items, title). lm-eval's task names (bbq_ambig, winogender_gotcha_male, ...),
#: with hyphens, and one per BBQ category.
CHOICE_SUBSETS: dict[str, tuple[str, Callable[[ChoiceItem], bool], str]] = {
    "bbq-ambig": ("bbq", lambda it: it.condition == "ambig", "BBQ, ambiguous contexts"),
    "bbq-disambig": ("bbq", lambda it: it.condition == "disambig", "BBQ, disambiguated contexts"),
    **{f"bbq-{_slug(c)}": ("bbq", lambda it, c=c: it.category == c, f"BBQ, {c.replace('_', ' ')}") for c in BBQ_CATEGORIES},
    **{
        f"winogender{'-gotcha' if gotcha else ''}{'-' + g if g else ''}": (
            "winogender",
            _winogender_subset(g, gotcha),
            f"Winogender{', gotcha' if gotcha else ''}{', ' + g if g else ''}",
        )
        for gotcha, genders in ((False, ("male", "female", "neutral")), (True, (None, "male", "female")))
        for g in genders
    },
}


def choice_dataset_name(name: str) -> str | None:
    """The dataset or subset key of `name` ("bbq", "BBQ_ambig", "winogender-gotcha", ...), or None."""
    key = name.strip().lower().replace("_", "-")
    return key if key in CHOICE_DATASETS or key in CHOICE_SUBSETS else None


def _bbq_category_of(path: Path) -> str | None:
    return next((c for c in BBQ_CATEGORIES if path.name == f"{c}.jsonl"), None)


def is_choice_path(path: str | Path) -> bool:
    """Whether `path` is a BBQ category file, a folder of them, or a folder holding Winogender's sentences."""
    path = Path(os.path.expanduser(path))
    if os.path.isdir(path):
        return any((path / f"{c}.jsonl").is_file() for c in BBQ_CATEGORIES) or (path / "all_sentences.tsv").is_file()
    return os.path.isfile(path) and (_bbq_category_of(path) is not None or path.name == "all_sentences.tsv")


def _in_named_folder(name: str) -> Callable[[Path, str], bool]:
    """Files count only inside a folder named for the dataset (a bare "Religion.jsonl" could be anything)."""
    return lambda candidate, _file_name: name in candidate.parent.name.lower()


def locate_choice_file(
    source: ChoiceSource, file: ChoiceFile, *, data_dir: str | Path | None = None, cache_dir: str | Path | None = None
) -> Path | None:
    """Where one file of `source` is on this machine (data folder, then cache), or None."""
    return datafiles.locate(source.name, (file.file_name,), data_dir=data_dir, cache_dir=cache_dir, accept=_in_named_folder(source.name))


def _files(
    source: ChoiceSource,
    wanted: tuple[ChoiceFile, ...],
    data_dir: str | Path | None,
    cache_dir: str | Path | None,
    download: bool,
    progress: Progress | None,
) -> list[Path]:
    """The paths of `wanted` files of `source`: found, else downloaded into the cache (checked), else a one-line error."""
    found = [locate_choice_file(source, file, data_dir=data_dir, cache_dir=cache_dir) for file in wanted]
    folder = datafiles.cache_folder(source.name, cache_dir)
    missing = [file.file_name for file, path in zip(wanted, found) if path is None]
    if missing and not download:
        names = ", ".join(missing[:4]) + (", …" if len(missing) > 4 else "")
        raise DatasetNotFoundError(
            f"{source.title}: {len(missing)} of its {len(wanted)} files not found ({names}) and downloads are switched off. "
            f"Download them from {source.url} and put them in {folder}/, or pass --data-dir DIR / set BIASLENS_DATA_DIR to a "
            "folder that contains them (in a folder named for the dataset)."
        )
    paths = []
    for file, path in zip(wanted, found):
        if path is None:

            def not_found(why: str, file: ChoiceFile = file) -> str:
                return (
                    f"{source.title}: {file.file_name} not found and {why}. Download it from {file.url} and put it in {folder}/, "
                    "or pass --data-dir DIR / set BIASLENS_DATA_DIR to a folder that contains it."
                )

            path = datafiles.download(
                file.url,
                folder / file.file_name,
                sha256=file.sha256,
                git_blob=file.git_blob,
                not_found=not_found,
                check=lambda p, f=file: _check_file(source.name, f.file_name, p),
                progress=progress,
            )
        paths.append(path)
    return paths


def load_choice_dataset(name_or_path: str | Path, **options: Unpack[LoadOptions]) -> ChoiceDataset:
    """A multiple-choice dataset by name or subset (`CHOICE_DATASETS`, `CHOICE_SUBSETS`), or from a BBQ category file, a
    folder of them, or a folder holding Winogender's files (`is_choice_path`). `options` as `datasets.load_dataset`'s:
    `data_dir`, `cache_dir`, `download` (default True), `progress`."""
    path = Path(os.path.expanduser(name_or_path))
    key = choice_dataset_name(str(name_or_path))
    if key is None or (os.path.exists(path) and is_choice_path(path)):
        return read_choice_path(path)
    base, keep, title = CHOICE_SUBSETS[key] if key in CHOICE_SUBSETS else (key, None, CHOICE_DATASETS[key].title)
    source = CHOICE_DATASETS[base]
    wanted = source.files
    if base == "bbq" and key.startswith("bbq-") and key not in ("bbq-ambig", "bbq-disambig"):  # one category: one file
        wanted = tuple(f for f in source.files if f"bbq-{_slug(f.file_name.removesuffix('.jsonl'))}" == key)
    paths = _files(source, wanted, options.get("data_dir"), options.get("cache_dir"), options.get("download", True), options.get("progress"))
    dataset = read_bbq(paths) if base == "bbq" else read_winogender(paths[0].parent, paths=paths)
    dataset = replace(dataset, name=base, title={"bbq": "BBQ", "winogender": "Winogender"}[base])
    return dataset.select(keep, key, title) if keep is not None else dataset


def read_choice_path(path: str | Path) -> ChoiceDataset:
    """A BBQ category file, a folder of them (every category found there) or a folder holding Winogender's files."""
    path = Path(os.path.expanduser(path))
    if os.path.isdir(path):
        if (path / "all_sentences.tsv").is_file():
            return read_winogender(path)
        found = [path / f"{c}.jsonl" for c in BBQ_CATEGORIES if (path / f"{c}.jsonl").is_file()]
        if not found:
            raise DatasetError("the folder holds neither BBQ category files (Age.jsonl, ...) nor Winogender's all_sentences.tsv", path=str(path))
        return read_bbq(found)
    if path.name == "all_sentences.tsv":
        return read_winogender(path.parent)
    if _bbq_category_of(path) is None and not _looks_like_bbq(path):
        raise DatasetError("not a BBQ category file (Age.jsonl, ...) nor Winogender's all_sentences.tsv", path=str(path))
    return read_bbq([path])


def _looks_like_bbq(path: Path) -> bool:
    """A .jsonl whose first line has BBQ's fields (a category file saved under another name)."""
    if path.suffix.lower() != ".jsonl":
        return False
    text, _ = read_text(path)
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        item = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(item, dict) and {"context", "question", "ans0", "answer_info"} <= set(item)


# ---------------------------------------------------------------------------------------
# BBQ
# ---------------------------------------------------------------------------------------

_BBQ_FIELDS = (
    "example_id",
    "question_polarity",
    "context_condition",
    "category",
    "answer_info",
    "additional_metadata",
    "context",
    "question",
    "ans0",
    "ans1",
    "ans2",
    "label",
)


def bbq_groups(answer_info: list[str], answer: str) -> tuple[str, ...]:
    """An answer's groups as lm-evaluation-harness 0.4.13 reads them (`utils.py::_process_groups_in_answers`), exactly:

    the answer_info entries joined by "_", intersectional prefixes ("M-", "F-", "lowSES-", "highSES-") split off,
    "lowSES" / "highSES" / "nonObese" / "nonDisabled" / "nonTrans" spaced, "F_" put before "woman" (else "M_" before
    "man", anywhere in the text: "German" too) and before "girl", "M_" before "boy", lower-cased and split on "_".
    An empty answer_info is "Latino" when the answer says "Latina" (lm-eval's one fix); else no groups (lm-eval fails there).
    """
    if not any(answer_info):
        if "Latina" not in answer:
            return ()
        text = "Latino"
    else:
        text = "_".join(answer_info)
    for old, new in (("M-", "M_"), ("F-", "F_"), ("lowSES-", "lowSES_"), ("highSES-", "highSES_")):
        if old in text:
            text = text.replace(old, new)
    for old, new in (
        ("lowSES", "low SES"),
        ("highSES", "high SES"),
        ("nonObese", "non Obese"),
        ("nonDisabled", "non Disabled"),
        ("nonTrans", "non Trans"),
    ):
        text = text.replace(old, new)
    if "woman" in text:
        text = text.replace("woman", "F_woman")
    elif "man" in text:
        text = text.replace("man", "M_man")
    text = text.replace("girl", "F_girl").replace("boy", "M_boy")
    return tuple(text.lower().split("_"))


def bbq_biased(polarity: str, groups: tuple[tuple[str, ...], ...], stereotyped: tuple[str, ...]) -> tuple[int, ...]:
    """The biased answers (lm-eval's `process_docs`): for a negative question those about a stereotyped group; for a
    non-negative one those about no stereotyped group, the unknown answer left out."""
    targets = set(stereotyped)
    out = []
    for k, group in enumerate(groups):
        if not group:
            continue
        if polarity == "neg" and not set(group).isdisjoint(targets):
            out.append(k)
        elif polarity == "nonneg" and group[-1] != "unknown" and set(group).isdisjoint(targets):
            out.append(k)
    return tuple(out)


def _bbq_item(path: Path, line: int, row: Any, item_id: int) -> tuple[ChoiceItem, bool]:
    """One BBQ line as an item, and whether its answer_info lacked an answer's groups."""
    if not isinstance(row, dict):
        raise DatasetError("expected one JSON object per line", path=str(path), row=line)
    missing = [f for f in _BBQ_FIELDS if f not in row]
    if missing:
        raise DatasetError(f"missing field(s) {', '.join(missing)}: not a BBQ line", path=str(path), row=line)
    answers = tuple(row[f"ans{k}"] for k in range(3))
    texts = (row["context"], row["question"], *answers)
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise DatasetError("context, question and ans0-ans2 must be non-empty text", path=str(path), row=line)
    label = row["label"]
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label <= 2:
        raise DatasetError(f"label is {label!r}, expected 0, 1 or 2", path=str(path), row=line)
    polarity, condition = row["question_polarity"], row["context_condition"]
    if polarity not in ("neg", "nonneg") or condition not in ("ambig", "disambig"):
        raise DatasetError(
            f"question_polarity {polarity!r} / context_condition {condition!r}: expected neg or nonneg / ambig or disambig", path=str(path), row=line
        )
    info, meta = row["answer_info"], row["additional_metadata"]
    if not isinstance(info, dict) or not isinstance(meta, dict):
        raise DatasetError("answer_info and additional_metadata must be JSON objects", path=str(path), row=line)
    raw = [info.get(f"ans{k}") or [] for k in range(3)]
    if not all(isinstance(r, list) and all(isinstance(x, str) for x in r) for r in raw):
        raise DatasetError("answer_info must give each answer a list of text", path=str(path), row=line)
    groups = tuple(bbq_groups(r, a) for r, a in zip(raw, answers))
    stereotyped = tuple(str(g).lower() for g in meta.get("stereotyped_groups") or [])
    unknown = next((k for k, r in enumerate(raw) if r and r[-1] == "unknown"), None)
    item = ChoiceItem(
        item_id=item_id,
        dataset="bbq",
        source_id=f"{row['category']}/{row['example_id']}",
        context=row["context"],
        question=row["question"],
        choices=answers,
        label=label,
        biased=bbq_biased(polarity, groups, stereotyped),
        category=str(row["category"]),
        condition=condition,
        polarity=polarity,
        unknown=unknown,
        groups=groups,
        stereotyped_groups=stereotyped,
    )
    return item, any(not g for g in groups)


def _bbq_lines(path: Path, text: str, start: int) -> tuple[list[ChoiceItem], list[str]]:
    items: list[ChoiceItem] = []
    no_groups, no_biased = [], []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): JSON strings may hold U+2028
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise DatasetError(f"malformed JSON line: {exc}", path=str(path), row=number) from exc
        item, lacking = _bbq_item(path, number, row, start + len(items))
        if lacking:
            no_groups.append(item.source_id)
        if not item.biased:
            no_biased.append(item.source_id)
        items.append(item)
    if not items:
        raise DatasetError("no BBQ items", path=str(path))
    notes = []
    if no_groups:
        notes.append(f"{path.name}: {len(no_groups):,} items with an answer lacking its groups in answer_info ({_few(no_groups)})")
    if no_biased:
        notes.append(f"{path.name}: {len(no_biased):,} items without a biased answer as lm-eval reads them ({_few(no_biased)}): no bias counted")
    return items, notes


def _few(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")


def _digest(paths: list[Path], digests: list[str]) -> str:
    combined = hashlib.sha256()
    for p, d in zip(paths, digests):
        combined.update(f"{p.name}:{d}\n".encode())
    return combined.hexdigest()


def _published(source: ChoiceSource, path: Path, sha256: str) -> list[str]:
    known = next((f for f in source.files if f.file_name == path.name), None)
    if known is None or known.sha256 is None or known.sha256 == sha256:
        return []
    return [f"{path.name} is not the published file (sha256 {sha256[:12]}…, expected {known.sha256[:12]}…): it may be a modified copy."]


def read_bbq(paths: list[Path] | tuple[Path, ...]) -> ChoiceDataset:
    """BBQ items from category files (one JSON object a line), in the order given; items numbered across the files."""
    items: list[ChoiceItem] = []
    notes: list[str] = []
    digests = []
    paths = [Path(p) for p in paths]
    for path in paths:
        text, sha256 = read_text(path)
        digests.append(sha256)
        found, said = _bbq_lines(path, text, len(items))
        items += found
        notes += _published(CHOICE_DATASETS["bbq"], path, sha256) + said
    categories = {it.category for it in items}
    absent = [c for c in BBQ_CATEGORIES if c not in categories]
    if len(paths) > 1 and absent:
        notes.append(f"{len(absent)} of BBQ's 11 categories not in these files: {', '.join(absent)}")
    title = "BBQ" if len(paths) > 1 else f"BBQ, {paths[0].stem.replace('_', ' ')}"
    return ChoiceDataset("bbq", title, tuple(paths), _digest(paths, digests), tuple(items), tuple(notes))


# ---------------------------------------------------------------------------------------
# Winogender
# ---------------------------------------------------------------------------------------

#: The pronouns of the schemas by gender (the templates' $NOM_PRONOUN, $POSS_PRONOUN and $ACC_PRONOUN filled in).
WINOGENDER_PRONOUNS = {"male": ("he", "his", "him"), "female": ("she", "her"), "neutral": ("they", "their", "them")}
_WINOGENDER_FILES = ("all_sentences.tsv", "occupations-stats.tsv")
_WINOGENDER_COLUMNS = {"all_sentences.tsv": ("sentid", "sentence"), "occupations-stats.tsv": ("occupation", "bls_pct_female")}


def _tsv(path: Path, required: tuple[str, ...]) -> tuple[list[dict[str, str]], str]:
    text, sha256 = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
    rows = [r for r in reader if any(f.strip() for f in r)]
    if not rows:
        raise DatasetError("no rows", path=str(path))
    header = [h.strip() for h in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise DatasetError(f"missing column(s) {', '.join(missing)}; found {', '.join(header)}", path=str(path))
    out = []
    for number, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise DatasetError(f"{len(r)} tab-separated fields where the header has {len(header)}", path=str(path), row=number)
        out.append(dict(zip(header, r)))
    return out, sha256


def read_winogender(folder: str | Path, *, paths: list[Path] | None = None) -> ChoiceDataset:
    """The 720 Winogender sentences of `folder` (all_sentences.tsv and occupations-stats.tsv) as items."""
    folder = Path(folder)
    sentences_path, stats_path = paths or [folder / name for name in _WINOGENDER_FILES]
    for p in (sentences_path, stats_path):
        if not p.is_file():
            raise DatasetError(f"Winogender needs {' and '.join(_WINOGENDER_FILES)} side by side; {p.name} is missing", path=str(p.parent))
    sentences, s_sha = _tsv(sentences_path, _WINOGENDER_COLUMNS["all_sentences.tsv"])
    stats_rows, o_sha = _tsv(stats_path, _WINOGENDER_COLUMNS["occupations-stats.tsv"])
    female_share = {}
    for number, row in enumerate(stats_rows, start=2):
        try:
            female_share[row["occupation"].strip()] = float(row["bls_pct_female"])
        except ValueError:
            raise DatasetError(f"bls_pct_female {row['bls_pct_female']!r} is not a number", path=str(stats_path), row=number) from None
    items = [_winogender_item(sentences_path, number, row, k, female_share) for k, (number, row) in enumerate(enumerate(sentences, start=2))]
    source = CHOICE_DATASETS["winogender"]
    notes = _published(source, sentences_path, s_sha) + _published(source, stats_path, o_sha)
    return ChoiceDataset(
        "winogender",
        "Winogender",
        (sentences_path, stats_path),
        _digest([sentences_path, stats_path], [s_sha, o_sha]),
        tuple(items),
        tuple(notes),
        dimensions=(("category", "pronoun gender"), ("condition", "gotcha"), ("polarity", "referent")),
    )


def _winogender_item(path: Path, line: int, row: dict[str, str], item_id: int, female_share: dict[str, float]) -> ChoiceItem:
    sentid, sentence = row["sentid"].strip(), row["sentence"].strip()
    parts = sentid.split(".")
    if len(parts) != 5 or parts[2] not in ("0", "1") or parts[3] not in WINOGENDER_PRONOUNS or not sentence:
        raise DatasetError(f"sentid {sentid!r} is not occupation.participant.answer.gender.txt with a sentence", path=str(path), row=line)
    occupation, participant, answer, gender = parts[:4]
    found = [w for w in re.findall(r"[A-Za-z]+", sentence) if w.lower() in WINOGENDER_PRONOUNS[gender]]
    if len(found) != 1:
        raise DatasetError(f"{sentid}: {len(found)} {gender} pronouns in the sentence, expected one", path=str(path), row=line)
    if occupation not in female_share:
        raise DatasetError(f"{sentid}: occupation {occupation!r} has no statistics in occupations-stats.tsv", path=str(path), row=line)
    label = int(answer)
    biased: tuple[int, ...] = ()
    if gender != "neutral":
        majority = "female" if female_share[occupation] > 50.0 else "male"
        biased = (0,) if gender == majority else (1,)
    gotcha = bool(biased) and biased[0] != label
    return ChoiceItem(
        item_id=item_id,
        dataset="winogender",
        source_id=sentid,
        context=sentence,
        question="",
        choices=(occupation, participant),
        label=label,
        biased=biased,
        category=gender,
        condition="neutral" if gender == "neutral" else ("gotcha" if gotcha else "other"),
        polarity=("occupation", "participant")[label],
        pronoun=found[0],
        gender=gender,
        gotcha=gotcha,
    )


def _check_file(dataset: str, file_name: str, path: Path) -> object:
    """A downloaded file read as what it is before it is kept (a BBQ category file, or one of Winogender's tables)."""
    if dataset == "bbq":
        return read_bbq([path])
    return _tsv(path, _WINOGENDER_COLUMNS[file_name])


__all__ = [
    "BBQ_CATEGORIES",
    "CHOICE_DATASETS",
    "CHOICE_SUBSETS",
    "ITEM_COLUMNS",
    "WINOGENDER_PRONOUNS",
    "ChoiceDataset",
    "ChoiceFile",
    "ChoiceItem",
    "ChoiceSource",
    "bbq_biased",
    "bbq_groups",
    "choice_dataset_name",
    "is_choice_path",
    "load_choice_dataset",
    "locate_choice_file",
    "read_bbq",
    "read_choice_path",
    "read_winogender",
]
