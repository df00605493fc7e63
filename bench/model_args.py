"""The command line the engine/trainer micro-benchmarks share: a model, threads, repeats.

args, policy = model_and_args(parser)   # --model tiny --threads 1 --repeats 3
"""

from __future__ import annotations

import argparse

import torch

from posttrain.models.loading import Policy, load_policy


def model_and_args(parser: argparse.ArgumentParser) -> tuple[argparse.Namespace, Policy]:
    """Parse `--model` (default tiny), `--threads` (1) and `--repeats` (3) beside the
    parser's own options, set torch's threads and load the model."""
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    return args, load_policy(args.model, seed=0)
