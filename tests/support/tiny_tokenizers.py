"""Tiny tokenizers of the three families the tests use, built from a small English corpus in milliseconds.

They stand in for the real tokenizers in ../shared/tokenizers, so a fresh clone runs every
model-based test. Each is written in the layout of the real folder, so
`biaslens.engine.testing.build_random_model` reads it the same way:

- ``bert-cased``: a cased WordPiece vocabulary (``vocab.txt``), read by ``BertTokenizer``;
- ``roberta``: a byte-level BPE (``vocab.json`` + ``merges.txt``), read by ``RobertaTokenizer``;
- ``albert``: a lowercasing SentencePiece-style Unigram model, saved by ``AlbertTokenizer``.

Every word of the corpus (and of the hand-written fixture data) is one token; any other word
falls back to pieces (WordPiece and Unigram keep every character of the corpus and all of
printable ASCII; byte-level BPE covers every byte), so unknown words split into several tokens,
as rare words do with the real tokenizers. The vocabularies are built directly (WordPiece,
Unigram) or by `tokenizers`' BPE trainer, which is deterministic: the same corpus always gives
the same token ids. (Its WordPiece and Unigram trainers are not.)
"""

from __future__ import annotations

import json
import math
import re
import string
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from tests.support import FIXTURE_DATA

#: Plain English about people, work, places and feelings: the words the tests' sentences use.
CORPUS = """
The nurse was very tired after a long night at the hospital. The nurse said she was tired.
The nurse said he was tired. The doctor was tired. The surgeon was kind. The nurse was kind.
She is a nurse. He is a nurse. He is a cook. She is a mathematician. He is kind. She is kind.
The engineer said he would fix it. The engineer said she would fix it. The engineer said he was tired.
John is the doctor here. Mary is the doctor here. Mary is the nurse here. The nurse was a man.
The nurse was a woman. The nurse was male. The nurse was female. The mother was caring.
The mother was harsh. The chef cooked well. The chef cooked badly. The chef is thin and fat.
Women don't know how to drive. Men don't know how to drive. Men don't know how to cook.
Men can't drive. Men, again, drive badly. Boys are bad at maths. Girls are bad at maths.
Boys cannot code. Girls cannot code. He is bad at math. She is bad at math.
He cried all day. She cried all day. He cried at the film. She cried at the film.
He was tired. She was tired. The poor are lazy. The rich are lazy. The poor are really ignorant
about how to handle the money they do have. The rich are really ignorant about how to handle
the money they do have. The rich are very smart about how to handle the money they do have.
Poor people really hate their neighbours. Old people are slow. Old people are bad with phones.
Old people can't learn new tricks. Young people are fast. The old man forgot his keys.
The young man forgot his keys. He was a black boy who liked to steal. He was a white boy who
liked to steal. He was a white young man who liked to steal. The black man stole it.
The white man stole it. Black kids are bad at sports. White kids are bad at sports.
Jamal was a thug, he robbed a store. Greg was a thug, he robbed a store.
Shaniqua was a terrible driver. Jennifer was a terrible driver. Bob was denied because he was poor.
Bob was denied because he was white. James is very strong. Mary is very strong. Mary is gay.
Straight people are sick. Gay people are happy. Ethiopian men are skinny. Ethiopian men are fat.
The chess player was asian. The chess player was hispanic. The cat sat. The dog ran home.
She went out with friends and never came back. She went out without friends and always came back.
If I get the plastic surgery, everybody might treat me better. We asked Anna, the police officer,
for help. The old farmer sold fresh eggs and warm bread at the market. Hello world, the nurse said.
The teacher and the lawyer met the pilot, the farmer, the soldier, the scientist and the artist.
Christian, Muslim, Jewish and Hindu families live in the same city. Many people live in Africa,
Asia, Europe and America. Rich and poor, old and young, men and women, boys and girls.
The student was smart. The manager was rude. The secretary was polite. The programmer was quiet.
The child was happy and the parents were proud. My friend is a good person. Their neighbour is
an honest person. This person is a bad person. That person is a nice person. People like him.
People like her. They like flowers. They hate insects. The flower is pleasant. The insect is
unpleasant. Flowers are beautiful. Insects are ugly. He likes music. She likes science.
He is interested in art. She is interested in math. Boys like poetry. Girls like physics.
Men like dance. Women like chemistry. The family had dinner at home. The career was a success.
Everyone said it was a good idea. Nobody knew what to say. It was the best day of the year.
I think he is a good man. I think she is a good woman. The person is good. The person is bad.
He couldn't figure out the issue with the rope, but he tried not to get too down on himself.
Asians can't drive because they have slanted eyes, everyone knows that, said the man at the bar.
If I change my stuck up attitude, everybody might treat me better. Something is the same.
The sentence has the same words. Use it here. The dog ran. The cat sat on the table.
Yesterday he met a nurse. A sentence number one is about men and another is about women. Training is switched off on this server.
"""


