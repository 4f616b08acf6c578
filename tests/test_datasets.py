"""Loaders on format-exact fixtures (CIFAR pickles, CINIC PNG tree, LEAF JSON), the quadratic
problem, and the batched input pipeline."""

import json
import pickle

import numpy as np
import pytest
import torch
from conftest import tiny_config

from fedbench.assembly import validate_config
from fedbench.config import RunConfig
from fedbench.data import load_federated
from fedbench.data.leaf import ALL_LETTERS
from fedbench.data.quadratic import GROUPS, quadratic_coeffs, x_star
from fedbench.data.transforms import ImagePipeline, crop_flip
from fedbench.errors import FedbenchError
from fedbench.presets import get_preset
from fedbench.training.engine import Engine

CPU = torch.device("cpu")


# ---------------------------------------------------------------- CIFAR


def _cifar_batch(n, seed, label_keys, label_range):
    rng = np.random.default_rng(seed)
    d = {
        b"batch_label": b"training batch 1 of 5",
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        b"filenames": [f"img_{seed}_{i}.png".encode() for i in range(n)],
    }
    for key, hi in zip(label_keys, label_range):
        d[key] = [int(v) for v in rng.integers(0, hi, n)]
    return d


def _dump(path, obj):
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)  # the originals are Python 2 cPickle, protocol 2


@pytest.fixture
def cifar10_dir(tmp_path):
    d = tmp_path / "cifar-10-batches-py"
    d.mkdir()
    for i in range(1, 6):
        _dump(d / f"data_batch_{i}", _cifar_batch(20, i, [b"labels"], [10]))
    _dump(d / "test_batch", _cifar_batch(10, 9, [b"labels"], [10]))
    _dump(d / "batches.meta", {b"label_names": [b"airplane"] * 10, b"num_vis": 3072})
    return tmp_path


def on_cifar10(root) -> dict:
    """The config fields of a tiny run on the fake CIFAR-10 in `root` (cifar10_dir)."""
    return {"dataset": "cifar10", "partition": "iid", "num_clients": 4, "data_dir": str(root)}


def augmented_cifar10(root, **kw):
    """Logreg on the fake CIFAR-10, 2 devices a round, random crops and flips, resized to 8x8."""
    fields = dict(model="logreg", clients_per_round=2, augment=True, resize=8, dtype="float32")
    return validate_config(tiny_config(**on_cifar10(root), **fields, **kw))


@pytest.fixture
def cifar100_dir(tmp_path):
    d = tmp_path / "cifar-100-python"
    d.mkdir()
    keys = [b"fine_labels", b"coarse_labels"]
    _dump(d / "train", _cifar_batch(40, 1, keys, [100, 20]))
    _dump(d / "test", _cifar_batch(10, 2, keys, [100, 20]))
    _dump(d / "meta", {b"fine_label_names": [b"x"] * 100, b"coarse_label_names": [b"y"] * 20})
    return tmp_path


def test_cifar10_loads_torchvision_layout(cifar10_dir):
    cfg = tiny_config(**on_cifar10(cifar10_dir))
    data = load_federated(validate_config(cfg), CPU)
    assert data.train_x.shape == (100, 3, 32, 32) and data.train_x.dtype == torch.uint8
    assert data.test_x.shape == (10, 3, 32, 32) and data.num_classes == 10
    ref = _cifar_batch(20, 1, [b"labels"], [10])
    assert torch.equal(data.train_x[:20].reshape(20, -1), torch.from_numpy(ref[b"data"]))
    assert data.train_y[:20].tolist() == ref[b"labels"]
    assert sum(len(i) for i in data.client_indices) == 100


def test_cifar100_fine_and_coarse(cifar100_dir):
    base = dict(
        dataset="cifar100",
        partition="iid",
        num_clients=2,
        clients_per_round=2,
        data_dir=str(cifar100_dir),
    )
    fine = load_federated(validate_config(tiny_config(**base)), CPU)
    coarse = load_federated(validate_config(tiny_config(**base, coarse_labels=True)), CPU)
    ref = _cifar_batch(40, 1, [b"fine_labels", b"coarse_labels"], [100, 20])
    assert fine.num_classes == 100 and fine.train_y.tolist() == ref[b"fine_labels"]
    assert coarse.num_classes == 20 and coarse.train_y.tolist() == ref[b"coarse_labels"]


