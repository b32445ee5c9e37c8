#!/usr/bin/env python3
"""Writes charlang.txt: a synthetic character-level "language" for the small
GPT (scripts/train-gpt), made from a fixed grammar and a fixed seed so it is
exactly reproducible and free of any licence question.

    python3 examples/data/make_charlang.py [--lines N] [--seed S] [-o FILE]

Each line is one of five sentence kinds, chosen at random:
  sum       two numbers below 100 and their sum:        "47+38=85."
  count     4 to 8 consecutive numbers:                 "count 17 18 19 20."
  sentence  subject, verb, object with number agreement: "an old cat sees two small dogs."
  brackets  a balanced string of ()[]{} of depth <= 4:  "([]{()})."
  copy      a random 3-6 letter word and its copy:      "copy qzkb qzkb."
so there is something to learn at every scale: spelling, agreement, bracket
matching, copying, counting and carries. The generator is standard library
only and uses its own PRNG (splitmix64), so the bytes do not depend on the
Python version; python/tests/test_train_gpt.py checks that the shipped file
is what this script writes.
"""
import argparse
import os
import sys

MASK = (1 << 64) - 1


class SplitMix64:
    """The splitmix64 generator (Steele, Lea, Flood 2014): tiny and fully
    specified, unlike `random`, whose methods may change between versions."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform in [0, n) for the small n used here (bias < 2^-50)."""
        return self.next() % n

    def choice(self, items):
        return items[self.below(len(items))]


ADJECTIVES = ["red", "blue", "green", "small", "big", "old", "young", "quiet", "happy"]
NOUNS = ["cat", "dog", "bird", "fox", "horse", "child", "teacher", "farmer", "robot"]
PLURALS = {"child": "children", "fox": "foxes"}
VERBS = ["see", "like", "follow", "help", "watch", "find", "chase", "know"]
NUMBERS = ["two", "three", "four", "many", "some"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
BRACKETS = ["()", "[]", "{}"]


def noun_phrase(rng, plural):
    noun = rng.choice(NOUNS)
    if plural:
        noun = PLURALS.get(noun, noun + "s")
        det = rng.choice(NUMBERS + ["the"])
    else:
        det = rng.choice(["the", "a"])
    words = [rng.choice(ADJECTIVES), noun] if rng.below(2) else [noun]
    if det == "a" and words[0][0] in "aeiou":
        det = "an"
    return " ".join([det] + words)


def sentence(rng):
    plural = rng.below(2) == 1
    verb = rng.choice(VERBS)
    if not plural:
        verb = verb + ("es" if verb.endswith(("ch", "sh")) else "s")
    return f"{noun_phrase(rng, plural)} {verb} {noun_phrase(rng, rng.below(2) == 1)}."


def brackets(rng, depth=0):
    """A balanced sequence of 1-3 groups, each nesting another below depth 4."""
    out = []
    for _ in range(1 + rng.below(3 if depth else 2)):
        pair = rng.choice(BRACKETS)
        inner = brackets(rng, depth + 1) if depth < 3 and rng.below(3) else ""
        out.append(pair[0] + inner + pair[1])
    return "".join(out)


def line(rng):
    kind = rng.below(5)
    if kind == 0:
        a, b = rng.below(100), rng.below(100)
        return f"{a}+{b}={a + b}."
    if kind == 1:
        start, length = rng.below(95), 4 + rng.below(5)
        return "count " + " ".join(str(start + i) for i in range(length)) + "."
    if kind == 2:
        return sentence(rng)
    if kind == 3:
        return brackets(rng) + "."
    word = "".join(rng.choice(LETTERS) for _ in range(3 + rng.below(4)))
    return f"copy {word} {word}."


def make_text(lines=6000, seed=2026):
    if lines <= 0:
        raise ValueError(f"lines must be positive, got {lines}")
    rng = SplitMix64(seed)
    return "\n".join(line(rng) for _ in range(lines)) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("-o", "--output",
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "charlang.txt"))
    args = parser.parse_args(argv)
    if args.lines <= 0:
        parser.error(f"--lines must be positive, got {args.lines}")
    text = make_text(args.lines, args.seed)
    with open(args.output, "w", encoding="ascii", newline="\n") as f:
        f.write(text)
    print(f"{args.output}: {len(text)} characters, {len(set(text))} distinct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