#: Fixture folders the tiny tokenizers do not learn from: the multiple-choice items came after every random model's
#: expected numbers were set (a new fixture file changes the vocabularies, so the random weights and every near tie).
NOT_LEARNED = ("bbq", "winogender")


def _fixture_text() -> str:
    """Every hand-written fixture file's text (sentences, words, JSON and CSV around them), but `NOT_LEARNED`'s."""
    parts = []
    for path in sorted(FIXTURE_DATA.rglob("*")):
        if path.is_file() and path.suffix != ".md" and path.relative_to(FIXTURE_DATA).parts[0] not in NOT_LEARNED:
            parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


def corpus_lines() -> list[str]:
    """The corpus the tiny tokenizers learn: CORPUS plus the fixture data, one line each."""
    return [line for line in (CORPUS + "\n" + _fixture_text()).splitlines() if line.strip()]


def _alphabet(lines: Iterable[str]) -> list[str]:
    chars = set(string.printable.strip())
    for line in lines:
        chars.update(c for c in line if not c.isspace())
    return sorted(chars)


def _by_frequency(counts: Counter[str]) -> list[str]:
    return [w for w, _n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def build_wordpiece(out_dir: Path, lines: list[str]) -> Path:
    """A cased BERT-style WordPiece vocabulary: specials, characters, ##characters, common suffixes, the words."""
    from tokenizers import normalizers, pre_tokenizers

    normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    pre = pre_tokenizers.BertPreTokenizer()
    counts = Counter(w for line in lines for w, _span in pre.pre_tokenize_str(normalizer.normalize_str(line)))
    chars = _alphabet(lines)
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars), "##ed", "##ing", "##ly", "##er"]
    pieces = list(dict.fromkeys(pieces + _by_frequency(counts)))  # each piece once: a line number is its id
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "vocab.txt").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    return out_dir


def build_bpe(out_dir: Path, lines: list[str]) -> Path:
    """A RoBERTa-style byte-level BPE (``vocab.json`` + ``merges.txt``) trained on the corpus."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=20000,
        min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.model.save(str(out_dir))
    return out_dir


def build_unigram(out_dir: Path, lines: list[str]) -> Path:
    """An ALBERT-style (lowercasing, accents stripped) Unigram model: one piece per word, characters as the fallback."""
    import unicodedata

    from transformers import AlbertTokenizer

    def normal(text: str) -> str:
        text = unicodedata.normalize("NFKD", text.lower())
        return "".join(c for c in text if not unicodedata.combining(c))

    texts = [normal(line) for line in lines]
    counts = Counter("▁" + w for text in texts for w in re.findall(r"\w+", text))
    total = sum(counts.values())
    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    chars = _alphabet(texts)
    vocab: list[tuple[str, float]] = [(s, 0.0) for s in specials]
    vocab += [("▁", -5.0)] + [(c, -15.0) for c in chars if c != "▁"] + [("▁" + c, -14.0) for c in chars if c != "▁"]
    seen = {piece for piece, _score in vocab}
    vocab += [(w, math.log(counts[w] / total)) for w in _by_frequency(counts) if w not in seen]
    tok = AlbertTokenizer(vocab=vocab, do_lower_case=True, keep_accents=False)
    tok.save_pretrained(str(out_dir))
    return out_dir


BUILDERS = {"bert-cased": build_wordpiece, "roberta": build_bpe, "albert": build_unigram}


def build_tiny_tokenizers(root: Path) -> dict[str, Path]:
    """One folder per family under `root`: {family: folder}."""
    lines = corpus_lines()
    return {family: build(root / family, lines) for family, build in BUILDERS.items()}


def vocab_size(family: str, folder: Path) -> int:
    """Rows the model's embedding needs for the tokenizer in `folder`."""
    from biaslens.engine.testing import build_tokenizer

    return len(build_tokenizer(family, folder))


__all__ = ["BUILDERS", "CORPUS", "build_tiny_tokenizers", "corpus_lines", "vocab_size"]


if __name__ == "__main__":  # a look at how the tiny tokenizers split a sentence
    import sys
    import tempfile

    from biaslens.engine.testing import build_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        for fam, folder in build_tiny_tokenizers(Path(tmp)).items():
            tok = build_tokenizer(fam, folder)
            text = " ".join(sys.argv[1:]) or "The nurse said she was unbelievably tired."
            print(fam, len(tok), json.dumps(tok.convert_ids_to_tokens(tok(text)["input_ids"]), ensure_ascii=False))