def test_cifar_corrupt_and_wrong_shape_are_one_line(cifar10_dir):
    cfg = tiny_config(**on_cifar10(cifar10_dir))
    bad = cifar10_dir / "cifar-10-batches-py" / "data_batch_3"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(FedbenchError, match="data_batch_3") as e:
        load_federated(cfg, CPU)
    assert "\n" not in str(e.value)
    d = _cifar_batch(20, 3, [b"labels"], [10])
    d[b"data"] = d[b"data"][:, :1000]
    _dump(bad, d)
    with pytest.raises(FedbenchError, match=r"data_batch_3.*expected uint8 \[n, 3072\]"):
        load_federated(cfg, CPU)


def test_cifar_missing_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = tiny_config(dataset="cifar10", partition="iid", data_dir=str(tmp_path / "nowhere"))
    with pytest.raises(FedbenchError, match="cifar10 not found.*nowhere"):
        load_federated(cfg, CPU)


# ---------------------------------------------------------------- CINIC-10

CINIC_CLASSES = ["airplane", "automobile", "bird", "cat", "deer"]
CINIC_CLASSES += ["dog", "frog", "horse", "ship", "truck"]


@pytest.fixture
def cinic_dir(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    pixels = {}
    for split, per in (("train", 2), ("valid", 1), ("test", 1)):
        for c, name in enumerate(CINIC_CLASSES):
            d = tmp_path / "CINIC-10" / split / name
            d.mkdir(parents=True)
            for i in range(per):
                arr = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                mode = "L" if (c, i) == (3, 0) else "RGB"  # CINIC has some grayscale images
                img = Image.fromarray(arr[..., 0] if mode == "L" else arr, mode)
                img.save(d / f"cifar10-{split}-{i}.png")
                pixels[(split, c, i)] = np.asarray(img.convert("RGB"))
    return tmp_path, pixels


def test_cinic_image_folder(cinic_dir):
    root, pixels = cinic_dir
    cfg = tiny_config(
        dataset="cinic10", partition="iid", num_clients=2, clients_per_round=2, data_dir=str(root)
    )
    data = load_federated(validate_config(cfg), CPU)
    assert data.train_x.shape == (20, 3, 32, 32) and data.train_x.dtype == torch.uint8
    assert data.test_x.shape == (10, 3, 32, 32)
    assert data.train_y.tolist() == [c for c in range(10) for _ in range(2)]  # sorted folders
    got = data.train_x[2 * 3].permute(1, 2, 0).numpy()  # class "cat", first (grayscale) image
    assert np.array_equal(got, pixels[("train", 3, 0)])


def test_cinic_wrong_image_size(cinic_dir):
    from PIL import Image

    root, _ = cinic_dir
    bad = root / "CINIC-10" / "test" / "dog" / "cifar10-test-0.png"
    Image.new("RGB", (16, 16)).save(bad)
    cfg = tiny_config(
        dataset="cinic10", partition="iid", num_clients=2, clients_per_round=2, data_dir=str(root)
    )
    with pytest.raises(FedbenchError, match=r"cifar10-test-0.png.*expected 32x32"):
        load_federated(cfg, CPU)


# ---------------------------------------------------------------- LEAF


def _leaf_file(path, users):
    """users: {name: (x list, y list)} in LEAF's JSON layout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "users": list(users),
                "num_samples": [len(v[1]) for v in users.values()],
                "user_data": {u: {"x": x, "y": y} for u, (x, y) in users.items()},
            }
        )
    )


def _femnist_users(rng, sizes):
    return {
        f"f{u:04d}": (rng.random((n, 784)).round(3).tolist(), rng.integers(0, 62, n).tolist())
        for u, n in sizes
    }


@pytest.fixture
def femnist_dir(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "femnist"
    _leaf_file(root / "train" / "a.json", _femnist_users(rng, [(1, 5), (2, 3)]))
    _leaf_file(root / "train" / "b.json", _femnist_users(rng, [(3, 4)]))
    _leaf_file(root / "test" / "a.json", _femnist_users(rng, [(1, 2), (2, 1), (3, 2)]))
    return tmp_path


def _leaf_cfg(name, root, **kw):
    base = dict(num_clients=3, clients_per_round=2, device="cpu")
    return validate_config(
        RunConfig(dataset=name, partition="natural", data_dir=str(root), **{**base, **kw})
    )


def test_femnist_natural_split(femnist_dir):
    data = load_federated(_leaf_cfg("femnist", femnist_dir), CPU)
    assert [len(i) for i in data.client_indices] == [5, 3, 4]
    assert data.train_x.shape == (12, 1, 28, 28) and data.test_x.shape == (5, 1, 28, 28)
    assert data.num_classes == 62 and data.info["devices"] == 3
    # FedProx Table 1 counts whole devices: train + test samples (5+2, 3+1, 4+2)
    assert data.info["samples"] == 17 and data.info["train_samples"] == 12
    assert data.info["max_per_device"] == 7 and "device_sizes" not in data.info
    first = json.loads((femnist_dir / "femnist" / "train" / "a.json").read_text())
    u0 = first["users"][0]
    assert torch.allclose(data.train_x[0].flatten(), torch.tensor(first["user_data"][u0]["x"][0]))


def test_leaf_bad_json_and_wrong_shape(femnist_dir):
    bad = femnist_dir / "femnist" / "train" / "b.json"
    bad.write_text('{"users": ["u"], "user_data": {')
    with pytest.raises(FedbenchError, match=r"b\.json: not valid JSON") as e:
        load_federated(_leaf_cfg("femnist", femnist_dir), CPU)
    assert "\n" not in str(e.value)
    _leaf_file(bad, {"u": ([[0.5] * 783], [3])})
    with pytest.raises(FedbenchError, match=r"b\.json: FEMNIST x has shape \(1, 783\)"):
        load_federated(_leaf_cfg("femnist", femnist_dir), CPU)
    _leaf_file(bad, {"u": ([[0.5] * 784, [0.5] * 784], [3])})
    with pytest.raises(FedbenchError, match=r"b\.json: user 'u' has 2 x and 1 y"):
        load_federated(_leaf_cfg("femnist", femnist_dir), CPU)


def test_shakespeare_vocabulary(tmp_path):
    line = ("To be, or not to be: that is the question. " * 2)[:80]
    users = {"ROMEO": ([line, line[1:] + "!"], ["W", "\n"]), "JULIET": ([line], ["a"])}
    _leaf_file(tmp_path / "shakespeare" / "train" / "d.json", users)
    _leaf_file(tmp_path / "shakespeare" / "test" / "d.json", {"ROMEO": ([line], ["}"])})
    data = load_federated(_leaf_cfg("shakespeare", tmp_path, num_clients=2), CPU)
    assert len(ALL_LETTERS) == 80 and data.num_classes == 80
    assert data.train_x.shape == (3, 80) and data.train_x.dtype == torch.int64
    assert "".join(ALL_LETTERS[i] for i in data.train_x[0].tolist()) == line
    assert data.train_y.tolist() == [ALL_LETTERS.index(c) for c in "W\na"]
    assert data.info["unknown_chars"] == 0
    _leaf_file(tmp_path / "shakespeare" / "test" / "d.json", {"R": (["short"], ["x"])})
    with pytest.raises(FedbenchError, match=r"d\.json: Shakespeare sample.*80 characters"):
        load_federated(_leaf_cfg("shakespeare", tmp_path, num_clients=2), CPU)


def _tweet(text):
    return ["1467810369", "Mon Apr 06 22:19:45 PDT 2009", "NO_QUERY", "user", text]


def test_sent140_vocab_and_glove(tmp_path):
    train = {
        "a": ([_tweet("good day good"), _tweet("bad day")], [1, 0]),
        "b": ([_tweet("ok")], ["4"]),
    }
    _leaf_file(tmp_path / "sent140" / "train" / "t.json", train)
    _leaf_file(tmp_path / "sent140" / "test" / "t.json", {"a": ([_tweet("good unseen")], [1])})
    data = load_federated(_leaf_cfg("sent140", tmp_path, num_clients=2), CPU)
    # vocabulary by count then alphabetically: day, good (2 each), bad, ok; unknown/pad = 4
    assert data.info["vocab_size"] == 5 and data.info["glove"] is False
    assert data.info["embedding"] == "learned embedding: GloVe vectors absent"
    assert data.train_x.shape == (3, 25)
    assert data.train_x[0, :4].tolist() == [1, 0, 1, 4]
    assert data.train_y.tolist() == [1, 0, 1] and data.test_x[0, :2].tolist() == [1, 4]
    glove = tmp_path / "glove.txt"
    glove.write_text("good 0.1 0.2 0.3\nday -1 0 1\n")
    data = load_federated(_leaf_cfg("sent140", tmp_path, num_clients=2, glove=str(glove)), CPU)
    assert data.info["glove"] is True and data.embeddings.shape == (3, 3)
    assert data.train_x[0, :3].tolist() == [0, 1, 0] and data.train_x[1, 0] == 2  # bad: unknown


# ---------------------------------------------------------------- SFL quadratic


@pytest.mark.parametrize("group", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [1, 10, 100])
def test_quadratic_groups_x_star(group, scale):
    coeffs = quadratic_coeffs(group, scale)
    a = sum(c[0] for c in coeffs)
    b = sum(c[1] for c in coeffs)
    assert x_star(coeffs) == pytest.approx(-b / (2 * a))
    assert [c[0] for c in coeffs] == [g[0] for g in GROUPS[group]]
    cfg = get_preset("sfl-quadratic")
    cfg.quad_group, cfg.quad_b_scale, cfg.device = group, float(scale), "cpu"
    data = load_federated(validate_config(cfg), CPU)
    assert data.info["x_star"] == pytest.approx(x_star(coeffs))
    assert data.train_x.shape == (2, 2, 1)


def test_quadratic_round_by_hand():
    """Group 3, one local step, lr 0.1, from x = 10: device 1 (a=2/3, b=1) steps to
    10 - 0.1 (2 (2/3) 10 + 1) = 8.5667, device 2 (a=1/3, b=-1) to 10 - 0.1 (2 (1/3) 10 - 1)
    = 9.4333. PFL averages them: 9.0. SFL chains them: 1 then 2 gives
    8.5667 - 0.1 (2 (1/3) 8.5667 - 1) = 8.0956; 2 then 1 gives
    9.4333 - 0.1 (2 (2/3) 9.4333 + 1) = 8.0756. x* = 0."""
    for method, expect in (("pfl", [9.0]), ("sfl", [8.095555555555556, 8.075555555555556])):
        cfg = get_preset("sfl-quadratic")
        cfg.quad_group, cfg.local_steps, cfg.rounds, cfg.device = 3, 1, 1, "cpu"
        cfg.method = method
        eng = Engine(validate_config(cfg))
        assert eng.eval_record()["dist_to_opt"] == pytest.approx(10.0, abs=1e-12)
        eng.run_round(1)
        rec = eng.eval_record()
        assert min(abs(rec["dist_to_opt"] - e) for e in expect) < 1e-10, (method, rec)
        assert "test_loss" not in rec and "test_acc" not in rec


# ---------------------------------------------------------------- input pipeline


def test_crop_flip_on_tiny_image():
    x = torch.arange(1, 10, dtype=torch.uint8).view(1, 1, 3, 3)  # 1..9
    same = crop_flip(x, torch.tensor([[1, 1, 0]]), padding=1)
    assert torch.equal(same, x)
    shifted = crop_flip(x, torch.tensor([[0, 0, 0]]), padding=1)  # up-left corner of the pad
    assert shifted[0, 0].tolist() == [[0, 0, 0], [0, 1, 2], [0, 4, 5]]
    flipped = crop_flip(x, torch.tensor([[1, 1, 1]]), padding=1)
    assert flipped[0, 0].tolist() == [[3, 2, 1], [6, 5, 4], [9, 8, 7]]
    both = crop_flip(x, torch.tensor([[1, 2, 1]]), padding=1)  # shift right, then mirror
    assert both[0, 0].tolist() == [[0, 3, 2], [0, 6, 5], [0, 9, 8]]


def test_pipeline_shapes_normalize_and_determinism():
    pipe = ImagePipeline(STATS_MEAN := (0.5, 0.25, 0.0), (0.5, 0.5, 1.0), augment=True, resize=8)
    xb = torch.full((2, 3, 3, 4, 4), 255, dtype=torch.uint8)  # [k, B, C, H, W]
    out = pipe.eval(xb)
    assert out.shape == (2, 3, 3, 8, 8) and out.dtype == torch.float32
    expect = [(1 - m) / s for m, s in zip(STATS_MEAN, (0.5, 0.5, 1.0))]
    assert torch.allclose(out[0, 0, :, 0, 0], torch.tensor(expect))
    clients = torch.tensor([3, 7])
    a1 = pipe.draw_augment(0, 5, clients, 4, 3, CPU)
    a2 = pipe.draw_augment(0, 5, torch.tensor([7]), 4, 3, CPU)
    assert a1.shape == (2, 4, 3, 3) and torch.equal(a1[1], a2[0])  # per-device streams
    assert not torch.equal(a1, pipe.draw_augment(0, 6, clients, 4, 3, CPU))
    assert a1[..., :2].max() <= 8 and set(a1[..., 2].unique().tolist()) <= {0, 1}
    assert pipe.train(xb, a1[:, 0]).shape == (2, 3, 3, 8, 8)
    raw = ImagePipeline(None, None).eval(xb)
    assert raw.max() == 255.0  # normalize=none: raw 0-255 pixels


def test_engine_with_augmentation_is_deterministic(cifar10_dir):
    cfg = augmented_cifar10(cifar10_dir, local_epochs=1, batch_size=8)
    runs = []
    for _ in range(2):
        eng = Engine(cfg)
        assert eng.data.input_shape == (3, 8, 8) and eng.model.dim == 3 * 8 * 8 * 10 + 10
        eng.run_round(1)
        runs.append((eng.w.clone(), eng.eval_record()["test_loss"]))
    assert torch.equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    off = Engine(cfg.__class__(**{**cfg.to_dict(), "augment": False}))
    off.run_round(1)
    assert not torch.equal(off.w, runs[0][0])  # augmentation changes the batches


def test_cinic_decoded_cache(cinic_dir, tmp_path, monkeypatch):
    """Large splits are decoded once; a second load reads the cache without touching PIL."""
    import PIL.Image

    from fedbench.data import cinic

    root, _ = cinic_dir
    monkeypatch.setattr(cinic, "CACHE_MIN", 0)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = cinic.read_split(root / "CINIC-10" / "train")
    assert len(list((tmp_path / "cache" / "fedbench" / "decoded").glob("*.npz"))) == 1

    def no_decode(*a, **k):
        raise AssertionError("decoded again")

    monkeypatch.setattr(PIL.Image, "open", no_decode)
    second = cinic.read_split(root / "CINIC-10" / "train")
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


def test_full_batch_grads_go_through_the_pipeline(cifar10_dir):
    cfg = augmented_cifar10(cifar10_dir)
    eng = Engine(cfg)
    loss, grad = eng.full_batch_grads(eng.w, torch.tensor([0, 3]))
    assert grad.shape == (2, eng.model.dim) and torch.isfinite(loss).all()
    x = eng.data.eval_transform(eng.data.train_x[eng.data.client_indices[3]]).unsqueeze(0)
    y = eng.data.train_y[eng.data.client_indices[3]]
    wt = torch.full((1, len(y)), 1.0 / len(y))
    ref_loss, ref_grad = eng.model.loss_and_grad(eng.w.unsqueeze(0), x, y.unsqueeze(0), wt)
    assert torch.allclose(loss[1], ref_loss[0], atol=1e-5)
    assert torch.allclose(grad[1], ref_grad[0], atol=1e-5)
