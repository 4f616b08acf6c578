"""LEAF's JSON datasets (FEMNIST, Shakespeare, Sent140) with their natural per-user split.

Layout: <name>/{train,test}/*.json (or <name>/data/{train,test}, LEAF's own tree), each file
{"users": [...], "num_samples": [...], "user_data": {user: {"x": [...], "y": [...]}}}. The
devices are the training users, in file order; the test set is all test users' samples.
- FEMNIST: x = 784 floats (28x28), y in 0..61.
- Shakespeare: x = strings of 80 characters, y = the next character; both mapped with LEAF's
  80-character vocabulary (language_utils.ALL_LETTERS); a character outside it maps to ' '
  (counted in the data info).
- Sent140: x = a tweet's fields with the text at index 4, y = 0/1 (LEAF's raw "0"/"4" also
  read). Text is split with LEAF's split_line regex, cut or padded to 25 words; unknown words
  and padding use index V (FedProx's line_to_indices). The vocabulary is GloVe's when a GloVe
  text file is given (frozen 300-d vectors, as FedProx), otherwise built from the training tweets
  (words sorted by count, then alphabetically) for a learned embedding.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fedbench.data.locate import find_folder
from fedbench.data.registry import Arrays, DataShape, float_bytes, register_dataset
from fedbench.errors import FedbenchError

ALL_LETTERS = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
SEQ_LEN = 80
MAX_WORDS = 25
LEAF_URL = "github.com/TalwalkarLab/leaf (or FedProx's data/ folders)"


@dataclass
class LeafData:
    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    parts: list[np.ndarray]  # per training user, indices into train_x
    num_classes: int
    users: list[str]
    info: dict = field(default_factory=dict)
    embeddings: np.ndarray | None = None  # Sent140 with GloVe: [V + 1, d]


def _split_dir(root: Path, split: str) -> Path:
    for d in (root / split, root / "data" / split):
        if d.is_dir() and any(d.glob("*.json")):
            return d
    return root / split


def _ok(d: Path) -> bool:
    return all(any(_split_dir(d, s).glob("*.json")) for s in ("train", "test"))


def read_split(folder: Path) -> tuple[list[str], list[list], list[list], list[Path]]:
    """Users, their x lists and y lists (file order), and the file each came from."""
    users, xs, ys, files = [], [], [], []
    for f in sorted(folder.glob("*.json")):
        try:
            d = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise FedbenchError(
                f"{f}: not valid JSON ({e.msg}, line {e.lineno}); expected LEAF's "
                "{users, num_samples, user_data} layout"
            ) from None
        except (OSError, UnicodeDecodeError) as e:
            raise FedbenchError(f"{f}: cannot read ({type(e).__name__}); re-download it") from None
        if not isinstance(d, dict) or not {"users", "user_data"} <= set(d):
            keys = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise FedbenchError(f"{f}: expected keys users, num_samples, user_data; found {keys}")
        for u in d["users"]:
            ud = d["user_data"].get(u)
            if not isinstance(ud, dict) or "x" not in ud or "y" not in ud:
                raise FedbenchError(f"{f}: user {u!r} has no user_data entry with x and y")
            if len(ud["x"]) != len(ud["y"]):
                raise FedbenchError(
                    f"{f}: user {u!r} has {len(ud['x'])} x and {len(ud['y'])} y; expected as many"
                )
            users.append(u)
            xs.append(ud["x"])
            ys.append(ud["y"])
            files.append(f)
    return users, xs, ys, files


def _femnist(xs, ys, files):
    n = sum(len(x) for x in xs)
    out = np.empty((n, 784), dtype=np.float32)
    pos = 0
    for x, f in zip(xs, files):
        try:
            arr = np.asarray(x, dtype=np.float32)
        except (ValueError, TypeError):
            raise FedbenchError(f"{f}: FEMNIST x is not a list of 784-float rows") from None
        if len(x) and (arr.ndim != 2 or arr.shape[1] != 784):
            raise FedbenchError(
                f"{f}: FEMNIST x has shape {arr.shape}; expected [n, 784] floats (28x28)"
            )
        out[pos : pos + len(x)] = arr.reshape(len(x), 784) if len(x) else arr
        pos += len(x)
    y = np.asarray([v for yy in ys for v in yy], dtype=np.int64)
    if len(y) and (y.min() < 0 or y.max() > 61):
        raise FedbenchError(f"{files[0].parent}: FEMNIST labels outside 0..61")
    return out.reshape(-1, 1, 28, 28), y


def _shakespeare(xs, ys, files, info):
    lookup = {c: i for i, c in enumerate(ALL_LETTERS)}
    space = lookup[" "]
    unknown = 0
    rows, labels = [], []
    for x, y, f in zip(xs, ys, files):
        for s, t in zip(x, y):
            if not isinstance(s, str) or len(s) != SEQ_LEN or not isinstance(t, str) or len(t) != 1:
                raise FedbenchError(
                    f"{f}: Shakespeare sample ({str(s)[:20]!r}, {str(t)!r}); expected x a string "
                    f"of {SEQ_LEN} characters and y one character"
                )
            idx = [lookup.get(c, -1) for c in s + t]
            unknown += idx.count(-1)
            idx = [space if i < 0 else i for i in idx]
            rows.append(idx[:-1])
            labels.append(idx[-1])
    info["unknown_chars"] = info.get("unknown_chars", 0) + unknown
    x = np.asarray(rows, dtype=np.int64).reshape(-1, SEQ_LEN)
    return x, np.asarray(labels, dtype=np.int64)


def split_line(line: str) -> list[str]:
    return re.findall(r"[\w']+|[.,!?;]", line)


def _tweets(xs, files) -> list[list[str]]:
    out = []
    for x, f in zip(xs, files):
        for fields in x:
            if not isinstance(fields, list) or len(fields) < 5 or not isinstance(fields[4], str):
                raise FedbenchError(
                    f"{f}: Sent140 x entry {str(fields)[:40]!r}; expected a list of tweet fields "
                    "with the text at index 4"
                )
            out.append(split_line(fields[4]))
    return out


def _sent_labels(ys, files) -> np.ndarray:
    out = []
    for y, f in zip(ys, files):
        for v in y:
            s = str(v)
            if s in ("0", "0.0"):
                out.append(0)
            elif s in ("1", "4", "1.0", "4.0"):
                out.append(1)
            else:
                raise FedbenchError(f"{f}: Sent140 label {v!r}; expected 0/1 (or LEAF's 0/4)")
    return np.asarray(out, dtype=np.int64)


def read_glove(path: Path) -> tuple[dict[str, int], np.ndarray]:
    words, vecs = {}, []
    try:
        with open(path, encoding="utf8") as f:
            for line_no, line in enumerate(f, 1):
                parts = line.rstrip().split(" ")
                if len(parts) < 2:
                    continue
                try:
                    v = [float(t) for t in parts[1:]]
                except ValueError:
                    raise FedbenchError(
                        f"{path}:{line_no}: expected a GloVe line 'word v1 ... vd'"
                    ) from None
                if vecs and len(v) != len(vecs[0]):
                    raise FedbenchError(
                        f"{path}:{line_no}: {len(v)} numbers; expected {len(vecs[0])} (GloVe)"
                    )
                words.setdefault(parts[0], len(vecs))
                vecs.append(v)
    except OSError as e:
        raise FedbenchError(f"GloVe file {path}: cannot read ({e.strerror})") from None
    if not vecs:
        raise FedbenchError(f"GloVe file {path} is empty; expected lines 'word v1 ... vd'")
    emb = np.asarray(vecs, dtype=np.float32)
    return words, np.concatenate([emb, np.zeros((1, emb.shape[1]), np.float32)])


def _to_indices(tweets: list[list[str]], vocab: dict[str, int]) -> np.ndarray:
    unk = len(vocab)
    out = np.full((len(tweets), MAX_WORDS), unk, dtype=np.int64)
    for i, words in enumerate(tweets):
        idx = [vocab.get(w, unk) for w in words[:MAX_WORDS]]
        out[i, : len(idx)] = idx
    return out


def leaf_folder(name: str, data_dir: str | None) -> Path:
    """The folder holding a LEAF dataset's train/ and test/ JSON files (never downloaded: LEAF's
    scripts build them)."""
    return find_folder(
        name,
        data_dir,
        [name, f"leaf/data/{name}", f"leaf/{name}", ""] if name else [""],
        _ok,
        f"expected {name}/train/*.json and {name}/test/*.json (LEAF's JSON, {LEAF_URL}); "
        f"`fedbench data get {name}` prints the steps that build it; put the {name}/ folder in "
        "--data-dir",
    )


def load_leaf(name: str, data_dir: str | None, glove: str | None = None) -> LeafData:
    root = leaf_folder(name, data_dir)
    tr_users, tr_x, tr_y, tr_files = read_split(_split_dir(root, "train"))
    te_users, te_x, te_y, te_files = read_split(_split_dir(root, "test"))
    info: dict = {"source": str(root)}
    # a device's train + test samples, as FedProx's Table 1 counts them
    te_sizes = {u: len(y) for u, y in zip(te_users, te_y)}
    info["device_sizes"] = [len(y) + te_sizes.get(u, 0) for u, y in zip(tr_users, tr_y)]
    embeddings = None
    if name == "femnist":
        train_x, train_y = _femnist(tr_x, tr_y, tr_files)
        test_x, test_y = _femnist(te_x, te_y, te_files)
        num_classes = 62
    elif name == "shakespeare":
        train_x, train_y = _shakespeare(tr_x, tr_y, tr_files, info)
        test_x, test_y = _shakespeare(te_x, te_y, te_files, info)
        num_classes = len(ALL_LETTERS)
        info["vocab_size"] = len(ALL_LETTERS)
    elif name == "sent140":
        train_t, test_t = _tweets(tr_x, tr_files), _tweets(te_x, te_files)
        if glove:
            vocab, embeddings = read_glove(Path(glove))
            info["embedding"] = f"GloVe vectors from {glove} ({embeddings.shape[1]}-d, frozen)"
        else:
            counts = Counter(w for t in train_t for w in t)
            vocab = {
                w: i
                for i, (w, _) in enumerate(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            }
            info["embedding"] = "learned embedding: GloVe vectors absent"
        train_x, test_x = _to_indices(train_t, vocab), _to_indices(test_t, vocab)
        train_y, test_y = _sent_labels(tr_y, tr_files), _sent_labels(te_y, te_files)
        num_classes = 2
        info["vocab_size"] = len(vocab) + 1  # + the unknown/padding index
        info["glove"] = bool(glove)
    else:  # pragma: no cover - validated in RunConfig
        raise AssertionError(name)
    sizes = [len(y) for y in tr_y]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    parts = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(sizes))]
    empty = [u for u, s in zip(tr_users, sizes) if s == 0]
    if empty:
        raise FedbenchError(f"{root}: training user {empty[0]!r} has no samples")
    return LeafData(
        train_x, train_y, test_x, test_y, parts, num_classes, tr_users, info, embeddings
    )


def shape(cfg) -> DataShape:
    """Sizes known before reading the JSON: none of the sample counts (0: a lower bound), and
    sent140's vocabulary (1: a lower bound)."""
    if cfg.dataset == "femnist":
        return DataShape(0, 0, (1, 28, 28), float_bytes(cfg), 62)
    if cfg.dataset == "shakespeare":
        return DataShape(0, 0, (SEQ_LEN,), 8, len(ALL_LETTERS), {"vocab_size": len(ALL_LETTERS)})
    return DataShape(0, 0, (MAX_WORDS,), 8, 2, {"vocab_size": 1})


def find(cfg) -> Path:
    return leaf_folder(cfg.dataset, cfg.data_dir)


@register_dataset("femnist", "shakespeare", "sent140", natural=True, shape=shape, locate=find)
def load(cfg) -> Arrays:
    name = cfg.dataset
    leaf = load_leaf(name, cfg.data_dir, cfg.glove)
    desc = f"LEAF {name}, natural split ({len(leaf.parts)} users)"
    if name == "sent140":
        desc += f"; {leaf.info['embedding']}"
    return Arrays(
        leaf.train_x,
        leaf.train_y,
        leaf.test_x,
        leaf.test_y,
        leaf.num_classes,
        desc,
        parts=leaf.parts,
        info=leaf.info,
        embeddings=leaf.embeddings,
    )
