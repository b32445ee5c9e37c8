"""The small GPT that trains, without a GPU: the shipped corpus is what
examples/data/make_charlang.py writes and follows its grammar; train_gpt's
batches, initialisation and step arguments; scripts/train-gpt's CPU path
(compile, memory plan, one interpreter step) on a reduced config."""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from weft import npz, train_gpt
from weft.models.arguments import parameter_specs

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("WEFT_BUILD_DIR", os.path.join(REPO, "build"))


def maker():
    path = os.path.join(REPO, "examples", "data", "make_charlang.py")
    spec = importlib.util.spec_from_file_location("make_charlang", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def balanced(text):
    stack, pairs = [], {")": "(", "]": "[", "}": "{"}
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif not stack or stack.pop() != pairs[ch]:
            return False
    return not stack


def test_shipped_corpus_is_what_the_maker_writes(tmp_path):
    with open(train_gpt.CORPUS, encoding="ascii") as f:
        shipped = f.read()
    assert maker().make_text() == shipped
    # The command line writes the same bytes.
    out = tmp_path / "c.txt"
    subprocess.run([sys.executable, os.path.join(REPO, "examples", "data", "make_charlang.py"),
                    "-o", str(out)], check=True, capture_output=True)
    assert out.read_text(encoding="ascii") == shipped


def test_corpus_follows_the_grammar():
    text = maker().make_text(lines=2000, seed=7)
    kinds = {"sum": 0, "count": 0, "sentence": 0, "brackets": 0, "copy": 0}
    for line in text.splitlines():
        if m := re.fullmatch(r"(\d+)\+(\d+)=(\d+)\.", line):
            assert int(m[1]) + int(m[2]) == int(m[3]), line
            kinds["sum"] += 1
        elif line.startswith("count "):
            numbers = [int(n) for n in line[6:-1].split()]
            assert 4 <= len(numbers) <= 8 and numbers == list(
                range(numbers[0], numbers[0] + len(numbers))), line
            kinds["count"] += 1
        elif m := re.fullmatch(r"copy ([a-z]+) ([a-z]+)\.", line):
            assert m[1] == m[2] and 3 <= len(m[1]) <= 6, line
            kinds["copy"] += 1
        elif re.fullmatch(r"[()\[\]{}]+\.", line):
            assert balanced(line[:-1]), line
            kinds["brackets"] += 1
        else:
            words = line[:-1].split()
            assert line.endswith(".") and 5 <= len(words) <= 7, line
            # Article agreement: "an" exactly before a vowel.
            for det, word in zip(words, words[1:]):
                if det in ("a", "an"):
                    assert (det == "an") == (word[0] in "aeiou"), line
            kinds["sentence"] += 1
    assert all(n > 300 for n in kinds.values()), kinds
    assert maker().make_text(lines=50, seed=7) != maker().make_text(lines=50, seed=8)
    with pytest.raises(ValueError, match="lines must be positive, got 0"):
        maker().make_text(lines=0)


def test_batches_are_next_character_windows():
    text, alphabet = train_gpt.load_corpus()
    assert len(alphabet) == 47 and alphabet == "".join(sorted(alphabet))
    tokens = train_gpt.encode(text, alphabet, 64)
    assert "".join(alphabet[t] for t in tokens[:200]) == text[:200]
    ids, labels = train_gpt.make_batches(tokens, 3, 4, 32, seed=5)
    assert ids.shape == labels.shape == (3, 4, 32) and ids.dtype == np.int64
    np.testing.assert_array_equal(ids[..., 1:], labels[..., :-1])
    decoded = "".join(alphabet[t] for t in ids[2, 1]) + alphabet[labels[2, 1, -1]]
    assert decoded in text
    again, _ = train_gpt.make_batches(tokens, 3, 4, 32, seed=5)
    np.testing.assert_array_equal(ids, again)
    other, _ = train_gpt.make_batches(tokens, 3, 4, 32, seed=6)
    assert not np.array_equal(ids, other)


def test_bad_data_is_named():
    text, alphabet = train_gpt.load_corpus()
    with pytest.raises(train_gpt.TrainError, match="47 distinct characters, more than the "
                                                   "model's vocab 32"):
        train_gpt.encode(text, alphabet, 32)
    with pytest.raises(train_gpt.TrainError, match="10 tokens, fewer than seq \\+ 1 = 17"):
        train_gpt.make_batches(np.zeros(10, dtype=np.int64), 1, 1, 16)
    with pytest.raises(train_gpt.TrainError, match="must be positive, got 0, 1, 16"):
        train_gpt.make_batches(np.zeros(100, dtype=np.int64), 0, 1, 16)
    with pytest.raises(train_gpt.TrainError, match="cannot read the corpus /nonexistent"):
        train_gpt.load_corpus("/nonexistent")


def test_initialisation_and_step_arguments():
    config = train_gpt.CONFIG
    params = train_gpt.init_params(config)
    specs = parameter_specs(config)
    assert [p.shape for p in params] == [s.shape for s in specs]
    assert all(p.dtype == np.float32 for p in params)
    by_name = dict(zip((s.name for s in specs), params))
    assert abs(by_name["tok_emb.weight"].std() - 0.02) < 0.002
    assert abs(by_name["layers.0.attn.proj.weight"].std() - 0.02 / np.sqrt(8)) < 0.001
    assert (by_name["layers.0.norm1.weight"] == 1).all()
    assert (by_name["layers.3.mlp.fc1.bias"] == 0).all()
    np.testing.assert_array_equal(params[5], train_gpt.init_params(config)[5])
    n = len(params)
    state = train_gpt.step_state(params)
    assert sorted(state, key=lambda k: int(k[3:])) == [f"arg{i}" for i in range(3 * n)]
    assert (state[f"arg{2 * n + 4}"] == 0).all() and state[f"arg{n + 4}"].shape == params[4].shape
    ids = np.zeros((5, 2, 3), dtype=np.int64)
    data = train_gpt.step_data(n, ids, ids + 1)
    assert list(data) == [f"arg{3 * n + i}" for i in range(4)]
    np.testing.assert_array_equal(data[f"arg{3 * n + 2}"], [1, 2, 3, 4, 5])
    assert data[f"arg{3 * n + 3}"].shape == ()


def have_tools():
    return all(os.access(os.path.join(BUILD, "bin", t), os.X_OK)
               for t in ("weft-compile", "weft-run"))


def train_gpt_command(*args, **extra_env):
    env = dict(os.environ, WEFT_BUILD_DIR=BUILD, WEFT_VENV=os.path.dirname(
        os.path.dirname(sys.executable)), **extra_env)
    return subprocess.run([os.path.join(REPO, "scripts", "train-gpt"), *args], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not have_tools(), reason="weft-compile / weft-run not built")
def test_cpu_path_compiles_plans_and_runs_one_step(tmp_path):
    done = train_gpt_command("--device", "cpu", "--no-package", "--layers", "1", "--batch", "2",
                             "--seq", "32", "--work", str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "47 distinct (vocab 64)" in out
    assert re.search(r"^planned peak\s+[\d,.]+ KiB", out, re.M), out
    assert re.search(r"^  optimizer state\s+[\d,.]+ KiB", out, re.M), out
    loss = float(re.search(r"^step 1 loss (\S+)", out, re.M)[1])
    # GPT-2's small initialisation gives nearly uniform logits: ln 64 = 4.159.
    assert abs(loss - np.log(64)) < 0.15, loss
    # The interpreter runs the bf16 step: its loss is within a bf16 ulp (2^-6
    # here) of PyTorch's float64 loss.
    reference = float(re.search(r"PyTorch on the same batch: (\S+) in float64", out)[1])
    assert abs(loss - reference) <= 2.0 ** -6, (loss, reference)
    # The interpreter's step updated the parameters from the saved inputs.
    inputs = npz.load(str(tmp_path / "step1_in.npz"))
    outputs = npz.load(str(tmp_path / "step1_out.npz"))
    assert not np.array_equal(inputs["arg0"].numpy(), outputs["res1"].numpy())
    assert inputs["arg0"].shape == outputs["res1"].shape == (64, 256)


@pytest.mark.skipif(not have_tools(), reason="weft-compile / weft-run not built")
def test_bad_arguments_are_named(tmp_path):
    done = train_gpt_command("--steps", "0")
    assert done.returncode == 2 and "--steps and --log-every must be positive, got 0" in \
        done.stderr
    done = train_gpt_command("--device", "cpu", "--corpus", str(tmp_path / "none.txt"))
    assert done.returncode == 1
    assert f"train-gpt: error: cannot read the corpus {tmp_path / 'none.txt'}" in done.stderr


@pytest.mark.skipif(not have_tools() or not train_gpt.ptxas_present(),
                    reason="weft-compile / weft-run not built, or no ptxas")
def test_gpu_path_compiles_and_names_a_missing_driver(tmp_path):
    """--device gpu compiles the sm_90a package and prints its memory plan;
    with no driver to load, weft-run's refusal comes back as one message."""
    done = train_gpt_command("--device", "gpu", "--layers", "1", "--batch", "2", "--seq", "32",
                             "--steps", "3", "--work", str(tmp_path),
                             WEFT_LIBCUDA=str(tmp_path / "no-libcuda.so"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^  workspaces\s+[\d,.]+ KiB", done.stdout, re.M), done.stdout
    assert (tmp_path / "step.weftpkg").exists() and (tmp_path / "data.npz").exists()
    data = npz.load(str(tmp_path / "data.npz"))
    assert [tuple(v.shape) for v in data.values()] == [(3, 2, 32), (3, 2, 32), (3,), ()]
    assert "train-gpt: error: weft-run exited 1 after 0 of 3 steps" in done.stderr
    assert "cannot load the step" in done.stderr
